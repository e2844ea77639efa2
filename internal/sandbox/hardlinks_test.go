package sandbox

import (
	"io/fs"
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
		{"deeper in ~/.config", "/home/u/.config/a/b/c", false},
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
			want := "its project /home/u/projects/p holds another name of " + tt.file + " (a file of 2 hard links on its file system"
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
