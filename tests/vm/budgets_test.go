//go:build linux

// Package vm holds the tests that need a real kernel: they run in a guest
// booted by internal/testutil/vm (CLAUDE_SBX_E2E=vm, make e2e-vm).
package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil/vm"
)

// TestVM boots the guest and runs the TestGuest tests of this package in it.
func TestVM(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	run := os.Getenv(runEnv)
	if run == "" {
		run = "^TestGuest"
	}
	vm.Run(t, vm.Options{Pkg: wd, Run: run, Env: []string{noLimitsEnv + "=" + os.Getenv(noLimitsEnv)}})
}

// runEnv is the -test.run pattern of the tests in the guest, default
// ^TestGuest (all of them).
const runEnv = "CLAUDE_SBX_VM_RUN"

// noLimitsEnv=1 writes the configs without their limit lines: the tests
// must then fail, which shows that they can.
const noLimitsEnv = "CLAUDE_SBX_VM_NO_LIMITS"

const (
	guestUser = "sbxvmuser"
	guestUID  = "2731"
)

// asUser runs argv as the guest's user in its login session: a user
// manager (enable-linger), XDG_RUNTIME_DIR and the session bus, in dir.
func asUser(dir string, argv ...string) *exec.Cmd {
	r := "/run/user/" + guestUID
	args := append([]string{"-u", guestUser, "--", "env", "-C", dir, "XDG_RUNTIME_DIR=" + r, "DBUS_SESSION_BUS_ADDRESS=unix:path=" + r + "/bus"}, argv...)
	return exec.Command("runuser", args...)
}

// setupUser makes the guest's user with a user manager (once per boot)
// and the agent the launcher starts.
func setupUser(t *testing.T) {
	t.Helper()
	fakeAgent(t)
	if exec.Command("id", "-u", guestUser).Run() == nil {
		return
	}
	run(t, "useradd", "-m", "-u", guestUID, "-s", "/bin/bash", guestUser)
	run(t, "loginctl", "enable-linger", guestUser)
	run(t, "sh", "-c", "for i in $(seq 300); do systemctl is-active -q user@"+guestUID+".service && [ -S /run/user/"+guestUID+"/bus ] && exit 0; sleep 0.1; done; exit 1")
}

// fakeAgent writes the agent the launcher starts: a shell stand-in.
func fakeAgent(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll("/opt/claude/bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/opt/claude/bin/claude", []byte("#!/bin/sh\necho fake agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGuestBudgets: the sandbox's budget under the user's manager, as a
// user starts it.
func TestGuestBudgets(t *testing.T) {
	vm.InGuest(t)
	home := "/home/" + guestUser
	setupUser(t)
	proj := filepath.Join(home, "proj")
	run(t, "runuser", "-u", guestUser, "--", "sh", "-c", "mkdir -p "+proj+" && cd "+proj+" && git init -q .")
	config := filepath.Join(home, ".claude-sandbox-init")
	setConfig := func(t *testing.T, src string) {
		t.Helper()
		if os.Getenv(noLimitsEnv) == "1" {
			src = ""
		}
		if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	claude := func(command string) *exec.Cmd {
		return asUser(proj, "claude", "--sandbox-network=host", "--shell", "-c", command)
	}
	// a process of the same user outside every sandbox, which must live on
	outside := asUser(home, "sleep", "2718.28")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	run(t, "sh", "-c", "for i in $(seq 100); do pgrep -u "+guestUser+" -x -f 'sleep 2718.28' && exit 0; sleep 0.1; done; exit 1")
	defer func() { outside.Process.Kill(); outside.Wait() }()
	outsideAlive := func(t *testing.T) {
		t.Helper()
		if out, err := exec.Command("pgrep", "-u", guestUser, "-x", "-f", "sleep 2718.28").Output(); err != nil {
			t.Errorf("the user's process outside the sandbox is gone: %v %q", err, out)
		}
	}

	t.Run("limits are the scope's properties", func(t *testing.T) {
		setConfig(t, "limit memory 256M\nlimit tasks 64\n")
		// the scope, found from outside while a sandbox sleeps
		cmd := claude("exec sleep 1618.03")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { exec.Command("pkill", "-u", guestUser, "-f", "sleep 1618.03").Run(); cmd.Wait() }()
		var scope string
		for i := 0; i < 200 && scope == ""; i++ {
			o, _ := exec.Command("pgrep", "-u", guestUser, "-x", "-f", "sleep 1618.03").Output()
			if p := strings.TrimSpace(string(o)); p != "" && !strings.Contains(p, "\n") {
				cg, _ := os.ReadFile("/proc/" + p + "/cgroup")
				for _, l := range strings.Split(string(cg), "\n") {
					if s, ok := strings.CutPrefix(l, "0::"); ok && strings.HasSuffix(s, ".scope") {
						scope = filepath.Base(s)
					}
				}
			}
			exec.Command("sleep", "0.1").Run()
		}
		if scope == "" {
			t.Fatal("the sandboxed sleep is in no scope")
		}
		o, err := asUser(home, "systemctl", "--user", "show", "-p", "MemoryMax", "-p", "TasksMax", "-p", "OOMPolicy", "-p", "Slice", scope).Output()
		got := strings.Fields(string(o))
		slices.Sort(got)
		want := []string{"MemoryMax=268435456", "OOMPolicy=kill", "Slice=agent.slice", "TasksMax=64"}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("systemctl --user show %s: %v %q, want %q", scope, err, got, want)
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

	t.Run("tmp fills up", func(t *testing.T) {
		setConfig(t, "limit tmp 8M\n")
		out, err := claude("dd if=/dev/zero of=/tmp/fill bs=1M count=32 2>&1; echo dd=$?; wc -c </tmp/fill").CombinedOutput()
		if err != nil {
			t.Fatalf("claude --shell: %v\n%s", err, out)
		}
		for _, want := range []string{"No space left on device", "dd=1\n", "\n8388608\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("filling /tmp under limit tmp 8M:\n%s\nwant %q", out, want)
			}
		}
	})

	t.Run("fork bomb", func(t *testing.T) {
		setConfig(t, "limit tasks 32\n")
		cmd := claude(`exec dash -c 'b() { b | b & }; b; sleep 3.1'`)
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		taskLimitMet(t, cgroupOf(t, guestUser, "sleep 3.1"), "32")
		err := cmd.Wait()
		out := buf.String()
		if code := exitCode(err); code == -1 || !strings.Contains(out, "Cannot fork") {
			t.Errorf("fork bomb under limit tasks 32: exit %d (%v), output %.300q, want it to end with dash's Cannot fork", code, err, out)
		}
		if o, _ := exec.Command("pgrep", "-u", guestUser, "-x", "dash").Output(); strings.TrimSpace(string(o)) != "" {
			t.Errorf("the bomb's shells outlive the sandbox: %q", o)
		}
		outsideAlive(t)
	})

	// The latency probe: the median start of /bin/true for a process of
	// the user outside every sandbox (a scope of its manager). Under the
	// fork bomb it stays within twice its idle value, both measured in
	// this guest (a ratio, no absolute time).
	latencyOutside := func(t *testing.T) time.Duration {
		t.Helper()
		out, err := asUser(home, "systemd-run", "--user", "--scope", "--quiet", "env", helperEnv+"=latency", "/job/test.bin", "60").Output()
		n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			t.Fatalf("latency probe: %v, output %q", err, out)
		}
		return time.Duration(n)
	}

	t.Run("fork bomb: the user's other work keeps answering", func(t *testing.T) {
		setConfig(t, "limit tasks 64\n")
		idle := latencyOutside(t)
		// bash retries a fork that fails: it keeps trying for 20 s
		cmd := claude(`exec bash -c 'b() { b | b & }; b; exec sleep 20.5'`)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { exec.Command("pkill", "-KILL", "-u", guestUser, "-x", "-f", "sleep 20.5").Run(); cmd.Wait() }()
		for i := 0; ; i++ {
			o, _ := exec.Command("pgrep", "-c", "-u", guestUser, "-x", "bash").Output()
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
		taskLimitMet(t, cgroupOf(t, guestUser, "sleep 20.5"), "64")
		outsideAlive(t)
	})
}

// cgroupOf is the cgroup v2 path (as /proc/PID/cgroup names it) of the
// one process of user whose command line is cmdline, once there is one.
func cgroupOf(t *testing.T, user, cmdline string) string {
	t.Helper()
	for range 200 {
		o, _ := exec.Command("pgrep", "-u", user, "-x", "-f", cmdline).Output()
		if p := strings.TrimSpace(string(o)); p != "" && !strings.Contains(p, "\n") {
			cg, _ := os.ReadFile("/proc/" + p + "/cgroup")
			if s, ok := strings.CutPrefix(strings.TrimSpace(string(cg)), "0::"); ok {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no single process %q of %s", cmdline, user)
	return ""
}

// taskLimitMet checks that the cgroup cg (a path of /proc/PID/cgroup)
// of a fork bomb has pids.max want and has refused forks at it: the max
// count of its pids.events, which it waits for while the cgroup exists.
func taskLimitMet(t *testing.T, cg, want string) {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup", cg)
	var limit, events []byte
	refused := func() int {
		f := strings.Fields(string(events))
		if len(f) != 2 || f[0] != "max" {
			return -1
		}
		n, _ := strconv.Atoi(f[1])
		return n
	}
	for range 100 {
		limit, _ = os.ReadFile(filepath.Join(dir, "pids.max"))
		events, _ = os.ReadFile(filepath.Join(dir, "pids.events"))
		if refused() > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.TrimSpace(string(limit)) != want || refused() <= 0 {
		t.Errorf("the fork bomb's cgroup %s: pids.max %q, pids.events %q; want %s and forks refused at it", dir, limit, events, want)
	}
}

// TestGuestTwoSandboxesOneSlice: two sandboxes of the same user, of two
// projects, in agent.slice: a CPU hog in one (four spinning shells under
// limit cpu 50%) leaves the other's latency probe, run inside it, within
// twice its value with the first sandbox idle.
func TestGuestTwoSandboxesOneSlice(t *testing.T) {
	vm.InGuest(t)
	home := "/home/" + guestUser
	setupUser(t)
	config := "limit cpu 50%\nlimit tasks 64\n"
	if os.Getenv(noLimitsEnv) == "1" {
		config = ""
	}
	if err := os.WriteFile(filepath.Join(home, ".claude-sandbox-init"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	projA, projB := filepath.Join(home, "hog"), filepath.Join(home, "probe")
	run(t, "runuser", "-u", guestUser, "--", "sh", "-c", "mkdir -p "+projA+" "+projB+" && cp /job/test.bin "+projB+"/probe")
	probe := func(t *testing.T) time.Duration {
		t.Helper()
		cmd := asUser(projB, "claude", "--sandbox-network=host", "--shell", "-c", "exec env "+helperEnv+"=latency ./probe 60")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		n, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			t.Fatalf("latency probe in the second sandbox: %v, output %q, stderr %q", err, out, stderr.String())
		}
		return time.Duration(n)
	}
	idle := probe(t)
	hog := asUser(projA, "claude", "--sandbox-network=host", "--shell", "-c", `for i in 1 2 3 4; do sh -c 'while :; do :; done' & done; exec sleep 31.4`)
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		exec.Command("pkill", "-KILL", "-u", guestUser, "-x", "-f", "sleep 31.4").Run()
		exec.Command("pkill", "-KILL", "-u", guestUser, "-f", "while :; do :; done").Run()
		hog.Wait()
	}()
	for i := 0; ; i++ {
		o, _ := exec.Command("pgrep", "-c", "-u", guestUser, "-f", "while :; do :; done").Output()
		if n, _ := strconv.Atoi(strings.TrimSpace(string(o))); n >= 4 {
			break
		}
		if i > 200 {
			t.Fatal("the hog did not start: fewer than 4 spinning shells")
		}
		time.Sleep(50 * time.Millisecond)
	}
	busy := probe(t)
	t.Logf("in the second sandbox: median start of /bin/true %v with the first idle, %v beside its hog", idle, busy)
	if busy > 2*idle {
		t.Errorf("the median start of /bin/true in the second sandbox took %v beside the first's CPU hog, %v idle: more than twice", busy, idle)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
