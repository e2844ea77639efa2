//go:build linux

// Package systemd holds the end-to-end tests that need a real systemd: a
// machine booted with systemd-nspawn (internal/testutil/nspawn) in which
// the freshly built tree is installed. Run them with `make e2e-systemd`.
package systemd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/nspawn"
)

// requireSelected: these tests boot machines, so `go test ./...` leaves
// them to `make e2e-systemd`, which selects them (CLAUDE_SBX_E2E=systemd).
func requireSelected(t *testing.T) {
	t.Helper()
	testutil.E2E(t, testutil.E2ESystemd)
}

// helperEnv makes the test binary a helper process (see TestMain).
const helperEnv = "CLAUDE_SBX_E2E_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "boot-and-hang":
		bootAndHang()
	default:
		helper(os.Getenv(helperEnv), os.Args[1:])
	}
}

// bootAndHang boots a machine, prints its name and waits to be killed: a
// test run killed in the middle, for TestLeftoversOfKilledRun.
func bootAndHang() {
	t := &hangT{}
	m := nspawn.Boot(t, nspawn.Options{})
	fmt.Printf("booted %s\n", m.Name)
	select {}
}

// hangT is the testing.TB of bootAndHang: failures end the process.
type hangT struct{ testing.TB }

func (*hangT) Helper()                   {}
func (*hangT) Cleanup(func())            {}
func (*hangT) Failed() bool              { return false }
func (*hangT) Logf(string, ...any)       {}
func (*hangT) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }
func (*hangT) Skipf(f string, a ...any)  { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }

// TestMachine proves the harness and the mechanism the launcher relies on:
// systemd boots as PID 1 in a machine of its own, and a lingering user's
// manager puts `systemd-run --user --scope --slice=agent` into agent.slice.
func TestMachine(t *testing.T) {
	requireSelected(t)
	u := testutil.RequireUser(t)
	m := nspawn.Boot(t, nspawn.Options{})

	t.Run("init", func(t *testing.T) {
		if got := strings.TrimSpace(m.MustRun(t, "readlink", "/proc/1/exe")); filepath.Base(got) != "systemd" {
			t.Errorf("PID 1 of the machine is %q, want systemd", got)
		}
		if got := strings.TrimSpace(m.MustRun(t, "hostname")); got != m.Name {
			t.Errorf("hostname = %q, want %q", got, m.Name)
		}
		host, err := os.ReadFile("/etc/machine-id")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MustRun(t, "cat", "/etc/machine-id"); got == string(host) || len(strings.TrimSpace(got)) != 32 {
			t.Errorf("machine-id = %q, want a fresh one (host: %q)", got, host)
		}
	})

	t.Run("private network", func(t *testing.T) {
		links := m.MustRun(t, "ip", "-o", "link", "show")
		if n := strings.Count(links, "\n"); n != 1 || !strings.Contains(links, ": lo:") {
			t.Errorf("links in the machine:\n%s\nwant lo only", links)
		}
		var host syscall.Stat_t
		if err := syscall.Stat("/proc/self/ns/net", &host); err != nil {
			t.Fatal(err)
		}
		var guest syscall.Stat_t
		if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", m.PID1), &guest); err != nil {
			t.Fatal(err)
		}
		if host.Ino == guest.Ino {
			t.Errorf("machine shares the host's network namespace (inode %d)", host.Ino)
		}
	})

	t.Run("overlay keeps the host unchanged", func(t *testing.T) {
		probe := "/etc/claude-sbx-e2e-probe-" + m.Name
		m.MustRun(t, "sh", "-c", "echo guest > "+probe)
		if got := m.MustRun(t, "cat", probe); got != "guest\n" {
			t.Fatalf("probe in the machine = %q", got)
		}
		if _, err := os.Stat(probe); !os.IsNotExist(err) {
			os.Remove(probe)
			t.Errorf("file written in the machine appeared on the host: stat %s: %v", probe, err)
		}
	})

	t.Run("proc sys", func(t *testing.T) {
		// bwrap --disable-userns needs /proc/sys/user writable; the
		// host's kernel settings stay out of reach.
		testutil.RequireCommand(t, "bwrap")
		out, err := m.RunAs(context.Background(), u.Name, "bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
			"--unshare-user", "--unshare-pid", "--disable-userns", "--assert-userns-disabled", "sh", "-c", "unshare -U true 2>&1; echo $?")
		if err != nil {
			t.Fatalf("bwrap --disable-userns in the machine: %v", err)
		}
		if want := "unshare: unshare failed: No space left on device\n1\n"; out.Stdout != want {
			t.Errorf("nested unshare -U under bwrap --disable-userns: %q, want %q", out.Stdout, want)
		}
		out, err = m.Run(context.Background(), "sh", "-c", "cat /proc/sys/kernel/pid_max > /proc/sys/kernel/pid_max")
		if err == nil || !strings.Contains(out.Stderr, "Read-only file system") {
			t.Errorf("writing /proc/sys/kernel/pid_max in the machine: %v %q, want Read-only file system", err, out.Stderr)
		}
	})

	t.Run("host services do not run", func(t *testing.T) {
		// The machine boots into nspawn.Target, not the host's
		// multi-user.target with whatever the host has enabled.
		if got := strings.TrimSpace(m.MustRun(t, "systemctl", "show", "-P", "ActiveState", "multi-user.target")); got != "inactive" {
			t.Errorf("multi-user.target is %q, want inactive", got)
		}
		if got := strings.TrimSpace(m.MustRun(t, "systemctl", "show", "-P", "ActiveState", nspawn.Target)); got != "active" {
			t.Errorf("%s is %q, want active", nspawn.Target, got)
		}
	})

	t.Run("user scope in agent.slice", func(t *testing.T) {
		uid := m.EnableLinger(t, u.Name)
		if uid != int(u.Uid) {
			t.Fatalf("uid of %s in the machine = %d, host %d", u.Name, uid, u.Uid)
		}
		ctx := context.Background()
		out, err := m.RunAs(ctx, u.Name, "systemd-run", "--user", "--scope", "--slice=agent", "--quiet", "cat", "/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("/user.slice/user-%d.slice/user@%d.service/agent.slice/", uid, uid)
		if cg := unified(out.Stdout); !strings.Contains(cg, want) || !strings.HasSuffix(cg, ".scope") {
			t.Errorf("cgroup of a scope in agent.slice = %q (from %q), want ...%s*.scope", cg, out.Stdout, want)
		}
		// Control: the same command without the scope is not in it.
		out, err = m.RunAs(ctx, u.Name, "cat", "/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		if cg := unified(out.Stdout); strings.Contains(cg, "agent.slice") {
			t.Errorf("cgroup without systemd-run = %q, want outside agent.slice", cg)
		}
		if got := strings.TrimSpace(mustRunAs(t, m, u.Name, "id", "-u")); got != strconv.Itoa(uid) {
			t.Errorf("RunAs runs as uid %s, want %d", got, uid)
		}
	})
}

// unified returns the cgroup v2 path from /proc/self/cgroup text.
func unified(procCgroup string) string {
	s := bufio.NewScanner(strings.NewReader(procCgroup))
	for s.Scan() {
		if p, ok := strings.CutPrefix(s.Text(), "0::"); ok {
			return p
		}
	}
	return ""
}

func mustRunAs(t *testing.T, m *nspawn.Machine, user string, args ...string) string {
	t.Helper()
	out, err := m.RunAs(context.Background(), user, args...)
	if err != nil {
		t.Fatalf("in %s as %s: %v", m.Name, user, err)
	}
	return out.Stdout
}

// TestTeardownLeavesNothing checks that a machine leaves no process,
// cgroup, mount or directory behind, when its test ends and when the test
// process was killed.
func TestTeardownLeavesNothing(t *testing.T) {
	requireSelected(t)
	testutil.RequireRoot(t)

	t.Run("test ends", func(t *testing.T) {
		var m *nspawn.Machine
		var pid1 int
		t.Run("boot", func(t *testing.T) {
			m = nspawn.Boot(t, nspawn.Options{})
			pid1 = m.PID1
		})
		if m == nil || pid1 == 0 {
			t.Fatal("boot failed")
		}
		assertGone(t, m.Name, pid1)
	})

	t.Run("test process killed", func(t *testing.T) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=boot-and-hang")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "booted ")
		if err != nil || !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper: %q, %v", line, err)
		}
		pid1 := initOf(t, name)
		cmd.Process.Kill()
		cmd.Wait()
		if _, err := os.Stat(filepath.Join(nspawn.BaseDir, name)); err != nil {
			t.Fatalf("the killed run left nothing to clean up (%v): the test proves nothing", err)
		}
		nspawn.RemoveLeftovers(t.Logf)
		assertGone(t, name, pid1)
	})
}

// initOf finds the host pid of the init of the machine name through its
// cgroup.
func initOf(t *testing.T, name string) int {
	t.Helper()
	for _, h := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup"} {
		b, err := os.ReadFile(filepath.Join(h, name, "payload", "init.scope", "cgroup.procs"))
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no init.scope in the cgroup of %s", name)
	return 0
}

// assertGone fails unless the machine's init, directory, cgroups and mounts
// are gone.
func assertGone(t *testing.T, name string, pid1 int) {
	t.Helper()
	// The init may take a moment to be reaped after its pid namespace died.
	for i := 0; i < 250 && syscall.Kill(pid1, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid1, 0); err != syscall.ESRCH {
		t.Errorf("init %d of %s: kill -0 = %v, want ESRCH", pid1, name, err)
	}
	if _, err := os.Stat(filepath.Join(nspawn.BaseDir, name)); !os.IsNotExist(err) {
		t.Errorf("directory of %s: %v, want it removed", name, err)
	}
	for _, h := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(h, name)); !os.IsNotExist(err) {
			t.Errorf("cgroup %s/%s: %v, want it removed", h, name, err)
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), name) {
		t.Errorf("mounts of %s left:\n%s", name, mi)
	}
}
