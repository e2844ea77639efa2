package multicall

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func TestPrivilegedFalseForPlainProcess(t *testing.T) {
	if os.Geteuid() != os.Getuid() || os.Getegid() != os.Getgid() {
		t.Skip("test binary runs with elevated credentials")
	}
	if Privileged() {
		t.Errorf("Privileged() = true in a plain process")
	}
}

// TestSetuidFullBinaryIsOnlyNetnsEnter installs a setuid-root copy of the
// FULL multicall binary (every applet linked) and runs it as the test user
// with every applet name, and a few other names, as argv[0] and as argv[1]:
// each run must be netns-enter, never the applet it names.
func TestSetuidFullBinaryIsOnlyNetnsEnter(t *testing.T) {
	u := testutil.RequireUser(t)
	testutil.RequireCommand(t, "ip")
	etc := filepath.Join(testutil.RootDir(t), "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := testutil.SetuidNetnsEnter(t, etc, true)
	ns := testutil.Netns(t, "nsd")
	if err := os.WriteFile(filepath.Join(etc, "netns-enter"), []byte(ns+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+ns, &st); err != nil {
		t.Fatal(err)
	}
	wantNs := fmt.Sprintf("net:[%d]\n", st.Ino)
	home := testutil.UserHome(t, u)

	// Root is not elevated by a setuid-root file: the binary dispatches
	// normally and lists its applets.
	list := exec.Command(bin, "--list")
	list.Args[0] = "claude-sandbox"
	out, err := list.Output()
	if err != nil {
		t.Fatalf("claude-sandbox --list as root: %v", err)
	}
	applets := strings.Fields(string(out))
	for _, want := range []string{"claude", "claude-update", "netns-enter", "netns-setup"} {
		if !slices.Contains(applets, want) {
			t.Fatalf("--list = %q, want it to contain %s (is this the full binary?)", applets, want)
		}
	}

	run := func(argv0 string, args ...string) testutil.Result {
		cmd := u.Command(home, bin, args...)
		cmd.Args[0] = argv0
		return testutil.RunCommand(t, cmd)
	}
	const usage = "usage: netns-enter [--netns=]NAME -- CMD [ARGS...]"
	names := append(applets, "claude-sandbox", "multicall", "", "/usr/local/bin/claude", "./claude-update")
	for _, name := range names {
		t.Run("argv0="+name, func(t *testing.T) {
			mark := filepath.Join(home, "ran")
			// What the named applet would accept; netns-enter refuses it.
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--list"}, `unknown option "--list": ` + usage},
				{[]string{"--shell", "-c", "touch " + mark}, `unknown option "--shell": ` + usage},
				{[]string{"--sandbox-dry-run"}, `unknown option "--sandbox-dry-run": ` + usage},
				{[]string{"up", ns}, "missing -- after NAME: " + usage},
				{[]string{"claude", "--shell", "-c", "touch " + mark}, "missing -- after NAME: " + usage},
				{[]string{"netns-setup", "up", ns}, "missing -- after NAME: " + usage},
			} {
				r := run(name, c.args...)
				if r.Code != 2 || r.Stdout != "" || r.Stderr != "netns-enter: "+c.want+"\n" {
					t.Errorf("argv %q: %s\nwant exit 2, stderr %q", append([]string{name}, c.args...), r, "netns-enter: "+c.want)
				}
				if _, err := os.Lstat(mark); err == nil {
					t.Errorf("argv %q: a command ran", append([]string{name}, c.args...))
					os.Remove(mark)
				}
			}
			// And netns-enter's own command line works under any name.
			r := run(name, ns, "--", "readlink", "/proc/self/ns/net")
			if r.Code != 0 || r.Stdout != wantNs || r.Stderr != "" {
				t.Errorf("argv0 %q, netns-enter %s -- readlink: %s\nwant %q", name, ns, r, wantNs)
			}
		})
	}
}
