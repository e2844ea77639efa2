package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// A hard link is another name for the same file: ~/.bashrc linked from a
// dotfiles repository is written by an agent whose project is that
// repository, and no symlink shows it. The link count tells that another
// name exists, not where: so a file the host runs or reads as
// configuration that has more than one link on the project's file system
// keeps the project from being bound read-write.

// hardlinked returns, as hostRuns does, a file the host runs or reads as
// configuration that may have another name in dir: a regular file with
// more than one link on dir's file system among the home's dot-files, the
// entries of ~/.config (and $XDG_CONFIG_HOME) and of the directories in
// it, of ~/.ssh, ~/.gnupg and ~/.local/bin, of the PATH directories in the
// home, and the config file; "" if none.
func (s Spec) hardlinked(h Host, dir string, pathDirs []string) string {
	fi, err := h.Lstat(dir)
	if err != nil {
		return ""
	}
	_, dev, ok := linkCount(fi)
	if !ok {
		return ""
	}
	check := func(p string) string {
		fi, err := h.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return ""
		}
		if n, d, ok := linkCount(fi); ok && d == dev && n > 1 {
			return fmt.Sprintf("another name of %s (a file of %d hard links on its file system: make it a plain file, cp %s %s.new && mv %s.new %s)",
				qt.String(p), n, qt.String(p), qt.String(p), qt.String(p), qt.String(p))
		}
		return ""
	}
	if real, err := h.EvalSymlinks(filepath.Join(s.Home, ".claude-sandbox-init")); err == nil {
		if r := check(real); r != "" {
			return r
		}
	}
	type scan struct {
		dir   string
		dots  bool // only its dot-files
		depth int  // levels of subdirectories to look into
	}
	scans := []scan{{s.Home, true, 0}, {filepath.Join(s.Home, ".config"), false, 1},
		{filepath.Join(s.Home, ".ssh"), false, 0}, {filepath.Join(s.Home, ".gnupg"), false, 0},
		{filepath.Join(s.Home, ".local", "bin"), false, 0}}
	if x, ok := newEnv(s.Environ).get("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		scans = append(scans, scan{filepath.Clean(x), false, 1})
	}
	for _, p := range pathDirs {
		if under(p, s.Home) && p != filepath.Join(s.Home, ".local", "bin") {
			scans = append(scans, scan{p, false, 0})
		}
	}
	for len(scans) > 0 {
		sc := scans[0]
		scans = scans[1:]
		ents, _ := h.ReadDir(sc.dir)
		for _, e := range ents {
			if sc.dots && !strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(sc.dir, e.Name())
			switch {
			case e.Type().IsRegular():
				if r := check(p); r != "" {
					return r
				}
			case e.IsDir() && sc.depth > 0:
				scans = append(scans, scan{p, false, sc.depth - 1})
			}
		}
	}
	return ""
}

// linkCount returns a file's link count and device, when the host tells
// them.
func linkCount(fi fs.FileInfo) (nlink, dev uint64, ok bool) {
	if c, ok := fi.Sys().(interface{ LinkCount() (uint64, uint64) }); ok {
		n, d := c.LinkCount()
		return n, d, true
	}
	return statLinkCount(fi)
}
