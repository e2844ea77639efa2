package claude

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
)

// The roots of the read-write binds (the project, the sandbox home, the
// private tmp, the config's rw lines) are mount points inside: the sandbox
// cannot rename or remove them, but it owns them and can chmod them. A
// `chmod 0777 .` at the project root lets every local user write into the
// project (hooks, scripts the user runs next); a `chmod 0755` of the
// sandbox home shows it to them. So the launcher records each root's mode
// before the chain starts and puts it back when the chain has ended.
// The same holds for the root's POSIX ACLs, which the owner may set without
// changing the mode: `setfacl -d -m o::rwx .` makes every file the user
// later creates in the project writable by everyone (a default ACL
// overrides the umask). So the launcher records both ACL xattrs too,
// absent being a state of its own, and puts back any that changed.

// modeBits are the bits chmod sets: permissions, S_ISUID, S_ISGID, S_ISVTX.
const modeBits = 0o7777

// rootMode is the recorded mode of one bind root.
type rootMode struct {
	f    *os.File // the bind source's fd (O_PATH is enough)
	name string   // the host path, for the message
	mode uint32   // modeBits of the mode at the start
	acls []acl    // the ACLs at the start, one per aclKinds
}

// aclKinds are the POSIX ACL xattrs of a directory and the setfacl command
// that removes each.
var aclKinds = []struct{ xattr, name, setfacl string }{
	{"system.posix_acl_access", "access", "setfacl -b"},
	{"system.posix_acl_default", "default", "setfacl -k"},
}

// acl is the state of one ACL xattr: absent, or its value.
type acl struct {
	present bool
	value   []byte
}

// rootModes are the modes to put back at exit.
type rootModes []rootMode

// recordRootModes records the modes of the read-write bind roots of l,
// from the fds of b (openBinds).
func recordRootModes(l *sandbox.Launch, b *bound) (rootModes, error) {
	return recordModes(writableRoots(&l.Plan, b.files, sandbox.SeccompFD+1))
}

// writableRoots returns the name and fd of every read-write bind that p
// binds from an fd; files[i] is the fd numbered firstFD+i (bindFromFDs).
func writableRoots(p *bwrap.Plan, files []*os.File, firstFD int) (names []string, fds []*os.File) {
	for _, o := range p.Ops {
		i := o.SrcFD - firstFD
		if !o.IsWritable() || o.SrcFD <= 2 || i < 0 || i >= len(files) {
			continue
		}
		names = append(names, o.Src)
		fds = append(fds, files[i])
	}
	return names, fds
}

// recordModes records the mode of each directory by its open fd, never by
// name: the name may have been swapped since it was checked.
func recordModes(names []string, fds []*os.File) (rootModes, error) {
	var m rootModes
	for i, f := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return nil, fmt.Errorf("record the mode of %s: %w", quote.String(names[i]), os.NewSyscallError("fstat", err))
		}
		acls, err := getACLs(int(f.Fd()))
		if err != nil {
			return nil, fmt.Errorf("record the ACLs of %s: %w", quote.String(names[i]), err)
		}
		m = append(m, rootMode{f: f, name: names[i], mode: st.Mode & modeBits, acls: acls})
	}
	return m, nil
}

// restore puts back every ACL and mode that changed, on the same fds, and
// says so on w in one line for each; one it cannot put back is named with
// the command that would. The ACLs go first: setting the access ACL sets
// the group bits of the mode too, and the mode put back last is final.
func (m rootModes) restore(w io.Writer) {
	for _, r := range m {
		fd := int(r.f.Fd())
		r.restoreACLs(w, fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			fmt.Fprintf(w, "claude: cannot check the mode of %s: %v\n", quote.String(r.name), os.NewSyscallError("fstat", err))
			continue
		}
		now := st.Mode & modeBits
		if now == r.mode {
			continue
		}
		if err := fchmodFD(fd, r.mode); err != nil {
			fmt.Fprintf(w, "claude: the sandbox changed the mode of %s from %04o to %04o and it cannot be put back: %v: run chmod %04o %s\n",
				quote.String(r.name), r.mode, now, err, r.mode, quote.String(r.name))
			continue
		}
		fmt.Fprintf(w, "claude: the sandbox changed the mode of %s from %04o to %04o: restored %04o\n",
			quote.String(r.name), r.mode, now, r.mode)
	}
}

// fchmodFD sets the mode of the file fd refers to, also when fd is O_PATH
// (fchmod refuses those with EBADF): through fchmodat2's AT_EMPTY_PATH
// where the kernel has it (Linux 6.6), else through the fd's /proc link,
// which names the same inode, not a path.
func fchmodFD(fd int, mode uint32) error {
	if err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH); err == nil {
		return nil
	}
	return chmodProcFD(fd, mode)
}

// chmodProcFD is fchmodFD for kernels without fchmodat2.
func chmodProcFD(fd int, mode uint32) error {
	if err := unix.Chmod(procFD(fd), mode); err != nil {
		return os.NewSyscallError("chmod", err)
	}
	return nil
}

// procFD names the inode fd refers to, not a path: xattr calls refuse an
// O_PATH fd (EBADF), and the getxattr family follows the /proc link to the
// file the fd holds.
func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// getACLs reads the ACL xattrs of the file fd refers to, in aclKinds
// order. ENODATA is an absent ACL; so is ENOTSUP, a file system without
// ACLs, where the sandbox cannot set one either.
func getACLs(fd int) ([]acl, error) {
	var acls []acl
	for _, k := range aclKinds {
		v, err := getxattr(procFD(fd), k.xattr)
		switch {
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP):
			acls = append(acls, acl{})
		case err != nil:
			return nil, os.NewSyscallError("getxattr "+k.xattr, err)
		default:
			acls = append(acls, acl{present: true, value: v})
		}
	}
	return acls, nil
}

// getxattr returns the whole value of attr, growing the buffer while the
// value grows under it.
func getxattr(path, attr string) ([]byte, error) {
	for {
		n, err := unix.Getxattr(path, attr, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		n, err = unix.Getxattr(path, attr, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// restoreACLs puts back each ACL of r that changed: the old value, or none
// where there was none.
func (r rootMode) restoreACLs(w io.Writer, fd int) {
	now, err := getACLs(fd)
	if err != nil {
		fmt.Fprintf(w, "claude: cannot check the ACLs of %s: %v\n", quote.String(r.name), err)
		return
	}
	for i, k := range aclKinds {
		old, cur := r.acls[i], now[i]
		if old.present == cur.present && bytes.Equal(old.value, cur.value) {
			continue
		}
		what := "changed"
		switch {
		case !old.present:
			what = "added"
		case !cur.present:
			what = "removed"
		}
		if err := setACL(fd, k.xattr, old); err != nil {
			fmt.Fprintf(w, "claude: the sandbox %s the %s ACL of %s and it cannot be put back: %v: run %s %s\n",
				what, k.name, quote.String(r.name), err, k.setfacl, quote.String(r.name))
			continue
		}
		fmt.Fprintf(w, "claude: the sandbox %s the %s ACL of %s: restored\n", what, k.name, quote.String(r.name))
	}
}

// setACL gives the file fd refers to the ACL a: its value, or none.
func setACL(fd int, attr string, a acl) error {
	if !a.present {
		if err := unix.Removexattr(procFD(fd), attr); err != nil && !errors.Is(err, unix.ENODATA) {
			return os.NewSyscallError("removexattr", err)
		}
		return nil
	}
	if err := unix.Setxattr(procFD(fd), attr, a.value, 0); err != nil {
		return os.NewSyscallError("setxattr", err)
	}
	return nil
}
