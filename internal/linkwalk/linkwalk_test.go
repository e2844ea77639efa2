package linkwalk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

type osHost struct{}

func (osHost) Lstat(p string) (fs.FileInfo, error) { return os.Lstat(p) }
func (osHost) Readlink(p string) (string, error)   { return os.Readlink(p) }

func TestWalk(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "real/sub"), 0o755))
	must(os.Symlink("real", filepath.Join(d, "rel")))
	must(os.Symlink(filepath.Join(d, "rel"), filepath.Join(d, "abs")))
	must(os.Symlink("loop", filepath.Join(d, "loop")))
	for _, tt := range []struct {
		name, in, want string
		links          []string
		err            string
	}{
		{name: "plain", in: d + "/real/sub", want: d + "/real/sub"},
		{name: "relative link", in: d + "/rel/sub", want: d + "/real/sub", links: []string{d + "/rel"}},
		{name: "chain", in: d + "/abs/sub/.", want: d + "/real/sub", links: []string{d + "/abs", d + "/rel"}},
		{name: "dot-dot after a link is the target's parent", in: d + "/abs/sub/../sub", want: d + "/real/sub", links: []string{d + "/abs", d + "/rel"}},
		{name: "missing", in: d + "/rel/nope/x", links: []string{d + "/rel"}, err: "missing " + d + "/real/nope/x"},
		{name: "loop", in: d + "/loop", err: "loop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var links []string
			got, err := Walk(osHost{}, tt.in, func(p string) error { links = append(links, p); return nil })
			var me *MissingError
			switch {
			case tt.err == "loop":
				if !errors.Is(err, ErrLoop) {
					t.Fatalf("Walk(%s) error = %v, want ErrLoop", tt.in, err)
				}
				return
			case tt.err != "":
				if !errors.As(err, &me) || "missing "+me.Rest != tt.err || !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Walk(%s) error = %v, want %s", tt.in, err, tt.err)
				}
			case err != nil || got != tt.want:
				t.Fatalf("Walk(%s) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			if len(links) != len(tt.links) {
				t.Fatalf("links = %q, want %q", links, tt.links)
			}
			for i := range links {
				if links[i] != tt.links[i] {
					t.Errorf("links = %q, want %q", links, tt.links)
				}
			}
		})
	}
	stop := errors.New("stop")
	if _, err := Walk(osHost{}, d+"/abs/sub", func(string) error { return stop }); err != stop {
		t.Errorf("Walk with a refusing link func = %v, want its error", err)
	}
}

// TestResolve: what does not exist is appended as written after the links
// followed (a dangling link names its target, a link through a link too);
// what cannot be looked at is an error, never a path.
func TestResolve(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "src/proj"), 0o755))
	must(os.Symlink("src/proj", filepath.Join(d, "p")))
	must(os.Symlink(filepath.Join(d, "p/build/tool"), filepath.Join(d, "tool")))
	must(os.Symlink("tool", filepath.Join(d, "tool2")))
	must(os.Symlink("loop", filepath.Join(d, "loop")))
	for _, tt := range []struct {
		name, in, want string
		hops           []string
	}{
		{"prefix exists", d + "/p/bin", d + "/src/proj/bin", []string{d + "/p"}},
		{"dangling", d + "/tool", d + "/src/proj/build/tool", []string{d + "/tool", d + "/p"}},
		{"through a link", d + "/tool2", d + "/src/proj/build/tool", []string{d + "/tool2", d + "/tool", d + "/p"}},
		{"nothing exists", d + "/none/a/b", d + "/none/a/b", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, hops, err := Resolve(osHost{}, tt.in)
			if err != nil || got != tt.want || len(hops) != len(tt.hops) {
				t.Fatalf("Resolve(%s) = %q, %q, %v; want %q, %q", tt.in, got, hops, err, tt.want, tt.hops)
			}
			for i := range hops {
				if hops[i] != tt.hops[i] {
					t.Errorf("hops = %q, want %q", hops, tt.hops)
				}
			}
		})
	}
	if _, _, err := Resolve(osHost{}, d+"/loop/x"); !errors.Is(err, ErrLoop) {
		t.Errorf("Resolve(loop) error = %v, want ErrLoop", err)
	}
}
