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

// The bounds of the scan: entries read in one directory and in all. A
// scan that reaches one is incomplete, and keeps the project from being
// bound read-write.
var maxDirEntries, maxScanEntries = 4096, 32768

// scanDepth is how many levels of the home's dot-directories the scan
// reads: ~/.config/systemd/user's entries, not deeper.
const scanDepth = 3

// skipTrees are the trees of the home the scan does not read: caches,
// browser profiles, package stores, the sandbox homes.
var skipTrees = []string{".cache", ".mozilla", ".thunderbird", ".config/google-chrome", ".config/chromium",
	".config/BraveSoftware", ".local/share/Trash", ".npm", ".cargo/registry", ".rustup", ".nvm",
	HomesName, ".claude-home", ".git/objects"}

// hardlinked returns, as hostRuns does, a file the host runs or reads as
// configuration that may have another name in dir: a regular file with
// more than one link on dir's file system among the home's dot-files, the
// entries of its dot-directories and of their directories to three levels
// below the home (~/.config/systemd/user/x.service, not skipTrees nor dir),
// of $XDG_CONFIG_HOME outside them to two levels below it, of the PATH directories in
// the home, and the config file; "" if none. A scan cut short by
// maxDirEntries or maxScanEntries returns where it stopped.
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
	skip := map[string]bool{dir: true}
	for _, t := range skipTrees {
		skip[filepath.Join(s.Home, t)] = true
	}
	for _, d := range []string{s.SandboxHome, s.Homes, s.Tmp, s.tmpRoot, LegacyTmp(s.UID)} {
		if d != "" {
			skip[filepath.Clean(d)] = true
		}
	}
	type scan struct {
		dir   string
		dots  bool // only its dot-files and dot-directories
		depth int  // levels of subdirectories to look into
	}
	// The home's walk first: the others read only what it has not.
	scans, more := []scan{{s.Home, true, scanDepth - 1}}, []scan(nil)
	inDotDir := func(p string) bool {
		r, err := filepath.Rel(s.Home, p)
		return err == nil && under(p, s.Home) && strings.HasPrefix(r, ".")
	}
	if x, ok := newEnv(s.Environ).get("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) && !inDotDir(filepath.Clean(x)) {
		more = append(more, scan{filepath.Clean(x), false, scanDepth - 2})
	}
	for _, p := range pathDirs {
		if under(p, s.Home) {
			more = append(more, scan{p, false, 0})
		}
	}
	read := 0
	cut := func(d, why string) string {
		return fmt.Sprintf("perhaps another name of a file in %s (the scan for hard links was cut short there, at %s)", qt.String(d), why)
	}
	for len(scans) > 0 || len(more) > 0 {
		if len(scans) == 0 {
			scans, more = more, nil
		}
		sc := scans[0]
		scans = scans[1:]
		if skip[sc.dir] {
			continue
		}
		skip[sc.dir] = true // read once
		ents, _ := h.ReadDir(sc.dir)
		n := 0
		for _, e := range ents {
			if sc.dots && !strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if n++; n > maxDirEntries {
				return cut(sc.dir, fmt.Sprintf("more than %d entries in it", maxDirEntries))
			}
			if read++; read > maxScanEntries {
				return cut(sc.dir, fmt.Sprintf("more than %d entries in all", maxScanEntries))
			}
			p := filepath.Join(sc.dir, e.Name())
			switch {
			case e.Type().IsRegular():
				if r := check(p); r != "" {
					return r
				}
			case e.IsDir() && sc.depth >= 0:
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
