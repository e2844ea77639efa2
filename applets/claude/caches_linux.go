package claude

import (
	"fmt"
	"path/filepath"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// checkCache checks that a directory of the shared download caches (or
// the directory that holds them) is a directory, not a symlink, of the
// user's that nobody else can use: every project's sandbox writes there.
func checkCache(path string, uid int) func(r *hostpath.Resolved) error {
	return func(r *hostpath.Resolved) error {
		st := &r.Stat
		switch {
		case r.IsSymlink():
			return fmt.Errorf("shared cache %s is a symlink (to %q), not a directory: remove it", quote.String(path), linkTarget(r))
		case !r.IsDir():
			return fmt.Errorf("shared cache %s: not a directory: remove it", quote.String(path))
		case int(st.Uid) != uid:
			return fmt.Errorf("shared cache %s: owned by uid %d, not by you (uid %d)", quote.String(path), st.Uid, uid)
		case st.Mode&0o077 != 0:
			return fmt.Errorf("shared cache %s has mode %04o, want 0700: chmod 700 %s", quote.String(path), st.Mode&0o7777, quote.String(path))
		}
		return nil
	}
}

// cacheRules makes the plan's shared caches (cache shared) from the
// homes' directory: their directory is made here, each cache when the
// binder opens it.
func cacheRules(rules map[string]srcRule, l *sandbox.Launch, uid int) error {
	if l.Homes == "" {
		return nil
	}
	root := filepath.Join(l.Homes, sandbox.CacheName)
	need := false
	for _, o := range l.Plan.Ops {
		if o.Kind == bwrap.Bind && filepath.Dir(o.Src) == root {
			rules[o.Src] = srcRule{noFollow: true, exposeHome: true, check: checkCache(o.Src, uid), create: true, name: "shared cache"}
			need = true
		}
	}
	if !need {
		return nil
	}
	rule := srcRule{create: true, name: "shared cache", check: checkCache(root, uid)}
	parent, r, err := openOrParent(root, rule)
	if err != nil {
		return err
	}
	if r == nil {
		r, err = createDir(parent, root, rule)
		parent.Close()
		if err != nil {
			return err
		}
	} else if err := rule.check(r); err != nil {
		r.Close()
		return err
	}
	r.Close()
	return nil
}
