package claude

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/cgroup"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// start encodes the plan and the filter into sealed memfds, bwrap's fds 3
// and 4, and runs the chain with them and the bind fds. Once the chain has
// its copies, the launcher closes its own, but those of modes (put back at
// exit), while bwrap sets the sandbox up. ended runs when the chain has
// ended, before its orphans are reaped and the terminal is put back.
func start(l *sandbox.Launch, bwrapPath string, filter *seccomp.Filter, bound *bound, modes rootModes, stdio multicall.Stdio, sigs *catcher, ended func()) error {
	args, err := bwrap.Encode(l.Plan.Args())
	if err != nil {
		return err
	}
	argsFile, err := sealedMemfd("bwrap-args", args)
	if err != nil {
		return err
	}
	defer argsFile.Close()
	filterFile, err := sealedMemfd("seccomp", filter.Bytes())
	if err != nil {
		return err
	}
	defer filterFile.Close()
	// extra become fds 3 and 4 in the child, in this order.
	extra := []*os.File{sandbox.ArgsFD - 3: argsFile, sandbox.SeccompFD - 3: filterFile}
	extra = append(extra, bound.files...)
	// Without a user manager, the chain starts in a cgroup of its own
	// below the one delegated to the user (sandbox.Launch.Cgroup).
	cgroupFD := -1
	if l.Cgroup != nil {
		g, err := cgroup.Make(*l.Cgroup, cgroup.Name(os.Getpid()))
		if err != nil {
			return fmt.Errorf("%w: the sandbox cannot have its budget in the cgroup delegated to you; check the delegation (claude-sandbox doctor)", err)
		}
		// The group outlives the chain only while a process of it is
		// still exiting; then it stays, empty, and costs nothing.
		defer g.Remove()
		cgroupFD = g.FD()
	}
	started := func() {
		argsFile.Close()
		filterFile.Close()
		bound.closeBut(modes)
	}
	// Last, the fds bwrap binds from are still the files checked.
	if err := bound.sameFiles(); err != nil {
		return err
	}
	return runChain(l.Argv(bwrapPath), l.Env, extra, cgroupFD, stdio, sigs, started, ended)
}

// sealedMemfd returns a sealed in-memory file holding data, positioned at
// its start, with O_CLOEXEC (exec.Cmd.ExtraFiles clears it on the copy).
func sealedMemfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// runChain runs argv in a process group of its own (see
// jobcontrol_linux.go), in the cgroup of cgroupFD unless it is -1 (clone3
// with CLONE_INTO_CGROUP: the chain's first process is in it before it
// execs), and waits for it, passing on its exit status and the signals
// sigs catches; started, if not nil, runs once the chain is started, and
// ended, if not nil, when the chain's head has ended, before its orphans
// are reaped.
//
// Preconditions: none; it locks the calling goroutine to its OS thread
// until the child is reaped, because the child's parent-death signal
// (PR_SET_PDEATHSIG, SIGKILL) fires when the thread that forked it exits,
// not the process. Killing the launcher, even with SIGKILL, thus kills the
// head of the chain; the kernel clears the death signal across the setuid
// exec of netns-enter, and bwrap --die-with-parent sets it again for bwrap
// and for the sandbox.
//
// It uses syscall.ForkExec rather than os/exec, whose first Start probes
// pidfd support by cloning a throwaway child: a process more on every
// launch.
func runChain(argv, env []string, extra []*os.File, cgroupFD int, stdio multicall.Stdio, sigs *catcher, started, ended func()) error {
	files := []uintptr{fdOf(stdio.In, 0), fdOf(stdio.Out, 1), fdOf(stdio.Err, 2)}
	for _, f := range extra {
		files = append(files, f.Fd())
	}
	tty := saveTerminal()
	if tty.saved != nil && (!tty.controlling() || tty.foreground()) {
		// The title, for the pop in restore (termreset_linux.go).
		writeOut(titlePush)
	}
	caught := sigs.wait()
	// A signal caught before the chain exists ends the launcher as it
	// would have without catching: nothing is started.
	for pending := true; pending; {
		select {
		case s := <-caught:
			if fatal(s) {
				return multicall.Exit(128 + int(s.(syscall.Signal)))
			}
		default:
			pending = false
		}
	}
	orphans, err := becomeSubreaper()
	if err != nil {
		return err
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The child joins its new group and, when the launcher is in the
	// terminal's foreground, takes the terminal, before it execs.
	fg := tty.foreground()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   env,
		Files: files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Foreground: fg, Ctty: tty.fd,
			UseCgroupFD: cgroupFD >= 0, CgroupFD: cgroupFD},
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	// From here on the launcher can be in the background of its own
	// terminal; taking the terminal back must not stop it. (Ignored
	// before the fork, SIGTTOU would stay ignored in the chain.)
	signal.Ignore(syscall.SIGTTOU)
	tty.lent = fg
	if started != nil {
		started()
	}
	j := &job{pid: pid, tty: tty}
	done := make(chan struct{})
	go forward(caught, done, j)
	ws, err := j.wait()
	if ended != nil {
		ended()
	}
	orphans.reap()
	close(done)
	tty.restore()
	if err != nil {
		return fmt.Errorf("wait %s: %w", argv[0], err)
	}
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code != 0 {
		return multicall.Exit(code)
	}
	return nil
}

// fdOf returns the descriptor of r when it is an *os.File, else def.
func fdOf(r any, def uintptr) uintptr {
	if f, ok := r.(*os.File); ok {
		return f.Fd()
	}
	return def
}
