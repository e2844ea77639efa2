package doctor

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/claude-sandbox/claude-sandbox/internal/bindir"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// agentScript is the agent claude-update installs: its smoke test wants
// "VERSION (Claude Code)".
const agentScript = "#!/bin/sh\necho '9.9.9 (Claude Code)'\n"

// relink points dir/claude at target, as claude-update switches it.
func relink(t *testing.T, dir, target string) {
	t.Helper()
	tmp := filepath.Join(dir, ".relink")
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, bindir.Link)); err != nil {
		t.Fatal(err)
	}
}

type report struct {
	OK     bool     `json:"ok"`
	Checks []Result `json:"checks"`
}

// runDoctor runs the built binary's doctor applet and parses its JSON.
func runDoctor(t *testing.T, cmd *exec.Cmd) (report, int) {
	t.Helper()
	res := testutil.RunCommand(t, cmd)
	var r report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	if r.OK != (res.Code == 0) || (res.Code != 0 && res.Code != 1) {
		t.Fatalf("doctor: ok %v with exit status %d\n%s", r.OK, res.Code, res)
	}
	return r, res.Code
}

func line(t *testing.T, r report, name string) Result {
	t.Helper()
	for _, c := range r.Checks {
		if c.Check == name {
			return c
		}
	}
	t.Fatalf("no %s line in %+v", name, r.Checks)
	return Result{}
}

// agentDir makes a bin directory like claude-update's, with a binary
// claude.9.9.9 put there by hand (not agentScript) and the claude symlink,
// readable by the test user, in a directory that only root can change (as
// claude-update requires of it).
func agentDir(t *testing.T) (dir, bin string) {
	dir = testutil.RootOwnedDir(t)
	bin = filepath.Join(dir, "claude.9.9.9")
	if err := os.WriteFile(bin, []byte(agentScript+"# by hand\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("claude.9.9.9", filepath.Join(dir, "claude")); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// TestRootRealHost runs the real doctor on this machine, as root and as
// the unprivileged test user, and breaks the agent's installation for
// real (a directory of the test's own, through CLAUDE_SBX_BINDIR).
// Lines that depend on how this machine is installed are checked against
// what the test finds on it, not assumed.
func TestRootRealHost(t *testing.T) {
	testutil.RequireRoot(t)
	u := testutil.RequireUser(t)
	testutil.RequireCommand(t, "bwrap")
	bin := testutil.Binary(t)
	order := []string{"user", "userns-clone", "max-userns", "apparmor", "bwrap", "sandbox-probe", "seccomp",
		"systemd-user", "agent-slice", "budget", "sandbox-homes", "netns-enter", "whitelist", "namespace", "firewall", "dns", "policy", "bin-dir", "agent", "agent-hash", "toolchains"}

	dir, agent := agentDir(t)
	sum := sha256.Sum256([]byte(agentScript))
	state := filepath.Join(dir, bindir.StateName)
	env := func(extra ...string) []string {
		return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "CLAUDE_SBX_BINDIR=" + dir}, extra...)
	}
	asRoot := func() *exec.Cmd {
		cmd := exec.Command(bin, "doctor", "--json")
		cmd.Args[0] = "claude-sandbox"
		cmd.Env = env()
		return cmd
	}
	asUser := func() *exec.Cmd {
		home := testutil.UserHome(t, u)
		cmd := u.Command(home, bin, "doctor", "--json")
		cmd.Args[0] = "claude-sandbox"
		cmd.Env = append(cmd.Env, "CLAUDE_SBX_BINDIR="+dir)
		return cmd
	}

	t.Run("root", func(t *testing.T) {
		r, _ := runDoctor(t, asRoot())
		var got []string
		for _, c := range r.Checks {
			got = append(got, c.Check)
		}
		if !slices.Equal(got, order) {
			t.Fatalf("checks = %q, want %q", got, order)
		}
		if c := line(t, r, "user"); c.Status != Warn {
			t.Errorf("user as root = %+v, want warn", c)
		}
		if c := line(t, r, "sandbox-probe"); c.Status != Skip {
			t.Errorf("sandbox-probe as root = %+v, want skip", c)
		}
		if c := line(t, r, "toolchains"); c.Status != Skip {
			t.Errorf("toolchains as root = %+v, want skip", c)
		}
		if c := line(t, r, "seccomp"); c.Status != OK {
			t.Errorf("seccomp = %+v, want ok on this kernel", c)
		}
		if c := line(t, r, "bwrap"); c.Status != OK {
			t.Errorf("bwrap = %+v, want ok (bubblewrap is installed)", c)
		}
		// Root-owned, executable, no state file yet.
		if c := line(t, r, "bin-dir"); c.Status != OK {
			t.Errorf("bin-dir in a root-owned directory = %+v, want ok", c)
		}
		if c := line(t, r, "agent"); c.Status != OK || !strings.Contains(c.Message, "(version 9.9.9)") {
			t.Errorf("agent = %+v, want ok, version 9.9.9", c)
		}
		want := Result{Check: "agent-hash", Status: Warn,
			Message: "no " + state + ": nothing records that claude-update verified claude.9.9.9 (installed by hand or by an older claude-update)",
			Fix:     "sudo claude-update 9.9.9 (verifies it again and records it)"}
		if c := line(t, r, "agent-hash"); c != want {
			t.Errorf("agent-hash without a state file = %+v, want %+v", c, want)
		}
		// The real claude-update installs 9.9.9 from an npm registry (the
		// file there has no record, so it downloads it again), records
		// it, and holds it.
		reg := newNpmRegistry(t, "9.9.9", []byte(agentScript))
		claudeUpdate(t, append(env(), reg.env...), "--source", "npm", "9.9.9")
		claudeUpdate(t, env(), "--hold")
		st, err := bindir.ReadState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if rec, ok := st.Versions["9.9.9"]; !ok || rec.SHA256 != fmt.Sprintf("%x", sum) || st.Hold != "9.9.9" {
			t.Fatalf("claude-update recorded %+v, want 9.9.9 with SHA-256 %x, held", st, sum)
		}
		r, _ = runDoctor(t, asRoot())
		want = Result{Check: "agent-hash", Status: OK,
			Message: "claude.9.9.9 matches the SHA-256 claude-update verified (from npm " + reg.url + "); held at 9.9.9 (sudo claude-update --unhold follows the channel again)"}
		if c := line(t, r, "agent-hash"); c != want {
			t.Errorf("agent-hash after claude-update = %+v, want %+v", c, want)
		}
		// A current binary that the state file has no record of.
		other := filepath.Join(dir, "claude.9.9.8")
		testutil.CopyFile(t, agent, other, 0o755)
		relink(t, dir, "claude.9.9.8")
		r, _ = runDoctor(t, asRoot())
		want = Result{Check: "agent-hash", Status: Warn,
			Message: state + " has no record of 9.9.8: nothing says claude-update verified claude.9.9.8",
			Fix:     "sudo claude-update 9.9.8 (verifies it again and records it)"}
		if c := line(t, r, "agent-hash"); c != want {
			t.Errorf("agent-hash without a record = %+v, want %+v", c, want)
		}
		relink(t, dir, "claude.9.9.9")
		// The binary changes after it was verified.
		evilText := strings.Replace(agentScript, "echo", "eval", 1)
		if err := os.WriteFile(agent, []byte(evilText), 0o755); err != nil {
			t.Fatal(err)
		}
		evil := sha256.Sum256([]byte(evilText))
		r, code := runDoctor(t, asRoot())
		want = Result{Check: "agent-hash", Status: Fail,
			Message: fmt.Sprintf("%s has SHA-256 %x (%d bytes), but %s records %x (%d bytes): the binary changed after claude-update verified it", agent, evil, len(evilText), state, sum, len(agentScript)),
			Fix:     "sudo claude-update --force 9.9.9"}
		if c := line(t, r, "agent-hash"); c != want || code != 1 {
			t.Errorf("agent-hash after a change = %+v (exit %d), want %+v and exit 1", c, code, want)
		}
		// A damaged state file: claude-update's own reader says so.
		if err := os.WriteFile(state, []byte("{\"versions\": 1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r, code = runDoctor(t, asRoot())
		if c := line(t, r, "agent-hash"); c.Status != Fail || !strings.HasPrefix(c.Message, state+" is damaged (") || code != 1 {
			t.Errorf("agent-hash with a damaged state file = %+v (exit %d), want FAIL", c, code)
		}
		// A bin directory a group can write: claude-update would refuse it.
		if err := os.Chmod(dir, 0o775); err != nil {
			t.Fatal(err)
		}
		r, code = runDoctor(t, asRoot())
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		want = Result{Check: "bin-dir", Status: Fail,
			Message: dir + " is writable by group or others (drwxrwxr-x): whoever can change it chooses what every sandbox runs, and claude-update refuses it",
			Fix:     "chown root:root " + dir + " && chmod go-w " + dir + ", or set CLAUDE_SBX_BINDIR to a directory only root can write (such as /opt/claude/bin)"}
		if c := line(t, r, "bin-dir"); c != want || code != 1 {
			t.Errorf("bin-dir writable by the group = %+v (exit %d), want %+v", c, code, want)
		}
	})

	t.Run("user", func(t *testing.T) {
		r, _ := runDoctor(t, asUser())
		if c := line(t, r, "user"); c.Status != OK || !strings.Contains(c.Message, u.Name) {
			t.Errorf("user = %+v", c)
		}
		// The real probe: bwrap with the launcher's namespaces, as the
		// user, on this kernel.
		if c := line(t, r, "sandbox-probe"); c.Status != OK {
			t.Errorf("sandbox-probe = %+v, want ok", c)
		}
		// nftables is root's to see; without the network part the line
		// is skipped too.
		if c := line(t, r, "firewall"); c.Status != Skip {
			t.Errorf("firewall as a user = %+v, want skip", c)
		}
		// The user's real PATH through the real tree: never a FAIL.
		if c := line(t, r, "toolchains"); c.Status != OK && c.Status != Warn {
			t.Errorf("toolchains as a user = %+v, want ok or warn", c)
		}
		// The agent binary handed to the user: the user could rewrite
		// what every sandbox runs.
		u.Chown(t, agent)
		r, code := runDoctor(t, asUser())
		c := line(t, r, "agent")
		want := "sudo chown root:root " + agent + " && sudo chmod 0755 " + agent
		if c.Status != Fail || c.Fix != want || code != 1 {
			t.Errorf("agent owned by the user = %+v (exit %d), want FAIL with fix %q", c, code, want)
		}
	})

	t.Run("no agent", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, "claude")); err != nil {
			t.Fatal(err)
		}
		r, code := runDoctor(t, asRoot())
		c := line(t, r, "agent")
		if c.Status != Fail || c.Fix != "sudo claude-update" || code != 1 {
			t.Errorf("agent missing = %+v (exit %d), want FAIL, sudo claude-update", c, code)
		}
	})
}

// TestRootResolveInNetns runs the DNS check's own probe (doctor
// --resolve-with) inside a namespace the test made, against a DNS server
// in that namespace, and then with the server gone.
func TestRootResolveInNetns(t *testing.T) {
	testutil.RequireRoot(t)
	ns := testutil.Netns(t, "drdns")
	testutil.InNetns(t, ns, "ip", "link", "set", "lo", "up")
	bin := testutil.Binary(t)
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("# test\nnameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command("ip", "netns", "exec", ns, self, "-test.run=^TestHelperDNS$")
	srv.Env = append(os.Environ(), "CLAUDE_SBX_DOCTOR_DNS_HELPER=1")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			srv.Process.Kill()
			srv.Wait()
			stopped = true
		}
	}
	t.Cleanup(stop)
	ready, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || ready != "ready\n" {
		t.Fatalf("DNS helper: %q, %v", ready, err)
	}

	probe := func() testutil.Result {
		cmd := exec.Command("ip", "netns", "exec", ns, bin, "doctor", "--resolve-with", conf, "--dns-name", "probe.example.test")
		return testutil.RunCommand(t, cmd)
	}
	if res := probe(); res.Code != 0 || res.Stdout != "192.0.2.7 via 127.0.0.1:53\n" {
		t.Fatalf("resolve with a server: %s", res)
	}
	stop()
	res := probe()
	if res.Code != 1 || !strings.HasPrefix(res.Stderr, "doctor: resolve probe.example.test at 127.0.0.1:53: ") {
		t.Fatalf("resolve without a server: %s", res)
	}
}

// TestHelperDNS is the DNS server of TestRootResolveInNetns: it answers
// every A question with 192.0.2.7 on 127.0.0.1:53 of the namespace it is
// started in, until killed.
func TestHelperDNS(t *testing.T) {
	if os.Getenv("CLAUDE_SBX_DOCTOR_DNS_HELPER") != "1" {
		t.Skip("helper process")
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	buf := make([]byte, 512)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf[:n]); err != nil || len(m.Questions) != 1 {
			continue
		}
		q := m.Questions[0]
		m.Header.Response, m.Header.Authoritative = true, true
		m.Answers = nil
		if q.Type == dnsmessage.TypeA {
			m.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
				Body:   &dnsmessage.AResource{A: [4]byte{192, 0, 2, 7}},
			}}
		}
		reply, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		pc.WriteTo(reply, addr)
	}
}

// TestSandboxDoctorFlag: claude --sandbox-doctor ARGS runs the doctor of
// the same binary with ARGS.
func TestSandboxDoctorFlag(t *testing.T) {
	cmd := exec.Command(testutil.Binary(t), "--sandbox-doctor", "--json")
	cmd.Args[0] = "claude"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "CLAUDE_SBX_BINDIR=" + t.TempDir()}
	r, code := runDoctor(t, cmd)
	if c := line(t, r, "agent"); c.Status != Fail || code != 1 {
		t.Errorf("claude --sandbox-doctor with an empty bin directory: agent %+v, exit %d; want FAIL, 1", c, code)
	}
	cmd = exec.Command(testutil.Binary(t), "--sandbox-doctor", "--frob")
	cmd.Args[0] = "claude"
	res := testutil.RunCommand(t, cmd)
	if res.Code != 2 || !strings.HasPrefix(res.Stderr, "doctor: unknown flag --frob") {
		t.Errorf("claude --sandbox-doctor --frob: %s", res)
	}
}
