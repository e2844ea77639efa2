//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestRepositoriesTheSandboxMadeNeverRunOnTheHost makes, from inside,
// repositories whose core.fsmonitor touches a marker: 2 and 5 levels down
// in the project, a .git file naming a git directory in the sandbox home,
// a bare layout with a work tree, and `git init ~`; then runs git status
// as the user on the host in each, as a prompt does after a cd, and checks
// that no marker was written and that the exit said what it did.
func TestRepositoriesTheSandboxMadeNeverRunOnTheHost(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	markers := filepath.Join(s.Home, "markers")
	mkUserDir(t, s, markers)
	proj := filepath.Join(s.Home, "src", "nestedgit")
	mkUserDir(t, s, proj)
	// A first start makes the sandbox home, whose host path the agent can
	// read in /proc/self/mountinfo.
	cmd := s.Command("--shell", "-c", "true")
	cmd.Dir = proj
	mustOK(t, testutil.RunCommand(t, cmd))
	homes, _ := filepath.Glob(filepath.Join(s.Home, ".claude-homes", "nestedgit-*"))
	if len(homes) != 1 {
		t.Fatalf("want one sandbox home, got %q", homes)
	}
	sbx := homes[0]
	script := `set -eu
fsm() { printf '#!/bin/sh\ntouch ` + markers + `/%s\n' "$1" > "$2/fsm.sh"; chmod +x "$2/fsm.sh"; }
mk() { mkdir -p "$1"; git init -q "$1"; fsm "$2" "$1"; git -C "$1" config core.fsmonitor ./fsm.sh; }
mk a/b two
mk c/d/e/f/g five
git init -q --bare ~/sep
mkdir gitfile
fsm gitfile gitfile
git --git-dir ~/sep config core.bare false
git --git-dir ~/sep config core.fsmonitor ./fsm.sh
printf 'gitdir: ` + sbx + `/sep\n' > gitfile/.git
git init -q --bare layout
mkdir layout-wt
fsm bare layout-wt
git --git-dir layout config core.bare false
git --git-dir layout config core.worktree ` + proj + `/layout-wt
git --git-dir layout config core.fsmonitor ./fsm.sh
git init -q ~
fsm home ~
git -C ~ config core.fsmonitor ./fsm.sh
`
	cmd = s.Command("--shell", "-c", script)
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	for _, dir := range []string{
		filepath.Join(proj, "a", "b"), filepath.Join(proj, "c/d/e/f/g"),
		filepath.Join(proj, "gitfile"), filepath.Join(proj, "layout"), filepath.Join(proj, "layout-wt"),
		sbx, filepath.Join(sbx, ".claude"),
	} {
		// What a prompt runs after a cd; it may fail, it must not run.
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
		c := s.User.Command(s.Home, "git", "-C", dir, "status")
		c.Dir = dir
		c.Env = append(c.Env, "GIT_CONFIG_NOSYSTEM=1")
		testutil.RunCommand(t, c)
		if ents, _ := os.ReadDir(markers); len(ents) > 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
				os.Remove(filepath.Join(markers, e.Name()))
			}
			t.Errorf("host git status in %s ran what the sandbox wrote: markers %q", dir, names)
		}
	}
	for _, want := range []string{
		proj + "/a/b/.git was made or changed in the sandbox; made inert",
		proj + "/c/d/e/f/g/.git was made or changed",
		proj + "/gitfile/.git was made or changed",
		"the git directory " + sbx + "/sep was made or changed",
		"the git directory " + proj + "/layout was made or changed",
		sbx + "/.git was made or changed",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q: %v", want, r)
		}
	}
	// The next start protects nothing it made inert, and says nothing
	// more of them.
	cmd = s.Command("--shell", "-c", "true")
	cmd.Dir = proj
	r = testutil.RunCommand(t, cmd)
	mustOK(t, r)
	if strings.Contains(r.Stderr, "inert") {
		t.Errorf("a second start made something inert again: %v", r)
	}
}

// TestEmptyDotGitFilledLater: an empty .git directory is left at exit (it
// is what bwrap makes as a mount point; git takes none for a repository).
// The agent tries to fill it in a later session with a HEAD and a
// commondir naming a bare layout of its own, whose config sets
// core.fsmonitor: that start protects it as a repository (read-only), and
// a host git status in it runs nothing.
func TestEmptyDotGitFilledLater(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	markers := filepath.Join(s.Home, "markers")
	mkUserDir(t, s, markers)
	proj := filepath.Join(s.Home, "src", "filled")
	mkUserDir(t, s, proj)
	cmd := s.Command("--shell", "-c", "mkdir -p sub/.git")
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	mustOK(t, r)
	if strings.Contains(r.Stderr, "inert") {
		t.Errorf("an empty .git was made inert: %v", r)
	}
	script := `git init -q --bare common
printf '#!/bin/sh\ntouch ` + markers + `/filled\n' > sub/fsm.sh
chmod +x sub/fsm.sh
git --git-dir common config core.bare false
git --git-dir common config core.fsmonitor ./fsm.sh
echo 'ref: refs/heads/main' > sub/.git/HEAD
echo ` + proj + `/common > sub/.git/commondir
git -C sub status >/dev/null 2>&1 || true
`
	cmd = s.Command("--shell", "-c", script)
	cmd.Dir = proj
	r = testutil.RunCommand(t, cmd)
	mustOK(t, r)
	want := "sub/.git/HEAD: Read-only file system"
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q: %v", want, r)
	}
	os.RemoveAll(filepath.Join(markers, "filled")) // the sandbox's own git status
	c := s.User.Command(s.Home, "git", "-C", filepath.Join(proj, "sub"), "status")
	c.Env = append(c.Env, "GIT_CONFIG_NOSYSTEM=1")
	testutil.RunCommand(t, c)
	if _, err := os.Stat(filepath.Join(markers, "filled")); err == nil {
		t.Errorf("host git status in %s/sub ran the agent's fsmonitor", proj)
	}
}
