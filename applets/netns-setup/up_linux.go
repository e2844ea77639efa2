package netnssetup

import (
	"context"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// up makes or repairs namespace name. It checks the config file and the
// bridge before it changes anything, and on a failure undoes what this run
// made (the tests check that nothing is left). Each phase is a function in
// the file named for it.
func up(ctx context.Context, cfg netcfg.Config, name string, _ multicall.Stdio) (err error) {
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
	return resolvConf(cfg, name, dns, &undo)
}
