package netnssetup

import (
	"context"
	"errors"
	"fmt"

	"github.com/claude-sandbox/claude-sandbox/internal/handover"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// up makes or repairs namespace name. It checks the config file and the
// bridge before it changes anything, and on a failure undoes what this run
// made (the tests check that nothing is left). Each phase is a function in
// the file named for it.
func up(ctx context.Context, cfg netcfg.Config, name string, stdio multicall.Stdio) (err error) {
	fw, err := loadPolicy(cfg, name)
	if err != nil {
		return err
	}
	host, release, err := lockedHost(cfg)
	if err != nil {
		return err
	}
	defer release()
	br, err := waitBridge(ctx, host, cfg)
	if err != nil {
		return err
	}
	dns, err := planResolvers(cfg, fw)
	if err != nil {
		return err
	}

	var undo undoStack
	defer undo.run(&err)
	// The firewall first: where nftables is missing, nothing else is made.
	if err := hostFirewall(cfg, host, dns, &undo); err != nil {
		return err
	}
	if err := ipForward(&undo); err != nil {
		return err
	}
	path, err := namespace(cfg, name, &undo)
	if err != nil {
		return err
	}
	if err := namespaceSysctls(path, name); err != nil {
		return err
	}
	if err := insideFirewall(cfg, path, name, host, fw, dns); err != nil {
		return err
	}
	addr, err := links(cfg, name, path, host, br, &undo)
	if err != nil {
		return err
	}
	undoPolicy, err := applyPolicy(cfg, name, addr, fw, dns.hostResolv)
	if err != nil {
		return err
	}
	undo.push("firewall table and policy of "+name, undoPolicy)
	if err := resolvConf(cfg, name, dns, &undo); err != nil {
		return err
	}
	// netns-dns pins into the table inside (and reads its drops) through
	// sockets from the namespace. Without them it answers no allowed name
	// (SERVFAIL): the namespace is up, and closed.
	if c, err := handOver(cfg, name); err == nil {
		c.Close()
	} else if !errors.Is(err, handover.ErrNotListening) {
		fmt.Fprintf(stdio.Err, "netns-setup: %v: %s resolves no allowed name until netns-dns has them (systemctl restart netns-dns netns@%s)\n", err, quote.String(name), name)
	}
	return nil
}
