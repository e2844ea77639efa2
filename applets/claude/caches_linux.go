package claude

import (
	"path/filepath"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// checkCache checks that a directory of the shared download caches (or
// the directory that holds them) is a directory, not a symlink, of the
// user's that nobody else can use: every project's sandbox writes there.
func checkCache(path string, uid int) func(r *hostpath.Resolved) error {
	return checkOwnDir("shared cache", path, uid)
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
