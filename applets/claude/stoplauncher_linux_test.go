package claude

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const stopHelperEnv = "CLAUDE_SBX_TEST_STOPLAUNCHER"

// stopRounds is how many times the helper stops itself.
const stopRounds = 200

// stopPeers is how many processes share the helper's process group, as
// children of the helper: the kernel goes through all of them to tell
// whether the group is orphaned, after a thread has taken a stop signal
// and before the stop begins.
const stopPeers = 300

// TestHelperStopLauncher, run with stopHelperEnv set, leads a process group
// of its own with stopPeers children in it, keeps its other threads busy,
// and stopRounds times calls stopLauncher and then writes a byte to fd 3.
func TestHelperStopLauncher(t *testing.T) {
	if os.Getenv(stopHelperEnv) == "" {
		return
	}
	for i := 0; i < stopPeers; i++ {
		if err := exec.Command("/bin/sleep", "600").Start(); err != nil {
			os.Exit(2)
		}
	}
	// Busy threads: the kernel wakes one of them (the main thread if it
	// can) for a signal sent to the whole process.
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		go func() {
			//lint:ignore SA5002 the busy thread is the point
			for {
			}
		}()
	}
	out := os.NewFile(3, "out")
	runtime.LockOSThread()
	for i := 0; i < stopRounds; i++ {
		stopLauncher(syscall.SIGTSTP)
		if _, err := out.Write([]byte{'r'}); err != nil {
			os.Exit(2)
		}
	}
	os.Exit(0)
}

// TestStopLauncherReturnsAfterStop: stopLauncher returns only once the
// launcher has been stopped and continued, never before the stop, however
// busy its other threads are. (Otherwise the launcher lends the chain the
// terminal and continues it while it stops itself, and the user's shell
// sees the job stopped with the chain running in the foreground.)
func TestStopLauncherReturnsAfterStop(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStopLauncher$")
	cmd.Env = append(os.Environ(), stopHelperEnv+"=1")
	cmd.ExtraFiles = []*os.File{w}
	// A process group of its own, not orphaned: its parent, the test, is
	// in another group of the same session, so a stop of it takes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL); cmd.Wait() })
	// A call that returns before the stop lets the helper write before it
	// stops; the stop may then also be the same as the next call's.
	buf := make([]byte, 1)
	stops, early := 0, 0
	for {
		var ws syscall.WaitStatus
		for {
			_, err = syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
			if err != syscall.EINTR {
				break
			}
		}
		if err != nil {
			t.Fatalf("wait4: %v", err)
		}
		if !ws.Stopped() {
			if !ws.Exited() || ws.ExitStatus() != 0 {
				t.Fatalf("helper ended with status %v", ws)
			}
			break
		}
		stops++
		// Stopped: what it wrote after stopLauncher returned, it
		// wrote before the stop.
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			early++
			if _, err := r.Read(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
		}
		syscall.Kill(-pid, syscall.SIGCONT)
		if n == 0 {
			if _, err := r.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	if early > 0 || stops != stopRounds {
		t.Errorf("%d calls of stopLauncher, %d stops; %d times the launcher ran on after stopLauncher returned, before it stopped", stopRounds, stops, early)
	}
}
