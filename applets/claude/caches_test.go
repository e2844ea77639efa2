//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestSharedCaches: with `cache shared`, a file project A's sandbox puts
// in Go's module cache is there in project B's (through
// ~/.claude-homes/cache/gomod, a directory of the user's, 0700); with the
// default, `cache project`, each project's home keeps its own module
// cache, and the build cache is never shared.
func TestSharedCaches(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	a, b := filepath.Join(s.Home, "a"), filepath.Join(s.Home, "b")
	mkUserDir(t, s, a)
	mkUserDir(t, s, b)
	plant := `mkdir -p "$GOMODCACHE/cache/download/x" && echo MOD-` + m + ` > "$GOMODCACHE/cache/download/x/f" && ` +
		`mkdir -p ~/.cache/go-build && echo BUILD-` + m + ` > ~/.cache/go-build/f`
	look := `echo "GOMODCACHE=${GOMODCACHE:-unset}"; cat ~/go/pkg/mod/cache/download/x/f ~/.cache/go-build/f 2>&1; true`

	// The default: the module cache is project A's alone.
	mustOK(t, shellIn(t, s, a, `GOMODCACHE=~/go/pkg/mod; `+plant))
	r := shellIn(t, s, b, look)
	mustOK(t, r)
	if strings.Contains(r.Stdout, "MOD-"+m) || strings.Contains(r.Stdout, "BUILD-"+m) {
		t.Fatalf("without cache shared, project A's caches are project B's:\n%s", r.Stdout)
	}

	s.WriteConfig(t, "cache shared\n")
	r = shellIn(t, s, a, plant+` && echo "GOMODCACHE=$GOMODCACHE"`)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "GOMODCACHE="+filepath.Join(s.Home, "go/pkg/mod")) {
		t.Errorf("with cache shared, GOMODCACHE inside = %q, want ~/go/pkg/mod", r.Stdout)
	}
	r = shellIn(t, s, b, look)
	mustOK(t, r)
	if !strings.Contains(r.Stdout, "MOD-"+m) {
		t.Errorf("with cache shared, project A's module cache is not project B's:\n%s", r.Stdout)
	}
	if strings.Contains(r.Stdout, "BUILD-"+m) {
		t.Errorf("with cache shared, project A's build cache is project B's:\n%s", r.Stdout)
	}
	gomod := filepath.Join(s.Home, ".claude-homes", "cache", "gomod")
	if got, err := os.ReadFile(filepath.Join(gomod, "cache/download/x/f")); err != nil || string(got) != "MOD-"+m+"\n" {
		t.Errorf("shared module cache on the host = %q, %v; want MOD-%s", got, err, m)
	}
	for _, d := range []string{filepath.Dir(gomod), gomod} {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s = %v, %v; want a directory with mode 0700", d, fi, err)
		}
	}
}

// TestSharedCacheSymlinkRefused performs the attack on the host side: the
// shared cache's directory replaced by a symlink to a secret directory
// (by anyone who could write ~/.claude-homes) must not be bound.
func TestSharedCacheSymlinkRefused(t *testing.T) {
	s := testutil.NewSandbox(t)
	proj := filepath.Join(s.Home, "p")
	mkUserDir(t, s, proj)
	secret := filepath.Join(s.Home, ".ssh")
	mkUserDir(t, s, secret)
	s.WriteConfig(t, "cache shared\n")
	mustOK(t, shellIn(t, s, proj, `true`))
	gomod := filepath.Join(s.Home, ".claude-homes", "cache", "gomod")
	if err := os.RemoveAll(gomod); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, gomod); err != nil {
		t.Fatal(err)
	}
	s.User.Chown(t, gomod)
	r := shellIn(t, s, proj, `ls ~/go/pkg/mod`)
	want := "shared cache " + gomod + " is a symlink (to \"" + secret + "\"), not a directory: remove it"
	if r.Code == 0 || !strings.Contains(r.Stderr, want) {
		t.Errorf("start with the shared cache a symlink = %v, want a refusal %q", r, want)
	}
}
