package bindir

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// The helper's environment: what it does (helperMode) and its arguments.
const (
	helperMode = "CLAUDE_SBX_TEST_SMOKE_HELPER"
	helperArgs = "CLAUDE_SBX_TEST_SMOKE_ARGS"
)

// fakeBwrapFailure is a binary that, in a user namespace (bwrap's), says
// what bwrap says when it cannot set up and fails as bwrap would; run in
// the host's user namespace it answers --version as the agent.
const fakeBwrapFailure = `#!/bin/sh
read -r a b c </proc/self/uid_map
if [ "$c" = 4294967295 ]; then
	echo '2.1.5 (Claude Code)'
	exit 0
fi
echo 'bwrap: Creating new namespace failed: Operation not permitted' >&2
exit 1
`

// TestHelperSmoke is not a test: run as a subprocess (as another user) by
// the tests below, it does what helperMode says and prints the outcome.
func TestHelperSmoke(t *testing.T) {
	mode := os.Getenv(helperMode)
	if mode == "" {
		return
	}
	args := strings.Split(os.Getenv(helperArgs), "\n")
	switch mode {
	case "install":
		// args: the bin dir, then the binary's text.
		fmt.Println(installFake(args[0], strings.Join(args[1:], "\n")))
	case "probe":
		// args: the probe binary, then its arguments.
		out, err := runProbe(args[0], args[1:]...)
		fmt.Print(out)
		if err != nil {
			fmt.Println("error:", err)
		}
	}
}

// installFake installs text as version 2.1.5 into dir with the smoke test
// as its check, and returns the error and whether it was installed.
func installFake(dir, text string) string {
	d := New(dir)
	if err := d.Lock(); err != nil {
		return err.Error()
	}
	defer d.Unlock()
	v := v1("2.1.5")
	fill := func(w io.Writer) error { _, err := io.WriteString(w, text); return err }
	check := func(ctx context.Context, f *os.File) error { return d.Smoke(ctx, f, v) }
	_, _, _, err := d.Install(context.Background(), v, fill, check)
	return fmt.Sprintf("Install: %v; installed: %v", err, d.Has(v))
}

// runProbe runs the probe binary at path as Smoke runs the binary under
// test: the same bwrap, the same probe first, the same confinement.
func runProbe(path string, args ...string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := New(os.TempDir())
	bw := d.findBwrap()
	if bw == "" {
		return "", fmt.Errorf("no bwrap")
	}
	ctx := context.Background()
	if err := probeBwrap(ctx, bw, f, v1("2.1.5")); err != nil {
		return "", err
	}
	out, stderr, err := runSmoke(ctx, bw, f, append([]string{"/proc/self/fd/3"}, args...)...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, firstLine(stderr))
	}
	return out, nil
}

// asUser runs TestHelperSmoke as the test user, from a copy of the test
// binary the user can run, and returns its output.
func asUser(t *testing.T, mode string, args ...string) string {
	t.Helper()
	u := testutil.RequireUser(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(testutil.PublicDir(t), "bindir.test")
	testutil.CopyFile(t, exe, bin, 0o755)
	home := testutil.UserHome(t, u)
	cmd := u.Command(home, bin, "-test.run=^TestHelperSmoke$", "-test.count=1")
	cmd.Env = append(cmd.Env, helperMode+"="+mode, helperArgs+"="+strings.Join(args, "\n"), "TMPDIR="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as %s: %v: %s", u.Name, err, out)
	}
	return strings.TrimSuffix(strings.TrimSpace(string(out)), "PASS")
}

// TestSmokeBinaryFakesBwrapFailure: a binary that prints what bwrap prints
// when it cannot set up, and exits 1, fails the smoke test and is not
// installed (it is not run again some other way), as root and as a user.
func TestSmokeBinaryFakesBwrapFailure(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		testutil.Missing(t, "no /usr/bin/bwrap: %v", err)
	}
	want := "Install: smoke test of 2.1.5 failed: --version: exit status 1: bwrap: Creating new namespace failed: Operation not permitted; installed: false"
	t.Run("root", func(t *testing.T) {
		if got := installFake(testutil.RootOwnedDir(t), fakeBwrapFailure); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	})
	t.Run("user", func(t *testing.T) {
		u := testutil.RequireUser(t)
		dir := filepath.Join(testutil.UserHome(t, u), "bin")
		got := strings.TrimSpace(asUser(t, "install", dir, fakeBwrapFailure))
		if got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	})
}

// buildProbe builds testdata/smokeprobe into a directory every user can
// read.
func buildProbe(t *testing.T) string {
	t.Helper()
	p := filepath.Join(testutil.PublicDir(t), "smokeprobe")
	cmd := exec.Command("go", "build", "-trimpath", "-o", p, "./testdata/smokeprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build smokeprobe: %v: %s", err, out)
	}
	return p
}

// hostSocket listens on a root-owned, world-writable (0777) unix socket at
// path, removed after the test, and counts the connections it accepts.
func hostSocket(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.Remove(path) })
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSmokeSeesNothingOfTheHost: the binary under test, run as the smoke
// test runs it, tries the host's root-owned 0777 sockets under /run and
// /opt, to write /var/tmp, to list /sys/class/net, to reach a listener on
// the host's 127.0.0.1, and to leave a setsid child behind: each fails
// with its errno and the child does not outlive the run, as root and as a
// user.
func TestSmokeSeesNothingOfTheHost(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		testutil.Missing(t, "no /usr/bin/bwrap: %v", err)
	}
	probe := buildProbe(t)
	name := fmt.Sprintf("claude-sbx-smoke-%d.sock", os.Getpid())
	runSock, optSock := filepath.Join("/run", name), filepath.Join("/opt", name)
	var ls []net.Listener
	for _, p := range []string{runSock, optSock} {
		ls = append(ls, hostSocket(t, p))
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	ls = append(ls, tcp)
	addr := tcp.Addr().String()
	want := strings.Join([]string{
		"connect unix " + runSock + ": socket EPERM",
		"connect unix " + optSock + ": socket EPERM",
		"write /var/tmp: ENOENT",
		"list /sys/class/net: ENOENT",
		"connect tcp " + addr + ": connect ECONNREFUSED",
		"start setsid child: ok",
	}, "\n") + "\n"
	for _, who := range []string{"root", "user"} {
		t.Run(who, func(t *testing.T) {
			var got string
			if who == "root" {
				out, err := runProbe(probe, runSock, optSock, addr)
				if err != nil {
					t.Fatalf("runProbe: %v", err)
				}
				got = out
			} else {
				got = strings.TrimLeft(asUser(t, "probe", probe, runSock, optSock, addr), "\n")
			}
			if got != want {
				t.Errorf("the probe reported:\n%s\nwant:\n%s", got, want)
			}
			for _, pid := range processesOf(t, probe) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d of the probe outlived the smoke run", pid)
			}
			for _, l := range ls {
				if accepted(l) {
					t.Errorf("%s accepted a connection from the smoke run", l.Addr())
				}
			}
		})
	}
}

// processesOf lists the host's processes running the file at path.
func processesOf(t *testing.T, path string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			pids = append(pids, pid)
		}
	}
	return pids
}

// accepted reports whether a connection is waiting on l (it is accepted
// and closed; nothing waits for one).
func accepted(l net.Listener) bool {
	rc, err := l.(syscall.Conn).SyscallConn()
	if err != nil {
		return false
	}
	got := false
	// Control, as a listener's Read is EINVAL; the fd is non-blocking,
	// so Accept returns EAGAIN when no connection waits.
	rc.Control(func(fd uintptr) {
		if nfd, _, err := unix.Accept(int(fd)); err == nil {
			unix.Close(nfd)
			got = true
		}
	})
	return got
}
