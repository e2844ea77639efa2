package bindir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Owner is who owns a path, its mode and its POSIX ACLs (the
// system.posix_acl_access and, for a directory, system.posix_acl_default
// extended attributes; nil when absent), as CheckTrusted needs them.
type Owner struct {
	UID        uint32
	Mode       os.FileMode
	ACL        []byte
	DefaultACL []byte
}

// statOwner is Lstat reduced to Owner, with the ACLs.
func statOwner(path string) (Owner, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Owner{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Owner{}, fmt.Errorf("lstat %s: no owner", path)
	}
	o := Owner{UID: st.Uid, Mode: fi.Mode()}
	if fi.Mode()&os.ModeSymlink != 0 {
		return o, nil
	}
	if o.ACL, err = xattr(path, "system.posix_acl_access"); err != nil {
		return Owner{}, err
	}
	if fi.IsDir() {
		if o.DefaultACL, err = xattr(path, "system.posix_acl_default"); err != nil {
			return Owner{}, err
		}
	}
	return o, nil
}

// xattr returns path's extended attribute name (not following a symlink),
// nil if it has none or the file system keeps none.
func xattr(path, name string) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(path, name, buf)
		switch {
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP):
			return nil, nil
		case errors.Is(err, unix.ERANGE):
			buf = make([]byte, 2*len(buf))
			continue
		case err != nil:
			return nil, &os.PathError{Op: "getxattr " + name, Path: path, Err: err}
		}
		return buf[:n], nil
	}
}

// CheckTrusted refuses a bin directory that someone other than root could
// change: the directory and every directory above it must be owned by root
// and writable by neither group nor others, and so must every symlink on
// the way and the directories its target leads through. Whoever can write
// there could otherwise put a binary where a root claude-update runs it.
// Components that do not exist yet are skipped: Lock creates them as root
// and checks again.
func CheckTrusted(path string) error {
	return checkTrusted(path, statOwner, os.Readlink, 0)
}

// CheckTrustedFile applies the same rule to a file root is about to read as
// configuration or run, what naming it in the error ("npmrc", "cafile"): the
// file, every directory above it, every symlink on the way and where it
// leads must be root's and writable by no one else, ACLs included. A path
// that does not exist passes (opening it fails).
func CheckTrustedFile(what, path string) error {
	return checkTrustedAs(what, path, statOwner, os.Readlink, 0)
}

// checkTrusted is CheckTrusted with the file system as functions, for tests.
func checkTrusted(path string, stat func(string) (Owner, error), readlink func(string) (string, error), depth int) error {
	return checkTrustedAs("", path, stat, readlink, depth)
}

func checkTrustedAs(what, path string, stat func(string) (Owner, error), readlink func(string) (string, error), depth int) error {
	name := what
	if name == "" {
		name = "bin dir"
	}
	if depth > 16 {
		return fmt.Errorf("%s %s: too many levels of symbolic links", name, quote.String(path))
	}
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s %s is not an absolute path", name, quote.String(path))
	}
	// From / down, so that the first problem reported is the outermost.
	var prefixes []string
	for p := path; ; p = filepath.Dir(p) {
		prefixes = append(prefixes, p)
		if p == "/" {
			break
		}
	}
	for i := len(prefixes) - 1; i >= 0; i-- {
		p := prefixes[i]
		o, err := stat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, path, err)
		}
		if msg := untrusted(o); msg != "" {
			return &UntrustedError{What: what, Dir: path, Path: p, Problem: msg, Advice: advice(what, p, path, o)}
		}
		for _, a := range []struct {
			acl []byte
			def bool
			fix string
		}{{o.ACL, false, "setfacl -b "}, {o.DefaultACL, true, "setfacl -k "}} {
			if msg := aclProblem(a.acl, a.def); msg != "" {
				return &UntrustedError{What: what, Dir: path, Path: p, Problem: msg, Advice: a.fix + p}
			}
		}
		if o.Mode&os.ModeSymlink != 0 {
			t, err := readlink(p)
			if err != nil {
				return fmt.Errorf("%s %s: %w", name, path, err)
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(p), t)
			}
			rest := strings.TrimPrefix(path, p)
			return checkTrustedAs(what, filepath.Join(t, rest), stat, readlink, depth+1)
		}
	}
	return nil
}

// UntrustedError is CheckTrusted's refusal: Path, the bin directory Dir
// or a directory or symlink on the way to it, is Problem ("is owned by uid
// 1000, not root"); Advice says what to do. For CheckTrustedFile, What
// names the file's role and Dir is the file.
type UntrustedError struct {
	What, Dir, Path, Problem, Advice string
}

func (e *UntrustedError) Error() string {
	what := e.What
	if what == "" {
		what = "bin dir"
	}
	return fmt.Sprintf("%s %s is unsafe for root: %s %s: %s", what, quote.String(e.Dir), quote.String(e.Path), e.Problem, e.Advice)
}

// untrusted says what is wrong with o, or "".
func untrusted(o Owner) string {
	switch {
	case o.UID != 0:
		return fmt.Sprintf("is owned by uid %d, not root", o.UID)
	case o.Mode&os.ModeSymlink == 0 && o.Mode.Perm()&0o022 != 0:
		return fmt.Sprintf("is writable by group or others (%v)", o.Mode)
	}
	return ""
}

func advice(what, p, dir string, o Owner) string {
	if what != "" {
		return "root reads only what root owns and only root can write"
	}
	if p == dir && o.Mode&os.ModeSymlink == 0 {
		return fmt.Sprintf("chown root:root %s && chmod go-w %s, or set CLAUDE_SBX_BINDIR to a directory only root can write (such as /opt/claude/bin)", p, p)
	}
	return "set CLAUDE_SBX_BINDIR to a directory that root owns and only root can write, in directories likewise (such as /opt/claude/bin)"
}
