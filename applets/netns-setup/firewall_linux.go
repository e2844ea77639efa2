package netnssetup

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// hostFirewall writes the bridge's table (nft.TableName) from the main
// config file; a table this run made is removed again on failure, unless
// another sandbox needs it.
func hostFirewall(cfg netcfg.Config, host *netlink.Handle, dns dnsPlan, undo *undoStack) error {
	hadTable, err := nft.Exists(nft.TableName, -1)
	if err != nil {
		return fmt.Errorf("firewall: %w", err)
	}
	main, err := netpolicy.LoadConfig(cfg.FirewallConfig)
	if err != nil {
		return err
	}
	resolvers := dns.tableResolvers
	if main.Policy != "" {
		// Every namespace has a policy and asks netns-dns, and only it:
		// no other resolver's port 53 is open (a LAN resolver, or one on
		// the host, would answer any name).
		resolvers = nil
	}
	spec := nft.Spec{Bridge: cfg.Bridge, Subnet: cfg.Subnet(), Resolvers: resolvers, Allow: main.Allow, NetnsDNS: dns.netnsDNS}
	if err := nft.Apply(nft.Build(spec), -1); err != nil {
		return fmt.Errorf("firewall: %w", err)
	}
	if !hadTable {
		undo.push("nftables table "+nft.TableName, func() error {
			// Only if no other sandbox needs it (a flush of the ruleset
			// may have removed it under them).
			others, err := sandboxLinks(host)
			if err != nil || len(others) > 0 {
				return err
			}
			return nft.Delete(nft.TableName, -1)
		})
	}
	return nil
}
