package sandbox

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// linkedHost is a fakeHost whose files have the link counts given (1 for
// the others), all on one file system.
type linkedHost struct {
	*fakeHost
	links map[string]uint64
}

type linkedInfo struct {
	fs.FileInfo
	n uint64
}

func (i linkedInfo) Sys() any { return i }

func (i linkedInfo) LinkCount() (uint64, uint64) { return i.n, 7 }

func (h linkedHost) Lstat(p string) (fs.FileInfo, error) {
	fi, err := h.fakeHost.Lstat(p)
	if err != nil {
		return nil, err
	}
	n := h.links[p]
	if n == 0 {
		n = 1
	}
	return linkedInfo{fi, n}, nil
}

// TestHardlinkedKeepsProjectFromRW: a regular file the host runs or reads
// as configuration with another link on the project's file system keeps
// the project from being bound read-write, the line naming the file.
func TestHardlinkedKeepsProjectFromRW(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		want       bool
	}{
		{"a dot-file", "/home/u/.bashrc", true},
		{"a file of ~/.config's directories", "/home/u/.config/nvim/init.lua", true},
		{"a program in ~/.local/bin", "/home/u/.local/bin/tool", true},
		{"a file of the home that is not a dot-file", "/home/u/notes.txt", false},
		{"three levels down ~/.config", "/home/u/.config/a/b/c", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			for _, d := range []string{"/home/u/.config", "/home/u/.config/nvim", "/home/u/.config/a", "/home/u/.config/a/b", "/home/u/.local", "/home/u/.local/bin"} {
				h.files[d] = "d"
			}
			h.files[tt.file] = "f"
			l, err := Build(linkedHost{h, map[string]uint64{tt.file: 2}}, baseSpec())
			if err != nil {
				t.Fatal(err)
			}
			want := "its project /home/u/projects/p holds perhaps another name of " + tt.file + " (found in " + filepath.Dir(tt.file) + ", a file of 2 hard links on the project's file system"
			got := false
			for _, n := range l.Notices {
				got = got || strings.Contains(n, want)
			}
			if got != tt.want {
				t.Errorf("notice %q: %v, want %v (%q)", want, got, tt.want, l.Notices)
			}
		})
	}
}

// TestHardlinkedDeeper: the startup files of editors, shells and user
// services a few levels down the home's dot-directories keep the project
// from read-write when hard-linked; the trees the scan skips do not.
func TestHardlinkedDeeper(t *testing.T) {
	for _, tt := range []struct {
		file string
		want bool
		xdg  string
	}{
		{"/home/u/.emacs.d/init.el", true, ""},
		{"/home/u/.vim/plugin/x.vim", true, ""},
		{"/home/u/.config/fish/conf.d/x.fish", true, ""},
		{"/home/u/.config/systemd/user/x.service", true, ""},
		{"/home/u/.config/a/b/c/d", false, ""},
		{"/home/u/.cache/x/y", false, ""},
		{"/home/u/.mozilla/firefox/x", false, ""},
		{"/home/u/.config/systemd/user/y.service", true, "/home/u/.config"},
		{"/home/u/conf/systemd/user/y.service", true, "/home/u/conf"},
		{"/home/u/conf/a/b/y", true, "/home/u/conf"},
		{"/home/u/conf/a/b/c/y", false, "/home/u/conf"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			h := debianHost()
			for d := filepath.Dir(tt.file); d != "/home/u"; d = filepath.Dir(d) {
				h.files[d] = "d"
			}
			h.files[tt.file] = "f"
			s := baseSpec()
			if tt.xdg != "" {
				s.Environ = append(append([]string(nil), s.Environ...), "XDG_CONFIG_HOME="+tt.xdg)
			}
			l, err := Build(linkedHost{h, map[string]uint64{tt.file: 2}}, s)
			if err != nil {
				t.Fatal(err)
			}
			want := "its project /home/u/projects/p holds perhaps another name of " + tt.file + " (found in " + filepath.Dir(tt.file) + ", a file of 2 hard links on the project's file system"
			got := false
			for _, n := range l.Notices {
				got = got || strings.Contains(n, want)
			}
			if got != tt.want {
				t.Errorf("notice %q: %v, want %v (%q)", want, got, tt.want, l.Notices)
			}
		})
	}
}

// TestHardlinkedScanCut: a directory with more entries than the scan
// reads, or more entries in all, leaves the scan incomplete: the project
// is not bound read-write, the line naming where the scan stopped.
func TestHardlinkedScanCut(t *testing.T) {
	defer func(d, a int) { maxDirEntries, maxScanEntries = d, a }(maxDirEntries, maxScanEntries)
	maxDirEntries, maxScanEntries = 4, 8
	for _, tt := range []struct {
		name  string
		files []string
		want  string
	}{
		{"within the caps", []string{"/home/u/.vim/a", "/home/u/.vim/b", "/home/u/.vim/c"}, ""},
		{"a directory", []string{"/home/u/.vim/a", "/home/u/.vim/b", "/home/u/.vim/c", "/home/u/.vim/d", "/home/u/.vim/e"},
			"a file in /home/u/.vim (the scan for hard links was cut short there, at more than 4 entries in it)"},
		{"in all", []string{"/home/u/.vim/a", "/home/u/.vim/b", "/home/u/.vim/c", "/home/u/.emacs.d/a", "/home/u/.emacs.d/b", "/home/u/.emacs.d/c"},
			"(the scan for hard links was cut short there, at more than 8 entries in all)"},
		{"a skipped tree", []string{"/home/u/.cache/a", "/home/u/.cache/b", "/home/u/.cache/c", "/home/u/.cache/d", "/home/u/.cache/e"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			for _, f := range tt.files {
				h.files[filepath.Dir(f)] = "d"
				h.files[f] = "f"
			}
			l, err := Build(linkedHost{h, nil}, baseSpec())
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, n := range l.Notices {
				if strings.Contains(n, "cut short") {
					got = n
				}
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("notice %q, want one with %q", got, tt.want)
			}
			if tt.want != "" && !strings.Contains(got, "its project /home/u/projects/p holds") {
				t.Errorf("notice %q: the project is shown", got)
			}
		})
	}
}

// ownedHost is a linkedHost whose files have the owners given (the
// user's, 1000, for the others).
type ownedHost struct {
	linkedHost
	owners map[string]int
}

type ownedInfo struct {
	linkedInfo
	uid int
}

func (i ownedInfo) Sys() any   { return i }
func (i ownedInfo) Owner() int { return i.uid }
func (h ownedHost) Lstat(p string) (fs.FileInfo, error) {
	fi, err := h.linkedHost.Lstat(p)
	if err != nil {
		return nil, err
	}
	uid, ok := h.owners[p]
	if !ok {
		uid = 1000
	}
	return ownedInfo{fi.(linkedInfo), uid}, nil
}

// TestHardlinkScanSkipsWritableMounts: hard links the agent made inside
// a place the sandbox writes (`rw-try ~/.opam`, the shipped example) say
// nothing of another project, which keeps its read-write bind.
func TestHardlinkScanSkipsWritableMounts(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		want         bool
	}{
		{"rw-try", "rw-try ~/.opam", false},
		{"rw", "rw ~/.opam", false},
		{"dev", "dev ~/.opam", false},
		{"not a mount", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			files := []string{"/home/u/.opam/default/bin/ocaml", "/home/u/.opam/default/bin/ocaml.opt"}
			h.files["/home/u/.opam/default"] = "d"
			h.files["/home/u/.opam/default/bin"] = "d"
			links := map[string]uint64{}
			for _, f := range files {
				h.files[f] = "f"
				links[f] = 2
			}
			s := baseSpec()
			s.Config = parseConfig(t, s, tt.config)
			l, err := Build(linkedHost{h, links}, s)
			if err != nil {
				t.Fatal(err)
			}
			rw := false
			for _, o := range l.Plan.Ops {
				rw = rw || (o.Src == "/home/u/projects/p" && o.Dest == o.Src && o.IsWritable())
			}
			if rw != !tt.want {
				t.Errorf("project read-write: %v, want %v (%q)", rw, !tt.want, l.Notices)
			}
			if !tt.want {
				return
			}
			want := "its project /home/u/projects/p holds perhaps another name of /home/u/.opam/default/bin/ocaml (found in /home/u/.opam/default/bin, a file of 2 hard links on the project's file system"
			got := false
			for _, n := range l.Notices {
				got = got || strings.Contains(n, want)
			}
			if !got {
				t.Errorf("no notice %q (%q)", want, l.Notices)
			}
		})
	}
}

// TestHardlinkedPathDirOutsideHome: every PATH directory is read for hard
// links, not only those of the home; a file the user can neither write nor
// chmod (root's /usr/bin/perl and its perl5.36.0) does not count.
func TestHardlinkedPathDirOutsideHome(t *testing.T) {
	for _, tt := range []struct {
		name  string
		owner int
		want  bool
	}{
		{"the user's", 1000, true},
		{"root's", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := debianHost()
			h.files["/opt/tools"] = "d"
			h.files["/opt/tools/tool"] = "f"
			s := baseSpec()
			s.Environ = append(append([]string(nil), baseEnv...), "PATH=/opt/tools:/usr/bin")
			l, err := Build(ownedHost{linkedHost{h, map[string]uint64{"/opt/tools/tool": 2}}, map[string]int{"/opt/tools/tool": tt.owner}}, s)
			if err != nil {
				t.Fatal(err)
			}
			want := "its project /home/u/projects/p holds perhaps another name of /opt/tools/tool (found in /opt/tools, a file of 2 hard links on the project's file system"
			got := false
			for _, n := range l.Notices {
				got = got || strings.Contains(n, want)
			}
			if got != tt.want {
				t.Errorf("notice %q: %v, want %v (%q)", want, got, tt.want, l.Notices)
			}
		})
	}
}
