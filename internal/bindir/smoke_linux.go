package bindir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// smokeUser is who the smoke test runs as when claude-update is root.
const smokeUser = "nobody"

// startConfined starts cmd in bwrap (its path), confined: bwrap's
// namespaces, root and the seccomp filter (smokeArgs); no_new_privs always;
// as root also an unprivileged uid and gid (nobody) with no supplementary
// groups, hence no capabilities, an empty capability bounding set, and new
// network, PID, IPC and UTS namespaces around bwrap itself. cmd.Path is
// replaced by bwrap and cmd.Args become bwrap's, followed by the command.
//
// The namespaces, bounding set and no_new_privs are set on a thread of our
// own, from which the child is forked and inherits them; that thread stays
// locked, and alive until release is called (bwrap --die-with-parent
// counts the thread that forked it as its parent), then ends with its
// goroutine, so nothing else of this process ever runs on it (the Go
// runtime does not start threads from a locked one). If any step fails,
// nothing is started. Call release after cmd.Wait.
func startConfined(cmd *exec.Cmd, bwrap string) (release func(), err error) {
	filter, err := seccomp.Build(seccomp.Options{NoLocalSockets: true})
	if err != nil {
		return nil, fmt.Errorf("smoke test: seccomp filter: %w", err)
	}
	mf, err := memfd("seccomp", filter.Bytes())
	if err != nil {
		return nil, fmt.Errorf("smoke test: %w", err)
	}
	defer mf.Close()
	cmd.ExtraFiles = append(cmd.ExtraFiles, mf)
	cmd.Path = bwrap
	cmd.Args = append(smokeArgs(bwrap, 2+len(cmd.ExtraFiles), os.Lstat, os.Readlink), cmd.Args...)
	root := os.Geteuid() == 0
	if root {
		uid, gid := smokeIDs()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		}
	} else {
		// bwrap reports the command's exit as soon as its PID 1 inside
		// says it, before the kernel has ended that PID namespace. Run
		// bwrap as PID 1 of a PID namespace of our own (in a user
		// namespace mapping only our ids, as root needs none): when it
		// exits the kernel kills and reaps every process in it, nested
		// namespaces included, before Wait returns.
		uid, gid := os.Getuid(), os.Getgid()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		}
	}
	// os checks once, with a fork of its own, that pidfds work; done on
	// the confined thread, that fork would be the new PID namespace's
	// init, and the real one would fail (ENOMEM). FindProcess runs the
	// check here.
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		// Preconditions: this goroutine never unlocks its thread; the
		// thread exits with it, taking the namespaces.
		runtime.LockOSThread()
		errc <- confineThread(root, cmd)
		<-done
	}()
	if err := <-errc; err != nil {
		close(done)
		return nil, err
	}
	return func() { close(done) }, nil
}

// confineThread confines the calling thread and starts cmd from it.
func confineThread(root bool, cmd *exec.Cmd) error {
	if root {
		const ns = unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
		if err := unix.Unshare(ns); err != nil {
			return fmt.Errorf("smoke test: %w: refusing to run the new binary unconfined", os.NewSyscallError("unshare", err))
		}
		for c := 0; ; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				if errors.Is(err, unix.EINVAL) && c > 0 {
					break // past the last capability
				}
				return fmt.Errorf("smoke test: drop capability %d: %w", c, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("smoke test: %w", os.NewSyscallError("prctl no_new_privs", err))
	}
	return cmd.Start() // bwrap applies the filter
}

// findBwrap returns the first bwrap of bwrapPaths, as root only one that
// passes CheckTrustedFile (one that does not is skipped with a line), or "".
func (d *Dir) findBwrap() string {
	for _, p := range bwrapPaths {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if os.Geteuid() == 0 {
			if err := CheckTrustedFile("bwrap", p); err != nil {
				d.logf("%v; skipped", err)
				continue
			}
		}
		return p
	}
	return ""
}

// smokeDirs are the host directories the smoke sandbox sees, read-only:
// what a dynamic binary needs to load. A symlink (/bin -> usr/bin on a
// merged /usr) is made as the same symlink; a missing one is left out.
var smokeDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// smokeEtc are the /etc files a dynamic binary reads (the loader's cache,
// name service for its own uid), bound read-only if they exist.
var smokeEtc = []string{"/etc/ld.so.cache", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts"}

// smokeArgs is bwrap's command line up to the command: every namespace
// (network included), a root that holds only smokeDirs and smokeEtc,
// read-only, with private /proc, /dev and /tmp (nothing of /sys, /run,
// /var, /home or /opt), an empty environment, a new session, bwrap dying
// with us, and the seccomp filter from fd seccompFD. The command follows
// ("--" and its argv). lstat and readlink look at the host's paths.
func smokeArgs(bwrap string, seccompFD int, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) []string {
	args := []string{bwrap,
		"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv"}
	for _, d := range smokeDirs {
		fi, err := lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if t, err := readlink(d); err == nil {
				args = append(args, "--symlink", t, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, e := range smokeEtc {
		args = append(args, "--ro-bind-try", e, e)
	}
	return append(args,
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/",
		"--chdir", "/", "--seccomp", strconv.Itoa(seccompFD), "--")
}

// memfd returns a sealed memfd holding data, at offset 0.
func memfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// smokeIDs returns nobody's uid and gid, 65534 if there is no such user.
func smokeIDs() (uint32, uint32) {
	uid, gid := uint32(65534), uint32(65534)
	if u, err := user.Lookup(smokeUser); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil && n != 0 {
			uid = uint32(n)
		}
		if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil && n != 0 {
			gid = uint32(n)
		}
	}
	return uid, gid
}

func (d *Dir) logf(format string, args ...any) {
	if d.Logf != nil {
		d.Logf(format, args...)
	}
}
