//go:build linux

package seccomp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/seccomp"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// progMount is where the test programs appear inside the sandbox.
const progMount = "/opt/seccomp-tests"

// goroot is the Go toolchain the go build test uses; the sandbox shows
// only /usr/{bin,lib,...}, so the config file binds it.
const goroot = "/usr/local/go"

var (
	progOnce sync.Once
	progDir  string
	progErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if progDir != "" {
		os.RemoveAll(progDir)
	}
	os.Exit(code)
}

// programs compiles the C programs of testdata with gcc, once per test
// process, into a directory every user can read.
func programs(t testing.TB) string {
	t.Helper()
	testutil.RequireCommand(t, "gcc")
	progOnce.Do(func() {
		base := filepath.Join(os.TempDir(), "claude-sbx-tests")
		if progErr = os.MkdirAll(base, 0o755); progErr != nil {
			return
		}
		if progDir, progErr = os.MkdirTemp(base, "seccomp"); progErr != nil {
			return
		}
		if progErr = os.Chmod(progDir, 0o755); progErr != nil {
			return
		}
		for _, p := range []string{"probe", "threads", "getppid"} {
			out, err := exec.Command("gcc", "-O2", "-Wall", "-Werror", "-o", filepath.Join(progDir, p),
				filepath.Join("testdata", p+".c"), "-lpthread").CombinedOutput()
			if err != nil {
				progErr = fmt.Errorf("gcc %s.c: %v: %s", p, err, out)
				return
			}
		}
	})
	if progErr != nil {
		t.Fatal(progErr)
	}
	return progDir
}

// box runs shell scripts in a sandbox as the unprivileged test user.
type box interface {
	// Command returns the command that runs script with sh -c (the
	// launcher: $SHELL -c) inside the sandbox.
	Command(t testing.TB, script string) *exec.Cmd
	// Kind says which sandbox this is, for messages.
	Kind() string
}

// run runs script and returns the result.
func run(t testing.TB, b box, script string) testutil.Result {
	t.Helper()
	return testutil.RunCommand(t, b.Command(t, script))
}

// launcherBox is the real launcher: `claude --shell -c SCRIPT` through
// testutil.Sandbox, with a config file that shows the test programs and
// the Go toolchain.
type launcherBox struct{ s *testutil.Sandbox }

func (l launcherBox) Command(t testing.TB, script string) *exec.Cmd {
	return l.s.Command("--shell", "-c", script)
}

func (launcherBox) Kind() string { return "launcher" }

// bwrapBox runs bwrap directly, with the layout of the launcher's sandbox
// that matters here, and with our filter or none. It is the control (no
// filter: the attacks the tests perform must work, or fail otherwise) and
// the stand-in while the launcher cannot run a sandbox.
type bwrapBox struct {
	u      testutil.User
	home   string
	filter []byte            // nil: no seccomp filter at all
	binds  map[string]string // extra read-only binds: host path -> sandbox path
	rw     []string          // extra read-write binds at the same path
}

func (b bwrapBox) Kind() string {
	if b.filter == nil {
		return "bwrap without filter"
	}
	return "bwrap with filter"
}

func (b bwrapBox) Command(t testing.TB, script string) *exec.Cmd {
	t.Helper()
	args := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
		"--disable-userns", "--assert-userns-disabled", "--die-with-parent",
		"--ro-bind", "/usr", "/usr",
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if target, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", target, d)
		} else if _, err := os.Stat(d); err == nil {
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args,
		"--ro-bind", "/etc", "/etc",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm",
		"--bind", b.home, b.home, "--chdir", b.home,
		"--ro-bind", programs(t), progMount,
	)
	for src, dst := range b.binds {
		args = append(args, "--ro-bind", src, dst)
	}
	for _, d := range b.rw {
		args = append(args, "--bind", d, d)
	}
	cmd := b.u.Command(b.home, "bwrap")
	if b.filter != nil {
		f, err := memfile(b.filter)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd.ExtraFiles = []*os.File{f} // fd 3
		args = append(args, "--seccomp", "3")
	}
	cmd.Args = append(append([]string{"bwrap"}, args...), "--", "/bin/sh", "-c", script)
	return cmd
}

// memfile returns a file positioned at the start of b.
func memfile(b []byte) (*os.File, error) {
	f, err := os.CreateTemp("", "seccomp-filter")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	_, err = f.Seek(0, 0)
	return f, err
}

// controlBox is the same sandbox without any seccomp filter.
func controlBox(t testing.TB) box {
	t.Helper()
	u := testutil.RequireUser(t)
	testutil.RequireCommand(t, "bwrap")
	return bwrapBox{u: u, home: testutil.UserHome(t, u)}
}

// directBox is bwrap with our filter, built in this process.
func directBox(t testing.TB, opts seccomp.Options) bwrapBox {
	t.Helper()
	u := testutil.RequireUser(t)
	testutil.RequireCommand(t, "bwrap")
	f, err := seccomp.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	return bwrapBox{u: u, home: testutil.UserHome(t, u), filter: f.Bytes()}
}

var (
	launcherOnce sync.Once
	launcherErr  string
)

// filteredBox is the sandbox under test: the real launcher, with extra
// config lines appended to the test's config. While the launcher cannot
// run a sandbox yet ("not implemented"), it falls back to bwrap with our
// filter, except in CI, where that fails the test.
//
// SECCOMP_TEST_DIRECT=1 skips the launcher (to work on the filter while the
// launcher does not build); CI refuses it.
func filteredBox(t testing.TB, config ...string) box {
	t.Helper()
	if os.Getenv("SECCOMP_TEST_DIRECT") == "1" {
		if testutil.InCI() {
			t.Fatal("SECCOMP_TEST_DIRECT=1 is not allowed in CI")
		}
		return directBox(t, seccomp.Options{})
	}
	s := testutil.NewSandbox(t)
	lines := append([]string{"ro " + programs(t) + " " + progMount}, config...)
	s.WriteConfig(t, strings.Join(lines, "\n")+"\n")
	launcherOnce.Do(func() {
		r := s.Shell(t, "true")
		if r.Code != 0 && strings.Contains(r.Stderr, "not implemented") {
			launcherErr = strings.TrimSpace(r.Stderr)
		}
	})
	if launcherErr == "" {
		return launcherBox{s}
	}
	if testutil.InCI() {
		t.Fatalf("the launcher cannot run a sandbox: %s", launcherErr)
	}
	t.Logf("launcher: %s; using bwrap with the filter directly", launcherErr)
	return directBox(t, seccomp.Options{})
}

// onPty runs cmd with a new pseudo-terminal as its controlling terminal and
// stdin (stdout and stderr stay captured), in raw mode so that nothing is
// echoed. It returns the result and the bytes waiting in the terminal's
// input queue afterwards: what a shell reading the terminal would get.
func onPty(t testing.TB, cmd *exec.Cmd) (testutil.Result, int) {
	t.Helper()
	master, slave, err := openPty()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	if err := makeRaw(slave); err != nil {
		t.Fatalf("raw mode: %v", err)
	}
	cmd.Stdin = slave
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	r := testutil.RunCommand(t, cmd)
	n, err := inputQueued(slave)
	if err != nil {
		t.Fatalf("TIOCINQ: %v", err)
	}
	return r, n
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// probe runs the probe program with names in b and returns name -> result
// ("ok" or an errno name).
func probe(t testing.TB, b box, names ...string) map[string]string {
	t.Helper()
	r := run(t, b, progMount+"/probe "+strings.Join(names, " "))
	if r.Code != 0 {
		t.Fatalf("%s: probe: %s", b.Kind(), r)
	}
	got := map[string]string{}
	for _, l := range lines(r.Stdout) {
		name, res, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("%s: probe printed %q", b.Kind(), l)
		}
		got[name] = res
	}
	return got
}

// sameOutput compares two outputs as sorted line sets.
func sameOutput(a, b string) bool {
	la, lb := lines(a), lines(b)
	if len(la) != len(lb) {
		return false
	}
	seen := map[string]int{}
	for _, l := range la {
		seen[l]++
	}
	for _, l := range lb {
		if seen[l]--; seen[l] < 0 {
			return false
		}
	}
	return true
}

// innerStderr is the sandboxed command's stderr: without the launcher's
// notices that it runs without network namespacing (tests name a namespace
// that never exists), without a budget (no user manager) and that the
// working directory (the home) is not visible.
func innerStderr(r testutil.Result) string {
	var out []string
	for _, l := range lines(r.Stderr) {
		if !strings.HasPrefix(l, "claude: not using network namespacing: ") && !strings.HasPrefix(l, "claude: budget: ") && !strings.HasPrefix(l, "claude: the working directory ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
