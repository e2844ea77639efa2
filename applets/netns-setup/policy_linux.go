package netnssetup

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// loadPolicy reads the effective config of namespace name (main file,
// netns-firewall.d/NAME.conf, presets).
func loadPolicy(cfg netcfg.Config, name string) (netpolicy.Config, error) {
	return netpolicy.LoadNamespace(cfg.FirewallConfig, name, cfg.PresetDir)
}

// gatewayDNS reports whether the bridge firewall must let DNS in to the
// gateway, where netns-dns listens: when any namespace may have a policy.
func gatewayDNS(cfg netcfg.Config, fw netpolicy.Config) bool {
	return netpolicy.AnyPolicy(cfg.FirewallConfig, fw)
}

// policyFor is what netns-dns is told about namespace name at addr: the
// pin sets are those of its nftables table.
func policyFor(name string, addr netip.Addr, fw netpolicy.Config, upstream []netip.AddrPort) netpolicy.Policy {
	return netpolicy.ForNamespace(name, addr, fw, upstream, nft.NamespaceTable(name), nft.PinSet)
}

// namespaceSpec is what the table of allowlist namespace name at addr
// depends on: on the host, and mirrored inside it.
func namespaceSpec(cfg netcfg.Config, name string, addr netip.Addr, fw netpolicy.Config) nft.NamespaceSpec {
	return nft.NamespaceSpec{Name: name, Bridge: cfg.Bridge, Addr: addr, Ports: netpolicy.PortGroups(fw.Domains), Allow: fw.Allow}
}

// applyPolicy writes the namespace's table (allowlist) or removes it
// (open), and its policy file for netns-dns. undo reverts what it made.
func applyPolicy(cfg netcfg.Config, name string, addr netip.Addr, fw netpolicy.Config, hostResolv []byte) (undo func() error, err error) {
	var undos []func() error
	undo = func() error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			errs = append(errs, undos[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	owners, ownerGroups, err := netpolicy.Owners(name, fw.Approvers, netpolicy.LookupUser, netpolicy.LookupGroup)
	if err != nil {
		return nil, err
	}
	table := nft.NamespaceTable(name)
	if fw.Policy == netpolicy.PolicyAllowlist {
		if err := nft.Apply(nft.BuildNamespace(namespaceSpec(cfg, name, addr, fw)), -1); err != nil {
			return nil, fmt.Errorf("firewall of %s: %w", name, err)
		}
		undos = append(undos, func() error { return nft.Delete(table, -1) })
	} else if err := nft.Delete(table, -1); err != nil {
		return nil, fmt.Errorf("firewall of %s: %w", name, err)
	}
	// Without a policy line the namespace is open, and netns-dns forwards
	// for it where its resolv.conf names the gateway (a loopback resolver
	// on the host, such as systemd-resolved's stub).
	p := policyFor(name, addr, fw, netcfg.Upstreams(hostResolv, fw.Resolvers))
	if fw.Policy == "" {
		p.Mode = netpolicy.PolicyOpen
		p.Upstream = netcfg.Upstreams(hostResolv, nil)
		p.NoPolicyLine = true
	}
	p.Owners, p.OwnerGroups = owners, ownerGroups
	p.Generation = time.Now().UnixNano()
	if err := writeFileAtomic(cfg.PolicyPath(name), p.Marshal()); err != nil {
		return nil, fmt.Errorf("policy of %s: %w", name, err)
	}
	undos = append(undos, func() error { return os.Remove(cfg.PolicyPath(name)) })
	return undo, nil
}

// removePolicy removes the namespace's table and policy file.
func removePolicy(cfg netcfg.Config, name string) error {
	if err := nft.Delete(nft.NamespaceTable(name), -1); err != nil {
		return fmt.Errorf("firewall of %s: %w", name, err)
	}
	if err := os.Remove(cfg.PolicyPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
