package claude

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	qt "github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// At exit every repository in the writable mounts that was made during the
// session (its .git, objects/ or refs/ born since it began), or whose
// config or hooks changed (their change time), is made inert for the host's
// git: its .git is renamed to .git.inert-STAMP and the HEAD of its git
// directory (and of a bare repository) to HEAD.inert-STAMP, each with
// renameat on a directory fd reached from the mount's root without
// following a link. Git looks for neither name: without a HEAD a directory
// is no git directory to it, and a work tree without .git is none. The
// sandbox home's root and its .claude are made inert whatever they held at
// start. One line per repository says what was done and how to take it
// back (see docs/launcher.md).

// Bounds of the exit walk: past them, what was not looked at is named.
const (
	maxInertEntries = 8_000_000
	maxInertTime    = 30 * time.Second
)

// gitPrints is the time the session began, on the clock the kernel
// stamps files with (CLOCK_REALTIME_COARSE): what was born or changed at
// or after it, the sandbox may have made.
type gitPrints struct{ sec, nsec int64 }

// printGit reads the clock before the chain starts.
func printGit(*sandbox.GitScan) gitPrints {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts)
	return gitPrints{ts.Sec, ts.Nsec}
}

// since reports whether t is at or after the session's start.
func (g gitPrints) since(t unix.StatxTimestamp) bool {
	return t.Sec > g.sec || (t.Sec == g.sec && int64(t.Nsec) >= g.nsec)
}

// born reports whether name in dir fd was created (its birth time, or
// its change time where the file system keeps no birth time) during the
// session, or cannot be told.
func (g gitPrints) born(fd int, name string) bool {
	var x unix.Statx_t
	if err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_CTIME, &x); err != nil {
		return true
	}
	if x.Mask&unix.STATX_BTIME != 0 {
		return g.since(x.Btime)
	}
	return g.since(x.Ctime)
}

// changed reports whether name in dir fd changed (its change time)
// during the session; false if it is not there.
func (g gitPrints) changed(fd int, name string) bool {
	var x unix.Statx_t
	if err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &x); err != nil {
		return false
	}
	return g.since(x.Ctime)
}

// madeOrChanged reports whether git directory fd was made in the session
// (objects/ or refs/ born since), or its config or hooks changed.
func (g gitPrints) madeOrChanged(fd int) bool {
	if g.born(fd, "objects") || g.born(fd, "refs") {
		return true
	}
	for _, n := range []string{"config", "config.worktree", "commondir", "hooks"} {
		if g.changed(fd, n) {
			return true
		}
	}
	hfd, err := unix.Openat(fd, "hooks", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(hfd), "hooks")
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if g.changed(hfd, n) {
			return true
		}
	}
	return false
}

// inert walks the roots of the start's scan and makes inert what it must,
// writing one line per repository to w.
func inert(l *sandbox.Launch, prints gitPrints, w io.Writer) {
	scan := l.GitScan
	if scan == nil {
		return
	}
	x := &inerter{
		prints:   prints,
		stamp:    time.Now().UTC().Format("20060102T150405Z"),
		entries:  maxInertEntries,
		deadline: time.Now().Add(maxInertTime),
		w:        w,
	}
	if l.SandboxHome != "" {
		x.always = map[string]bool{l.SandboxHome: true, filepath.Join(l.SandboxHome, ".claude"): true}
	}
	for _, r := range scan.Roots {
		fd, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a file bound rw, or gone
		}
		x.walk(fd, r, 0)
	}
	if len(x.cut) > 0 {
		names := make([]string, 0, 3)
		for _, c := range x.cut[:min(3, len(x.cut))] {
			names = append(names, qt.String(c))
		}
		more := ""
		if len(x.cut) > 3 {
			more = fmt.Sprintf(" and %d more", len(x.cut)-3)
		}
		fmt.Fprintf(w, "claude: git: the exit check for repositories the sandbox made stopped at its bound before %s%s: do not run git there, nor cd there with a git prompt, before looking for a .git or HEAD the agent made\n", strings.Join(names, ", "), more)
	}
}

type inerter struct {
	prints   gitPrints
	always   map[string]bool
	stamp    string
	entries  int
	deadline time.Time
	cut      []string
	w        io.Writer
}

// maxInertDepth bounds the fds the walk holds open at once.
const maxInertDepth = 512

// walk looks at directory fd (host path p) and below; it closes fd.
func (x *inerter) walk(fd int, p string, depth int) {
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	if x.entries <= 0 || time.Now().After(x.deadline) || depth > maxInertDepth {
		x.cut = append(x.cut, p)
		return
	}
	ents, err := f.ReadDir(-1)
	if err != nil && len(ents) == 0 {
		x.cut = append(x.cut, p)
		return
	}
	x.entries -= len(ents)
	var head, objects, refs, dotgit bool
	var dotgitDir bool
	for _, e := range ents {
		switch e.Name() {
		case "HEAD":
			head = !e.IsDir()
		case "objects":
			objects = e.IsDir()
		case "refs":
			refs = e.IsDir()
		case ".git":
			dotgit, dotgitDir = true, e.IsDir()
		}
	}
	renamed := ""
	if dotgit && !x.keepDotGit(fd, p, dotgitDir) {
		renamed = ".git.inert-" + x.stamp
		x.renameDotGit(fd, p, renamed)
	}
	if head && objects && refs && (x.always[p] || !x.unchanged(fd, p)) {
		x.renameHead(fd, p)
	}
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() {
			continue // a symlink is not followed: git finds what it names where it is
		}
		if n == ".git" && renamed != "" {
			n = renamed
		}
		cfd, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			x.cut = append(x.cut, filepath.Join(p, n))
			continue
		}
		x.walk(cfd, filepath.Join(p, n), depth+1)
	}
}

// keepDotGit reports whether the .git in directory fd (host path p) is
// left as it is: it is older than the session (a .git file: unchanged
// since), and p is not the sandbox home's root nor its .claude.
func (x *inerter) keepDotGit(fd int, p string, isDir bool) bool {
	if x.always[p] {
		return false
	}
	if isDir {
		return !x.prints.born(fd, ".git")
	}
	return !x.prints.born(fd, ".git") && !x.prints.changed(fd, ".git")
}

// unchanged reports whether git directory fd is older than the session,
// with its config and hooks as they were.
func (x *inerter) unchanged(fd int, _ string) bool {
	return !x.prints.madeOrChanged(fd)
}

// renameDotGit renames .git in directory fd (host path p) to name and the
// HEAD of the git directory it is, if it is one.
func (x *inerter) renameDotGit(fd int, p, name string) {
	if err := unix.Renameat2(fd, ".git", fd, name, unix.RENAME_NOREPLACE); err != nil {
		fmt.Fprintf(x.w, "claude: git: %s: %v: cannot make it inert; do not run git in %s before removing it\n", qt.String(filepath.Join(p, ".git")), err, qt.String(p))
		return
	}
	gd := filepath.Join(p, name)
	undo := fmt.Sprintf("mv -T %s %s", qt.String(gd), qt.String(filepath.Join(p, ".git")))
	what := "renamed .git to " + name
	if gfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		headName := "HEAD.inert-" + x.stamp
		if unix.Renameat2(gfd, "HEAD", gfd, headName, unix.RENAME_NOREPLACE) == nil {
			what += " and its HEAD to " + headName
			undo = fmt.Sprintf("mv -T %s %s && ", qt.String(filepath.Join(gd, headName)), qt.String(filepath.Join(gd, "HEAD"))) + undo
		}
		unix.Close(gfd)
	}
	fmt.Fprintf(x.w, "claude: git: %s was made or changed in the sandbox; made inert for the host's git (%s); to take it back after review: %s\n", qt.String(filepath.Join(p, ".git")), what, undo)
}

// renameHead renames HEAD in git directory fd (host path p).
func (x *inerter) renameHead(fd int, p string) {
	headName := "HEAD.inert-" + x.stamp
	if err := unix.Renameat2(fd, "HEAD", fd, headName, unix.RENAME_NOREPLACE); err != nil {
		fmt.Fprintf(x.w, "claude: git: %s: %v: cannot make it inert; do not run git in or below %s before removing it\n", qt.String(filepath.Join(p, "HEAD")), err, qt.String(p))
		return
	}
	fmt.Fprintf(x.w, "claude: git: the git directory %s was made or changed in the sandbox; made inert for the host's git (renamed HEAD to %s); to take it back after review: mv -T %s %s\n",
		qt.String(p), headName, qt.String(filepath.Join(p, headName)), qt.String(filepath.Join(p, "HEAD")))
}
