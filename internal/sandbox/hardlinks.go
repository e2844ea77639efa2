package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/linkwalk"
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

// maxPathDirEntries bounds the entries read in one PATH directory, which
// the other bounds do not count: a system's /usr/bin holds thousands.
var maxPathDirEntries = 65536

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
// of $XDG_CONFIG_HOME outside them to two levels below it, of every PATH
// directory, and the config file; "" if none. A file the user can neither
// write nor chmod (root's, not writable by group or others) cannot be
// rewritten through any name, and does not count. The places the sandbox
// writes (writable: rw and dev binds, the caches, its home and /tmp) are not
// read: what they hold is the agent's anyway, and another link there tells
// nothing of the project. A scan cut short by maxDirEntries or
// maxScanEntries returns where it stopped.
func (s Spec) hardlinked(h Host, dir string, pathDirs, writable []string) string {
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
		if n, d, ok := linkCount(fi); ok && d == dev && n > 1 && s.userMayWrite(fi) {
			return fmt.Sprintf("perhaps another name of %s (found in %s, a file of %d hard links on the project's file system: make it a plain file, cp %s %s.new && mv %s.new %s)",
				qt.String(p), qt.String(filepath.Dir(p)), n, qt.String(p), qt.String(p), qt.String(p), qt.String(p))
		}
		return ""
	}
	if real, _, err := linkwalk.Resolve(h, filepath.Join(s.Home, ".claude-sandbox-init")); err == nil {
		if r := check(real); r != "" {
			return r
		}
	}
	skip := map[string]bool{dir: true}
	for _, t := range skipTrees {
		skip[filepath.Join(s.Home, t)] = true
	}
	for _, d := range append([]string{s.SandboxHome, s.Homes, s.Tmp, s.tmpRoot, LegacyTmp(s.UID)}, writable...) {
		if d != "" {
			skip[filepath.Clean(d)] = true
		}
	}
	type scan struct {
		dir   string
		dots  bool // only its dot-files and dot-directories
		depth int  // levels of subdirectories to look into
		path  bool // a PATH directory
	}
	// The home's walk first: the others read only what it has not.
	scans, more := []scan{{s.Home, true, scanDepth - 1, false}}, []scan(nil)
	inDotDir := func(p string) bool {
		r, err := filepath.Rel(s.Home, p)
		return err == nil && under(p, s.Home) && strings.HasPrefix(r, ".")
	}
	if x, ok := newEnv(s.Environ).get("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) && !inDotDir(filepath.Clean(x)) {
		more = append(more, scan{filepath.Clean(x), false, scanDepth - 2, false})
	}
	for _, p := range pathDirs {
		more = append(more, scan{p, false, 0, true})
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
			if sc.path {
				if n++; n > maxPathDirEntries {
					return cut(sc.dir, fmt.Sprintf("more than %d entries in it", maxPathDirEntries))
				}
			} else if n++; n > maxDirEntries {
				return cut(sc.dir, fmt.Sprintf("more than %d entries in it", maxDirEntries))
			} else if read++; read > maxScanEntries {
				return cut(sc.dir, fmt.Sprintf("more than %d entries in all", maxScanEntries))
			}
			p := filepath.Join(sc.dir, e.Name())
			switch {
			case e.Type().IsRegular():
				if r := check(p); r != "" {
					return r
				}
			case e.IsDir() && sc.depth >= 0:
				scans = append(scans, scan{p, false, sc.depth - 1, false})
			}
		}
	}
	return ""
}

// userMayWrite reports whether the user (and so the agent) can write the
// file or make it writable: it is theirs, or writable by group or others.
// Unknown owners count as the user's.
func (s Spec) userMayWrite(fi fs.FileInfo) bool {
	if fi.Mode().Perm()&0o022 != 0 {
		return true
	}
	uid, ok := fileOwner(fi)
	return !ok || uid == s.UID
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
