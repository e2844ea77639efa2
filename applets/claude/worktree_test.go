//go:build linux

package claude_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// A project that is a linked worktree of a repository elsewhere: git
// inside reads the common directory and the worktree's git directory,
// which are visible read-only at their paths.
func TestGitLinkedWorktreeReadOnly(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	main := filepath.Join(s.Home, "src", "pa")
	wt := filepath.Join(s.Home, "src", "pa-wt")
	mkUserDir(t, s, main)
	mkUserDir(t, s, wt)
	writeUserFile(t, s, filepath.Join(main, "file"), "one\n", 0o644)
	hostGit(t, s, main, "init", "-q")
	hostGit(t, s, main, "add", "file")
	hostGit(t, s, main, "commit", "-qm", "one")
	hostGit(t, s, main, "worktree", "add", "-q", "-b", "feature", wt)
	writeUserFile(t, s, filepath.Join(wt, "file"), "two\n", 0o644)
	// What the worktree's own config names is consulted like the
	// common one's: its hooks directory in the project is read-only.
	mkUserDir(t, s, filepath.Join(wt, "hooks"))
	hostGit(t, s, main, "config", "extensions.worktreeConfig", "true")
	hostGit(t, s, wt, "config", "--worktree", "core.hooksPath", filepath.Join(wt, "hooks"))
	cmd := s.Command("--shell", "-c", `git status --short; git log --format=%s; git diff --stat; git blame -s file | cut -c10-; git show -s --format=%s HEAD; echo end
touch `+main+`/.git/x `+main+`/.git/worktrees/pa-wt/x hooks/pre-commit 2>&1; echo ls; ls -A `+main+` 2>&1`)
	cmd.Dir = wt
	r := testutil.RunCommand(t, cmd)
	want := " M file\none\n file | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
	if !strings.HasPrefix(r.Stdout, want) || !strings.Contains(r.Stdout, "one\nend\n") {
		t.Errorf("git in a linked worktree: want stdout starting %q: %v", want, r)
	}
	if !strings.Contains(r.Stdout, "touch: cannot touch '"+main+"/.git/x': Read-only file system") ||
		!strings.Contains(r.Stdout, "touch: cannot touch '"+main+"/.git/worktrees/pa-wt/x': Read-only file system") {
		t.Errorf("the common directory must be read-only inside: %v", r)
	}
	if !strings.Contains(r.Stdout, "touch: cannot touch 'hooks/pre-commit': Read-only file system") {
		t.Errorf("the hooks directory the worktree's config names must be read-only inside: %v", r)
	}
	if !strings.HasSuffix(r.Stdout, "\nls\n.git\n") {
		t.Errorf("only the common directory of the main checkout must be visible: %v", r)
	}
}
