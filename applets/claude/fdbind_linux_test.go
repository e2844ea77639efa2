package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/hostpath"
)

// within remembers the walk up from a directory, not its answer: a root
// added after the first question (a directory bindFromFDs creates) counts
// in the next.
func TestWithinRemembersTheWalkNotTheAnswer(t *testing.T) {
	top := t.TempDir()
	deep := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	b := &bound{roots: map[hostpath.ID]string{}}
	d := openPath(t, deep)
	if _, in, err := b.within(d); err != nil || in {
		t.Fatalf("within with no roots = %v, %v; want false", in, err)
	}
	if len(b.above) != 1 {
		t.Fatalf("walks remembered: %d, want 1", len(b.above))
	}
	id, err := hostpath.Stat(openPath(t, filepath.Join(top, "a")))
	if err != nil {
		t.Fatal(err)
	}
	b.roots[id] = "a"
	got, in, err := b.within(d)
	if err != nil || !in || got != id {
		t.Fatalf("within after adding the root a = %v, %v, %v; want %v, true", got, in, err, id)
	}
	if len(b.above) != 1 {
		t.Errorf("walks remembered: %d, want still 1 (the walk is reused)", len(b.above))
	}
}

// openFDs counts the process's open fds.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// The system's sources opened while the plan is made are the ones the
// binds use, and those the plan does not bind are closed.
func TestEarlyOpensTakenOrClosed(t *testing.T) {
	before := openFDs(t)
	e := earlyOpen()
	b := binder{rules: map[string]srcRule{}, early: e}
	ops := []bwrap.Op{{Kind: bwrap.ROBindTry, Src: "/etc/passwd", Dest: "/etc/passwd"}}
	pre := b.preopen(ops)
	if pre[0].err != nil || pre[0].r == nil {
		t.Fatalf("preopen /etc/passwd = %v, %v", pre[0].r, pre[0].err)
	}
	if _, ok := e.m["/etc/passwd"]; ok {
		t.Errorf("/etc/passwd was opened again, not taken from the early opens")
	}
	if len(e.m) == 0 {
		t.Fatal("nothing else opened early: the test checks nothing")
	}
	e.close()
	pre[0].r.Close()
	if after := openFDs(t); after != before {
		t.Errorf("open fds: %d before, %d after", before, after)
	}
}
