//go:build linux

package systemd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/nspawn"
)

// Where the test's files appear in the machine (nspawn mounts a fresh
// tmpfs on /tmp, so not there).
const (
	mnt      = "/mnt/claude-sbx-e2e"
	mntStage = mnt + "/stage"
	mntTest  = mnt + "/e2e.test"
	probeBin = "/opt/claude/bin/e2e-probe"
	agentBin = "/opt/claude/bin/claude"
)

// The network the machine lives in, built by the test inside the machine.
// The machine's root namespace is "the host"; namespace "lan" behind its
// uplink e2e-up is the LAN router (192.168.77.1) and also holds "the
// internet" (a public address) and the cloud metadata address.
const (
	hostUplink = "192.168.77.2"
	lanAddr    = "192.168.77.1"
	// 198.18.0.0/15 and the TEST-NETs may be on a firewall's list of
	// reserved ranges; this one is an ordinary public address.
	internetAddr = "93.184.215.14"
	// unlistedAddr is an internet server no allowed name resolves to.
	unlistedAddr = "93.184.215.15"
	metadataAddr = "169.254.169.254"
	bridgeAddr   = "10.10.0.1"
)

// uplinkNetwork configures the host's uplink with systemd-networkd, as on a
// real host (networkd removes foreign routes of links it does not know).
const uplinkNetwork = `[Match]
Name=e2e-up

[Network]
Address=` + hostUplink + `/24
Gateway=` + lanAddr + `
LinkLocalAddressing=no
IPv6AcceptRA=no
`

// fakeAgent stands in for /opt/claude/bin/claude.
const fakeAgent = `#!/bin/sh
echo "fake agent: $*"
readlink /proc/self/ns/net
`

// TestNetnsEndToEnd installs the freshly built tree in a machine and checks
// the whole chain under systemd: units, systemd-networkd, the namespace,
// netns-enter, the launcher in agent.slice, and the firewall.
func TestNetnsEndToEnd(t *testing.T) {
	requireSelected(t)
	u := testutil.RequireUser(t)
	testutil.RequireCommand(t, "make")
	testutil.RequireCommand(t, "ip")

	endToEnd(t, u, stageInstall(t))
}

// endToEnd runs the end-to-end test on the tree installed in stage.
func endToEnd(t *testing.T, u testutil.User, stage string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hidden := productState(t, stage)
	m := nspawn.Boot(t, nspawn.Options{
		BindRO: []string{stage + ":" + mntStage, exe + ":" + mntTest},
		Hide:   hidden,
		Files: []nspawn.File{
			{Path: "/etc/systemd/network/50-e2e-uplink.network", Data: uplinkNetwork},
		},
	})
	ctx := context.Background()
	for _, p := range hidden {
		if _, err := m.Run(ctx, "test", "!", "-e", p, "-a", "!", "-L", p); err != nil {
			t.Fatalf("%s of the host is in the machine: it must start as a fresh install", p)
		}
	}

	// Install as root in the machine: cp -a keeps netns-enter setuid.
	m.MustRun(t, "cp", "-a", mntStage+"/.", "/")
	m.MustRun(t, "install", "-D", "-m", "0755", mntTest, probeBin)
	m.WriteFile(t, agentBin, fakeAgent, 0o755)
	if got := strings.TrimSpace(m.MustRun(t, "stat", "-c", "%a %U", "/usr/local/bin/netns-enter")); got != "4755 root" {
		t.Fatalf("installed netns-enter: mode and owner %q, want \"4755 root\"", got)
	}
	m.MustRun(t, "systemctl", "daemon-reload")

	t.Run("systemd-analyze verify", func(t *testing.T) {
		units, _ := filepath.Glob(filepath.Join(stage, "usr/local/lib/systemd/system/*"))
		if len(units) == 0 {
			t.Fatalf("make install-network installed no unit under %s/usr/local/lib/systemd/system", stage)
		}
		for _, u := range units {
			p := strings.TrimPrefix(u, stage)
			if strings.HasSuffix(p, "@.service") {
				p = strings.TrimSuffix(p, "@.service") + "@agents.service"
			}
			if out, err := m.Run(ctx, "systemd-analyze", "verify", p); err != nil {
				t.Errorf("systemd-analyze verify %s: %v", p, err)
			} else if strings.TrimSpace(out.Stderr) != "" {
				t.Errorf("systemd-analyze verify %s warns:\n%s", p, out.Stderr)
			}
		}
	})

	// The uplink appears once networkd runs; the LAN side is ours. The
	// LAN router is the host's resolver, as on a home network: the
	// namespace gets that one address, port 53 only.
	lanSetup(t, m)
	m.MustRun(t, "sh", "-c", "rm -f /etc/resolv.conf && echo 'nameserver "+lanAddr+"' >/etc/resolv.conf")
	// The installed policy (allowlist, presets claude-code and dev) plus
	// the test's internet name, on the port its server uses.
	conf := m.MustRun(t, "cat", "/usr/local/etc/netns-firewall.conf")
	if !strings.Contains(conf, "\npolicy allowlist\npreset claude-code\npreset dev\n") {
		t.Errorf("installed netns-firewall.conf is not an allowlist with the presets:\n%s", conf)
	}
	m.WriteFile(t, "/usr/local/etc/netns-firewall.conf", conf+"domain "+strings.TrimSuffix(dnsName, ".")+" tcp 8080\n", 0o644)
	m.MustRun(t, "systemctl", "enable", "--now", "systemd-networkd.service")
	m.MustRun(t, "systemctl", "enable", "--now", "netns@agents.service")
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range [][]string{{"journalctl", "-q", "--no-pager", "-u", "netns-dns"}, {"sh", "-c", "ls -l /run/netns-policy"}, {"nft", "list", "ruleset"}} {
				o, _ := m.Run(ctx, c...)
				t.Logf("%v:\n%s%s", c, o.Stdout, o.Stderr)
			}
		}
	})

	t.Run("networkctl", func(t *testing.T) {
		want := map[string]string{
			"br-netns":     "bridge routable configured",
			"netns-agents": "ether enslaved configured",
			"e2e-up":       "ether routable configured",
		}
		var got map[string]string
		for deadline := time.Now().Add(30 * time.Second); ; {
			got = networkctl(t, m)
			if equalFor(got, want) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for link, w := range want {
			if got[link] != w {
				t.Errorf("networkctl: %s is %q, want %q", link, got[link], w)
			}
		}
		out, _ := m.Run(ctx, "journalctl", "-b", "-q", "--no-pager", "-u", "systemd-networkd.service")
		for _, l := range strings.Split(out.Stdout, "\n") {
			if regexp.MustCompile(`(br-netns|bridging)\.(network|netdev):`).MatchString(l) {
				t.Errorf("systemd-networkd complains about an installed file: %s", l)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	if out, err := m.Run(ctx, "nft", "list", "table", "inet", "claude_sandbox"); err != nil {
		t.Errorf("firewall table of netns@agents: %v", err)
	} else if !strings.Contains(out.Stdout, "br-netns") {
		t.Errorf("firewall table of netns@agents does not mention br-netns:\n%s", out.Stdout)
	}

	netnsInode := strings.TrimSpace(m.MustRun(t, "stat", "-L", "-c", "%i", "/run/netns/agents"))
	hostNet := strings.TrimSpace(m.MustRun(t, "readlink", "/proc/1/ns/net"))
	wantNet := "net:[" + netnsInode + "]"
	if wantNet == hostNet {
		t.Fatalf("/run/netns/agents is the host's namespace %s", hostNet)
	}
	uid := m.EnableLinger(t, u.Name)

	t.Run("launcher enters the namespace", func(t *testing.T) {
		out, err := m.RunAs(ctx, u.Name, "claude", "--shell", "-c", "readlink /proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.Stdout); got != wantNet {
			t.Errorf("claude --shell: network namespace %q, want %q (/run/netns/agents; host %s)", got, wantNet, hostNet)
		}
		if strings.Contains(out.Stderr, "not using network namespacing") {
			t.Errorf("claude --shell: stderr %q while the namespace is active", out.Stderr)
		}
		out, err = m.RunAs(ctx, u.Name, "claude", "two words", "")
		if err != nil {
			t.Fatal(err)
		}
		if want := "fake agent: two words \n" + wantNet + "\n"; out.Stdout != want {
			t.Errorf("claude (fake agent): stdout %q, want %q", out.Stdout, want)
		}
	})

	t.Run("own namespace preferred", func(t *testing.T) {
		own := fmt.Sprintf("agents-%d", uid)
		list := m.MustRun(t, "cat", "/usr/local/etc/netns-enter")
		m.WriteFile(t, "/usr/local/etc/netns-enter", list+own+"\n", 0o644)
		defer m.WriteFile(t, "/usr/local/etc/netns-enter", list, 0o644)
		m.MustRun(t, "systemctl", "start", "netns@"+own+".service")
		defer m.MustRun(t, "systemctl", "stop", "netns@"+own+".service")
		ownNet := "net:[" + strings.TrimSpace(m.MustRun(t, "stat", "-L", "-c", "%i", "/run/netns/"+own)) + "]"
		out, err := m.RunAs(ctx, u.Name, "claude", "--shell", "-c", "readlink /proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.Stdout); got != ownNet || ownNet == wantNet {
			t.Errorf("claude --shell with %s up and whitelisted: namespace %q, want %s's %q (agents: %q)", own, got, own, ownNet, wantNet)
		}
	})
	t.Run("loader variables stay out of the chain", func(t *testing.T) { loaderVarsStayOutOfTheChain(t, m, u) })

	t.Run("agent.slice", func(t *testing.T) {
		// The sandbox has its own cgroup namespace: look from outside.
		const marker = "3141.5926"
		cmd, err := m.CommandAs(ctx, u.Name, "claude", "--shell", "-c", "exec sleep "+marker)
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			m.Run(ctx, "pkill", "-TERM", "-u", u.Name, "-x", "-f", "sleep "+marker)
			// The launcher passes on the status: 128+SIGTERM.
			if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 143 {
				t.Errorf("claude --shell -c 'exec sleep' killed with SIGTERM: %v, want exit status 143 (stderr %q)", err, stderr.String())
			}
		}()
		var pid string
		for deadline := time.Now().Add(20 * time.Second); pid == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			out, _ := m.Run(ctx, "pgrep", "-u", u.Name, "-x", "-f", "sleep "+marker)
			pid = strings.TrimSpace(out.Stdout)
		}
		if pid == "" || strings.Contains(pid, "\n") {
			t.Fatalf("sandboxed sleep: pids %q (stderr %q)", pid, stderr.String())
		}
		cg := unified(m.MustRun(t, "cat", "/proc/"+pid+"/cgroup"))
		want := fmt.Sprintf("/user.slice/user-%d.slice/user@%d.service/agent.slice/", uid, uid)
		if !strings.HasPrefix(cg, want) || !strings.HasSuffix(cg, ".scope") {
			t.Errorf("cgroup of the sandboxed process = %q, want %s*.scope", cg, want)
		}
		if got := strings.TrimSpace(m.MustRun(t, "readlink", "/proc/"+pid+"/ns/net")); got != wantNet {
			t.Errorf("network namespace of the sandboxed process = %q, want %q", got, wantNet)
		}
	})

	// Through netns-dns (started by netns@agents.service): the allowed
	// name resolves, and that pins its address for the reachability test.
	t.Run("dns", func(t *testing.T) {
		if f := strings.Fields(m.MustRun(t, "getent", "ahostsv4", dnsName)); len(f) == 0 || f[0] != dnsAddr {
			t.Fatalf("control: the host does not resolve %s through the LAN resolver: %q", dnsName, f)
		}
		out, err := m.RunAs(ctx, u.Name, "claude", "--shell", "-c", "getent ahostsv4 "+dnsName+" | head -n 1")
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(out.Stdout); len(f) == 0 || f[0] != dnsAddr {
			t.Errorf("getent ahostsv4 %s in the sandbox: %q (stderr %q), want %s", dnsName, out.Stdout, out.Stderr, dnsAddr)
		}
	})

	t.Run("reachability", func(t *testing.T) {
		stopHost := serveIn(t, m, "", "host", "0.0.0.0:8081", bridgeAddr+":8082")
		defer stopHost()
		// The firewall drops what goes to the host itself (connect times
		// out) and rejects forwarded traffic to private and link-local
		// destinations with ICMP admin-prohibited (EHOSTUNREACH).
		targets := []struct {
			name, addr string
			want       string // probe result from inside the sandbox
		}{
			{"internet, by a name resolved before", internetAddr + ":8080", "ok hello internet"},
			{"internet, an address no allowed name resolved to", unlistedAddr + ":8080", "unreachable"},
			{"LAN service", lanAddr + ":8080", "unreachable"},
			{"cloud metadata", metadataAddr + ":8080", "unreachable"},
			{"host service on 0.0.0.0 via the bridge address", bridgeAddr + ":8081", "timeout"},
			{"host service on the bridge address", bridgeAddr + ":8082", "timeout"},
			{"host service on 0.0.0.0 via the uplink address", hostUplink + ":8081", "timeout"},
			{"host loopback is not shared", "127.0.0.1:8081", "refused"},
		}
		var addrs []string
		for _, tg := range targets {
			addrs = append(addrs, tg.addr)
		}
		// Control: the host itself reaches every service (but its own
		// loopback is not the sandbox's).
		control := probeResults(t, m.MustRun(t, append([]string{"env", helperEnv + "=probe", probeBin}, addrs...)...))
		for _, tg := range targets {
			if !strings.HasPrefix(control[tg.addr], "ok ") {
				t.Fatalf("control: the host cannot reach %s (%s): %s; the test proves nothing", tg.name, tg.addr, control[tg.addr])
			}
		}
		out, err := m.RunAs(ctx, u.Name, "claude", "--shell", "-c", helperEnv+"=probe "+probeBin+" "+strings.Join(addrs, " "))
		if err != nil {
			t.Fatal(err)
		}
		got := probeResults(t, out.Stdout)
		for _, tg := range targets {
			r := got[tg.addr]
			if r != tg.want {
				t.Errorf("from the sandbox, %s (%s): %q, want %q", tg.name, tg.addr, r, tg.want)
			}
			t.Logf("%s (%s): %s", tg.name, tg.addr, r)
		}
	})

	t.Run("denials", func(t *testing.T) {
		out, err := m.RunAs(ctx, u.Name, "claude", "--shell", "-c", "getent ahostsv4 unlisted.test; echo status $?")
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out.Stdout) != "status 2" {
			t.Errorf("getent of an unlisted name in the sandbox: %q, want only status 2 (not found)", out.Stdout)
		}
		var log string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			log = m.MustRun(t, "netns-setup", "denials", "agents")
			if strings.Contains(log, "dropped tcp "+unlistedAddr) && strings.Contains(log, "refused A unlisted.test") {
				break
			}
		}
		for _, want := range []string{
			"refused A unlisted.test: allow with: domain unlisted.test",
			"dropped tcp " + unlistedAddr + " port 8080: allow with: allow " + unlistedAddr + " tcp 8080",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("netns-setup denials agents lacks %q:\n%s", want, log)
			}
		}
		dry, err := m.RunAs(ctx, u.Name, "claude", "--sandbox-dry-run")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(dry.Stdout, "# network: in namespace agents, policy allowlist (") {
			t.Errorf("claude --sandbox-dry-run does not show the policy:\n%s", dry.Stdout)
		}
	})

	t.Run("doctor", func(t *testing.T) { doctorEndToEnd(t, m, u.Name) })

	t.Run("namespace stopped", func(t *testing.T) {
		m.MustRun(t, "systemctl", "stop", "netns@agents.service")
		if out, err := m.Run(ctx, "test", "-e", "/run/netns/agents"); err == nil {
			t.Errorf("/run/netns/agents exists after systemctl stop: %v", out)
		}
		if out, err := m.Run(ctx, "ip", "link", "show", "netns-agents"); err == nil {
			t.Errorf("netns-agents exists after systemctl stop: %s", out.Stdout)
		}
		if out, err := m.Run(ctx, "nft", "list", "table", "inet", "claude_sandbox"); err == nil {
			t.Errorf("firewall table left after the last namespace stopped:\n%s", out.Stdout)
		}
		// Fail closed: the whitelist names agents, so the launcher
		// refuses rather than run in the host's network.
		out, err := m.RunAs(ctx, u.Name, "claude", "--shell", "-c", "readlink /proc/self/ns/net")
		const refusal = "claude: network namespace agents is not up: sudo systemctl start netns@agents (or, to run in the host's network, claude --sandbox-network=host)\n"
		if err == nil || out.Stdout != "" || out.Stderr != refusal {
			t.Errorf("claude --shell without the namespace: %v, stdout %q, stderr %q; want exit 1 and %q", err, out.Stdout, out.Stderr, refusal)
		}
		// The escape hatch.
		out, err = m.RunAs(ctx, u.Name, "claude", "--sandbox-network=host", "--shell", "-c", "readlink /proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.Stdout); got != hostNet {
			t.Errorf("claude --sandbox-network=host: network namespace %q, want the host's %q", got, hostNet)
		}
	})
}

// stageInstall runs make install install-network into a staging directory
// and returns it.
func stageInstall(t *testing.T) string {
	t.Helper()
	stage := t.TempDir()
	// cp -a STAGE/. / copies the staging root's mode onto /.
	if err := os.Chmod(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", testutil.ModuleRoot(t), "install", "install-network", "DESTDIR="+stage)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install install-network DESTDIR=%s: %v\n%s", stage, err, out)
	}
	return stage
}

// productState lists what an install, a run or an update of the product
// may have left on the host, for the machine to hide: every file the
// staged install holds, the files of earlier versions, the state
// directories (denial logs, policies, namespaces, netns-dns's control
// socket and approvals) and the agent's bin dir
// with its state.
func productState(t *testing.T, stage string) []string {
	t.Helper()
	out := []string{
		"/var/log/netns-dns", "/var/log/private/netns-dns",
		"/run/netns-dns", "/var/lib/netns-dns", "/var/lib/private/netns-dns",
		nsname.EtcDir, nsname.RunDir, "/run/netns-policy",
		filepath.Dir(buildinfo.BinDir),
		"/usr/local/etc/netns-firewall.d",
		"/usr/local/lib/systemd/resolved.conf.d/claude-sandbox-netns.conf",
	}
	err := filepath.WalkDir(stage, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		out = append(out, strings.TrimPrefix(p, stage))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lanSetup makes the LAN namespace behind the host's uplink and starts its
// services: the LAN service, the internet server and the metadata service.
func lanSetup(t *testing.T, m *nspawn.Machine) {
	t.Helper()
	for _, c := range [][]string{
		{"ip", "netns", "add", "lan"},
		{"ip", "link", "add", "e2e-up", "type", "veth", "peer", "name", "e2e-lan", "netns", "lan"},
		{"ip", "-n", "lan", "link", "set", "lo", "up"},
		{"ip", "-n", "lan", "link", "set", "e2e-lan", "up"},
		{"ip", "-n", "lan", "addr", "add", lanAddr + "/24", "dev", "e2e-lan"},
		{"ip", "-n", "lan", "addr", "add", internetAddr + "/32", "dev", "lo"},
		{"ip", "-n", "lan", "addr", "add", unlistedAddr + "/32", "dev", "lo"},
		{"ip", "-n", "lan", "addr", "add", metadataAddr + "/32", "dev", "lo"},
	} {
		m.MustRun(t, c...)
	}
	serveIn(t, m, "lan", "internet", internetAddr+":8080")
	serveIn(t, m, "lan", "unlisted", unlistedAddr+":8080")
	serveIn(t, m, "lan", "lan", lanAddr+":8080", "dns:"+lanAddr+":53")
	serveIn(t, m, "lan", "metadata", metadataAddr+":8080")
}

// serveIn starts the serve helper in network namespace netns of the
// machine ("" is the machine's own) and waits until it listens. The
// returned func stops it; it also stops when the test ends.
func serveIn(t *testing.T, m *nspawn.Machine, netns, name string, addrs ...string) func() {
	t.Helper()
	args := []string{mntTest}
	if netns != "" {
		args = append([]string{"ip", "netns", "exec", netns}, args...)
	}
	cmd := m.Command(context.Background(), append(args, addrs...)...)
	cmd.Env = append(cmd.Env, helperEnv+"=serve", "SERVE_NAME="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once bool
	stop := func() {
		if !once {
			once = true
			stdin.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "listening\n" {
		t.Fatalf("server %s on %v: %q, %v: %s", name, addrs, line, err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	return stop
}

// probeResults parses the probe helper's output.
func probeResults(t *testing.T, out string) map[string]string {
	t.Helper()
	r := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		addr, res, ok := strings.Cut(l, " ")
		if !ok {
			t.Fatalf("probe output line %q", l)
		}
		r[addr] = res
	}
	return r
}

// networkctl returns "TYPE OPERATIONAL SETUP" of each link.
func networkctl(t *testing.T, m *nspawn.Machine) map[string]string {
	t.Helper()
	out := m.MustRun(t, "networkctl", "list", "--no-legend", "--no-pager")
	links := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 5 {
			links[f[1]] = strings.Join(f[2:], " ")
		}
	}
	return links
}

func equalFor(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
