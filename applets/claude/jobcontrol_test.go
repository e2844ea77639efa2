//go:build linux

package claude_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// These tests run the launcher on a pty under a small job-control shell
// (TestHelperJobShell, this test binary run again): the shell leads the
// pty's session, starts the launcher as a job in a process group of its
// own, with the terminal, and reports when it stops or ends, as bash does.

// jobSpec is what the job shell runs.
type jobSpec struct {
	Path string
	Args []string
	Env  []string
	Dir  string
	Uid  uint32
	Gid  uint32
	// Bait: start `sleep` as the user in the job's process group first,
	// as a pipeline peer of the launcher would be.
	Bait bool
	// Background: start the job without the terminal (claude &).
	Background bool
}

const jobShellEnv = "CLAUDE_SBX_TEST_JOBSHELL"

// TestHelperJobShell is the job shell, run with jobShellEnv set to the
// jobSpec: its stdio is the pty (its controlling terminal), fd 3 a socket
// to the test. It writes "started LAUNCHER PGID BAIT", then "stopped SIG
// FGPGRP" (the terminal's foreground group as the launcher left it) and
// "exited CODE"; it reads "fg" (give the job the terminal and SIGCONT).
func TestHelperJobShell(t *testing.T) {
	if spec := os.Getenv(jobShellEnv); spec != "" {
		os.Exit(jobShell(spec))
	}
}

func jobShell(specJSON string) int {
	var spec jobSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	conn := os.NewFile(3, "conn")
	say := func(format string, args ...any) { fmt.Fprintf(conn, format+"\n", args...) }
	cred := &syscall.Credential{Uid: spec.Uid, Gid: spec.Gid, Groups: []uint32{}}
	pgid, bait := 0, 0
	if spec.Bait {
		b := exec.Command("/bin/sleep", "600")
		b.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		if err := b.Start(); err != nil {
			say("error %v", err)
			return 1
		}
		pgid, bait = b.Process.Pid, b.Process.Pid
		defer b.Process.Kill()
	}
	cmd := &exec.Cmd{Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pgid: pgid, Foreground: !spec.Background}
	if err := cmd.Start(); err != nil {
		say("error %v", err)
		return 1
	}
	pid := cmd.Process.Pid
	if pgid == 0 {
		pgid = pid
	}
	// Like a shell: take the terminal back when the job stops or ends.
	signal.Ignore(syscall.SIGTTOU)
	say("started %d %d %d", pid, pgid, bait)
	// The bait lives until the test hangs up.
	hungUp := make(chan struct{})
	defer func() { <-hungUp }()
	go func() {
		defer close(hungUp)
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			if sc.Text() == "fg" {
				unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pgid)
				syscall.Kill(-pgid, syscall.SIGCONT)
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			say("error %v", err)
			return 1
		}
		fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
		unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
		switch {
		case ws.Stopped():
			say("stopped %d %d", int(ws.StopSignal()), fg)
		case ws.Signaled():
			say("exited %d", 128+int(ws.Signal()))
			return 0
		default:
			say("exited %d", ws.ExitStatus())
			return 0
		}
	}
}

// ptyJob is a launcher run under the job shell, seen from the test.
type ptyJob struct {
	t        *testing.T
	master   *os.File
	pts      *os.File // the test's own descriptor of the pty, not its controlling terminal
	conn     *os.File
	events   chan string
	shell    *exec.Cmd
	launcher int // the launcher's pid
	pgid     int // the launcher's process group
	bait     int
	before   *unix.Termios
	size     *unix.Winsize

	mu  sync.Mutex
	out bytes.Buffer // what the pty showed
}

// startPtyJob runs `claude ARGS...` (see testutil.Sandbox.Command) under the
// job shell on a new pty.
func startPtyJob(t *testing.T, s *testutil.Sandbox, bait bool, args ...string) *ptyJob {
	t.Helper()
	return startPtyJobSpec(t, s, jobSpec{Bait: bait}, args...)
}

// startPtyJobSpec is startPtyJob with the job shell's options in spec.
func startPtyJobSpec(t *testing.T, s *testutil.Sandbox, spec jobSpec, args ...string) *ptyJob {
	t.Helper()
	master, pts := testutil.OpenPty(t)
	t.Cleanup(func() { master.Close(); pts.Close() })
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	j := &ptyJob{t: t, master: master, pts: pts, events: make(chan string, 16)}
	var err error
	if j.before, err = unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS); err != nil {
		t.Fatal(err)
	}
	if j.size, err = unix.IoctlGetWinsize(int(pts.Fd()), unix.TIOCGWINSZ); err != nil {
		t.Fatal(err)
	}
	c := s.Command(args...)
	spec.Path, spec.Args, spec.Env, spec.Dir, spec.Uid, spec.Gid = c.Path, c.Args, c.Env, c.Dir, s.User.Uid, s.User.Gid
	specJSON, _ := json.Marshal(spec)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	j.conn = os.NewFile(uintptr(fds[0]), "conn")
	theirs := os.NewFile(uintptr(fds[1]), "conn")
	defer theirs.Close()
	j.shell = exec.Command(os.Args[0], "-test.run=^TestHelperJobShell$")
	j.shell.Env = append(os.Environ(), jobShellEnv+"="+string(specJSON))
	j.shell.Stdin, j.shell.Stdout, j.shell.Stderr = pts, pts, pts
	j.shell.ExtraFiles = []*os.File{theirs}
	j.shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := j.shell.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		j.conn.Close()
		j.shell.Process.Kill()
		j.shell.Wait()
		// The shell's own defers do not run when it is killed: end the
		// bait here, so that no process of the test outlives it.
		if j.bait > 0 {
			syscall.Kill(j.bait, syscall.SIGKILL)
		}
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			j.mu.Lock()
			j.out.Write(buf[:n])
			j.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(j.conn)
		for sc.Scan() {
			j.events <- sc.Text()
		}
		close(j.events)
	}()
	ev := j.event("started")
	if _, err := fmt.Sscanf(ev, "started %d %d %d", &j.launcher, &j.pgid, &j.bait); err != nil {
		t.Fatalf("job shell: %q: %v", ev, err)
	}
	return j
}

// event returns the job shell's next report, which must start with want.
func (j *ptyJob) event(want string) string {
	j.t.Helper()
	select {
	case ev, ok := <-j.events:
		if !ok || !strings.HasPrefix(ev, want) {
			j.t.Fatalf("job shell reported %q (open %v), want %s...\npty output:\n%s", ev, ok, want, j.output())
		}
		return ev
	case <-time.After(60 * time.Second):
		j.t.Fatalf("gave up waiting (60s) for the job shell to report %s\npty output:\n%s", want, j.output())
	}
	return ""
}

// exited waits for the launcher to end and returns its exit code.
func (j *ptyJob) exited() int {
	j.t.Helper()
	code, _ := strconv.Atoi(strings.TrimPrefix(j.event("exited "), "exited "))
	return code
}

func (j *ptyJob) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.String()
}

// waitOutput waits until the pty has shown s.
func (j *ptyJob) waitOutput(s string) {
	j.t.Helper()
	waitFor(j.t, fmt.Sprintf("%q on the pty (so far %q)", s, j.output()), func() bool { return strings.Contains(j.output(), s) })
}

// foreground returns the pty's foreground process group.
func (j *ptyJob) foreground() int {
	j.t.Helper()
	pgrp, err := unix.IoctlGetInt(int(j.master.Fd()), unix.TIOCGPGRP)
	if err != nil {
		j.t.Fatal(err)
	}
	return pgrp
}

func (j *ptyJob) termios() *unix.Termios {
	j.t.Helper()
	tio, err := unix.IoctlGetTermios(int(j.pts.Fd()), unix.TCGETS)
	if err != nil {
		j.t.Fatal(err)
	}
	return tio
}

// procState returns the state letter of pid (R, S, T, Z, ...), or "" when
// it is gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return rest[:1]
}

// TestKillZeroStaysInside performs kill(0, SIG) from inside the sandbox:
// it must reach the sandbox only, not a process that shares the launcher's
// process group (here a pipeline peer, started first, whose group the
// launcher joins); the launcher ends with the sandbox's status.
func TestKillZeroStaysInside(t *testing.T) {
	s := testutil.NewSandbox(t)
	for _, sig := range []string{"TERM", "KILL"} {
		t.Run(sig, func(t *testing.T) {
			j := startPtyJob(t, s, true, "--shell", "-c", "kill -"+sig+" 0; echo survived")
			want := 128 + int(unix.SignalNum("SIG"+sig))
			if code := j.exited(); code != want {
				t.Errorf("launcher exit %d, want %d (killed by SIG%s inside)\npty output:\n%s", code, want, sig, j.output())
			}
			if strings.Contains(j.output(), "survived") {
				t.Errorf("the sandbox's shell survived kill -%s 0", sig)
			}
			if st := procState(j.bait); st != "S" {
				t.Errorf("host process in the launcher's group after kill -%s 0 inside: state %q, want S (alive, sleeping)", sig, st)
			}
		})
	}
}

// TestTerminalSaneAfterKill: `stty raw -echo; kill -KILL 0` inside kills
// the whole sandbox at once; the user's terminal still gets its modes back.
func TestTerminalSaneAfterKill(t *testing.T) {
	s := testutil.NewSandbox(t)
	j := startPtyJob(t, s, false, "--shell", "-c", "stty raw -echo; kill -KILL 0")
	if code := j.exited(); code != 128+9 {
		t.Errorf("launcher exit %d, want 137\npty output:\n%s", code, j.output())
	}
	if after := j.termios(); *after != *j.before {
		t.Errorf("terminal modes not restored after kill -KILL 0:\nbefore %+v\nafter  %+v", j.before, after)
	}
}

// TestTerminalStateRestored: exclusive mode (TIOCEXCL: the pty could not be
// opened again), stopped output (TCOOFF) and a changed window size do not
// outlive the sandbox. The seccomp filter denies TIOCEXCL; `seccomp-allow
// ioctl` lifts that, and the launcher must still clear it.
func TestTerminalStateRestored(t *testing.T) {
	s := testutil.NewSandbox(t)
	s.WriteConfig(t, "seccomp-allow ioctl\n")
	// TIOCEXCL 0x540c, TCXONC 0x540a with TCOOFF 0: numbers, as perl has
	// no names for them without h2ph.
	script := `stty rows 7 cols 13 && perl -e 'ioctl(STDIN, 0x540c, 0) or die "TIOCEXCL: $!\n"; ` +
		`ioctl(STDIN, 0x540a, 0) or die "TCOOFF: $!\n"; exit 3'`
	j := startPtyJob(t, s, false, "--shell", "-c", script)
	if code := j.exited(); code != 3 {
		t.Fatalf("launcher exit %d, want 3 (the script's)\npty output:\n%s", code, j.output())
	}
	fd := int(j.pts.Fd())
	if excl, err := unix.IoctlGetUint32(fd, unix.TIOCGEXCL); err != nil || excl != 0 {
		t.Errorf("terminal left in exclusive mode (TIOCGEXCL = %d, %v): opening it fails with EBUSY", excl, err)
	}
	if size, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil || *size != *j.size {
		t.Errorf("window size after exit %+v, %v; want %+v", size, err, j.size)
	}
	// Output flows: a write that cannot go through fails with EAGAIN
	// (raw write(2): os.File would wait for it).
	w, err := unix.Open(j.pts.Name(), unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open %s: %v", j.pts.Name(), err)
	}
	defer unix.Close(w)
	if _, err := unix.Write(w, []byte("flowing\n")); err != nil {
		t.Errorf("write to the terminal after exit: %v (output stopped with TCOOFF)", err)
	}
	if after := j.termios(); *after != *j.before {
		t.Errorf("terminal modes not restored:\nbefore %+v\nafter  %+v", j.before, after)
	}
}

// TestCtrlZ stops the sandbox from the terminal (^Z) and continues it (fg),
// as a user at a shell would.
func TestCtrlZ(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	s.Env = []string{"SBX_MARK=" + m}
	// The sandbox changes the modes (-echo) and then reads a line.
	j := startPtyJob(t, s, false, "--shell", "-c",
		`stty -echo && echo ready && exec -a "sbx-$SBX_MARK" bash -c 'read -r line && echo "got:$line"'`)
	j.waitOutput("ready")
	var inner []int
	waitFor(t, "the sandbox's reader", func() bool { inner = findProcs("sbx-" + m); return len(inner) > 0 })
	chain := j.foreground()
	if chain == j.pgid {
		t.Errorf("the sandbox runs in the launcher's process group %d", j.pgid)
	}
	chainModes := j.termios()

	if _, err := j.master.Write([]byte{chainModes.Cc[unix.VSUSP]}); err != nil {
		t.Fatal(err)
	}
	ev := j.event("stopped ")
	var sig, fg int
	fmt.Sscanf(ev, "stopped %d %d", &sig, &fg)
	if syscall.Signal(sig) != syscall.SIGTSTP {
		t.Errorf("launcher stopped by %v, want SIGTSTP", syscall.Signal(sig))
	}
	if fg != j.pgid {
		t.Errorf("when the launcher stopped, the terminal's foreground group was %d, want the launcher's %d", fg, j.pgid)
	}
	waitFor(t, "the sandbox's reader to stop", func() bool { return procState(inner[0]) == "T" })
	// The user's shell gets the modes from before the sandbox.
	if now := j.termios(); *now != *j.before {
		t.Errorf("terminal modes while stopped:\n%+v\nwant those from before:\n%+v", now, j.before)
	}

	if _, err := j.conn.Write([]byte("fg\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sandbox to get the terminal back", func() bool { return j.foreground() == chain })
	if now := j.termios(); *now != *chainModes {
		t.Errorf("terminal modes after fg:\n%+v\nwant the sandbox's:\n%+v", now, chainModes)
	}
	if _, err := j.master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if code := j.exited(); code != 0 {
		t.Errorf("launcher exit %d after fg, want 0\npty output:\n%s", code, j.output())
	}
	j.waitOutput("got:hello")
	if after := j.termios(); *after != *j.before {
		t.Errorf("terminal modes not restored:\nbefore %+v\nafter  %+v", j.before, after)
	}
}

// TestResizeReachesSandbox: the terminal's SIGWINCH, sent to its foreground
// group when the window changes, reaches the sandbox.
func TestResizeReachesSandbox(t *testing.T) {
	s := testutil.NewSandbox(t)
	j := startPtyJob(t, s, false, "--shell", "-c",
		`trap 'echo "size $(stty size)"; exit 0' WINCH; echo ready; while :; do sleep 0.1; done`)
	j.waitOutput("ready")
	if err := unix.IoctlSetWinsize(int(j.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 77}); err != nil {
		t.Fatal(err)
	}
	if code := j.exited(); code != 0 {
		t.Errorf("launcher exit %d, want 0\npty output:\n%s", code, j.output())
	}
	// The launcher has ended; the pty may not have handed over all the
	// output yet.
	j.waitOutput("size 33 77\r\n")
}

// TestNothingOutlivesRestore: a sandbox process outside the chain's group
// and session (setsid), which kill -KILL 0 does not reach, keeps setting
// raw mode; the sandbox's pid 1 takes it down only after bwrap has died.
// The launcher must put the terminal back after that, not before. (Without
// the launcher waiting for the sandbox's pid 1, this loses the race about
// every other run.)
func TestNothingOutlivesRestore(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	s.Env = []string{"SBX_MARK=" + m}
	j := startPtyJob(t, s, false, "--shell", "-c",
		// A background job's stdin is /dev/null unless redirected.
		`exec 3<&0; setsid bash -c 'exec -a "sbx-$SBX_MARK" bash -c "while :; do stty raw -echo; done"' <&3 & `+
			`while stty -a | grep -q -- " echo "; do :; done; kill -KILL 0`)
	if code := j.exited(); code != 128+9 {
		t.Errorf("launcher exit %d, want 137\npty output:\n%s", code, j.output())
	}
	if pids := findProcs("sbx-" + m); len(pids) > 0 {
		t.Errorf("sandbox processes %v outlive the launcher", pids)
	}
	if after := j.termios(); *after != *j.before {
		t.Errorf("terminal modes changed after the launcher restored them:\nbefore %+v\nafter  %+v", j.before, after)
	}
}

// TestBackgroundThenFg: started in the background (claude &), the sandbox
// stops when it reads the terminal (SIGTTIN), and so does the launcher,
// with the same signal, as a job would; fg gives the sandbox the terminal.
func TestBackgroundThenFg(t *testing.T) {
	s := testutil.NewSandbox(t)
	j := startPtyJobSpec(t, s, jobSpec{Background: true}, "--shell", "-c", `read -r line && echo "got:$line"`)
	ev := j.event("stopped ")
	var sig, fg int
	fmt.Sscanf(ev, "stopped %d %d", &sig, &fg)
	if syscall.Signal(sig) != syscall.SIGTTIN {
		t.Errorf("launcher stopped by %v, want SIGTTIN", syscall.Signal(sig))
	}
	if _, err := j.conn.Write([]byte("fg\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sandbox to get the terminal", func() bool { fg := j.foreground(); return fg != j.pgid && fg != j.shell.Process.Pid })
	if _, err := j.master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if code := j.exited(); code != 0 {
		t.Errorf("launcher exit %d after fg, want 0\npty output:\n%s", code, j.output())
	}
	j.waitOutput("got:hello")
}

// TestResizeWhileStopped: a window resized while the sandbox is stopped
// (the SIGWINCH went to the shell) is announced to it on fg.
func TestResizeWhileStopped(t *testing.T) {
	s := testutil.NewSandbox(t)
	j := startPtyJob(t, s, false, "--shell", "-c",
		`trap 'echo "size $(stty size)"; exit 0' WINCH; echo ready; while :; do sleep 0.1; done`)
	j.waitOutput("ready")
	if _, err := j.master.Write([]byte{j.before.Cc[unix.VSUSP]}); err != nil {
		t.Fatal(err)
	}
	j.event("stopped ")
	if err := unix.IoctlSetWinsize(int(j.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.conn.Write([]byte("fg\n")); err != nil {
		t.Fatal(err)
	}
	if code := j.exited(); code != 0 {
		t.Errorf("launcher exit %d, want 0\npty output:\n%s", code, j.output())
	}
	j.waitOutput("size 40 100\r\n")
}

// wrapped returns the command that runs `claude ARGS...` (see
// testutil.Sandbox.Command) from `bash -c script`, with the marker m as $1
// and the launcher's command line as the rest of the arguments: a wrapper
// script that starts claude, without a terminal.
func wrapped(s *testutil.Sandbox, m, script string, args ...string) *exec.Cmd {
	cmd := s.Command(args...)
	cmd.Args = append([]string{"bash", "-c", script, "bash", m, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/bash"
	return cmd
}

// pendingSignals returns the signals pending for pid (its thread and its
// process), as /proc/PID/status shows them, or "" when it is gone.
func pendingSignals(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	var pend []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "SigPnd:") || strings.HasPrefix(l, "ShdPnd:") {
			pend = append(pend, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(pend, ", ")
}

// TestStopWithoutTerminalStaysInside: without a terminal there is no job
// control, so `kill -STOP 0` inside stops the chain and nothing else: the
// launcher continues the chain instead of stopping its own process group,
// which holds the script that started it and that script's other
// processes. The launcher then ends as usual.
func TestStopWithoutTerminalStaysInside(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	cmd := wrapped(s, m, `exec -a "peer-$1" sleep 600 </dev/null >/dev/null 2>&1 & shift; "$@"; echo "launcher exit $?"`,
		"--shell", "-c", "kill -STOP 0; echo survived")
	// A process group of its own, which is not orphaned (its parent, the
	// test, is in another group of the same session), so a stop of it
	// would take.
	cmd.SysProcAttr.Setpgid = true
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wrapper := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-wrapper, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The peer lives until the test ends (the cleanup kills it), so it is
	// found however fast the launcher is done.
	var peer []int
	waitFor(t, "the wrapper's peer process", func() bool { peer = findProcs("peer-" + m); return len(peer) > 0 })
	t.Cleanup(func() { syscall.Kill(peer[0], syscall.SIGKILL) })
	running := func() bool {
		for _, pid := range []int{wrapper, peer[0]} {
			if st := procState(pid); st == "T" {
				t.Fatalf("process %d of the caller's process group stopped (state T) after kill -STOP 0 inside, without a terminal\nstdout:\n%s\nstderr:\n%s", pid, out.String(), errb.String())
			}
		}
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	waitFor(t, "the wrapper to end", func() bool { return !running() })
	if !strings.Contains(out.String(), "survived\n") || !strings.Contains(out.String(), "launcher exit 0\n") {
		t.Errorf("want the sandbox's shell continued and the launcher's exit 0\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// TestPreexistingChildNotWaited: a child the process had before it became
// the launcher (`sleep 600 & exec claude ...`) is not the launcher's: it
// exits when its chain is done, while that child still runs, and sends the
// child nothing.
func TestPreexistingChildNotWaited(t *testing.T) {
	s := testutil.NewSandbox(t)
	m := marker(t)
	cmd := wrapped(s, m, `exec -a "bait-$1" sleep 600 </dev/null >/dev/null 2>&1 & shift; exec "$@"`, "--shell", "-c", "echo inside")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var bait []int
	waitFor(t, "the pre-exec child", func() bool { bait = findProcs("bait-" + m); return len(bait) > 0 })
	t.Cleanup(func() { syscall.Kill(bait[0], syscall.SIGKILL) })
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "inside\n") {
			t.Errorf("launcher: %v, want exit 0 after the sandbox printed inside\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("gave up waiting (60s) for the launcher to exit: it waits for a child it did not start (its sandbox printed %q)\nstderr:\n%s", out.String(), errb.String())
	}
	if st := procState(bait[0]); st != "S" {
		t.Errorf("the pre-exec child after the launcher's exit: state %q, want S (alive, sleeping)", st)
	}
	if p := pendingSignals(bait[0]); p != "SigPnd: 0000000000000000, ShdPnd: 0000000000000000" {
		t.Errorf("the pre-exec child has signals pending: %s", p)
	}
}
