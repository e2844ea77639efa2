//go:build linux

package systemd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/sandbox"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/nspawn"
)

// exitCode is the exit status of a command run in the machine, 0 if it
// succeeded, -1 if it did not run to an exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// TestBudgetsEndToEnd installs the tree in a machine and abuses the
// sandbox's budget under the user's systemd manager: the shipped
// agent.slice holds, the config's limit lines become the scope's
// properties, and a memory hog, a full /tmp and a fork bomb each end
// inside the sandbox while a process of the same user outside lives on.
func TestBudgetsEndToEnd(t *testing.T) {
	requireSelected(t)
	u := testutil.RequireUser(t)
	testutil.RequireCommand(t, "make")
	stage := stageInstall(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := nspawn.Boot(t, nspawn.Options{BindRO: []string{stage + ":" + mntStage, exe + ":" + mntTest}})
	ctx := context.Background()
	m.MustRun(t, "cp", "-a", mntStage+"/.", "/")
	m.WriteFile(t, agentBin, fakeAgent, 0o755)
	// The latency helper, where the sandbox sees it too.
	m.MustRun(t, "install", "-m", "0755", mntTest, probeBin)
	uid := m.EnableLinger(t, u.Name)
	// The scope's limits need cgroup v2 with the controllers delegated to
	// the user manager; on cgroup v1 the launcher refuses limit lines.
	controllers := sandbox.UserControllers(uid)
	ctl, _ := m.Run(ctx, "cat", controllers)
	have := strings.Fields(ctl.Stdout)
	enforced := slices.Contains(have, "memory") && slices.Contains(have, "pids") && slices.Contains(have, "cpu")
	requireEnforced := func(t *testing.T) {
		t.Helper()
		testutil.E2E(t, testutil.E2ECgroup2)
		if !enforced {
			testutil.Missing(t, "cgroup v2 with the memory, pids and cpu controllers delegated to the user manager (%s: %q)", controllers, ctl.Stdout)
		}
	}
	config := filepath.Join(u.Home, ".claude-sandbox-init")
	setConfig := func(t *testing.T, src string) {
		m.WriteFile(t, config, src, 0o644)
		t.Cleanup(func() { m.Run(ctx, "rm", "-f", config) })
	}
	// A process of the same user outside the sandbox, which must
	// outlive every abuse.
	outside, err := m.CommandAs(ctx, u.Name, "sleep", "2718.28")
	if err != nil {
		t.Fatal(err)
	}
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Run(ctx, "pkill", "-u", u.Name, "-x", "-f", "sleep 2718.28")
		outside.Wait()
	}()
	outsideAlive := func(t *testing.T) {
		t.Helper()
		if out, err := m.Run(ctx, "pgrep", "-u", u.Name, "-x", "-f", "sleep 2718.28"); err != nil {
			t.Errorf("the user's process outside the sandbox is gone: %v %q", err, out.Stdout)
		}
	}

	t.Run("agent.slice", func(t *testing.T) {
		out := mustRunAs(t, m, u.Name, "systemctl", "--user", "show", "-p", "TasksMax", "-p", "CPUWeight", "-p", "IOWeight", "-p", "ManagedOOMMemoryPressure", "-p", "FragmentPath", "agent.slice")
		for _, want := range []string{"TasksMax=4096\n", "CPUWeight=50\n", "IOWeight=50\n", "ManagedOOMMemoryPressure=kill\n", "FragmentPath=/usr/local/lib/systemd/user/agent.slice\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("systemctl --user show agent.slice:\n%swant %q", out, want)
			}
		}
		if out, err := m.Run(ctx, "systemd-analyze", "verify", "--man=no", "/usr/local/lib/systemd/user/agent.slice"); err != nil || strings.TrimSpace(out.Stderr) != "" {
			t.Errorf("systemd-analyze verify agent.slice: %v %q", err, out.Stderr)
		}
	})

	t.Run("limits without controllers refuse the start", func(t *testing.T) {
		if enforced {
			t.Skipf("the user manager has the controllers (%q): the tests below enforce the limits", ctl.Stdout)
		}
		setConfig(t, "limit memory 256M\n")
		out, err := m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", "echo started")
		want := "claude: ~/.claude-sandbox-init:1: limit memory: the user manager has no cgroup v2 controllers (" + controllers + ": cannot read it: cgroup v1?), so the sandbox cannot have its budget; start claude in a login session with a user manager on cgroup v2, or write `budget optional` to start without the limits\n"
		if code := exitCode(err); code != 2 || out.Stdout != "" || out.Stderr != want {
			t.Errorf("limit memory on cgroup v1: exit %d, stdout %q, stderr %q, want exit 2 and %q", code, out.Stdout, out.Stderr, want)
		}
		setConfig(t, "budget optional\nlimit memory 256M\n")
		out, err = m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", "echo started")
		if err != nil || out.Stdout != "started\n" || !strings.Contains(out.Stderr, "claude: budget: partial: the user manager has no cgroup v2 controllers") {
			t.Errorf("budget optional on cgroup v1: %v, stdout %q, stderr %q, want a start that says the budget is partial", err, out.Stdout, out.Stderr)
		}
	})

	// scopeOf starts a sandbox that sleeps under config and returns the
	// name of its scope; the sandbox ends with the test.
	scopeOf := func(t *testing.T, config, marker string) string {
		t.Helper()
		setConfig(t, config)
		cmd, err := m.CommandAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", "exec sleep "+marker)
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			m.Run(ctx, "pkill", "-u", u.Name, "-x", "-f", "sleep "+marker)
			cmd.Wait()
		})
		var pid string
		for deadline := time.Now().Add(20 * time.Second); pid == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cmd.ProcessState != nil {
				break
			}
			out, _ := m.Run(ctx, "pgrep", "-u", u.Name, "-x", "-f", "sleep "+marker)
			pid = strings.TrimSpace(out.Stdout)
		}
		if pid == "" || strings.Contains(pid, "\n") {
			t.Fatalf("sandboxed sleep: pids %q (stderr %q)", pid, stderr.String())
		}
		scope := filepath.Base(unified(m.MustRun(t, "cat", "/proc/"+pid+"/cgroup")))
		if !strings.HasSuffix(scope, ".scope") {
			t.Fatalf("sandboxed sleep %s is in %q, not in a scope", pid, scope)
		}
		return scope
	}

	t.Run("an OOM kill ends the whole scope", func(t *testing.T) {
		scope := scopeOf(t, "budget optional\n", "1414.21")
		out := mustRunAs(t, m, u.Name, "systemctl", "--user", "show", "-p", "OOMPolicy", "-p", "Slice", scope)
		if want := "OOMPolicy=kill\nSlice=agent.slice\n"; out != want {
			t.Errorf("systemctl --user show %s = %q, want %q", scope, out, want)
		}
	})

	t.Run("limits are the scope's properties", func(t *testing.T) {
		requireEnforced(t)
		scope := scopeOf(t, "limit memory 256M\nlimit tasks 64\nif exists /etc\n  limit cpu 50%\nend\n", "1618.03")
		out := mustRunAs(t, m, u.Name, "systemctl", "--user", "show", "-p", "MemoryMax", "-p", "TasksMax", "-p", "CPUQuotaPerSecUSec", "-p", "OOMPolicy", "-p", "Slice", scope)
		got := strings.Fields(out)
		slices.Sort(got)
		want := []string{"CPUQuotaPerSecUSec=500ms", "MemoryMax=268435456", "OOMPolicy=kill", "Slice=agent.slice", "TasksMax=64"}
		if !slices.Equal(got, want) {
			t.Errorf("systemctl --user show %s:\n%swant %q", scope, out, want)
		}
	})

	// Without a user manager: a system service of the user's with
	// Delegate=yes gives the user its cgroup, as a container runtime
	// would. The script moves itself into a child, login, so that the
	// delegated cgroup can give its children controllers; the launcher
	// then makes the sandbox's cgroup beside login.
	delegated := func(t *testing.T, config, command string) (nspawn.Output, error) {
		t.Helper()
		setConfig(t, config)
		script := `cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir "$cg/login" && echo $$ >"$cg/login/cgroup.procs" && echo '+memory +pids +cpu' >"$cg/cgroup.subtree_control" || exit 99
claude --sandbox-network=host --shell -c "$1"
rc=$?
ls -d "$cg"/claude-sandbox-* 2>/dev/null
exit $rc`
		return m.Run(ctx, "systemd-run", "--quiet", "--wait", "--pipe", "--collect", "--uid="+u.Name, "-p", "Delegate=yes", "--", "/bin/sh", "-c", script, "sh", command)
	}

	t.Run("delegated cgroup: memory hog", func(t *testing.T) {
		requireEnforced(t)
		out, err := delegated(t, "limit memory 64M\n", "head -c 512M /dev/zero | tail -n 1 >/dev/null")
		if code := exitCode(err); code != 137 || out.Stdout != "" || strings.Contains(out.Stderr, "budget: none") {
			t.Errorf("claude --shell with a 512M hog under limit memory 64M, in a delegated cgroup: exit %d (%v), stdout %q (a cgroup left behind?), stderr %q; want 137 (SIGKILL by the OOM killer)", code, err, out.Stdout, out.Stderr)
		}
		outsideAlive(t)
	})

	t.Run("delegated cgroup: fork bomb", func(t *testing.T) {
		requireEnforced(t)
		out, err := delegated(t, "limit tasks 32\n", `exec dash -c 'b() { b | b & }; b; sleep 2'`)
		if code := exitCode(err); code == -1 || code == 99 || !strings.Contains(out.Stderr, "Cannot fork") || out.Stdout != "" {
			t.Errorf("fork bomb under limit tasks 32, in a delegated cgroup: exit %d (%v), stdout %q, stderr %.300q, want it to end with dash's Cannot fork", code, err, out.Stdout, out.Stderr)
		}
		if o, _ := m.Run(ctx, "pgrep", "-u", u.Name, "-x", "dash"); strings.TrimSpace(o.Stdout) != "" {
			t.Errorf("the bomb's shells outlive the sandbox: %q", o.Stdout)
		}
		outsideAlive(t)
	})

	// The latency probes: the median time to start /bin/true, for a
	// process of the user outside every sandbox (a scope of the user's
	// manager, beside agent.slice) and inside one. Requirement: under
	// abuse it stays within twice its idle value (a ratio of two
	// measurements on the same machine, no absolute time).
	parseLatency := func(t *testing.T, what, out string, err error) time.Duration {
		t.Helper()
		n, perr := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			t.Fatalf("latency probe %s: %v, output %q", what, err, out)
		}
		return time.Duration(n)
	}
	latencyOutside := func(t *testing.T) time.Duration {
		t.Helper()
		out, err := m.RunAs(ctx, u.Name, "systemd-run", "--user", "--scope", "--quiet", "env", helperEnv+"=latency", probeBin, "200")
		return parseLatency(t, "outside", out.Stdout, err)
	}
	latencyInside := func(t *testing.T) time.Duration {
		t.Helper()
		out, err := m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", helperEnv+"=latency "+probeBin+" 200")
		return parseLatency(t, "inside a sandbox", out.Stdout, err)
	}
	// bomb starts a sandbox whose fork bomb keeps forking for 20 seconds:
	// bash retries a fork that fails. It returns when the bomb has
	// started; the sandbox ends with the test.
	bomb := func(t *testing.T) {
		t.Helper()
		cmd, err := m.CommandAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", `exec bash -c 'b() { b | b & }; b; exec sleep 20.5'`)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			m.Run(ctx, "pkill", "-KILL", "-u", u.Name, "-x", "-f", "sleep 20.5")
			cmd.Wait()
		})
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			out, _ := m.Run(ctx, "pgrep", "-c", "-u", u.Name, "-x", "bash")
			if n, _ := strconv.Atoi(strings.TrimSpace(out.Stdout)); n >= 10 {
				return
			}
		}
		t.Fatal("the fork bomb did not start: fewer than 10 of its shells")
	}
	within2x := func(t *testing.T, what string, idle, busy time.Duration) {
		t.Helper()
		t.Logf("%s: median %v idle, %v beside the bomb", what, idle, busy)
		if busy > 2*idle {
			t.Errorf("%s: the median start of /bin/true took %v beside the fork bomb, %v idle: more than twice", what, busy, idle)
		}
	}

	t.Run("fork bomb: the user's other work keeps answering", func(t *testing.T) {
		requireEnforced(t)
		setConfig(t, "limit tasks 64\n")
		idle := latencyOutside(t)
		bomb(t)
		within2x(t, "outside the sandbox", idle, latencyOutside(t))
		outsideAlive(t)
	})

	t.Run("two sandboxes: a fork bomb in one, the other keeps answering", func(t *testing.T) {
		requireEnforced(t)
		// The defaults alone: each scope's TasksMax and memory, below
		// agent.slice's.
		idle := latencyInside(t)
		bomb(t)
		within2x(t, "in a second sandbox", idle, latencyInside(t))
		outsideAlive(t)
	})

	t.Run("memory hog", func(t *testing.T) {
		requireEnforced(t)
		setConfig(t, "limit memory 64M\n")
		// tail keeps a line without end in memory: 512M of it.
		out, err := m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", "head -c 512M /dev/zero | tail -n 1 >/dev/null")
		if code := exitCode(err); code != 137 {
			t.Errorf("claude --shell with a 512M hog under limit memory 64M: exit %d (%v), want 137 (SIGKILL by the OOM killer); stdout %q stderr %q", code, err, out.Stdout, out.Stderr)
		}
		outsideAlive(t)
	})

	t.Run("tmp fills up", func(t *testing.T) {
		setConfig(t, "limit tmp 8M\n")
		out, err := m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", "df -k /tmp | tail -n 1; dd if=/dev/zero of=/tmp/fill bs=1M count=32 2>&1; echo dd=$?; wc -c </tmp/fill")
		if err != nil {
			t.Fatalf("claude --shell: %v (stderr %q)", err, out.Stderr)
		}
		for _, want := range []string{" 8192 ", "No space left on device", "dd=1\n", "\n8388608\n"} {
			if !strings.Contains(out.Stdout, want) {
				t.Errorf("filling /tmp under limit tmp 8M:\n%s\nwant %q", out.Stdout, want)
			}
		}
		// Nothing reached the host's /tmp.
		if out, _ := m.Run(ctx, "sh", "-c", "ls /tmp/claude-private-*/fill 2>&1"); !strings.Contains(out.Stdout, "No such file") {
			t.Errorf("the fill landed on the host: %q", out.Stdout)
		}
	})

	t.Run("fork bomb", func(t *testing.T) {
		requireEnforced(t)
		setConfig(t, "limit tasks 32\n")
		// dash gives up when fork fails (bash retries); the bomb ends
		// when its first shell does, since bwrap's pid namespace goes
		// with it.
		out, err := m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", `exec dash -c 'b() { b | b & }; b; sleep 2'`)
		if code := exitCode(err); code == -1 || !strings.Contains(out.Stderr, "Cannot fork") {
			t.Errorf("fork bomb under limit tasks 32: exit %d (%v), stderr %.300q, want it to end with dash's Cannot fork", code, err, out.Stderr)
		}
		// Nothing of the bomb is left: the user has the outside sleep
		// and the manager's processes only.
		if o, _ := m.Run(ctx, "pgrep", "-u", u.Name, "-x", "dash"); strings.TrimSpace(o.Stdout) != "" {
			t.Errorf("the bomb's shells outlive the sandbox: %q", o.Stdout)
		}
		outsideAlive(t)
	})
}
