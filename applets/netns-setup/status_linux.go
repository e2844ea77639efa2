package netnssetup

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// status prints the state of namespace name, changing nothing, and fails
// unless up would have nothing to do.
func status(ctx context.Context, cfg netcfg.Config, name string, stdio multicall.Stdio) error {
	var missing []string
	out := func(format string, args ...any) { fmt.Fprintf(stdio.Out, format+"\n", args...) }
	out("namespace %s", name)

	path := cfg.NetnsPath(name)
	state, err := inspectNetns(path)
	if err != nil {
		return err
	}
	out("  netns     %s: %s", path, map[nsState]string{nsMissing: "missing", nsPresent: "present", nsStale: "stale (empty file)"}[state])
	if state != nsPresent {
		missing = append(missing, "netns")
	}

	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer host.Close()
	if _, err := bridge(host, cfg); errors.Is(err, errNoBridge) {
		out("  bridge    %s: missing", cfg.Bridge)
		missing = append(missing, "bridge")
	} else if err != nil {
		out("  bridge    %s: %v", cfg.Bridge, err)
		missing = append(missing, "bridge")
	} else {
		out("  bridge    %s: %s", cfg.Bridge, cfg.BridgeAddr)
	}

	if state == nsPresent {
		m, err := statusNetns(cfg, name, path, host, out)
		if err != nil {
			return err
		}
		missing = append(missing, m...)
	}

	if b, err := os.ReadFile(cfg.ResolvConfPath(name)); err == nil {
		var ns []string
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
				ns = append(ns, f[1])
			}
		}
		out("  resolver  %s: %s", cfg.ResolvConfPath(name), quote.String(strings.Join(ns, " ")))
	} else {
		out("  resolver  %s: missing", cfg.ResolvConfPath(name))
		missing = append(missing, "resolv.conf")
	}

	if ok, err := nft.Exists(nft.TableName, -1); err != nil {
		return fmt.Errorf("firewall: %w", err)
	} else if ok {
		out("  firewall  table inet %s: present", nft.TableName)
	} else {
		out("  firewall  table inet %s: missing", nft.TableName)
		missing = append(missing, "firewall")
	}
	m, dnsErr, err := statusPolicy(cfg, name, path, state == nsPresent, out)
	if err != nil {
		return err
	}
	missing = append(missing, m...)
	if len(missing) == 1 && dnsErr != nil {
		return fmt.Errorf("%w: systemctl restart netns-dns (journalctl -u netns-dns says why it stopped)", dnsErr)
	}
	if len(missing) > 0 {
		return fmt.Errorf("namespace %s is not up (missing: %s): systemctl restart netns@%s, or netns-setup up %s", name, strings.Join(missing, "; "), name, name)
	}
	out("  state     up")
	return nil
}

func describeLink(want netcfg.Link, have netcfg.Observed) string {
	var b strings.Builder
	if h := have.Host; h != nil {
		fmt.Fprintf(&b, "%s", want.HostVeth)
		if h.Master != "" {
			fmt.Fprintf(&b, " on %s", quote.String(h.Master))
		}
		if h.Isolated {
			b.WriteString(" (isolated)")
		}
		if !h.Up {
			b.WriteString(" down")
		}
	} else {
		fmt.Fprintf(&b, "%s missing", want.HostVeth)
	}
	b.WriteString(" <-> ")
	if p := have.Peer; p != nil {
		b.WriteString(netcfg.PeerName)
		for _, a := range p.Addrs {
			fmt.Fprintf(&b, " %s", a)
		}
		if p.Gateway.IsValid() {
			fmt.Fprintf(&b, " via %s", p.Gateway)
		}
		if !p.Up {
			b.WriteString(" down")
		}
	} else {
		fmt.Fprintf(&b, "%s missing", netcfg.PeerName)
	}
	return b.String()
}

// statusNetns prints the state of the namespace's link and of the table
// inside it, and returns what is missing.
func statusNetns(cfg netcfg.Config, name, path string, host *netlink.Handle, out func(string, ...any)) (missing []string, err error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	in, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	link := netcfg.Link{HostVeth: netcfg.HostVeth(name), Bridge: cfg.Bridge, Gateway: cfg.Gateway()}
	have, err := observe(host, in, ns, link.HostVeth)
	if err != nil {
		return nil, err
	}
	var current []netip.Prefix
	if have.Peer != nil {
		current = have.Peer.Addrs
	}
	addr, ok := netcfg.Keep(current, cfg.BridgeAddr, nil)
	if !ok {
		addr, _ = netcfg.Address(name, cfg.BridgeAddr, nil)
	}
	link.Addr = netip.PrefixFrom(addr, cfg.BridgeAddr.Bits())
	out("  link      %s", describeLink(link, have))
	steps, err := netcfg.Steps(link, have)
	if err != nil {
		return nil, err
	}
	if len(steps) > 0 {
		missing = append(missing, netcfg.FormatSteps(steps))
	}
	if ok, err := nft.Exists(nft.InsideTable, int(ns)); err != nil {
		return nil, fmt.Errorf("firewall in %s: %w", name, err)
	} else if ok {
		out("  inside    table inet %s: present", nft.InsideTable)
	} else {
		out("  inside    table inet %s: missing", nft.InsideTable)
		missing = append(missing, "inside table")
	}
	return missing, nil
}

// statusPolicy prints the namespace's policy and, where it has a policy
// line and is present, whether netns-dns answers for it (dnsErr if not);
// it returns what is missing.
func statusPolicy(cfg netcfg.Config, name, path string, present bool, out func(string, ...any)) (missing []string, dnsErr error, err error) {
	if b, err := os.ReadFile(cfg.PolicyPath(name)); err != nil {
		out("  policy    none (%s missing)", cfg.PolicyPath(name))
	} else if p, err := netpolicy.ParsePolicy(cfg.PolicyPath(name), b); err != nil {
		out("  policy    %v", err)
		missing = append(missing, "policy")
	} else {
		if p.Mode != netpolicy.PolicyAllowlist {
			out("  policy    %s", quote.String(p.Mode))
		} else if ok, err := nft.Exists(p.Table, -1); err != nil {
			return nil, nil, fmt.Errorf("firewall: %w", err)
		} else if ok {
			out("  policy    allowlist (%d domain lines), table inet %s: present", len(p.Domains), p.Table)
		} else {
			out("  policy    allowlist, table inet %s: missing", p.Table)
			missing = append(missing, "policy table")
		}
		if present && !p.NoPolicyLine {
			dnsErr = checkDNS(path, cfg.Gateway(), p)
			if dnsErr != nil {
				out("  dns       %s:53: %v", cfg.Gateway(), dnsErr)
				missing = append(missing, "dns")
			} else {
				out("  dns       %s:53: answers", cfg.Gateway())
			}
		}
	}
	return missing, dnsErr, nil
}
