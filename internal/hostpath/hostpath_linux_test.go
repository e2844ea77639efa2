package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// tree makes, under a fresh directory, dirs (ending in /), files and
// symlinks ("name -> target"), and returns the directory's physical path.
func tree(t *testing.T, entries ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var err error
		switch {
		case strings.Contains(e, " -> "):
			name, target, _ := strings.Cut(e, " -> ")
			err = os.Symlink(target, filepath.Join(root, name))
		case e[len(e)-1] == '/':
			err = os.MkdirAll(filepath.Join(root, e), 0o755)
		default:
			err = os.WriteFile(filepath.Join(root, e), nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestOpen(t *testing.T) {
	root := tree(t, "a/b/", "a/b/f", "a/rel -> b", "a/up -> ../a/b/f",
		"loop -> loop", "a/dangling -> nowhere", "a/chain -> rel")
	// An absolute target needs the root's path.
	if err := os.Symlink(filepath.Join(root, "a/b"), filepath.Join(root, "a/abs")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		followLast bool
		wantPath   string
		wantHops   []string
		wantErr    error
		symlink    bool
	}{
		{"a/b/f", true, "a/b/f", nil, nil, false},
		{"a/rel/f", true, "a/b/f", []string{"a/rel"}, nil, false},
		{"a/abs/f", true, "a/b/f", []string{"a/abs"}, nil, false},
		{"a/up", true, "a/b/f", []string{"a/up"}, nil, false},
		{"a/chain/f", true, "a/b/f", []string{"a/chain", "a/rel"}, nil, false},
		{"a/rel", false, "a/rel", nil, nil, true},
		{"a/rel", true, "a/b", []string{"a/rel"}, nil, false},
		{"a/b/../b/./f", true, "a/b/f", nil, nil, false},
		{"loop", true, "", nil, unix.ELOOP, false},
		{"a/dangling", true, "", nil, fs.ErrNotExist, false},
		{"a/missing/x", true, "", nil, fs.ErrNotExist, false},
		{"a/b/f/x", true, "", nil, unix.ENOTDIR, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, err := Open(filepath.Join(root, tt.path), tt.followLast)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Path != filepath.Join(root, tt.wantPath) {
				t.Errorf("Path = %q, want %q", r.Path, filepath.Join(root, tt.wantPath))
			}
			var hops []string
			for _, h := range r.Hops {
				rel, _ := filepath.Rel(root, h.Path)
				hops = append(hops, rel)
				// Dir is the directory holding the link.
				id, _ := Stat(h.Dir)
				var st unix.Stat_t
				unix.Stat(filepath.Dir(h.Path), &st)
				if id != (ID{uint64(st.Dev), st.Ino}) {
					t.Errorf("hop %s: Dir is not its directory", rel)
				}
			}
			if d := cmp.Diff(tt.wantHops, hops); d != "" {
				t.Errorf("hops (-want +got):\n%s", d)
			}
			if r.IsSymlink() != tt.symlink {
				t.Errorf("IsSymlink = %v", r.IsSymlink())
			}
			// The fd is the file the path names now.
			var st unix.Stat_t
			unix.Lstat(r.Path, &st)
			if r.ID() != (ID{uint64(st.Dev), st.Ino}) {
				t.Errorf("fd is not %s", r.Path)
			}
		})
	}
	if _, err := Open("relative", true); err == nil {
		t.Error("relative path accepted")
	}
}

func TestWithin(t *testing.T) {
	root := tree(t, "w/x/y/", "other/")
	w, err := Open(filepath.Join(root, "w"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ids := map[ID]string{w.ID(): "w"}
	for path, want := range map[string]bool{"w": true, "w/x": true, "w/x/y": true, "other": false, "": false} {
		r, err := Open(filepath.Join(root, path), true)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := Within(r.File, ids)
		r.Close()
		if err != nil || got != want {
			t.Errorf("Within(%q) = %v, %v; want %v", path, got, err, want)
		}
	}
}

func TestChild(t *testing.T) {
	root := tree(t, "real/", "real/d/", "real/l -> d", "link -> real")
	p, err := Open(filepath.Join(root, "link"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := p.Child("d")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Path != filepath.Join(root, "real/d") || !c.IsDir() || len(c.Hops) != 1 || c.Hops[0].Path != filepath.Join(root, "link") {
		t.Errorf("Child(d) = %q dir=%v hops=%v", c.Path, c.IsDir(), c.Hops)
	}
	if pid, _ := Stat(c.Parent()); pid != p.ID() {
		t.Errorf("Child's Parent is not the directory")
	}
	l, err := p.Child("l")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.IsSymlink() {
		t.Errorf("Child(l) followed the symlink")
	}
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := p.Child(bad); err == nil {
			t.Errorf("Child(%q) accepted", bad)
		}
	}
	if _, err := p.Child("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Child(missing) = %v, want ErrNotExist", err)
	}
}

// requireOpenat2 skips (fails in CI) unless the kernel has openat2.
func requireOpenat2(t *testing.T) {
	t.Helper()
	fd, err := openat2("/")
	if err != nil {
		testutil.Missing(t, "openat2: %v (Linux 5.6 has it)", err)
		return
	}
	unix.Close(fd)
}

// describe returns what a caller of Open sees of a result: the path, the
// file, the directory holding it, the hops, or the error.
func describe(t *testing.T, root string, r *Resolved, err error) string {
	t.Helper()
	if err != nil {
		rel := strings.Replace(err.Error(), root, "ROOT", 1)
		var errno unix.Errno
		errors.As(err, &errno)
		return fmt.Sprintf("error %q (%d)", rel, errno)
	}
	defer r.Close()
	parent, err := Stat(r.Parent())
	if err != nil {
		t.Fatal(err)
	}
	var hops []string
	for _, h := range r.Hops {
		id, _ := Stat(h.Dir)
		hops = append(hops, fmt.Sprintf("%s in %v", strings.TrimPrefix(h.Path, root), id))
	}
	return fmt.Sprintf("%s %v mode %o parent %v hops %v", strings.TrimPrefix(r.Path, root), r.ID(), r.Stat.Mode, parent, hops)
}

// TestOpenWholeAsTheWalk checks that resolving a whole path in one
// openat2 gives the caller what the component walk gives: the same file,
// directory and path, every symlink on the way as a hop (so that a caller
// refuses a link in a writable place as before), and the same error
// naming the same component.
func TestOpenWholeAsTheWalk(t *testing.T) {
	requireOpenat2(t)
	root := tree(t, "a/b/", "a/b/f", "a/rel -> b", "a/up -> ../a/b/f",
		"loop -> loop", "a/dangling -> nowhere", "a/chain -> rel")
	if err := os.Symlink(filepath.Join(root, "a/b"), filepath.Join(root, "a/abs")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		followLast bool
		// whole: the path takes the openat2 route (no symlink on the
		// way, clean, nothing fails).
		whole bool
	}{
		{"a/b/f", true, true},
		{"a/b/f", false, true},
		{"a/b", true, true},
		{"a", true, true},
		{"a/rel", false, true},
		{"a/rel", true, false},
		{"a/rel/f", true, false},
		{"a/abs/f", true, false},
		{"a/abs/f", false, false},
		{"a/up", true, false},
		{"a/chain/f", true, false},
		{"a/b/../b/./f", true, false},
		{"a//b/f", true, false},
		{"a/b/", true, false},
		{"loop", true, false},
		{"loop/x", true, false},
		{"a/dangling", true, false},
		{"a/dangling", false, true},
		{"a/missing/x", true, false},
		{"a/b/missing", true, true},
		{"a/b/missing", false, true},
		{"a/b/f/x", true, false},
		{"a/rel/missing", false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s,%v", tt.path, tt.followLast), func(t *testing.T) {
			path := root + "/" + tt.path
			w, werr := openWhole(path, tt.followLast)
			if took := w != nil || werr != nil; took != tt.whole {
				t.Errorf("openWhole(%q) took the openat2 route: %v, want %v", tt.path, took, tt.whole)
			}
			if w != nil {
				if len(w.Hops) != 0 {
					t.Errorf("openWhole(%q) has hops %v", tt.path, w.Hops)
				}
				w.Close()
			}
			r, err := Open(path, tt.followLast)
			got := describe(t, root, r, err)
			r, err = walk(path, tt.followLast)
			want := describe(t, root, r, err)
			if got != want {
				t.Errorf("Open(%q, %v) = %s, the walk gives %s", tt.path, tt.followLast, got, want)
			}
		})
	}
}

// TestOpenWholeRefusesEverySymlink checks the openat2 route against a
// symlink at each place of a path: it never resolves one itself, so the
// walk records it.
func TestOpenWholeRefusesEverySymlink(t *testing.T) {
	requireOpenat2(t)
	root := tree(t, "d/e/f/", "d/e/f/g", "l1 -> d", "d/l2 -> e", "d/e/l3 -> f", "d/e/f/l4 -> g")
	for _, p := range []string{"l1/e/f/g", "d/l2/f/g", "d/e/l3/g", "d/e/f/l4"} {
		if r, _ := openWhole(root+"/"+p, true); r != nil {
			r.Close()
			t.Errorf("openWhole(%q) resolved a symlink", p)
		}
		r, err := Open(root+"/"+p, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hops) != 1 || r.Path != root+"/d/e/f/g" {
			t.Errorf("Open(%q) = %q hops %v, want d/e/f/g through one hop", p, r.Path, r.Hops)
		}
		r.Close()
	}
	// A magic link (/proc/self/root) on the way is not followed either.
	if r, _ := openWhole("/proc/self/root/etc", true); r != nil {
		r.Close()
		t.Errorf("openWhole(/proc/self/root/etc) followed a magic link")
	}
}

// BenchmarkOpen compares the component walk with one openat2 on a path of
// a few components without symlinks, such as the launcher's bind sources.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	path, err := filepath.EvalSymlinks(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct {
		name string
		open func(string, bool) (*Resolved, error)
	}{{"walk", walk}, {"openat2", Open}} {
		b.Run(bm.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r, err := bm.open(path, true)
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}

// CloseParent closes the parent's fd, whether Open opened it whole or
// walked (through a symlink), and leaves the file; Close afterwards closes
// the rest once.
func TestCloseParent(t *testing.T) {
	root := tree(t, "a/", "a/f", "l -> a")
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	for _, p := range []string{root + "/a/f", root + "/l/f"} {
		before := count()
		r, err := Open(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if r.Parent() == nil {
			t.Fatalf("%s: no parent before CloseParent", p)
		}
		opened := count() - before
		r.CloseParent()
		if r.Parent() != nil {
			t.Errorf("%s: Parent after CloseParent is not nil", p)
		}
		if got := count() - before; got != opened-1 {
			t.Errorf("%s: fds held after CloseParent: %d, want %d", p, got, opened-1)
		}
		if _, err := Stat(r.File); err != nil {
			t.Errorf("%s: the file after CloseParent: %v", p, err)
		}
		r.Close()
		if got := count(); got != before {
			t.Errorf("%s: fds after Close: %d, want %d", p, got, before)
		}
	}
}
