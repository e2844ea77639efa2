package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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

// A start holds one fd per bind source until the fork, not two (the
// source and its parent): past 64 fds, growing the fd table of a process
// with threads waits for an RCU grace period. A dev bind, made by path,
// keeps its parent, which its check needs.
func TestSourcesHoldOneFDEach(t *testing.T) {
	dir := t.TempDir()
	var ops []bwrap.Op
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, bwrap.Op{Kind: bwrap.ROBind, Src: p, Dest: p})
	}
	ops = append(ops, bwrap.Op{Kind: bwrap.DevBind, Src: dir, Dest: "/dev/x"})
	e := earlyOpen()
	sys := e.wait()
	for p, o := range sys {
		if o.err == nil && o.r.Parent() != nil {
			t.Errorf("early open %s holds its parent", p)
		}
	}
	e.close()
	before := openFDs(t)
	pre := binder{rules: map[string]srcRule{}}.preopen(ops)
	held := openFDs(t) - before
	for i, o := range pre {
		if o.err != nil {
			t.Fatalf("preopen %s: %v", ops[i].Src, o.err)
		}
		if dev := ops[i].Kind == bwrap.DevBind; (o.r.Parent() != nil) != dev {
			t.Errorf("preopen %s: holds its parent: %v, want %v", ops[i].Src, o.r.Parent() != nil, dev)
		}
		o.r.Close()
	}
	if want := len(ops) + 1; held != want {
		t.Errorf("preopen of %d sources (one a dev bind) holds %d fds, want %d", len(ops), held, want)
	}
}

// growFDTable grows the table to the size asked for, which
// /proc/self/status shows as FDSize.
func TestGrowFDTable(t *testing.T) {
	fdSize := func() int {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "FDSize:"); ok {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatal("no FDSize in /proc/self/status")
		return 0
	}
	want := 2 * fdSize()
	before := openFDs(t)
	growFDTable(want)
	if got := fdSize(); got < want {
		t.Errorf("FDSize after growFDTable(%d) = %d", want, got)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds: %d before, %d after", before, after)
	}
}

// A bind source's fd whose number was closed elsewhere and taken by
// another file is refused before bwrap gets it.
func TestBoundRefusesAnFDThatChanged(t *testing.T) {
	dir := t.TempDir()
	r, err := hostpath.Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := &bound{ids: []hostpath.ID{r.ID()}, files: []*os.File{r.TakeFile()}}
	defer b.Close()
	if err := b.sameFiles(); err != nil {
		t.Fatalf("the fd as opened: %v", err)
	}
	// What a double close and a later open do to the number.
	other, err := os.Open("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Dup2(int(other.Fd()), int(b.files[0].Fd())); err != nil {
		t.Fatal(err)
	}
	err = b.sameFiles()
	if err == nil || !strings.Contains(err.Error(), "is not the file that was checked: another file has its number: refusing to start") {
		t.Fatalf("sameFiles = %v, want the fd refused", err)
	}
}
