package bindir

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
)

func vs(ss ...string) []release.Version {
	var out []release.Version
	for _, s := range ss {
		v, err := release.ParseVersion(s)
		if err != nil {
			panic(err)
		}
		out = append(out, v)
	}
	return out
}

func v1(s string) release.Version {
	if s == "" {
		return release.Version{}
	}
	return vs(s)[0]
}

func TestPrunePlan(t *testing.T) {
	tests := []struct {
		name          string
		installed     []release.Version
		current, prev string
		keep          int
		want          []release.Version
	}{
		{"nothing to do", vs("2.1.1", "2.1.2"), "2.1.2", "2.1.1", 2, nil},
		{"four keep two", vs("2.1.1", "2.1.2", "2.1.3", "2.1.4"), "2.1.4", "2.1.3", 2, vs("2.1.2", "2.1.1")},
		{"keep three", vs("2.1.1", "2.1.2", "2.1.3", "2.1.4"), "2.1.4", "2.1.3", 3, vs("2.1.1")},
		{"previous is oldest", vs("2.1.1", "2.1.2", "2.1.3", "2.1.4"), "2.1.3", "2.1.1", 2, vs("2.1.4", "2.1.2")},
		{"keep one keeps previous", vs("2.1.1", "2.1.2", "2.1.3"), "2.1.3", "2.1.2", 1, vs("2.1.1")},
		{"no previous", vs("2.1.1", "2.1.2", "2.1.3"), "2.1.1", "", 2, vs("2.1.2")},
		{"no current", vs("2.1.1", "2.1.2", "2.1.3"), "", "", 2, vs("2.1.1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PrunePlan(tt.installed, v1(tt.current), v1(tt.prev), tt.keep)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PrunePlan() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCurrentOddLinks(t *testing.T) {
	tests := []struct {
		name  string
		setup func(dir string)
		want  string
		err   string
	}{
		{name: "relative", setup: func(d string) { os.Symlink("claude.2.1.5", filepath.Join(d, "claude")) }, want: "2.1.5"},
		{name: "absolute inside", setup: func(d string) { os.Symlink(filepath.Join(d, "claude.2.1.5"), filepath.Join(d, "claude")) }, want: "2.1.5"},
		{name: "absolute outside", setup: func(d string) { os.Symlink("/usr/bin/claude.2.1.5", filepath.Join(d, "claude")) }, err: "DIR/claude points to /usr/bin/claude.2.1.5, outside DIR: move it away and run claude-update again"},
		{name: "not a version", setup: func(d string) { os.Symlink("claude-real", filepath.Join(d, "claude")) }, err: "DIR/claude points to claude-real, not claude.<version>: move it away and run claude-update again"},
		{name: "regular file", setup: func(d string) { os.WriteFile(filepath.Join(d, "claude"), nil, 0o755) }, err: "DIR/claude is not a symlink to claude.<version>: move it away and run claude-update again"},
		{name: "none", setup: func(string) {}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(dir)
			v, ok, err := New(dir).Current()
			if tt.err != "" {
				if want := strings.ReplaceAll(tt.err, "DIR", dir); err == nil || err.Error() != want {
					t.Fatalf("Current() = %v, %v, %v; want error %q", v, ok, err, want)
				}
				return
			}
			if err != nil || ok != (tt.want != "") || ok && v.String() != tt.want {
				t.Fatalf("Current() = %v, %v, %v; want %q", v, ok, err, tt.want)
			}
		})
	}
}

func TestInstallFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	d := New(dir)
	if err := d.Lock(); err != nil {
		t.Fatal(err)
	}
	defer d.Unlock()
	v := v1("2.1.5")
	boom := errors.New("boom")
	tests := []struct {
		name  string
		fill  func(io.Writer) error
		check func(context.Context, string) error
	}{
		{"fill fails", func(w io.Writer) error { w.Write([]byte("half")); return boom }, nil},
		{"check fails", func(w io.Writer) error { _, err := w.Write([]byte("all")); return err }, func(context.Context, string) error { return boom }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := d.Install(context.Background(), v, tt.fill, tt.check); !errors.Is(err, boom) {
				t.Fatalf("Install() = %v, want boom", err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 || ents[0].Name() != LockName {
				t.Errorf("dir holds %v, want only the lock", ents)
			}
		})
	}
}

func TestSwitchNeedsBinary(t *testing.T) {
	d := New(t.TempDir())
	if err := d.Switch(v1("2.1.5")); err == nil || err.Error() != filepath.Join(d.Path, "claude.2.1.5")+" is not installed" {
		t.Fatalf("Switch(missing) = %v", err)
	}
}
