package netnssetup

import (
	"context"
	"fmt"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// down removes what up made; what is already gone is no error.
func down(ctx context.Context, cfg netcfg.Config, name string, _ multicall.Stdio) error {
	host, release, err := lockedHost(cfg)
	if err != nil {
		return err
	}
	defer release()
	// The link first: that cuts the network of processes still inside.
	hostVeth := netcfg.HostVeth(name)
	if l, err := linkByName(host, hostVeth); err != nil {
		return err
	} else if l != nil && l.Type() == "veth" {
		if err := host.LinkDel(l); err != nil {
			return fmt.Errorf("delete %s: %w", hostVeth, err)
		}
	}
	if err := removeNetns(cfg.NetnsPath(name)); err != nil {
		return err
	}
	if err := removeResolvConf(cfg, name); err != nil {
		return err
	}
	if err := removePolicy(cfg, name); err != nil {
		return err
	}
	others, err := sandboxLinks(host)
	if err != nil {
		return err
	}
	if len(others) == 0 {
		if err := nft.Delete(nft.TableName, -1); err != nil {
			return fmt.Errorf("firewall: %w", err)
		}
	}
	return nil
}
