package netnsenter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Size limits of the files read with privilege.
const (
	maxWhitelistSize = 64 << 10
	maxGroupFileSize = 4 << 20
)

// Refusals that do not depend on input.
var (
	errNotSetuid  = errors.New("netns-enter must be installed setuid root: run make install-network")
	errNoNewPrivs = errors.New("no_new_privs is set, so the kernel ignored setuid: netns-enter cannot be used from inside a sandbox")
	errUserns     = errors.New("netns-enter must run in the initial user namespace")
)

func notActive(name string) error {
	return multicall.Refusal(multicall.ExitNotActive, fmt.Errorf("namespace %s is not active: systemctl start netns@%s", name, name))
}

// enter checks everything, enters the namespace, drops privileges for good
// and executes the command. It returns only on failure; the caller exits.
//
// Preconditions: req was built by parseArgs (the name is valid, the command
// non-empty); called from the goroutine that will exec, before the applet did
// anything else. The OS thread is locked and never unlocked: setns and
// PR_SET_NO_NEW_PRIVS act on the calling thread only, and execve must run on
// that same thread. Nothing here reads the environment before the drop.
//
// An error it returns is printed by the dispatcher on this same thread, to
// the caller's stderr: enter returns it only once the thread's euid is the
// caller's again (asCaller), so that the write is the caller's, not root's.
func enter(req request, whitelist string) (err error) {
	runtime.LockOSThread()

	// 0. The entry point (entry_linux.go) recorded the caller's signals
	// and started the runtime as the caller: threads it made count
	// against the caller's RLIMIT_NPROC, however many GOMAXPROCS asked
	// for. The caller's ignored signals are ignored again; from here on
	// the runtime has one P, which bounds the threads made while
	// privileged to a few; then root is taken back.
	if err := checkEntry(); err != nil {
		return err
	}
	if err := ignoreSignals(false); err != nil {
		return err
	}
	runtime.GOMAXPROCS(1)
	if entryDropped == 1 {
		if err := threadSetres(unix.SYS_SETRESUID, -1, 0, -1); err != nil {
			return fmt.Errorf("take back root: %w", os.NewSyscallError("setresuid", err))
		}
		defer func() { err = asCaller(err) }()
	}

	// 1. Who is calling.
	ruid, rgid := unix.Getuid(), unix.Getgid()
	if ruid == 0 {
		// The root of a user namespace the caller made (unshare -Ur) is
		// not root: say what is wrong there.
		if _, err := ownUserns(); err != nil {
			return err
		}
		return fmt.Errorf("run by root: root needs no helper, use ip netns exec %s", req.Name)
	}
	if unix.Geteuid() != 0 {
		if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil && nnp == 1 {
			return multicall.Refusal(multicall.ExitNoNewPrivs, errNoNewPrivs)
		}
		return multicall.Refusal(multicall.ExitNotSetuid, errNotSetuid)
	}

	// 2. May this caller enter this namespace.
	e, err := allowed(req.Name, whitelist)
	if err != nil {
		return err
	}
	if e.Group != "" {
		if err := checkGroup(e, whitelist, rgid); err != nil {
			return err
		}
	}

	// 3. Is the target a network namespace of the host, other than its own.
	nsfd, err := openTarget(req.Name)
	if err != nil {
		return err
	}
	envfd, err := openProc("/proc/self/environ")
	if err != nil {
		unix.Close(nsfd)
		return err
	}

	// 4. Enter, close what we opened, drop for good.
	err = unix.Setns(nsfd, unix.CLONE_NEWNET)
	unix.Close(nsfd)
	if err != nil {
		unix.Close(envfd)
		return fmt.Errorf("enter namespace %s: %w", req.Name, os.NewSyscallError("setns", err))
	}
	if err := drop(ruid, rgid); err != nil {
		unix.Close(envfd)
		return fmt.Errorf("drop privileges: %w", err)
	}

	// 5. Unprivileged from here: the caller's environment, verbatim. Go's
	// runtime rewrote GOTRACEBACK in os.Environ for this setuid process, so
	// the original is read from /proc/self/environ (opened above as root: it
	// is mode 0400 root for a process that started setuid).
	env, err := readAll(envfd, "/proc/self/environ", 1<<30)
	unix.Close(envfd)
	if err != nil {
		return err
	}
	envv := splitEnv(env)
	path, err := lookPath(req.Argv[0], envv)
	if err != nil {
		return err
	}
	if err := ignoreSignals(true); err != nil {
		return err
	}
	if err := restoreMask(); err != nil {
		return err
	}
	err = unix.Exec(path, req.Argv, envv)
	return fmt.Errorf("exec %s: %w", quote.String(path), err)
}

// allowed reads the whitelist and returns the entry for name.
func allowed(name, whitelist string) (entry, error) {
	data, err := readTrusted(whitelist, maxWhitelistSize)
	if errors.Is(err, unix.ENOENT) {
		return entry{}, multicall.Refusal(multicall.ExitNoWhitelist, fmt.Errorf("whitelist %s does not exist: run make install-network", whitelist))
	}
	if err != nil {
		return entry{}, fmt.Errorf("whitelist %w", err)
	}
	entries, err := parseWhitelist(data)
	if err != nil {
		return entry{}, fmt.Errorf("whitelist %s:%w", whitelist, err)
	}
	e, ok := find(entries, name)
	if !ok {
		return entry{}, multicall.Refusal(multicall.ExitNotListed, fmt.Errorf("namespace %s is not in the whitelist %s", name, whitelist))
	}
	return e, nil
}

// checkGroup refuses callers whose real and supplementary groups do not
// include e.Group. The groups are the process's, as the kernel has them, not
// the members listed in /etc/group: a group the caller dropped stays dropped.
func checkGroup(e entry, whitelist string, rgid int) error {
	data, err := readTrusted(GroupFile, maxGroupFileSize)
	if err != nil {
		return err
	}
	gid, err := lookupGroup(data, e.Group)
	if errors.Is(err, errNoGroup) {
		return fmt.Errorf("whitelist %s:%d: group %s not found in %s", whitelist, e.Line, e.Group, GroupFile)
	}
	if err != nil {
		return fmt.Errorf("%s:%w", GroupFile, err)
	}
	groups, err := unix.Getgroups()
	if err != nil {
		return os.NewSyscallError("getgroups", err)
	}
	gs := make([]uint32, len(groups))
	for i, g := range groups {
		gs[i] = uint32(g)
	}
	if !member(gid, uint32(rgid), gs) {
		return multicall.Refusal(multicall.ExitNotMember, fmt.Errorf("not a member of group %s", e.Group))
	}
	return nil
}

const walkFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens the absolute, clean directory path one component at a time
// from "/", never following a symlink, and checks each directory with
// checkDir on the opened fd, so nothing can be swapped between check and
// use. It returns an O_PATH fd of the last directory.
func openDir(path string) (int, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return -1, fmt.Errorf("%q is not an absolute, clean path", path)
	}
	fd, err := unix.Open("/", walkFlags|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	cur := "/"
	for _, comp := range append([]string{""}, strings.Split(path, "/")[1:]...) {
		if comp != "" {
			cur = filepath.Join(cur, comp)
			next, err := unix.Openat(fd, comp, walkFlags, 0)
			unix.Close(fd)
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: cur, Err: err}
			}
			fd = next
		}
		fi, err := fstat(fd, cur)
		if err == nil && fi.Mode&sIFMT == sIFDIR {
			fi.ACL, err = dirACL(fd, cur)
		}
		if err == nil {
			err = checkDir(cur, fi)
		}
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// readTrusted reads a root-owned configuration file at an absolute path,
// through openDir and one O_NOFOLLOW open, checking the file on the fd it
// reads from. Errors start with the path.
func readTrusted(path string, max int64) ([]byte, error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, fmt.Errorf("%s: not a file name", path)
	}
	dfd, err := openDir(filepath.Clean(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fd, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	unix.Close(dfd)
	if err == unix.ELOOP {
		return nil, fmt.Errorf("%s %w", path, checkFile(path, fileInfo{Mode: sIFLNK}, max))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	fi, err := fstat(fd, path)
	if err == nil {
		fi.ACL, err = fdACL(fd, path)
	}
	if err != nil {
		return nil, err
	}
	if err := checkFile(path, fi, max); err != nil {
		return nil, fmt.Errorf("%s %w", path, err)
	}
	return readAll(fd, path, max)
}

// openTarget opens /run/netns/NAME and proves it is a network namespace
// owned by the initial user namespace and not the host's own.
func openTarget(name string) (fd int, err error) {
	target := nsname.Path(name)
	dfd, err := openDir(nsname.RunDir)
	if errors.Is(err, unix.ENOENT) {
		return -1, notActive(name)
	}
	if err != nil {
		return -1, err
	}
	// name has no '/' (nsname), so RESOLVE_BENEATH cannot matter; it and
	// RESOLVE_NO_MAGICLINKS are belts to the braces.
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err = unix.Openat2(dfd, name, &unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	// Linux before 5.6 has no openat2 (ENOSYS); seccomp profiles written
	// before it, as older container runtimes ship, deny it (EPERM). The
	// name was validated, so openat with O_NOFOLLOW opens the same file.
	if err == unix.ENOSYS || err == unix.EPERM {
		fd, err = unix.Openat(dfd, name, flags|unix.O_NOFOLLOW, 0)
	}
	unix.Close(dfd)
	switch {
	case err == unix.ENOENT:
		return -1, notActive(name)
	case err == unix.ELOOP:
		return -1, fmt.Errorf("%s is a symlink, not a namespace", target)
	case err != nil:
		return -1, &os.PathError{Op: "open", Path: target, Err: err}
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
			fd = -1
		}
	}()

	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return -1, &os.PathError{Op: "fstatfs", Path: target, Err: err}
	}
	if sfs.Type != unix.NSFS_MAGIC {
		return -1, multicall.Refusal(multicall.ExitNotActive, fmt.Errorf("%s is not a namespace: systemctl restart netns@%s", target, name))
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err != nil || t != unix.CLONE_NEWNET {
		return -1, fmt.Errorf("%s is not a network namespace", target)
	}
	net, err := nsStat(fd, target, unix.CLONE_NEWNET)
	if err != nil {
		return -1, err
	}

	// Owner: the user namespace our own credentials live in, which must be
	// the initial one.
	self, err := ownUserns()
	if err != nil {
		return -1, err
	}
	ok, err := ownedBy(fd, self)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", target, err)
	}
	if !ok {
		return -1, fmt.Errorf("%s is owned by a user namespace other than the host's", target)
	}
	host, err := hostNetns()
	if err != nil {
		return -1, err
	}
	for _, h := range host {
		if net == h {
			return -1, fmt.Errorf("%s is the host's network namespace", target)
		}
	}
	return fd, nil
}

// hostNetns returns the network namespaces of PID 1 and of kthreadd (PID 2,
// whose kernel threads always run in the initial network namespace). Some
// inits are not introspectable even by root (EACCES), so one of the two is
// enough; with neither, it fails closed.
func hostNetns() ([]fileInfoID, error) {
	var ids []fileInfoID
	var firstErr error
	for _, p := range []string{"/proc/1/ns/net", "/proc/2/ns/net"} {
		id, err := procNs(p, unix.CLONE_NEWNET)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("cannot tell the host's network namespace: %w", firstErr)
	}
	return ids, nil
}

// ownedBy reports whether the namespace fd is owned by user namespace want.
// NS_GET_USERNS fails with EPERM for an owner outside the caller's scope:
// that is a "no".
func ownedBy(fd int, want fileInfoID) (bool, error) {
	owner, err := unix.IoctlRetInt(fd, unix.NS_GET_USERNS)
	if err == unix.EPERM {
		return false, nil
	}
	if err != nil {
		return false, os.NewSyscallError("ioctl(NS_GET_USERNS)", err)
	}
	defer unix.Close(owner)
	o, err := nsStat(owner, "owning user namespace", unix.CLONE_NEWUSER)
	if err != nil {
		return false, err
	}
	return o == want, nil
}

// ownUserns returns the identity of the process's user namespace and checks
// that it is the initial one (its uid_map is the identity over all uids).
// A setuid execution in a child user namespace gets root only where the
// file's owner is mapped, i.e. in a namespace a privileged process made; its
// capabilities then apply to that namespace only, never to the host's.
func ownUserns() (fileInfoID, error) {
	id, err := procNs("/proc/self/ns/user", unix.CLONE_NEWUSER)
	if err != nil {
		return id, err
	}
	fd, err := openProc("/proc/self/uid_map")
	if err != nil {
		return id, err
	}
	m, err := readAll(fd, "/proc/self/uid_map", 1<<16)
	unix.Close(fd)
	if err != nil {
		return id, err
	}
	if f := strings.Fields(string(m)); len(f) != 3 || f[0] != "0" || f[1] != "0" || f[2] != "4294967295" {
		return id, errUserns
	}
	return id, nil
}

// fileInfoID identifies a file (a namespace, for nsfs files).
type fileInfoID struct{ Dev, Ino uint64 }

// procNs opens a namespace link under /proc and returns its identity after
// checking it is an nsfs file of type nstype.
func procNs(path string, nstype int) (fileInfoID, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return fileInfoID{}, fmt.Errorf("open %s: %w: netns-enter needs /proc (mount -t proc proc /proc)", path, err)
	}
	if err != nil {
		return fileInfoID{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return nsStat(fd, path, nstype)
}

func nsStat(fd int, path string, nstype int) (fileInfoID, error) {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return fileInfoID{}, &os.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); sfs.Type != unix.NSFS_MAGIC || err != nil || t != nstype {
		return fileInfoID{}, fmt.Errorf("%s is not the namespace it should be", path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileInfoID{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	return fileInfoID{Dev: st.Dev, Ino: st.Ino}, nil
}

// openProc opens a file of the real procfs.
func openProc(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1, fmt.Errorf("%s is not on procfs", path)
	}
	return fd, nil
}

func fstat(fd int, path string) (fileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileInfo{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	return fileInfo{Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Size: st.Size}, nil
}

// fdACL returns the POSIX access ACL of the file open at fd (not O_PATH),
// or nil when it has none or its filesystem has no ACLs.
func fdACL(fd int, path string) ([]byte, error) {
	buf := make([]byte, 64<<10) // XATTR_SIZE_MAX: every value fits
	n, err := unix.Fgetxattr(fd, "system.posix_acl_access", buf)
	switch err {
	case nil:
		return buf[:n], nil
	case unix.ENODATA, unix.EOPNOTSUPP:
		return nil, nil
	}
	return nil, &os.PathError{Op: "fgetxattr system.posix_acl_access", Path: path, Err: err}
}

// dirACL is fdACL for a directory open with O_PATH, on which fgetxattr fails
// (EBADF): it reads the ACL through "." opened beneath it, the same
// directory.
func dirACL(pathfd int, path string) ([]byte, error) {
	fd, err := unix.Openat(pathfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return fdACL(fd, path)
}

// readAll reads fd to EOF, failing beyond max bytes.
func readAll(fd int, path string, max int64) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		n, err := unix.Read(fd, chunk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf.Bytes(), nil
		}
		buf.Write(chunk[:n])
		if int64(buf.Len()) > max {
			return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
		}
	}
}

// threadSetres calls setresuid or setresgid (nr) for the calling thread
// only. Go's syscall.Setresuid acts on every thread by sending each a
// real-time signal (33) and waiting until all have handled it; the caller's
// RLIMIT_SIGPENDING (or its pending-signal queue, filled by its other
// processes) can make that signal fail to queue (EAGAIN, which the runtime
// ignores), and it would then wait for ever, with root on one thread. The
// privileged work and the execve all run on the one locked thread, and the
// others never regain root (the entry point set their euid to the caller's
// before they existed; the threads the runtime makes later are cloned by
// its template thread, not by a locked one).
//
// Preconditions: the OS thread is locked.
func threadSetres(nr uintptr, r, e, s int) error {
	if _, _, errno := unix.RawSyscall(nr, uintptr(r), uintptr(e), uintptr(s)); errno != 0 {
		return errno
	}
	return nil
}

// asCaller sets this thread's euid back to the real uid, as the entry point
// left it, before err goes to the dispatcher, which writes it to the
// caller's stderr from this thread. As root that write would keep a setgid
// bit and ignore quotas. If even that fails the thread may still be root:
// then nothing is printed, and the exit status is err's.
//
// Preconditions: the OS thread is locked; its saved uid is root.
func asCaller(err error) error {
	if err == nil {
		return nil
	}
	if threadSetres(unix.SYS_SETRESUID, -1, unix.Getuid(), -1) != nil {
		return &multicall.ExitError{Code: multicall.Code(err)}
	}
	return err
}

// drop sets all uids and gids of this thread (the one that execs) to the
// real ones, keeps the supplementary groups as they are, sets no_new_privs
// on it, and verifies that root cannot be regained. The other threads keep
// the caller's euid they had all along; execve ends them.
//
// Preconditions: the OS thread is locked.
func drop(uid, gid int) error {
	if err := threadSetres(unix.SYS_SETRESGID, gid, gid, gid); err != nil {
		return os.NewSyscallError("setresgid", err)
	}
	if err := threadSetres(unix.SYS_SETRESUID, uid, uid, uid); err != nil {
		return os.NewSyscallError("setresuid", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	if r, e, s := unix.Getresuid(); r != uid || e != uid || s != uid {
		return fmt.Errorf("uids are %d/%d/%d after setresuid(%d)", r, e, s, uid)
	}
	if r, e, s := unix.Getresgid(); r != gid || e != gid || s != gid {
		return fmt.Errorf("gids are %d/%d/%d after setresgid(%d)", r, e, s, gid)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return os.NewSyscallError("capget", err)
	}
	for _, c := range caps {
		if c.Effective != 0 || c.Permitted != 0 {
			return errors.New("capabilities remain after the drop")
		}
	}
	// Raw syscalls act on this thread only, which is the one that execs.
	// The errno is reported with %v: it is the value found (0: success),
	// not a cause.
	if _, _, e := unix.RawSyscall(unix.SYS_SETUID, 0, 0, 0); e != unix.EPERM {
		return fmt.Errorf("setuid(0) after the drop: got %v, want EPERM", e)
	}
	if gid != 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGID, 0, 0, 0); e != unix.EPERM {
			return fmt.Errorf("setgid(0) after the drop: got %v, want EPERM", e)
		}
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
		return errors.New("no_new_privs is not set after the drop")
	}
	return nil
}

// lookPath finds file as execvp(3) does: a name with a slash is used as is;
// otherwise the first regular, executable file in PATH (or in /bin:/usr/bin
// when PATH is unset; an empty entry means the current directory). It runs
// after the drop, so access(2) checks the caller's own rights.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path, ok := getenv(env, "PATH")
	if !ok {
		path = "/bin:/usr/bin"
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + file
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH", quote.String(file))
}

// splitEnv splits the NUL-terminated entries of /proc/PID/environ.
func splitEnv(b []byte) []string {
	if len(b) == 0 {
		return []string{}
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// getenv returns the value of the first key= entry, as getenv(3) does, and
// whether there was one.
func getenv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v, true
		}
	}
	return "", false
}
