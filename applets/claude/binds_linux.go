package claude

import (
	"errors"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// openBinds opens every bind source of the plan as an fd, and refuses a
// config file that lies where the sandbox writes.
func openBinds(l *sandbox.Launch, in inputs, early *earlyOpens) (*bound, error) {
	home, uid, k, cfg := in.home, in.uid, in.k, in.cfg
	// Every bind from an fd checked on the host, bwrap's first after the
	// args and the seccomp program. The sandbox home and the private tmp
	// are made here when missing.
	// A per-project home's directory and the shared login are made
	// first (homes_linux.go).
	if err := ensureHomes(l, k.sandboxHome, uid); err != nil {
		return nil, err
	}
	if err := seedHome(l, uid); err != nil { // profile_linux.go
		return nil, err
	}
	rules := dirRules(k, uid)
	homeRules(rules, l, uid)
	tmpRules(rules, l, uid)
	if err := cacheRules(rules, l, uid); err != nil {
		return nil, err
	}
	b := binder{home: home, writable: l.Writable, rules: rules, early: early}
	bound, err := b.bindFromFDs(&l.Plan, sandbox.SeccompFD+1)
	if err != nil {
		var be *bindError
		if errors.As(err, &be) && be.origin != "" {
			return nil, &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
		}
		return nil, err
	}
	if err := bound.addData(&l.Plan, sandbox.SeccompFD+1); err != nil {
		bound.Close()
		return nil, err
	}
	if err := trustConfig(cfg, bound); err != nil {
		bound.Close()
		return nil, &multicall.ExitError{Code: multicall.ExitUsage, Err: err}
	}
	return bound, nil
}
