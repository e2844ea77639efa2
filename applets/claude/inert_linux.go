package claude

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
// writing one line per repository to w (sorted, so that parallel walks
// print alike).
func inert(l *sandbox.Launch, prints gitPrints, w io.Writer) {
	scan := l.GitScan
	if scan == nil {
		return
	}
	x := &inerter{
		prints:   prints,
		stamp:    time.Now().UTC().Format("20060102T150405Z"),
		deadline: time.Now().Add(maxInertTime),
		workers:  make(chan struct{}, inertWorkers()),
	}
	x.entries.Store(maxInertEntries)
	x.atStart = map[string]bool{}
	for _, g := range scan.Layouts {
		x.atStart[g] = true
	}
	if l.SandboxHome != "" {
		x.always = map[string]bool{l.SandboxHome: true, filepath.Join(l.SandboxHome, ".claude"): true}
	}
	for _, r := range scan.Roots {
		fd, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a file bound rw, or gone
		}
		x.walk(fd, r, 0, make([]byte, direntBuf))
	}
	x.wg.Wait()
	sort.Strings(x.lines)
	for _, line := range x.lines {
		io.WriteString(w, line)
	}
	if len(x.cut) > 0 {
		sort.Strings(x.cut)
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

// inertWorkers is how many subtrees the exit walk lists at once beside
// the launcher's own goroutine: the walk is bound by the system calls per
// directory, which run in parallel on as many CPUs.
func inertWorkers() int { return min(runtime.NumCPU(), 8) - 1 }

type inerter struct {
	prints gitPrints
	always map[string]bool
	// atStart are the git directories the start's scan found (and
	// protected: read-only inside).
	atStart  map[string]bool
	stamp    string
	entries  atomic.Int64
	deadline time.Time
	workers  chan struct{} // a token per walk running beside the caller's
	wg       sync.WaitGroup

	mu    sync.Mutex
	cut   []string
	lines []string
}

func (x *inerter) cutAt(p string) {
	x.mu.Lock()
	x.cut = append(x.cut, p)
	x.mu.Unlock()
}

func (x *inerter) say(format string, a ...any) {
	x.mu.Lock()
	x.lines = append(x.lines, fmt.Sprintf(format, a...))
	x.mu.Unlock()
}

// maxInertDepth bounds the fds one walk holds open at once.
const maxInertDepth = 512

// dirent is a directory entry as getdents64 gives it.
type dirent struct {
	name string
	dir  bool // a directory (a symlink is never one)
}

// readDir lists directory fd with getdents64 into buf, with the entry
// types the file system gives (an lstat where it gives none).
func readDir(fd int, buf []byte) ([]dirent, error) {
	var ents []dirent
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return ents, err
		}
		if n <= 0 {
			return ents, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return ents, unix.EIO
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if n := string(name); n != "." && n != ".." {
				d := dirent{name: n, dir: typ == unix.DT_DIR}
				if typ == unix.DT_UNKNOWN {
					var st unix.Stat_t
					d.dir = unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
				}
				ents = append(ents, d)
			}
		}
	}
}

// direntBuf is the size of a walk's getdents buffer.
const direntBuf = 16 << 10

// walk looks at directory fd (host path p) and below, listing with buf
// (free again once a directory is listed); it closes fd. A subdirectory
// goes to a walk of its own when a worker token is free.
func (x *inerter) walk(fd int, p string, depth int, buf []byte) {
	defer unix.Close(fd)
	if x.entries.Load() <= 0 || time.Now().After(x.deadline) || depth > maxInertDepth {
		x.cutAt(p)
		return
	}
	ents, err := readDir(fd, buf)
	if err != nil && len(ents) == 0 {
		x.cutAt(p)
		return
	}
	x.entries.Add(-int64(len(ents)))
	var head, objects, refs, dotgit bool
	var dotgitDir bool
	for _, e := range ents {
		switch e.name {
		case "HEAD":
			head = !e.dir
		case "objects":
			objects = e.dir
		case "refs":
			refs = e.dir
		case ".git":
			dotgit, dotgitDir = true, e.dir
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
		n := e.name
		if !e.dir {
			continue // a symlink is not followed: git finds what it names where it is
		}
		if n == ".git" && renamed != "" {
			n = renamed
		}
		cfd, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			x.cutAt(filepath.Join(p, n))
			continue
		}
		cp := filepath.Join(p, n)
		select {
		case x.workers <- struct{}{}:
			x.wg.Add(1)
			go func() {
				defer func() { <-x.workers; x.wg.Done() }()
				x.walk(cfd, cp, depth+1, make([]byte, direntBuf))
			}()
		default:
			x.walk(cfd, cp, depth+1, buf)
		}
	}
}

// keepDotGit reports whether the .git in directory fd (host path p) is
// left as it is: it is older than the session (a .git file: unchanged
// since; a directory the start did not protect: its entries too), and p is
// not the sandbox home's root nor its .claude.
func (x *inerter) keepDotGit(fd int, p string, isDir bool) bool {
	if x.always[p] {
		return false
	}
	if isDir {
		// An empty one is what bwrap makes as the mount point of a bind
		// below it (a linked worktree's repository, in the sandbox
		// home): git takes no empty directory for a repository. What a
		// later session puts in it changes it (HEAD and a commondir
		// are a repository of the directory commondir names).
		if emptyDir(fd, ".git") {
			return true
		}
		if x.prints.born(fd, ".git") {
			return false
		}
		return x.atStart[filepath.Join(p, ".git")] || !x.prints.changed(fd, ".git")
	}
	return !x.prints.born(fd, ".git") && !x.prints.changed(fd, ".git")
}

// emptyDir reports whether the directory name in fd has no entries.
func emptyDir(fd int, name string) bool {
	dfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	ents, err := readDir(dfd, make([]byte, 512))
	return err == nil && len(ents) == 0
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
		x.say("claude: git: %s: %v: cannot make it inert; do not run git in %s before removing it\n", qt.String(filepath.Join(p, ".git")), err, qt.String(p))
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
	x.say("claude: git: %s was made or changed in the sandbox; made inert for the host's git (%s); to take it back after review: %s\n", qt.String(filepath.Join(p, ".git")), what, undo)
}

// renameHead renames HEAD in git directory fd (host path p).
func (x *inerter) renameHead(fd int, p string) {
	headName := "HEAD.inert-" + x.stamp
	if err := unix.Renameat2(fd, "HEAD", fd, headName, unix.RENAME_NOREPLACE); err != nil {
		x.say("claude: git: %s: %v: cannot make it inert; do not run git in or below %s before removing it\n", qt.String(filepath.Join(p, "HEAD")), err, qt.String(p))
		return
	}
	x.say("claude: git: the git directory %s was made or changed in the sandbox; made inert for the host's git (renamed HEAD to %s); to take it back after review: mv -T %s %s\n",
		qt.String(p), headName, qt.String(filepath.Join(p, headName)), qt.String(filepath.Join(p, "HEAD")))
}
