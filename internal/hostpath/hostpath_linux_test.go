package hostpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
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
	if pid, _ := Stat(c.Parent); pid != p.ID() {
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
