// Package hostpath opens host paths without trusting their names. Each
// component is opened with O_PATH|O_NOFOLLOW relative to the directory
// before it; symlinks are followed by the walk itself, which records where
// each one lies, so a caller can refuse one that lies where the sandbox can
// write. Checks then run on the open fds, and the launcher binds from them:
// nothing can be swapped between the check and the use.
package hostpath

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// MaxHops is the most symlinks one walk follows (as the kernel's ELOOP).
const MaxHops = 40

const walkFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC

// ID identifies a file on the host.
type ID struct{ Dev, Ino uint64 }

// Hop is a symlink the walk followed.
type Hop struct {
	// Path is where the link lies, as walked.
	Path string
	// Dir is the directory holding the link (O_PATH).
	Dir *os.File
}

// Resolved is an opened path.
type Resolved struct {
	// File is the final file (O_PATH; a symlink itself only when Open was
	// asked not to follow a final one).
	File *os.File
	// Path is the physical path as walked: no symlinks, no "..".
	Path string
	// parent is the directory holding File (O_PATH); "/" for "/". Where
	// Open opened it as a bare fd, parentFD holds that fd plus one until
	// Parent wraps it: most callers never look at it.
	parent   *os.File
	parentFD int
	// Hops are the symlinks followed, in order.
	Hops []Hop
	// Stat is File's fstat.
	Stat unix.Stat_t
}

// Parent returns the directory holding File (O_PATH), as it was when the
// path was resolved; "/" for "/". Close closes it.
func (r *Resolved) Parent() *os.File {
	if r.parent == nil && r.parentFD > 0 {
		r.parent = os.NewFile(uintptr(r.parentFD-1), dirOf(r.Path))
		r.parentFD = 0
	}
	return r.parent
}

// CloseParent closes the directory holding File, for a caller that will
// not ask for it: a start holds the fds of every bind source at once, and
// the parents would double them (past the 64 a process's fd table starts
// with, where growing it waits for an RCU grace period, about 10 ms, in a
// process with threads). Parent returns nil afterwards.
func (r *Resolved) CloseParent() {
	if r.parent != nil {
		r.parent.Close()
		r.parent = nil
	}
	if r.parentFD > 0 {
		unix.Close(r.parentFD - 1)
		r.parentFD = 0
	}
}

// dirOf names the directory of the absolute path p.
func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// ID returns the final file's identity.
func (r *Resolved) ID() ID { return ID{uint64(r.Stat.Dev), r.Stat.Ino} }

// IsSymlink reports whether the final file is a symlink (only when Open was
// called with followLast false).
func (r *Resolved) IsSymlink() bool { return r.Stat.Mode&unix.S_IFMT == unix.S_IFLNK }

// IsDir reports whether the final file is a directory.
func (r *Resolved) IsDir() bool { return r.Stat.Mode&unix.S_IFMT == unix.S_IFDIR }

// Close closes every fd r holds. File is closed too unless it was taken
// with TakeFile.
func (r *Resolved) Close() {
	if r == nil {
		return
	}
	for _, h := range r.Hops {
		h.Dir.Close()
	}
	r.Hops = nil
	r.CloseParent()
	if r.File != nil {
		r.File.Close()
		r.File = nil
	}
}

// TakeFile returns File and leaves r without it, so that Close keeps it
// open.
func (r *Resolved) TakeFile() *os.File {
	f := r.File
	r.File = nil
	return f
}

// Error is a failed walk: Path is the component (as walked) that failed.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return quote.String(e.Path) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Open opens the absolute path, following no symlink but through the walk
// (which records it as a hop). A final symlink is followed when followLast
// is true, else it is opened itself.
func Open(path string, followLast bool) (*Resolved, error) {
	if r, err := openWhole(path, followLast); r != nil || err != nil {
		return r, err
	}
	return walk(path, followLast)
}

// noOpenat2 is set once the kernel has said it has no openat2 (before
// 5.6) or a seccomp filter denies it.
var noOpenat2 atomic.Bool

// openWhole opens a clean absolute path with no symlink on the way in two
// opens: its directory in one openat2 that refuses every symlink, then the
// last component in that directory as the walk opens it (so a failure
// there is the walk's, on the same component). It returns nil, nil when
// the walk must do the work: the path is not clean, a symlink is on the
// way (the walk records it), the kernel has no openat2, or the directory
// cannot be opened (the walk names the component that fails).
func openWhole(path string, followLast bool) (*Resolved, error) {
	if noOpenat2.Load() || !strings.HasPrefix(path, "/") || path == "/" || !clean(path) {
		return nil, nil
	}
	i := strings.LastIndexByte(path, '/')
	dir, name := path[:i], path[i+1:]
	if dir == "" {
		dir = "/"
	}
	fd, err := openat2(dir)
	if err != nil {
		if err == unix.ENOSYS || err == unix.EPERM {
			noOpenat2.Store(true)
		}
		return nil, nil
	}
	f, err := openat(fd, name)
	if err != nil {
		unix.Close(fd)
		return nil, &Error{path, err}
	}
	// The directory stays a bare fd until a caller asks for it.
	r := &Resolved{File: f, Path: path, parentFD: fd + 1}
	if err := unix.Fstat(int(f.Fd()), &r.Stat); err != nil || (followLast && r.IsSymlink()) {
		r.Close()
		return nil, nil
	}
	return r, nil
}

// openat2 opens the directory dir (absolute) without following any
// symlink on the way, the last component included.
func openat2(dir string) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// clean reports whether the absolute path p has no empty, "." or ".."
// component and no trailing slash.
func clean(p string) bool {
	for _, c := range strings.Split(p[1:], "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// walk opens the absolute path one component at a time from "/".
func walk(path string, followLast bool) (*Resolved, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, &Error{path, errors.New("not an absolute path")}
	}
	root, err := openat(unix.AT_FDCWD, "/")
	if err != nil {
		return nil, &Error{"/", err}
	}
	type entry struct {
		f    *os.File
		name string
	}
	stack := []entry{{root, ""}}
	r := &Resolved{}
	fail := func(err error) (*Resolved, error) {
		for _, e := range stack {
			e.f.Close()
		}
		r.Close()
		return nil, err
	}
	cur := func() string {
		var b strings.Builder
		for _, e := range stack[1:] {
			b.WriteString("/")
			b.WriteString(e.name)
		}
		if b.Len() == 0 {
			return "/"
		}
		return b.String()
	}
	todo := split(path)
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack[len(stack)-1].f.Close()
				stack = stack[:len(stack)-1]
			}
			continue
		}
		dir := stack[len(stack)-1]
		here := strings.TrimSuffix(cur(), "/") + "/" + c
		f, err := openat(int(dir.f.Fd()), c)
		if err != nil {
			return fail(&Error{here, err})
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			f.Close()
			return fail(&Error{here, err})
		}
		last := len(todo) == 0
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK && (!last || followLast):
			if len(r.Hops) >= MaxHops {
				f.Close()
				return fail(&Error{here, unix.ELOOP})
			}
			target, err := readlink(f)
			f.Close()
			if err != nil {
				return fail(&Error{here, err})
			}
			d, err := reopen(dir.f)
			if err != nil {
				return fail(&Error{here, err})
			}
			r.Hops = append(r.Hops, Hop{Path: here, Dir: d})
			if strings.HasPrefix(target, "/") {
				for _, e := range stack[1:] {
					e.f.Close()
				}
				stack = stack[:1]
			}
			todo = append(split(target), todo...)
			continue
		case !last && st.Mode&unix.S_IFMT != unix.S_IFDIR:
			f.Close()
			return fail(&Error{here, unix.ENOTDIR})
		}
		stack = append(stack, entry{f, c})
	}
	r.Path = cur()
	top := stack[len(stack)-1]
	r.File = top.f
	if err := unix.Fstat(int(r.File.Fd()), &r.Stat); err != nil {
		return fail(&Error{r.Path, err})
	}
	if len(stack) > 1 {
		r.parent = stack[len(stack)-2].f
		for _, e := range stack[:len(stack)-2] {
			e.f.Close()
		}
	} else {
		p, err := reopen(top.f)
		if err != nil {
			return fail(&Error{r.Path, err})
		}
		r.parent = p
	}
	return r, nil
}

func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func openat(dirfd int, name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(dirfd, name, walkFlags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// reopen returns a new O_PATH fd of the directory f.
func reopen(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func readlink(f *os.File) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(int(f.Fd()), "", buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= 1<<16 {
			return "", unix.ENAMETOOLONG
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Stat returns the identity of f.
func Stat(f *os.File) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ID{}, err
	}
	return ID{uint64(st.Dev), st.Ino}, nil
}

// Ancestors returns the identities of the directory dir and of each
// directory above it, up to the root, found through ".." on fds.
func Ancestors(dir *os.File) ([]ID, error) {
	var ids []ID
	f, err := reopen(dir)
	if err != nil {
		return nil, err
	}
	defer func() { f.Close() }()
	for i := 0; i < 4096; i++ {
		id, err := Stat(f)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		up, err := openat(int(f.Fd()), "..")
		if err != nil {
			return nil, err
		}
		upID, err := Stat(up)
		if err != nil {
			up.Close()
			return nil, err
		}
		f.Close()
		f = up
		if upID == id {
			return ids, nil
		}
	}
	return nil, fmt.Errorf("more than 4096 directories above %s", dir.Name())
}

// Within returns the first of ids that is dir or a directory above it.
func Within(dir *os.File, ids map[ID]string) (ID, bool, error) {
	anc, err := Ancestors(dir)
	if err != nil {
		return ID{}, false, err
	}
	for _, a := range anc {
		if _, ok := ids[a]; ok {
			return a, true, nil
		}
	}
	return ID{}, false, nil
}

// Child opens name, one component, in the directory r without following
// a symlink. The result carries copies of r's hops.
func (r *Resolved) Child(name string) (*Resolved, error) {
	here := strings.TrimSuffix(r.Path, "/") + "/" + name
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil, &Error{here, errors.New("not a single path component")}
	}
	f, err := openat(int(r.File.Fd()), name)
	if err != nil {
		return nil, &Error{here, err}
	}
	c := &Resolved{File: f, Path: here}
	if err := unix.Fstat(int(f.Fd()), &c.Stat); err != nil {
		c.Close()
		return nil, &Error{here, err}
	}
	if c.parent, err = reopen(r.File); err != nil {
		c.Close()
		return nil, &Error{here, err}
	}
	for _, h := range r.Hops {
		d, err := reopen(h.Dir)
		if err != nil {
			c.Close()
			return nil, &Error{h.Path, err}
		}
		c.Hops = append(c.Hops, Hop{Path: h.Path, Dir: d})
	}
	return c, nil
}
