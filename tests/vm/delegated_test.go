//go:build linux

package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil/vm"
)

// The user of TestGuestDelegated: no linger and no login session, so no
// user manager.
const (
	delegUser = "sbxvmdeleg"
	delegUID  = "2732"
)

// delegDir is the cgroup v2 subtree root delegates to delegUser, as
// systemd's Delegate=yes would: the directory, its cgroup.procs,
// cgroup.subtree_control and cgroup.threads are the user's, and the
// user's processes start in a child of it (login), as a delegated
// service's do.
const delegDir = "/sys/fs/cgroup/sbx-delegated"

// TestGuestDelegated: the sandbox's budget without a user manager, in a
// cgroup of its own that the launcher makes below the subtree delegated to
// the user (internal/cgroup): the limit files hold the limit lines, a
// memory hog is OOM-killed inside, a fork bomb stops at the task limit
// while the user's work beside it keeps answering.
func TestGuestDelegated(t *testing.T) {
	vm.InGuest(t)
	fakeAgent(t)
	home := "/home/" + delegUser
	run(t, "useradd", "-m", "-u", delegUID, "-s", "/bin/bash", delegUser)
	if exec.Command("systemctl", "is-active", "-q", "user@"+delegUID+".service").Run() == nil {
		t.Fatalf("user@%s.service runs: the test needs a user without a manager", delegUID)
	}
	// the delegation
	login := filepath.Join(delegDir, "login")
	writeFile(t, "/sys/fs/cgroup/cgroup.subtree_control", "+cpu +memory +pids")
	if err := os.Mkdir(delegDir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(delegDir)
	writeFile(t, filepath.Join(delegDir, "cgroup.subtree_control"), "+cpu +memory +pids")
	if err := os.Mkdir(login, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(login)
	run(t, "chown", delegUID+":"+delegUID, delegDir, delegDir+"/cgroup.procs", delegDir+"/cgroup.subtree_control", delegDir+"/cgroup.threads")
	run(t, "chown", "-R", delegUID+":"+delegUID, login)
	loginDir, err := os.Open(login)
	if err != nil {
		t.Fatal(err)
	}
	defer loginDir.Close()
	// asDeleg runs argv as the user in dir, started in login, with
	// nothing of a user manager in its environment.
	asDeleg := func(dir string, argv ...string) *exec.Cmd {
		args := append([]string{"-u", delegUser, "--", "env", "-C", dir, "-u", "XDG_RUNTIME_DIR", "-u", "DBUS_SESSION_BUS_ADDRESS"}, argv...)
		cmd := exec.Command("runuser", args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(loginDir.Fd())}
		return cmd
	}
	proj := filepath.Join(home, "proj")
	run(t, "runuser", "-u", delegUser, "--", "sh", "-c", "mkdir -p "+proj+" && cd "+proj+" && git init -q .")
	setConfig := func(t *testing.T, src string) {
		t.Helper()
		if os.Getenv(noLimitsEnv) == "1" {
			src = ""
		}
		writeFile(t, filepath.Join(home, ".claude-sandbox-init"), src)
	}
	claude := func(command string) *exec.Cmd {
		return asDeleg(proj, "claude", "--sandbox-network=host", "--shell", "-c", command)
	}
	// a process of the user outside the sandbox, in the delegated
	// subtree, which must live on
	outside := asDeleg(home, "sleep", "2718.29")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	if got := cgroupOf(t, delegUser, "sleep 2718.29"); got != "/sbx-delegated/login" {
		t.Fatalf("the user's process outside is in %s, want /sbx-delegated/login", got)
	}
	outsideAlive := func(t *testing.T) {
		t.Helper()
		if out, err := exec.Command("pgrep", "-u", delegUser, "-x", "-f", "sleep 2718.29").Output(); err != nil {
			t.Errorf("the user's process outside the sandbox is gone: %v %q", err, out)
		}
	}
	// sandboxGroup checks that cg is a cgroup the launcher made for a
	// sandbox below the delegation, and returns its directory.
	sandboxGroup := func(t *testing.T, cg string) string {
		t.Helper()
		if filepath.Dir(cg) != "/sbx-delegated" || !strings.HasPrefix(filepath.Base(cg), "claude-sandbox-") {
			t.Fatalf("the sandboxed process is in %s, want /sbx-delegated/claude-sandbox-PID", cg)
		}
		return filepath.Join("/sys/fs/cgroup", cg)
	}

	t.Run("limit files hold the limit lines", func(t *testing.T) {
		setConfig(t, "limit memory 256M\nlimit tasks 64\nlimit cpu 150%\n")
		cmd := claude("exec sleep 1618.04")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		dir := sandboxGroup(t, cgroupOf(t, delegUser, "sleep 1618.04"))
		for file, want := range map[string]string{"memory.max": "268435456", "pids.max": "64", "cpu.max": "150000 100000", "memory.oom.group": "1"} {
			b, err := os.ReadFile(filepath.Join(dir, file))
			if got := strings.TrimSpace(string(b)); err != nil || got != want {
				t.Errorf("%s/%s = %q (%v), want %q", dir, file, got, err, want)
			}
		}
		exec.Command("pkill", "-u", delegUser, "-x", "-f", "sleep 1618.04").Run()
		cmd.Wait()
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the sandbox's cgroup %s outlives it: %v\n%s", dir, err, out.String())
		}
	})

	t.Run("memory hog", func(t *testing.T) {
		setConfig(t, "limit memory 64M\n")
		out, err := claude("head -c 512M /dev/zero | tail -n 1 >/dev/null").CombinedOutput()
		if code := exitCode(err); code != 137 {
			t.Errorf("a 512M hog under limit memory 64M: exit %d (%v), want 137 (SIGKILL by the OOM killer)\n%s", code, err, out)
		}
		outsideAlive(t)
	})

	// The latency probe: the median start of /bin/true for a process of
	// the user in the delegated subtree, outside the sandbox's cgroup.
	latencyOutside := func(t *testing.T) time.Duration {
		t.Helper()
		out, err := asDeleg(home, "env", helperEnv+"=latency", "/job/test.bin", "60").Output()
		n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			t.Fatalf("latency probe: %v, output %q", err, out)
		}
		return time.Duration(n)
	}

	t.Run("fork bomb stops at the task limit, the user's other work keeps answering", func(t *testing.T) {
		setConfig(t, "limit tasks 64\n")
		idle := latencyOutside(t)
		// bash retries a fork that fails: it keeps trying for 20 s
		cmd := claude(`exec bash -c 'b() { b | b & }; b; exec sleep 20.6'`)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { exec.Command("pkill", "-KILL", "-u", delegUser, "-x", "-f", "sleep 20.6").Run(); cmd.Wait() }()
		cg := cgroupOf(t, delegUser, "sleep 20.6")
		sandboxGroup(t, cg)
		for i := 0; ; i++ {
			o, _ := exec.Command("pgrep", "-c", "-u", delegUser, "-x", "bash").Output()
			if n, _ := strconv.Atoi(strings.TrimSpace(string(o))); n >= 10 {
				break
			}
			if i > 200 {
				t.Fatal("the fork bomb did not start: fewer than 10 of its shells")
			}
			time.Sleep(50 * time.Millisecond)
		}
		busy := latencyOutside(t)
		t.Logf("outside the sandbox: median %v idle, %v beside the bomb", idle, busy)
		if busy > 2*idle {
			t.Errorf("the median start of /bin/true outside took %v beside the fork bomb, %v idle: more than twice", busy, idle)
		}
		taskLimitMet(t, cg, "64")
		outsideAlive(t)
		exec.Command("pkill", "-KILL", "-u", delegUser, "-x", "-f", "sleep 20.6").Run()
		cmd.Wait()
		if o, _ := exec.Command("pgrep", "-u", delegUser, "-x", "bash").Output(); strings.TrimSpace(string(o)) != "" {
			t.Errorf("the bomb's shells outlive the sandbox: %q", o)
		}
	})
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
