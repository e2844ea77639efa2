# End-to-end tests under a real systemd booted with systemd-nspawn
# (tests/systemd, docs/development.md). Root only; needs the Debian
# packages systemd, systemd-container, dbus and libpam-systemd.

.PHONY: e2e-systemd
E2E += e2e-systemd

e2e-systemd:
	CLAUDE_SBX_E2E=systemd $(GO) test $(TESTFLAGS) ./tests/systemd/
