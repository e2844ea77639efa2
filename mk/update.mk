# claude-update: end-to-end install of the real agent from the npm registry
# that npm is configured with (`npm config get registry`), through a caching
# proxy in the test so that reruns reuse the tarball
# ($(CLAUDE_SBX_AGENT_CACHE)/npm-tarballs, default
# /var/cache/claude-sandbox-tests/npm-tarballs).

.PHONY: e2e-update
E2E += e2e-update

e2e-update:
	CLAUDE_SBX_E2E=update $(GO) test $(TESTFLAGS) -run '^TestE2ENpm$$' -v ./applets/claude-update/
