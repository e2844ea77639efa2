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
		check func(context.Context, *os.File) error
	}{
		{"fill fails", func(w io.Writer) error { w.Write([]byte("half")); return boom }, nil},
		{"check fails", func(w io.Writer) error { _, err := w.Write([]byte("all")); return err }, func(context.Context, *os.File) error { return boom }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, err := d.Install(context.Background(), v, tt.fill, tt.check); !errors.Is(err, boom) {
				t.Fatalf("Install() = %v, want boom", err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 || ents[0].Name() != PrivateDir {
				t.Errorf("dir holds %v, want only the lock", ents)
			}
		})
	}
}

func TestSwitchNeedsBinary(t *testing.T) {
	d := New(t.TempDir())
	if err := d.Switch(&State{Versions: map[string]Record{}}, v1("2.1.5"), nil); err == nil || err.Error() != filepath.Join(d.Path, "claude.2.1.5")+" is not installed" {
		t.Fatalf("Switch(missing) = %v", err)
	}
}

func TestCheckTrusted(t *testing.T) {
	root := func(perm os.FileMode) Owner { return Owner{UID: 0, Mode: os.ModeDir | perm} }
	fs := map[string]Owner{
		"/":                 root(0o755),
		"/opt":              root(0o755),
		"/opt/claude":       root(0o755),
		"/opt/claude/bin":   root(0o755),
		"/tmp":              root(0o777 | os.ModeSticky),
		"/tmp/x":            root(0o700),
		"/srv":              root(0o775),
		"/home":             root(0o755),
		"/home/u":           {UID: 1000, Mode: os.ModeDir | 0o755},
		"/link":             {UID: 0, Mode: os.ModeSymlink | 0o777},
		"/ulink":            {UID: 1000, Mode: os.ModeSymlink | 0o777},
		"/opt/claude/group": root(0o770),
	}
	links := map[string]string{"/link": "/tmp/x", "/ulink": "/opt/claude"}
	stat := func(p string) (Owner, error) {
		o, ok := fs[p]
		if !ok {
			return Owner{}, os.ErrNotExist
		}
		return o, nil
	}
	readlink := func(p string) (string, error) { return links[p], nil }
	const fix = "set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write, in directories likewise (such as /opt/claude/bin)"
	tests := []struct{ path, err string }{
		{"/opt/claude/bin", ""},
		{"/opt/claude/new/bin", ""},
		{"/tmp/x/bin", "bin dir /tmp/x/bin is unsafe for root: /tmp is writable by group or others (dtrwxrwxrwx): " + fix},
		{"/srv/bin", "bin dir /srv/bin is unsafe for root: /srv is writable by group or others (drwxrwxr-x): " + fix},
		{"/home/u/bin", "bin dir /home/u/bin is unsafe for root: /home/u is owned by uid 1000, not root: " + fix},
		{"/opt/claude/group", "bin dir /opt/claude/group is unsafe for root: /opt/claude/group is writable by group or others (drwxrwx---): chown root:root /opt/claude/group && chmod go-w /opt/claude/group, or set CLAUDE_SBX_BINDIR to a directory only root can write (such as /opt/claude/bin)"},
		{"/link/bin", "bin dir /tmp/x/bin is unsafe for root: /tmp is writable by group or others (dtrwxrwxrwx): " + fix},
		{"/ulink/bin", "bin dir /ulink/bin is unsafe for root: /ulink is owned by uid 1000, not root: " + fix},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := checkTrusted(tt.path, stat, readlink, 0)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Errorf("checkTrusted(%s) = %q, want %q", tt.path, got, tt.err)
			}
		})
	}
}

// TestInstallRunsTheVerifiedFile swaps the temporary file by name while it
// is being checked: the smoke test still runs the bytes that were written,
// and the swapped file is not installed.
func TestInstallRunsTheVerifiedFile(t *testing.T) {
	dir := t.TempDir()
	d := New(dir)
	if err := d.Lock(); err != nil {
		t.Fatal(err)
	}
	defer d.Unlock()
	v := v1("2.1.5")
	marker := filepath.Join(t.TempDir(), "ran")
	good := "#!/bin/sh\necho '2.1.5 (Claude Code)'\n"
	evil := "#!/bin/sh\ntouch " + marker + "\necho '2.1.5 (Claude Code)'\n"
	fill := func(w io.Writer) error { _, err := io.WriteString(w, good); return err }
	check := func(ctx context.Context, f *os.File) error {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), TempPrefix) && !e.IsDir() {
				p := filepath.Join(dir, e.Name())
				os.WriteFile(p+".evil", []byte(evil), 0o755)
				if err := os.Rename(p+".evil", p); err != nil {
					t.Fatal(err)
				}
			}
		}
		return d.Smoke(ctx, f, v)
	}
	_, _, _, err := d.Install(context.Background(), v, fill, check)
	if err == nil || !strings.HasSuffix(err.Error(), " was replaced while it was being checked: run claude-update again") {
		t.Errorf("Install() = %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the swapped-in file ran")
	}
	if d.Has(v) {
		t.Errorf("the swapped-in file was installed")
	}
}

func TestParseState(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	tests := []struct{ in, err string }{
		{`{"versions":{"2.1.5":{"sha256":"` + sum + `","size":3,"source":"npm https://r/"}},"highest":"2.1.5","hold":"2.1.4"}`, ""},
		{`{}`, ""},
		{`{"versions":{"2.1":{"sha256":"` + sum + `","size":3}}}`, `record of 2.1`},
		{`{"versions":{"2.1.5":{"sha256":"abc","size":3}}}`, "record of 2.1.5: bad sha256 or size"},
		{`{"hold":"../x"}`, `invalid version "../x"`},
		{`not json`, "invalid character 'o' in literal null (expecting 'u')"},
	}
	for _, tt := range tests {
		s, err := ParseState([]byte(tt.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.err {
			t.Errorf("ParseState(%s) = %v, %q; want error %q", tt.in, s, got, tt.err)
		}
	}
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"versions":{"2.1.5":{"sha256":"` + strings.Repeat("ab", 32) + `","size":3}},"highest":"2.1.5","hold":"2.1.4"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseState(b)
		if err != nil {
			return
		}
		for k := range s.Versions {
			if _, err := release.ParseVersion(k); err != nil {
				t.Fatalf("accepted version %q", k)
			}
		}
		if _, ok := s.HoldVersion(); s.Hold != "" && !ok {
			t.Fatalf("accepted hold %q", s.Hold)
		}
	})
}
