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
