package netnssetup

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// insideFirewall writes the table inside the namespace at path
// (nft.InsideTable), before it gets a link: the second layer, which keeps
// the host, the LAN and link-local addresses out of reach also when the
// host's tables are gone; in allowlist mode it holds the allowlist too
// (the pin sets and rules of the namespace's own table, nft.Mirror). It is
// part of the namespace and goes with it.
func insideFirewall(cfg netcfg.Config, path, name string, host *netlink.Handle, fw netpolicy.Config, dns dnsPlan) error {
	hostAddrs, err := addrList(host, nil)
	if err != nil {
		return err
	}
	spec := nft.InsideSpec{Name: name, Gateway: cfg.Gateway(), Resolvers: dns.resolvers, Allow: fw.Allow}
	if fw.Policy == netpolicy.PolicyAllowlist {
		// The namespace's own table, mirrored: its address is not known
		// yet, and not needed inside (nft.Mirror).
		ns := nft.BuildNamespace(namespaceSpec(cfg, name, netip.Addr{}, fw))
		spec.Namespace = &ns
	}
	// IPv4 only: the namespace has no IPv6 but on lo.
	for _, p := range hostAddrs {
		spec.Host = append(spec.Host, p.Addr())
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer ns.Close()
	if err := nft.Apply(nft.BuildInside(spec), int(ns)); err != nil {
		return fmt.Errorf("firewall in %s: %w", name, err)
	}
	return nil
}
