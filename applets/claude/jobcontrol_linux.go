package claude

// Job control. The chain runs in a process group of its own, so that
// kill(0, SIG) inside the sandbox reaches the chain only: never the
// launcher, nor what shares the launcher's group (a pipeline peer, a
// wrapper script, the IDE or CI job that started claude without job
// control). On a terminal the launcher then does for the chain what a shell
// does for a job: it lends it the terminal while it runs in the
// foreground, takes it back when it stops or ends, and stops itself when
// the chain stops (Ctrl-Z), so that the user's shell sees the job stop and
// can continue it (fg, bg).
//
// bwrap --new-session is not used: a sandbox without a controlling
// terminal gets no Ctrl-C, Ctrl-Z or SIGWINCH from it, and cannot open
// /dev/tty. What the controlling terminal would give beyond that
// (TIOCSTI, TIOCEXCL, ...) the seccomp filter denies, and what any holder of
// the terminal's fds can change (modes, flow, size, exclusive mode) the
// launcher puts back when the chain stops or ends.

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// job is the chain: its head (systemd-run, netns-enter or bwrap, which exec
// one another) leads the chain's process group. Its pid is signalled only
// while the head is unreaped, so a signal never reaches a process or group
// that reused the number.
type job struct {
	pid int // the head's pid, and the chain's process group
	tty *terminal

	mu     sync.Mutex
	reaped bool
}

// reaper waits for the chain's orphans, and for nothing else: children
// the process had before it became the launcher (`server & exec claude`)
// are not the launcher's to wait for or signal.
type reaper struct {
	// before are the children the process had when the chain started;
	// nil when it had none.
	before map[int]bool
	// all: the children could not be told apart (no /proc): every child
	// is waited for, so that nothing of the sandbox outlives the restore.
	all bool
}

// becomeSubreaper makes the launcher the reaper of the chain's orphans: the
// sandbox's pid 1 when bwrap dies before it (kill -KILL 0 inside). The
// launcher waits for them (reaper.reap) before it puts the terminal back,
// so that nothing of the sandbox runs, and changes the terminal, after.
//
// It notes the children the process has already, so it must run just
// before the chain starts.
func becomeSubreaper() (*reaper, error) {
	r := &reaper{}
	// Usually there are none (ECHILD), and /proc need not be read.
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != unix.ECHILD {
		kids, err := children()
		if err != nil {
			r.all = true
		}
		r.before = map[int]bool{}
		for _, pid := range kids {
			r.before[pid] = true
		}
	}
	return r, os.NewSyscallError("prctl PR_SET_CHILD_SUBREAPER", unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
}

// reap waits until the launcher has no children left but those it had
// before the chain. Their pids stay theirs, as nothing reaps them here.
//
// No child of the chain's left means nothing of the chain is left: a
// process whose parent dies is the launcher's child before that parent can
// be reaped, and a scan of /proc sees every child the launcher has not
// reaped, zombies included.
func (r *reaper) reap() {
	if r.before == nil || r.all {
		waitAll()
		return
	}
	for {
		kids, err := children()
		if err != nil {
			waitAll()
			return
		}
		n := 0
		for _, pid := range kids {
			if r.before[pid] {
				continue
			}
			n++
			var ws syscall.WaitStatus
			for {
				if _, err := syscall.Wait4(pid, &ws, unix.WALL, nil); err != syscall.EINTR {
					break
				}
			}
		}
		if n == 0 {
			return
		}
	}
}

// waitAll waits until the launcher has no children left.
func waitAll() {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, unix.WALL, nil)
		if err != nil && err != syscall.EINTR {
			return // ECHILD
		}
	}
}

// children lists the launcher's children, from the parent pid in
// /proc/PID/stat of every process (/proc/self/task/*/children needs
// CONFIG_PROC_CHILDREN, which not every kernel has).
func children() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var kids []int
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		fd, err := unix.Open("/proc/"+name+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone
		}
		n, _ := unix.Read(fd, buf)
		unix.Close(fd)
		if n > 0 && statPPID(buf[:n]) == self {
			kids = append(kids, pid)
		}
	}
	return kids, nil
}

// statPPID returns the parent pid field of a /proc/PID/stat line, -1 if
// there is none. The command name before it may hold any byte but NUL,
// ")" included: the field is found after the last ")".
func statPPID(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// wait waits for the head of the chain to end, reaps it and returns its
// status. When the head stops, the launcher stops too (see stopped).
func (j *job) wait() (syscall.WaitStatus, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, j.pid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("waitid", err)
		}
		// Collect what waitid saw, under the lock that signal takes.
		j.mu.Lock()
		var ws syscall.WaitStatus
		var pid int
		for {
			pid, err = syscall.Wait4(j.pid, &ws, syscall.WUNTRACED|syscall.WNOHANG, nil)
			if err != syscall.EINTR {
				break
			}
		}
		if err == nil && pid == j.pid && !ws.Stopped() {
			j.reaped = true
		}
		j.mu.Unlock()
		switch {
		case err != nil:
			return 0, os.NewSyscallError("wait4", err)
		case pid != j.pid:
			// Continued before we looked: nothing to do.
		case ws.Stopped():
			j.stopped(ws.StopSignal())
		default:
			return ws, nil
		}
	}
}

// stopped handles a stop of the head of the chain. Job control needs a
// controlling terminal and a shell that can continue the launcher: without
// them the chain is continued at once, and nothing outside it stops (the
// launcher's group holds the script or program that started it and that
// one's other processes). With them, Ctrl-Z stops the chain (the terminal's
// foreground group); the launcher takes the terminal back, with its own
// modes, and stops its own group as the terminal would have, so that the
// user's shell sees the job stop; so it does for any other stop while the
// launcher is in the foreground. Once the launcher is continued (fg, bg),
// so is the chain, with the terminal if the launcher has it. A chain that
// stopped because it touched the terminal from the background (SIGTTIN,
// SIGTTOU) is given the terminal and continued if the launcher is in the
// foreground; otherwise the launcher stops with the same signal, as a
// background job would.
func (j *job) stopped(sig syscall.Signal) {
	j.mu.Lock()
	took := j.tty.reclaim(true)
	j.mu.Unlock()
	switch {
	case took:
		stopLauncher(sig)
	case !j.tty.controlling():
	case sig == syscall.SIGTTIN || sig == syscall.SIGTTOU:
		if !j.tty.foreground() {
			stopLauncher(sig)
		}
	case j.tty.foreground():
		stopLauncher(sig)
	}
	j.resume()
}

// resume continues the chain, lending it the terminal first if the
// launcher is in the foreground.
func (j *job) resume() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.reaped {
		return
	}
	j.tty.lend(j.pid)
	syscall.Kill(-j.pid, syscall.SIGCONT)
}

// continued handles a SIGCONT of the launcher: a shell's fg of a job that
// was running in the background gives the launcher the terminal, which it
// passes on. When the chain has the terminal already, there is nothing to do.
func (j *job) continued() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.reaped || j.tty.lent || !j.tty.foreground() {
		return
	}
	j.tty.lend(j.pid)
	syscall.Kill(-j.pid, syscall.SIGCONT)
}

// signal sends s to the head of the chain.
func (j *job) signal(s syscall.Signal) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.reaped {
		syscall.Kill(j.pid, s)
	}
}

// signalGroup sends s to the chain's process group.
func (j *job) signalGroup(s syscall.Signal) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.reaped {
		syscall.Kill(-j.pid, s)
	}
}

// forward passes the signals the launcher catches on to the chain. The
// terminal's SIGINT, SIGQUIT and SIGWINCH reach the launcher only when its
// group, not the chain's, is in the foreground, so none of them has
// reached the chain by itself.
func forward(sigs <-chan os.Signal, done <-chan struct{}, j *job) {
	for {
		select {
		case <-done:
			return
		case s := <-sigs:
			switch s {
			case syscall.SIGCONT:
				j.continued()
			case syscall.SIGWINCH:
				j.signalGroup(syscall.SIGWINCH)
			default:
				j.signal(s.(syscall.Signal))
			}
		}
	}
}

// fatal reports whether the launcher passes s on as a request to end (the
// others are about job control and the terminal).
func fatal(s os.Signal) bool {
	return s != syscall.SIGCONT && s != syscall.SIGWINCH
}

// stopLauncher stops the launcher's process group with sig (SIGTSTP,
// SIGTTIN, SIGTTOU; SIGTSTP for any other), as the terminal would have
// stopped it, and returns when the launcher is continued, or at once when
// the kernel discards the stop (the signal ignored or blocked; an orphaned
// process group, which no shell could continue).
//
// kill(0) alone would leave the signal pending for the whole process, for
// whichever thread takes it, and this thread could run on before the stop:
// a thread that has taken a stop signal lets go of the process's signal
// lock while the kernel checks whether the group is orphaned, and only
// then stops the other threads. Meanwhile this thread would find nothing
// to take, return, lend the chain the terminal and continue it, and the
// user's shell would see the job stopped with the chain running in the
// foreground (or with the chain's modes on the terminal). So the launcher
// ignores sig while it sends it to its group, which the kernel then
// discards for the launcher alone, and sends it to this thread: a signal
// for this thread is handled before tgkill returns to user space.
func stopLauncher(sig syscall.Signal) {
	if sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		sig = syscall.SIGTSTP
	}
	ign := sigaction{handler: sigIgn}
	var old sigaction
	if rtSigaction(sig, &ign, &old) != nil {
		return
	}
	unix.Kill(0, sig)
	// Back to what it was: the default, so that tgkill stops the
	// launcher, or ignored (then the launcher does not stop).
	rtSigaction(sig, &old, nil)
	unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
}
