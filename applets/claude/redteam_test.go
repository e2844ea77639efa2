//go:build linux

package claude_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestRedteamToolchainLinkFromEarlierProject performs the attack: the agent
// in project A replaces ~/a/bin with a symlink to project B, which holds a
// secret; later the user puts ~/a/bin on PATH. The next session, in
// project C, must not show project B: the link lies where an
// earlier sandbox wrote, and a bind source reached through it is refused
// (as it is for a `ro` line), never resolved and bound by its target.
func TestRedteamToolchainLinkFromEarlierProject(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	a, b, c := filepath.Join(s.Home, "a"), filepath.Join(s.Home, "b"), filepath.Join(s.Home, "c")
	for _, d := range []string{a, filepath.Join(a, "bin"), b, c} {
		mkUserDir(t, s, d)
	}
	writeUserFile(t, s, filepath.Join(b, "secret"), "SECRET-"+m+"\n", 0o600)
	// The earlier session, in project A, before the user put ~/a/bin on
	// PATH, plants the link.
	mustOK(t, shellIn(t, s, a, `rm -rf bin && ln -s `+b+` bin`))

	s.Env = append(s.Env, "PATH="+filepath.Join(a, "bin")+":/usr/bin:/bin")
	r := shellIn(t, s, c, `cat `+b+`/secret; echo rc=$?`)
	if strings.Contains(r.Stdout+r.Stderr, "SECRET-"+m) {
		t.Errorf("project B's file is readable in project C through a link project A planted in PATH:\n%v", r)
	}
}
