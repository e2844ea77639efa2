# netns-enter, the setuid helper (applets/netns-enter, docs/netns-enter.md).
#
# install-netns-enter    build/netns-enter (the -tags netnsenter_only build) to
#                        $(DESTDIR)$(PREFIX)/bin/netns-enter, root:root 4755, a copy;
#                        the whitelist $(DESTDIR)$(SYSCONFDIR)/netns-enter, root:root
#                        0644, containing $(NETNS), unless a whitelist is already there
#                        (an admin's edits are kept; a missing $(NETNS) is reported)
# uninstall-netns-enter  removes the binary, and the whitelist if it is still
#                        exactly what install-netns-enter writes
# test-netns-enter       its unit, fuzz-seed and (as root) setuid tests
# fuzz-netns-enter       each fuzz target for $(FUZZTIME)
# bench-netns-enter      netns-enter NAME -- true vs ip netns exec NAME setpriv ... true

NETNS_ENTER_BIN  = $(DESTDIR)$(PREFIX)/bin/netns-enter
NETNS_ENTER_LIST = $(DESTDIR)$(SYSCONFDIR)/netns-enter
# root:root needs root; a staged install by a user (packaging) leaves owners
# to the packager.
NETNS_ENTER_OWNER = $(if $(filter 0,$(shell id -u)),-o root -g root,)
NETNS_ENTER_HEADER = \# netns-enter whitelist: one namespace name per line, or NAME @GROUP to \
	admit only members of GROUP (from /etc/group). Root-owned, not group/world-writable.

.PHONY: install-netns-enter uninstall-netns-enter test-netns-enter fuzz-netns-enter bench-netns-enter

install-netns-enter: build/netns-enter
	@printf '%s\n' '$(NETNS)' | grep -Eqx '[a-z0-9][a-z0-9_-]{0,14}' || \
		{ echo "NETNS=$(NETNS): not a valid namespace name (a-z, 0-9, - and _, at most 15)" >&2; exit 2; }
	install -D $(NETNS_ENTER_OWNER) -m 4755 build/netns-enter $(NETNS_ENTER_BIN)
	[ -d '$(dir $(NETNS_ENTER_LIST))' ] || install -d -m 0755 '$(dir $(NETNS_ENTER_LIST))'
	@if [ -e '$(NETNS_ENTER_LIST)' ] || [ -L '$(NETNS_ENTER_LIST)' ]; then \
		echo "keeping the existing whitelist $(NETNS_ENTER_LIST)"; \
		grep -Eq '^[[:blank:]]*$(NETNS)([[:blank:]]|#|$$)' '$(NETNS_ENTER_LIST)' || \
			echo "note: $(NETNS) is not in $(NETNS_ENTER_LIST): add it to use namespace $(NETNS)"; \
	else \
		tmp='$(NETNS_ENTER_LIST).tmp'; \
		printf '%s\n%s\n' '$(NETNS_ENTER_HEADER)' '$(NETNS)' >"$$tmp" && \
		chmod 0644 "$$tmp" && \
		{ [ "$$(id -u)" != 0 ] || chown root:root "$$tmp"; } && \
		mv -f "$$tmp" '$(NETNS_ENTER_LIST)' && \
		echo "installed whitelist $(NETNS_ENTER_LIST)"; \
	fi

uninstall-netns-enter:
	rm -f $(NETNS_ENTER_BIN)
	@if [ -f '$(NETNS_ENTER_LIST)' ]; then \
		if printf '%s\n%s\n' '$(NETNS_ENTER_HEADER)' '$(NETNS)' | cmp -s - '$(NETNS_ENTER_LIST)'; then \
			rm -f '$(NETNS_ENTER_LIST)' && echo "removed whitelist $(NETNS_ENTER_LIST)"; \
		else \
			echo "keeping $(NETNS_ENTER_LIST): it was edited (remove it by hand if unwanted)"; \
		fi; \
	fi

test-netns-enter:
	$(GO) test $(TESTFLAGS) ./applets/netns-enter/... ./internal/nsname/... ./internal/multicall/...

fuzz-netns-enter:
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzParseArgs$$' -fuzztime $(FUZZTIME) ./applets/netns-enter
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzParseWhitelist$$' -fuzztime $(FUZZTIME) ./applets/netns-enter
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzLookupGroup$$' -fuzztime $(FUZZTIME) ./applets/netns-enter
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzCheckACL$$' -fuzztime $(FUZZTIME) ./applets/netns-enter
	$(GO) test $(TESTFLAGS) -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(FUZZTIME) ./internal/nsname

bench-netns-enter:
	GO='$(GO)' applets/netns-enter/bench.sh

BENCH += bench-netns-enter
