package sandbox

import (
	"fmt"
	"path/filepath"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	qname "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandboxcfg"
)

// CacheName is the directory of Spec.Homes that holds the download caches
// every project shares with `cache shared`, one directory per cache
// (SharedCaches).
const CacheName = "cache"

// SharedCache is a content-addressed download cache that `cache shared`
// binds read-write from Homes/CacheName/Name into every per-project home.
type SharedCache struct {
	// Name is its directory in Homes/CacheName.
	Name string
	// Dest is where it is bound, relative to the home: the tool's
	// default below the home.
	Dest string
	// Env, if set, is the variable that points the tool at it (the
	// directory of Dest named by EnvDir levels up), so that a value the
	// user's environment carried cannot send the tool elsewhere.
	Env    string
	EnvDir string
}

// SharedCaches are the download caches that may be shared. Build caches
// (GOCACHE, target/, pip's wheels) are never shared: the home of each
// project keeps its own.
var SharedCaches = []SharedCache{
	{Name: "gomod", Dest: "go/pkg/mod", Env: "GOMODCACHE", EnvDir: "go/pkg/mod"},
	{Name: "npm", Dest: ".npm/_cacache", Env: "npm_config_cache", EnvDir: ".npm"},
	{Name: "cargo-registry", Dest: ".cargo/registry"},
	{Name: "pip", Dest: ".cache/pip/http-v2", Env: "PIP_CACHE_DIR", EnvDir: ".cache/pip"},
}

// caches binds the shared download caches into a per-project home with
// `cache shared` (the last cache directive whose conditions hold); with
// `cache project`, the default, each home keeps its own, and nothing is
// done. The sources, Homes/CacheName/NAME, are made by the launcher and
// checked on the fd it binds them from.
func (l *Launch) caches(h Host, s Spec, env *environ) error {
	args, from, err := l.setting(h, s, sandboxcfg.Cache, []string{sandboxcfg.CacheProject})
	if err != nil {
		return err
	}
	if args[0] != sandboxcfg.CacheShared {
		return nil
	}
	if l.Homes == "" {
		l.Notes = append(l.Notes, fmt.Sprintf("cache: shared (%s), but the home is shared by every project, and so are its caches", from))
		return nil
	}
	for _, c := range SharedCaches {
		src := filepath.Join(l.Homes, CacheName, c.Name)
		dest := filepath.Join(s.Home, c.Dest)
		if c.Name == "cargo-registry" {
			// cargo keeps its registry in CARGO_HOME, ~/.cargo unless
			// the environment names one in the home.
			if v, ok := env.get("CARGO_HOME"); ok && under(filepath.Clean(v), s.Home) {
				dest = filepath.Join(filepath.Clean(v), "registry")
			}
		}
		// bwrap makes the mount point in the sandbox home by name.
		if err := noSymlinkBelow(h, s.Home, s.SandboxHome, dest); err != nil {
			return fmt.Errorf("cache shared: %w", err)
		}
		l.Plan.Ops = append(l.Plan.Ops, bwrap.Op{Kind: bwrap.Bind, Src: src, Dest: dest, Origin: "cache shared"})
		if c.Env != "" {
			l.setInside(env, c.Env, filepath.Join(s.Home, c.EnvDir))
		}
		l.Notes = append(l.Notes, fmt.Sprintf("cache: %s shared by every project at %s (cache shared, %s)", qname.String(src), qname.String(dest), from))
	}
	return nil
}
