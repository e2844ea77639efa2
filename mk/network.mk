# The agent's network namespace: netns-setup, its firewall, the systemd and
# systemd-networkd units (applets/netns-setup, internal/netcfg,
# internal/netpolicy, internal/nft, docs/network.md).
#
# install-network    make install and install-netns-enter, then under
#                    $(DESTDIR)$(PREFIX): bin/netns-setup (link to claude-sandbox),
#                    lib/systemd/system/netns@.service, lib/systemd/network/
#                    {br-netns.netdev,br-netns.network,bridging.network},
#                    lib/sysctl.d/99-claude-sandbox-netns.conf (ip_forward),
#                    bin/netns-dns (link), lib/systemd/system/netns-dns.service,
#                    share/claude-sandbox/presets/{claude-code,dev}, and
#                    $(DESTDIR)$(SYSCONFDIR)/netns-firewall.conf (the policy, unless one
#                    is there: an admin's edits are kept) and netns-firewall.d/$(NETNS).conf
#                    (the shared namespace's approvers, likewise). It removes the resolved
#                    drop-in of earlier versions (netns-dns now answers on 10.10.0.1).
#                    Without DESTDIR and where systemd runs: daemon-reload, networkctl
#                    reload, resolved restart, enable --now netns-dns.
# uninstall-network  removes exactly that (the two config files only if unedited), and
#                    uninstall-netns-enter
# bench-network      netns-setup up of 1 and 100 namespaces vs ip netns add + ip link
#                    doing the bare equivalent, in a throwaway host namespace; then
#                    netns-dns's fairness under one namespace's flood; then
#                    scripts/bench-dns: netns-dns's latency, TTFB and memory ratios
# bench-holds        scripts/bench-holds: a refused getent hosts in a sandbox of
#                    user-approve ask, with no session, in a session nobody can
#                    answer in, and with a net watch (hyperfine)

NET_LIB       = $(DESTDIR)$(PREFIX)/lib
NET_UNIT      = $(NET_LIB)/systemd/system/netns@.service
NET_NETWORKD  = $(NET_LIB)/systemd/network
NET_NETWORKS  = br-netns.netdev br-netns.network bridging.network
NET_SYSCTL    = $(NET_LIB)/sysctl.d/99-claude-sandbox-netns.conf
NET_RESOLVED  = $(NET_LIB)/systemd/resolved.conf.d/claude-sandbox-netns.conf
NET_DNS_UNIT  = $(NET_LIB)/systemd/system/netns-dns.service
NET_PRESETS   = $(DESTDIR)$(PREFIX)/share/claude-sandbox/presets
NET_FIREWALL  = $(DESTDIR)$(SYSCONFDIR)/netns-firewall.conf
# The shared namespace's own lines (its approvers).
NET_NSCONF    = $(DESTDIR)$(SYSCONFDIR)/netns-firewall.d/$(NETNS).conf
# Whether to reload the running system's daemons: a real install where
# systemd runs.
NET_LIVE      = [ -z '$(DESTDIR)' ] && [ -d /run/systemd/system ]

.PHONY: install-network uninstall-network bench-network bench-holds

install-network: install install-netns-enter
	ln -sf claude-sandbox $(BIN)/netns-setup
	install -d -m 0755 $(dir $(NET_UNIT))
	sed 's|@PREFIX@|$(PREFIX)|g' install/systemd/netns@.service >$(NET_UNIT).tmp
	chmod 0644 $(NET_UNIT).tmp && mv -f $(NET_UNIT).tmp $(NET_UNIT)
	for f in $(NET_NETWORKS); do install -D -m 0644 install/network/$$f $(NET_NETWORKD)/$$f || exit 1; done
	install -D -m 0644 install/network/99-claude-sandbox-netns.conf $(NET_SYSCTL)
	rm -f $(NET_RESOLVED)
	ln -sf claude-sandbox $(BIN)/netns-dns
	sed 's|@PREFIX@|$(PREFIX)|g' install/systemd/netns-dns.service >$(NET_DNS_UNIT).tmp
	chmod 0644 $(NET_DNS_UNIT).tmp && mv -f $(NET_DNS_UNIT).tmp $(NET_DNS_UNIT)
	for f in claude-code dev; do install -D -m 0644 install/presets/$$f $(NET_PRESETS)/$$f || exit 1; done
	@if [ -e '$(NET_FIREWALL)' ] || [ -L '$(NET_FIREWALL)' ]; then \
		echo "keeping the existing allowlist $(NET_FIREWALL)"; \
	else \
		install -D $(NETNS_ENTER_OWNER) -m 0644 install/network/netns-firewall.conf '$(NET_FIREWALL)' && \
		echo "installed allowlist $(NET_FIREWALL)"; \
	fi
	@if [ -e '$(NET_NSCONF)' ] || [ -L '$(NET_NSCONF)' ]; then \
		echo "keeping the existing $(NET_NSCONF)"; \
	else \
		install -d $(NETNS_ENTER_OWNER) -m 0755 '$(dir $(NET_NSCONF))' && \
		install $(NETNS_ENTER_OWNER) -m 0644 install/network/shared-namespace.conf '$(NET_NSCONF)' && \
		echo "installed $(NET_NSCONF)"; \
	fi
	@if [ -z '$(DESTDIR)' ] && command -v sysctl >/dev/null; then \
		sysctl -q -p $(NET_SYSCTL) || true; fi
	@if $(NET_LIVE); then \
		systemctl daemon-reload; \
		if systemctl -q is-active systemd-networkd; then networkctl reload; fi; \
		if systemctl -q is-active systemd-resolved; then systemctl try-restart systemd-resolved; fi; \
		systemctl enable netns-dns.service && systemctl restart netns-dns.service; \
		echo "next: systemctl enable --now netns@$(NETNS).service"; \
	fi

uninstall-network: uninstall-netns-enter
	@if $(NET_LIVE); then systemctl disable --now netns-dns.service 2>/dev/null || true; fi
	rm -f $(BIN)/netns-setup $(BIN)/netns-dns $(NET_UNIT) $(NET_DNS_UNIT) $(NET_SYSCTL) $(NET_RESOLVED)
	rm -f $(NET_PRESETS)/claude-code $(NET_PRESETS)/dev
	-rmdir $(NET_PRESETS) $(dir $(NET_PRESETS)) 2>/dev/null
	for f in $(NET_NETWORKS); do rm -f $(NET_NETWORKD)/$$f; done
	@if [ -f '$(NET_FIREWALL)' ]; then \
		if cmp -s install/network/netns-firewall.conf '$(NET_FIREWALL)'; then \
			rm -f '$(NET_FIREWALL)' && echo "removed allowlist $(NET_FIREWALL)"; \
		else \
			echo "keeping $(NET_FIREWALL): it was edited (remove it by hand if unwanted)"; \
		fi; \
	fi
	@if [ -f '$(NET_NSCONF)' ]; then \
		if cmp -s install/network/shared-namespace.conf '$(NET_NSCONF)'; then \
			rm -f '$(NET_NSCONF)' && echo "removed $(NET_NSCONF)"; \
		else \
			echo "keeping $(NET_NSCONF): it was edited (remove it by hand if unwanted)"; \
		fi; \
	fi
	-rmdir '$(dir $(NET_NSCONF))' 2>/dev/null
	-rmdir $(NET_NETWORKD) $(dir $(NET_RESOLVED)) $(dir $(NET_UNIT)) $(NET_LIB)/sysctl.d $(NET_LIB)/systemd 2>/dev/null
	@if $(NET_LIVE); then \
		systemctl daemon-reload; \
		if systemctl -q is-active systemd-networkd; then networkctl reload; fi; \
		if systemctl -q is-active systemd-resolved; then systemctl try-restart systemd-resolved; fi; \
	fi

bench-network: build/claude-sandbox
	scripts/bench-network build/claude-sandbox
	GO='$(GO)' TESTFLAGS='$(TESTFLAGS)' scripts/bench-dns

BENCH += bench-network

bench-holds:
	GO='$(GO)' TESTFLAGS='$(TESTFLAGS)' scripts/bench-holds

BENCH += bench-holds
