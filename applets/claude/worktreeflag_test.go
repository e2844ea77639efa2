//go:build linux

package claude_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// worktreeAgent installs a fake agent that says what it was given and
// where it runs, and tries to write in its working directory and in the
// repository; it lists the main checkout, of which only the mount points of
// the repository and of the worktree are there.
func worktreeAgent(t *testing.T, s *testutil.Sandbox, main string) {
	t.Helper()
	script := `#!/bin/sh
printf 'args:%s\n' "$*"
printf 'pwd:%s\n' "$(pwd)"
touch mine && echo wrote-mine
ls -A ` + main + ` 2>&1
touch ` + main + `/.git/x 2>&1
git log --format=%s 2>&1
git status --short 2>&1
`
	if err := os.WriteFile(filepath.Join(s.BinDir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// mainRepo makes ~/src/pa with one commit.
func mainRepo(t *testing.T, s *testutil.Sandbox) string {
	t.Helper()
	main := filepath.Join(s.Home, "src", "pa")
	mkUserDir(t, s, main)
	writeUserFile(t, s, filepath.Join(main, "file"), "one\n", 0o644)
	hostGit(t, s, main, "init", "-q", "-b", "main")
	hostGit(t, s, main, "add", "file")
	hostGit(t, s, main, "commit", "-qm", "one")
	return main
}

// TestWorktreeFlag: `claude -w feat1` makes the worktree
// .claude/worktrees/feat1 on the branch worktree-feat1 with the user's git
// on the host, and runs the agent there without the flag: its worktree
// read-write, the main checkout not visible, git working. A second start
// with the same name runs in it again.
func TestWorktreeFlag(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	main := mainRepo(t, s)
	worktreeAgent(t, s, main)
	wt := filepath.Join(main, ".claude", "worktrees", "feat1")
	sub := filepath.Join(main, "sub")
	mkUserDir(t, s, sub)
	cmd := s.Command("-w", "feat1", "-p", "hi")
	cmd.Dir = sub // from anywhere in the checkout
	r := testutil.RunCommand(t, cmd)
	want := "args:-p hi\npwd:" + wt + "\nwrote-mine\n.claude\n.git\ntouch: cannot touch '" + main + "/.git/x': Read-only file system\none\n?? mine\n"
	if r.Code != 0 || r.Stdout != want {
		t.Errorf("claude -w feat1 -p hi: want exit 0 and stdout\n%s%v", want, r)
	}
	made := "claude: -w: made the worktree " + wt + " on the new branch worktree-feat1\n"
	bye := "claude: -w: the worktree " + wt + " (branch worktree-feat1) stays; when you are done with it: git -C " + main + " worktree remove " + wt + "\n"
	if !strings.HasPrefix(r.Stderr, made) || !strings.HasSuffix(r.Stderr, bye) {
		t.Errorf("stderr: want first %q and last %q: %v", made, bye, r)
	}
	list := hostGit(t, s, main, "worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+wt+"\n") || !strings.Contains(list, "branch refs/heads/worktree-feat1\n") {
		t.Errorf("host git worktree list:\n%s", list)
	}
	if _, err := os.Stat(filepath.Join(wt, "mine")); err != nil {
		t.Errorf("the agent's file in its worktree: %v", err)
	}
	if strings.Contains(r.Stderr, "inert") {
		t.Errorf("nothing is made inert (the repository's mount point in the sandbox home is an empty directory): %v", r)
	}

	cmd = s.Command("--worktree=feat1", "-p", "again")
	cmd.Dir = main
	r = testutil.RunCommand(t, cmd)
	again := "claude: -w: the session runs in the worktree " + wt + " again\n"
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "args:-p again\npwd:"+wt+"\n") || !strings.HasPrefix(r.Stderr, again) {
		t.Errorf("the second start with the same name: want it in %s, stderr starting %q: %v", wt, again, r)
	}
}

// TestWorktreeFlagRefusesPlantedLinks: the agent of an earlier session in
// the main checkout can write its .claude directory. A symlink there, at
// any level, is never followed by the host's git: the start is refused
// naming it, and nothing is made where it points. A directory of the
// name that is no worktree is refused too.
func TestWorktreeFlagRefusesPlantedLinks(t *testing.T) {
	testutil.RequireCommand(t, "git")
	for _, tt := range []struct {
		name, link string // link: the path below the checkout made a symlink
	}{
		{".claude", ".claude"},
		{"worktrees", ".claude/worktrees"},
		{"the worktree itself", ".claude/worktrees/feat1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.NewSandbox(t)
			main := mainRepo(t, s)
			worktreeAgent(t, s, main)
			target := filepath.Join(s.Home, ".config", "victim")
			mkUserDir(t, s, filepath.Join(s.Home, ".config"))
			mkUserDir(t, s, target)
			link := filepath.Join(main, tt.link)
			mkUserDir(t, s, filepath.Dir(link))
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			s.User.Chown(t, link)
			cmd := s.Command("-w", "feat1", "-p", "hi")
			cmd.Dir = main
			r := testutil.RunCommand(t, cmd)
			want := "claude: -w: " + link + " is a symlink or not a directory (the agent may have made it): remove it\n"
			if r.Code != 1 || r.Stdout != "" || r.Stderr != want {
				t.Errorf("want exit 1 and stderr %q: %v", want, r)
			}
			if ents, _ := os.ReadDir(target); len(ents) != 0 {
				t.Errorf("made through the planted link: %v", ents)
			}
		})
	}
	t.Run("not a worktree", func(t *testing.T) {
		s := testutil.NewSandbox(t)
		main := mainRepo(t, s)
		dir := filepath.Join(main, ".claude", "worktrees", "feat1")
		mkUserDir(t, s, filepath.Join(main, ".claude"))
		mkUserDir(t, s, filepath.Join(main, ".claude", "worktrees"))
		mkUserDir(t, s, dir)
		cmd := s.Command("-w", "feat1")
		cmd.Dir = main
		r := testutil.RunCommand(t, cmd)
		want := "claude: -w feat1: " + dir + " exists and is not a worktree of " + main + ": remove it or choose another name\n"
		if r.Code != 1 || r.Stderr != want {
			t.Errorf("want exit 1 and stderr %q: %v", want, r)
		}
	})
	t.Run("no repository", func(t *testing.T) {
		s := testutil.NewSandbox(t)
		dir := filepath.Join(s.Home, "plain")
		mkUserDir(t, s, dir)
		cmd := s.Command("-w", "feat1")
		cmd.Dir = dir
		r := testutil.RunCommand(t, cmd)
		want := "claude: -w: the working directory " + dir + " is in no git checkout below your home: run claude -w in a repository\n"
		if r.Code != 1 || r.Stderr != want {
			t.Errorf("want exit 1 and stderr %q: %v", want, r)
		}
	})
}

// TestWorktreeFlagDryRun: the dry run says what -w would make and makes
// nothing.
func TestWorktreeFlagDryRun(t *testing.T) {
	testutil.RequireCommand(t, "git")
	s := testutil.NewSandbox(t)
	main := mainRepo(t, s)
	cmd := s.Command("--sandbox-dry-run", "-w", "feat1", "-p", "hi")
	cmd.Dir = main
	r := testutil.RunCommand(t, cmd)
	want := "claude: -w: would make the worktree " + filepath.Join(main, ".claude/worktrees/feat1") + " on the branch worktree-feat1 with your git (the dry run shows the working directory's sandbox)\n"
	if r.Code != 0 || !strings.HasPrefix(r.Stderr, want) {
		t.Errorf("want exit 0 and stderr starting %q: %v", want, r)
	}
	if f := strings.Fields(strings.ReplaceAll(r.Stdout, "\\", "")); len(f) < 3 || f[len(f)-3] == "-w" || f[len(f)-2] != "-p" || f[len(f)-1] != "hi" || slices.Contains(f, "feat1") {
		t.Errorf("the dry run's chain must end in the agent's arguments without -w: %v", r)
	}
	if _, err := os.Lstat(filepath.Join(main, ".claude")); err == nil {
		t.Errorf("the dry run made %s/.claude", main)
	}
}
