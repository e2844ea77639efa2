package claude

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// fdList lists the open fds of the process.
func fdList(t *testing.T) []string {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return slices.DeleteFunc(names, func(n string) bool {
		// The listing's own fd, gone again.
		_, err := os.Readlink("/proc/self/fd/" + n)
		return err != nil
	})
}

// TestPrepareWorktreeLeavesTheFDTable: making the worktree walks down
// its directories with an fd each and closes each once: none stays open,
// and none is closed twice, which would close, by number, the fd another
// goroutine of the launcher opened meanwhile (a bind source opened early,
// then handed to bwrap as whatever took its number: "Can't find source
// path /proc/self/fd/N", or a file where a directory was bound).
func TestPrepareWorktreeLeavesTheFDTable(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git not found: install git")
	}
	home := t.TempDir()
	repo := filepath.Join(home, "p")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t.test", "commit", "-q", "--allow-empty", "-m", "one"},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	before := fdList(t)
	wt, err := prepareWorktree(&worktreeFlag{name: "a", given: true}, repo, home, false)
	if err != nil {
		t.Fatal(err)
	}
	if !wt.made {
		t.Fatalf("the worktree was not made: %+v", wt)
	}
	// Other tests of the package run beside this one and close theirs:
	// only an fd that is new counts.
	for _, fd := range fdList(t) {
		if !slices.Contains(before, fd) {
			t.Errorf("fd %s is open after making the worktree (before: %v)", fd, before)
		}
	}
}
