package bindir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// smokeUser is who the smoke test runs as when claude-update is root.
const smokeUser = "nobody"

// startConfined starts cmd confined: no_new_privs and the launcher's
// default seccomp filter always; as root also an unprivileged uid and gid
// (nobody) with no supplementary groups, hence no capabilities, an empty
// capability bounding set, and new network, PID, IPC and UTS namespaces.
//
// The namespaces, bounding set, no_new_privs and filter are set on a
// thread of our own, from which the child is forked and inherits them;
// that thread stays locked and ends with its goroutine, so nothing else of
// this process ever runs on it (the Go runtime does not start threads from
// a locked one). If any step fails, nothing is started.
//
// With bwrap (its path, "" for none), cmd runs in bwrap, which sets up its
// own namespaces (user namespace included, which the filter would refuse)
// and applies the filter itself (--seccomp); the thread then gets no filter.
func startConfined(cmd *exec.Cmd, bwrap string) error {
	filter, err := seccomp.Build(seccomp.Options{})
	if err != nil {
		return fmt.Errorf("smoke test: seccomp filter: %w", err)
	}
	prog := sockFilters(filter.Bytes())
	if bwrap != "" {
		mf, err := memfd("seccomp", filter.Bytes())
		if err != nil {
			return fmt.Errorf("smoke test: %w", err)
		}
		defer mf.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, mf)
		cmd.Path = bwrap
		cmd.Args = append(bwrapArgs(bwrap, 2+len(cmd.ExtraFiles)), cmd.Args...)
		prog = nil
	}
	root := os.Geteuid() == 0
	if root {
		uid, gid := smokeIDs()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
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
	go func() {
		// Preconditions: this goroutine never unlocks its thread; the
		// thread exits with it, taking the namespaces and the filter.
		runtime.LockOSThread()
		errc <- confineThread(root, prog, cmd)
	}()
	return <-errc
}

// confineThread confines the calling thread and starts cmd from it.
func confineThread(root bool, prog []unix.SockFilter, cmd *exec.Cmd) error {
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
	if prog == nil {
		return cmd.Start() // bwrap applies the filter
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("smoke test: %w", os.NewSyscallError("prctl seccomp", err))
	}
	runtime.KeepAlive(prog)
	return cmd.Start()
}

// bwrapPaths are where the smoke test looks for bwrap (never PATH).
var bwrapPaths = []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}

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

// bwrapArgs is bwrap's command line up to the command: every namespace,
// / read-only, fresh /proc, /dev and /tmp, an empty environment, and the
// seccomp filter from fd seccompFD. The command follows ("--" and the
// binary's argv).
func bwrapArgs(bwrap string, seccompFD int) []string {
	return []string{bwrap,
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--new-session", "--clearenv",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--chdir", "/", "--seccomp", strconv.Itoa(seccompFD), "--"}
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

// sockFilters decodes struct sock_filter records in native (little-endian)
// byte order.
func sockFilters(raw []byte) []unix.SockFilter {
	out := make([]unix.SockFilter, len(raw)/8)
	for i := range out {
		b := raw[8*i:]
		out[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])}
	}
	return out
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
