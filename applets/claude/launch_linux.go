package claude

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/bwrap"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
)

// configName is how messages name the config file.
const configName = "~/.claude-sandbox-init"

// launch starts the agent in the sandbox. It runs these phases in order,
// each in the file named after it.
func launch(ctx context.Context, o options, stdio multicall.Stdio) error {
	// Fds the launcher inherited without O_CLOEXEC would pass through
	// exec and through bwrap (which hands on every fd it does not use).
	markInheritedCloexec()
	// Catching signals takes a handshake with the runtime's signal thread
	// per signal (about 2 ms on a slow VM): start it now, so that it runs
	// beside the work below, and have it done before the chain starts
	// (signals_linux.go).
	sigs := catchSignals()
	// Catching is not ended when launch returns: the process exits then
	// (multicall.Main), and ending it would take the same handshake per
	// signal, on the way out, after the chain has ended.
	// The system's bind sources are opened beside the plan, on another
	// thread (fdbind_linux.go).
	var early *earlyOpens
	if o.mode == modeRun {
		go growFDTable(fdTableSize)
		early = earlyOpen()
		defer early.close()
	}

	// The agent's -w: its worktree made on the host, and the working
	// directory (worktree_linux.go).
	var wt *sessionWorktree
	if o.worktree != nil && (o.mode == modeRun || o.mode == modeDryRun) {
		home, _, err := identity(os.Getuid())
		if err != nil {
			return err
		}
		pwd, _ := unix.Getwd()
		if wt, err = prepareWorktree(o.worktree, pwd, home, o.mode == modeDryRun); err != nil {
			return err
		}
		fmt.Fprintf(stdio.Err, "claude: %s\n", wt.notice(o.mode == modeDryRun))
		if _, err := os.Lstat(wt.dir); err == nil {
			if err := wt.enter(); err != nil {
				return err
			}
		}
	}

	// Who runs it, where, and the config (inputs_linux.go).
	in, err := readInputs()
	if in.cfg != nil {
		defer in.cfg.Close()
	}
	if err != nil {
		return err
	}
	// The decision (decide_linux.go), and what the seccomp modes print.
	l, err := decide(o, in)
	if err != nil {
		return err
	}
	if o.mode == modeSeccompTable {
		return seccomp.WriteTable(stdio.Out, l.Seccomp)
	}
	// Fail closed: no filter, no sandbox.
	filter, err := seccomp.Build(l.Seccomp)
	if err != nil {
		return fmt.Errorf("seccomp filter: %w: refusing to start without it", err)
	}
	if o.mode == modeSeccompBPF {
		_, err := stdio.Out.Write(filter.Bytes())
		return err
	}

	bwrapPath, err := bwrap.Find(os.Getenv("PATH"))
	if err != nil {
		return err
	}
	if o.mode == modeDryRun {
		return l.WriteDryRun(stdio.Out, bwrapPath, filter.Len())
	}
	// Checks of bwrap and the host's git before anything is made
	// (preflight_linux.go).
	if err := preflight(ctx, l, bwrapPath, in); err != nil {
		return err
	}
	// Every bind from an fd checked on the host (binds_linux.go).
	bound, err := openBinds(l, in, early)
	if err != nil {
		return err
	}
	defer bound.Close()
	// One write for all of them.
	var notices strings.Builder
	for _, n := range budgetNotices(l.Notices, in.home, in.uid, time.Now()) { // budgetnotice_linux.go
		fmt.Fprintf(&notices, "claude: %s\n", n)
	}
	if notices.Len() > 0 {
		io.WriteString(stdio.Err, notices.String())
	}
	// The modes of the read-write bind roots, put back when the chain has
	// ended (modes_linux.go).
	modes, err := recordRootModes(l, bound)
	if err != nil {
		return err
	}
	defer modes.restore(stdio.Err)
	// The repositories there now, to tell at exit what the sandbox made
	// or changed (inert_linux.go).
	prints := printGit(l.GitScan)
	// The session with netns-dns, which lasts as long as the chain, and
	// its summary once the terminal is back (netsession_linux.go).
	notify := func() string { return findNotifySend(os.Getenv, notifyDirs) }
	sess := openNetSession(l, netctl.SocketPath, in.k.netns, in.uid, notify, os.Environ())
	// The agent's pushes, served while the chain runs (push_linux.go).
	pushes, err := openPushBroker(l, in.home)
	if err != nil {
		return err
	}
	// The chain, run and waited for (run_linux.go).
	err = start(l, bwrapPath, filter, bound, modes, stdio, sigs, sess.end)
	inert(l, prints, stdio.Err)
	updateProfile(l, in.uid) // profile_linux.go
	sess.summary(stdio.Err)
	pushes.close()
	pushes.summary(stdio.Err)
	if wt != nil {
		fmt.Fprintf(stdio.Err, "claude: %s\n", wt.farewell())
	}
	return err
}

// fdTableSize is the size growFDTable gives the fd table: room for the
// fds of every bind source of a start with many binds.
const fdTableSize = 256

// growFDTable makes the process's fd table hold at least size fds. A start
// holds an fd for every bind source at once (hostpath.CloseParent keeps it
// at one each), which a config with many binds takes past the 64 a table
// starts with when the parent had no higher fd open, and growing a table
// that threads share waits for an RCU grace period (10 to 25 ms, measured
// on Linux 6.18 with HZ 250) in the open that needs the room. Begun on a
// thread of its own as the launcher starts, the wait runs beside the plan
// (opens below 64 go on meanwhile) and what is left of it falls on the
// first open above 63. A table already large enough costs an fcntl.
func growFDTable(size int) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, size-1); err == nil {
		unix.Close(hi)
	}
}

// markInheritedCloexec sets FD_CLOEXEC on every fd above 2.
func markInheritedCloexec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11.
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
