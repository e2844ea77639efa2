//go:build linux

package claude_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil/fakeapi"
)

// The agent loop with the network namespace and the egress policy. The
// test builds its own world of throwaway network namespaces, as
// tests/network does: "the host" (br-netns 10.10.0.1/16, netns-dns on its
// port 53, an uplink) and "the internet" behind it (an authoritative DNS
// server, the fake API under an allowlisted name, and a web server no
// allowed name resolves to). netns-setup, run in the host, makes the
// sandbox's namespace /run/netns/NAME with its firewall and
// /etc/netns/NAME/resolv.conf; the launcher, built with a prefix and a
// sysconfdir of the test's own (a setuid netns-enter and its whitelist),
// enters it as it does when installed. Everything is removed when the test
// ends: the namespaces (and with them the world's tables, sysctls and
// links), netns-dns, /etc/netns/NAME.

// Addresses of the test's internet (TEST-NET-3, only inside its namespaces).
const (
	loopUplink = "203.0.113.1"  // the host's end of the uplink
	loopInet   = "203.0.113.10" // the internet's router and DNS server
	loopAPIIP  = "203.0.113.21" // the API's allowed name
	loopEvilIP = "203.0.113.30" // an unlisted name
	loopBridge = "10.10.0.1"
	loopAPI    = 8080 // the API's port, on its domain line
)

// loopAuth is the internet's authoritative DNS server for the test's two
// names; it records every name it is asked.
type loopAuth struct {
	zone  map[string]string // fqdn -> IPv4
	mu    sync.Mutex
	asked []string
}

func (a *loopAuth) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	name := strings.ToLower(q.Question[0].Name)
	a.mu.Lock()
	a.asked = append(a.asked, name)
	a.mu.Unlock()
	r := new(dns.Msg)
	r.SetReply(q)
	r.Authoritative = true
	addr, ok := a.zone[name]
	switch {
	case !ok:
		r.Rcode = dns.RcodeNameError
	case q.Question[0].Qtype == dns.TypeA:
		rr, _ := dns.NewRR(name + " 60 IN A " + addr)
		r.Answer = append(r.Answer, rr)
	}
	w.WriteMsg(r)
}

func (a *loopAuth) names() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.asked, " ")
}

func loopIP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// netnsLauncher builds the multicall binary with prefix and sysconfdir
// baked in, and puts a setuid netns-enter (reading sysconfdir's whitelist)
// at prefix/bin/netns-enter, where that launcher looks for it. It returns
// the binary.
func netnsLauncher(t *testing.T, prefix, sysconfdir string) string {
	t.Helper()
	enter := testutil.SetuidNetnsEnter(t, sysconfdir, false)
	bin := filepath.Join(prefix, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A hard link keeps the setuid copy's inode, owner and mode.
	if err := os.Link(enter, filepath.Join(bin, "netns-enter")); err != nil {
		t.Fatal(err)
	}
	multi := filepath.Join(bin, "claude-sandbox")
	const bi = "github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	cmd := exec.Command("go", "build", "-trimpath", "-o", multi,
		"-ldflags", "-X "+bi+".Prefix="+prefix+" -X "+bi+".Sysconfdir="+sysconfdir, "./cmd/multicall")
	cmd.Dir = testutil.ModuleRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return multi
}

// loopWorld is the world of the agent loop's network tests.
type loopWorld struct {
	m, name                    string // the test's marker, the sandbox's namespace
	apiName, evilName, webName string
	multi                      string // the launcher's multicall binary
	host, inet                 string // the world's namespaces
	auth                       *loopAuth
	nsInode                    string // "net:[INODE]" of /run/netns/NAME
	dnsPid                     int    // netns-dns
	// setup runs netns-setup in the host with the test's files.
	setup func(args ...string) testutil.Result
}

// newLoopWorld builds the world for s: a fresh namespace with the policy
// "policy allowlist" and the API's domain line.
func newLoopWorld(t *testing.T, s *testutil.Sandbox) *loopWorld {
	return newLoopWorldIn(t, s, "", "", nil)
}

// newLoopWorldIn is newLoopWorld with the namespace name ("" a fresh
// one), the lines of extra added to the policy (WEB stands for the web
// name), and netns-dns run through the command wrap (nil: none).
func newLoopWorldIn(t *testing.T, s *testutil.Sandbox, name, extra string, wrap []string) *loopWorld {
	t.Helper()
	for _, c := range []string{"ip", "nsenter", "curl"} {
		testutil.RequireCommand(t, c)
	}
	m := marker(t)
	apiName := "api-" + m + ".test"
	evilName := "evil-" + m + ".test"
	webName := "web-" + m + ".test"

	// The launcher with its prefix, sysconfdir and whitelist.
	sysconf := filepath.Join(testutil.RootDir(t), "etc")
	if err := os.Mkdir(sysconf, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := testutil.PublicDir(t)
	multi := netnsLauncher(t, prefix, sysconf)
	link := filepath.Join(s.LinkDir, "claude")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(multi, link); err != nil {
		t.Fatal(err)
	}
	if name == "" {
		name = testutil.UniqueName("al", 12)
	}
	if err := os.WriteFile(filepath.Join(sysconf, "netns-enter"), []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The policy: an allowlist whose one name is the API's, on its port.
	firewall := filepath.Join(sysconf, "netns-firewall.conf")
	if err := os.WriteFile(firewall, []byte("policy allowlist\ndomain "+apiName+" tcp "+fmt.Sprint(loopAPI)+"\n"+strings.ReplaceAll(extra, "WEB", webName)), 0o644); err != nil {
		t.Fatal(err)
	}

	// The world: the host and the internet.
	host, inet := testutil.Netns(t, "ah"), testutil.Netns(t, "ai")
	for _, ns := range []string{host, inet} {
		loopIP(t, "-n", ns, "link", "set", "lo", "up")
	}
	loopIP(t, "-n", host, "link", "add", "br-netns", "type", "bridge")
	loopIP(t, "-n", host, "link", "set", "br-netns", "address", "02:00:5e:10:00:01")
	loopIP(t, "-n", host, "address", "add", loopBridge+"/16", "dev", "br-netns")
	loopIP(t, "-n", host, "link", "set", "br-netns", "up")
	loopIP(t, "-n", host, "link", "add", "up0", "type", "veth", "peer", "name", "eth0", "netns", inet)
	loopIP(t, "-n", host, "address", "add", loopUplink+"/24", "dev", "up0")
	loopIP(t, "-n", host, "link", "set", "up0", "up")
	for _, a := range []string{loopInet, loopAPIIP, loopEvilIP} {
		loopIP(t, "-n", inet, "address", "add", a+"/24", "dev", "eth0")
	}
	loopIP(t, "-n", inet, "link", "set", "eth0", "up")
	loopIP(t, "-n", host, "route", "add", "default", "via", loopInet)

	auth := &loopAuth{zone: map[string]string{apiName + ".": loopAPIIP, evilName + ".": loopEvilIP, webName + ".": loopEvilIP}}
	var pc net.PacketConn
	var tl net.Listener
	if err := testutil.InNetnsThread(inet, func() (err error) {
		if pc, err = net.ListenPacket("udp4", loopInet+":53"); err != nil {
			return err
		}
		tl, err = net.Listen("tcp4", loopInet+":53")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: auth}, {Listener: tl, Handler: auth}} {
		go srv.ActivateAndServe()
		t.Cleanup(func() { srv.Shutdown() })
	}
	// The unlisted server answers anyone who gets through.
	var el net.Listener
	if err := testutil.InNetnsThread(inet, func() (err error) { el, err = net.Listen("tcp4", loopEvilIP+":80"); return err }); err != nil {
		t.Fatal(err)
	}
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "evil page %s\n", m) })}
	go evil.Serve(el)
	t.Cleanup(func() { evil.Close() })

	// netns-setup and netns-dns in the host, on the test's files; the
	// sandbox's resolv.conf where the launcher reads it.
	dir := testutil.PublicDir(t)
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+loopInet+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policyDir, logDir := filepath.Join(dir, "policy"), filepath.Join(dir, "log")
	// up hands netns-dns the namespace's netfilter sockets over this one.
	handover := filepath.Join(dir, "handover.sock")
	setup := func(args ...string) testutil.Result {
		t.Helper()
		full := append([]string{"--net=" + nsname.Path(host), "--", multi, "netns-setup",
			"--testonly-firewall-config=" + firewall, "--testonly-host-resolv-conf=" + resolv,
			"--testonly-lock-file=" + filepath.Join(dir, "lock"), "--testonly-policy-dir=" + policyDir,
			"--testonly-log-dir=" + logDir, "--testonly-preset-dir=" + filepath.Join(dir, "presets"),
			"--testonly-handover-socket=" + handover}, args...)
		return testutil.RunCommand(t, exec.Command("nsenter", full...))
	}
	dnsArgs := append(append([]string{"--net=" + nsname.Path(host), "--"}, wrap...), multi, "netns-dns",
		"--testonly-listen="+loopBridge+":53", "--testonly-policy-dir="+policyDir, "--testonly-log-dir="+logDir,
		"--testonly-handover-socket="+handover, "--testonly-state-dir="+filepath.Join(dir, "state"))
	if wrap == nil {
		// Not the host's control socket: the launcher finds none.
		dnsArgs = append(dnsArgs, "--testonly-control="+filepath.Join(dir, "control.sock"))
	}
	dnsCmd := exec.Command("nsenter", dnsArgs...)
	var dnsErr strings.Builder
	dnsCmd.Stderr = &dnsErr
	if err := dnsCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dnsCmd.Process.Signal(syscall.SIGTERM)
		dnsCmd.Wait()
		if t.Failed() {
			t.Logf("netns-dns:\n%s", dnsErr.String())
		}
	})
	// netns-dns listens for the handover last: once it does, it answers,
	// and up can hand it the sockets.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unixpacket", handover); err == nil {
			c.Close()
			break
		}
	}
	// /etc/netns is the launcher's; remove it afterwards if the test made it.
	if _, err := os.Stat(nsname.EtcDir); os.IsNotExist(err) {
		t.Cleanup(func() { os.Remove(nsname.EtcDir) })
	}
	t.Cleanup(func() {
		if r := setup("down", name); r.Code != 0 {
			t.Errorf("netns-setup down %s: %v", name, r)
		}
		for _, p := range []string{nsname.Path(name), filepath.Dir(nsname.ResolvConf(name))} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s is left after down", p)
				exec.Command("umount", "-l", p).Run()
				os.RemoveAll(p)
			}
		}
	})
	if r := setup("up", name); r.Code != 0 {
		t.Fatalf("netns-setup up %s: %v", name, r)
	}
	nsInode := func() string {
		var st syscall.Stat_t
		if err := syscall.Stat(nsname.Path(name), &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("net:[%d]", st.Ino)
	}()
	return &loopWorld{m: m, name: name, apiName: apiName, evilName: evilName, webName: webName,
		multi: multi, host: host, inet: inet, auth: auth, nsInode: nsInode, setup: setup, dnsPid: dnsCmd.Process.Pid}
}

// TestE2EAgentLoopNetns: in a namespace with an allowlist, the agent
// reaches its API under the allowed name, and a Bash tool call that
// fetches an unlisted name (or the address behind it), and a WebFetch of
// another, fail in the tool results and show in netns-setup denials.
func TestE2EAgentLoopNetns(t *testing.T) {
	s := loopSandbox(t)
	wd := newLoopWorld(t, s)
	m, name, apiName, evilName, webName := wd.m, wd.name, wd.apiName, wd.evilName, wd.webName
	host, inet, auth, nsInode, setup := wd.host, wd.inet, wd.auth, wd.nsInode, wd.setup

	// The API in the internet, under the allowed name.
	var al net.Listener
	if err := testutil.InNetnsThread(inet, func() (err error) { al, err = net.Listen("tcp4", fmt.Sprintf("%s:%d", loopAPIIP, loopAPI)); return err }); err != nil {
		t.Fatal(err)
	}
	api := fakeapi.New(
		fakeapi.Turn{
			fakeapi.Text("Checking the network."),
			fakeapi.Bash("netns", "readlink /proc/self/ns/net; cat /etc/resolv.conf | grep ^nameserver"),
			fakeapi.Bash("evilname", "curl -sS -m 20 http://"+evilName+"/ 2>&1; echo rc=$?"),
			fakeapi.Bash("evilip", "curl -sS -m 20 http://"+loopEvilIP+"/ 2>&1; echo rc=$?"),
			fakeapi.WebFetch("webfetch", "https://"+webName+"/", "what does the page say?"),
		},
		fakeapi.Turn{fakeapi.Text("Network checked " + m)},
	)
	api.StartOn(t, al)

	proj := userProject(t, s, "proj")
	// WebFetch asks claude.ai about the domain first unless told not to.
	skipWebFetchPreflight(t, s, proj)
	s.Env = append(agentEnv(api),
		fmt.Sprintf("ANTHROPIC_BASE_URL=http://%s:%d", apiName, loopAPI),
		"CLAUDE_SBX_NETNS="+name)
	cmd := s.Command("-p", "look around", "--allowedTools", "Bash,WebFetch")
	cmd.Dir = proj
	r := testutil.RunCommand(t, cmd)
	if r.Code != 0 || !strings.Contains(r.Stdout, "Network checked "+m) {
		t.Errorf("claude -p through the launcher in namespace %s: %v", name, r)
	}
	if strings.Contains(r.Stderr, "not using network namespacing") {
		t.Errorf("the launcher did not enter the namespace: %s", r.Stderr)
	}
	// This netns-dns has no control socket: the launcher says nothing of
	// the refused names (claude-sandbox net needs that socket).
	if strings.Contains(r.Stderr, "netns-dns") || strings.Contains(r.Stderr, "claude-sandbox net") {
		t.Errorf("the launcher's stderr without netns-dns's control socket: %q, want nothing of it", r.Stderr)
	}
	rs := results(t, api, 2)
	for id, res := range rs {
		t.Logf("tool result %s (error %v): %q", id, res.IsError, res.Content)
	}
	if got, want := rs["netns"].Content, nsInode+"\nnameserver "+loopBridge; got != want {
		t.Errorf("the Bash tool's namespace and resolver: %q, want %q (/run/netns/%s, netns-dns)", got, want, name)
	}
	if got, want := rs["evilname"].Content, "curl: (6) Could not resolve host: "+evilName+"\nrc=6"; got != want {
		t.Errorf("curl of an unlisted name: %q, want %q", got, want)
	}
	if got := rs["evilip"].Content; !regexp.MustCompile(`^curl: \(7\) Failed to connect to `+regexp.QuoteMeta(loopEvilIP)+` port 80 .*\nrc=7$`).MatchString(got) || strings.Contains(got, "evil page") {
		t.Errorf("curl of the unlisted name's address: %q, want curl's exit 7 (connection refused by the firewall)", got)
	}
	// WebFetch, fetching itself: an error from the resolver.
	if got := rs["webfetch"]; !got.IsError || got.Content != "getaddrinfo EAI_AGAIN "+webName {
		t.Errorf("WebFetch of an unlisted name: %+v, want the error getaddrinfo EAI_AGAIN %s", got, webName)
	}
	// The unlisted names never left the host; the API's name did.
	if got := auth.names(); strings.Contains(got, "evil-") || strings.Contains(got, "web-") || !strings.Contains(got, apiName) {
		t.Errorf("the internet's DNS server was asked %q: want %s and never %s or %s", got, apiName, evilName, webName)
	}

	// Both refusals are in the denial log (netns-dns writes the dropped
	// packet as its nflog record arrives).
	var log string
	waitFor(t, "the dropped connection in netns-setup denials", func() bool {
		r := setup("denials", name)
		log = r.Stdout
		return r.Code == 0 && strings.Contains(log, "dropped tcp "+loopEvilIP)
	})
	for _, want := range []string{
		"refused A " + evilName + ": allow with: domain " + evilName,
		"refused A " + webName + ": allow with: domain " + webName,
		"dropped tcp " + loopEvilIP + " port 80: allow with: allow " + loopEvilIP + " tcp 80",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("netns-setup denials %s lacks %q:\n%s", name, want, log)
		}
	}
	if strings.Contains(log, apiName) {
		t.Errorf("netns-setup denials %s names the allowed API:\n%s", name, log)
	}

	// The control: the unlisted server answers from the host, where the
	// sandbox's firewall does not apply.
	ctl := testutil.RunCommand(t, exec.Command("nsenter", "--net="+nsname.Path(host), "--", "curl", "-sS", "-m", "20", "http://"+loopEvilIP+"/"))
	if ctl.Stdout != "evil page "+m+"\n" {
		t.Errorf("the unlisted server from the host: %v", ctl)
	}
}

// loopTLS returns a CA's certificate (PEM) and a server certificate for
// name that it signed.
func loopTLS(t *testing.T, name string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "claude-sandbox test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestE2EAgentLoopApproval: with user-approve ask, a WebFetch of a name
// the allowlist does not name waits while netns-dns holds its query, and
// `claude-sandbox net allow NAME`, run by the user during the hold, lets
// it succeed. The control: with a domain line for the name, the same
// WebFetch succeeds without anyone asked.
//
// netns-dns runs in a mount namespace of its own with a tmpfs on
// /run/netns-dns, so that its control socket is at its usual path
// (netctl.SocketPath) without touching the host's; the user's
// claude-sandbox net runs in that mount namespace too, and the test
// watches the socket as root through /proc/PID/root.
func TestE2EAgentLoopApproval(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		approve     bool
	}{
		{"domain line", "domain WEB\n", false},
		{"approval during the hold", "user-approve ask\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loopSandbox(t)
			testutil.RequireCommand(t, "unshare")
			runDir := filepath.Dir(netctl.SocketPath)
			if _, err := os.Stat(runDir); os.IsNotExist(err) {
				if err := os.Mkdir(runDir, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(runDir) })
			}
			// The namespace is the test user's own: NAME-UID.
			name := testutil.UniqueName("al", 8) + "-" + strconv.Itoa(int(s.User.Uid))
			wrap := []string{"unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
				`mount -t tmpfs -o mode=0755 tmpfs "$0" && exec "$@"`, runDir}
			wd := newLoopWorldIn(t, s, name, tc.extra, wrap)
			caPEM, cert := loopTLS(t, wd.webName)

			// The page, over TLS at the address of the web name.
			var wl net.Listener
			if err := testutil.InNetnsThread(wd.inet, func() (err error) { wl, err = net.Listen("tcp4", loopEvilIP+":443"); return err }); err != nil {
				t.Fatal(err)
			}
			page := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "<html><body><p>approved page %s</p></body></html>\n", wd.m)
			}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
			go page.ServeTLS(wl, "", "")
			t.Cleanup(func() { page.Close() })

			var al net.Listener
			if err := testutil.InNetnsThread(wd.inet, func() (err error) {
				al, err = net.Listen("tcp4", fmt.Sprintf("%s:%d", loopAPIIP, loopAPI))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			api := fakeapi.New(
				fakeapi.Turn{
					fakeapi.Bash("evilname", "curl -sS -m 60 http://"+wd.evilName+"/ 2>&1; echo rc=$?"),
					fakeapi.WebFetch("webfetch", "https://"+wd.webName+"/", "what does the page say?"),
				},
				fakeapi.Turn{fakeapi.Text("Fetched " + wd.m)},
			)
			api.StartOn(t, al)

			proj := userProject(t, s, "proj")
			writeUserFile(t, s, filepath.Join(proj, "ca.pem"), string(caPEM), 0o644)
			s.WriteConfig(t, "setenv NODE_EXTRA_CA_CERTS "+filepath.Join(proj, "ca.pem")+"\n")
			skipWebFetchPreflight(t, s, proj)
			s.Env = append(agentEnv(api),
				fmt.Sprintf("ANTHROPIC_BASE_URL=http://%s:%d", wd.apiName, loopAPI),
				"CLAUDE_SBX_NETNS="+name)

			// The user, in another terminal: as soon as netns-dns holds
			// the web name's query, claude-sandbox net allow NAME.
			done := make(chan struct{})
			allowed := make(chan testutil.Result, 1)
			if tc.approve {
				go func() {
					allowed <- approveWhenHeld(wd, s, done)
				}()
			}
			// The launcher runs in netns-dns's mount namespace, where the
			// control socket is: it holds a session while the agent runs
			// and prints the refused names after.
			cmd := s.Command("-p", "fetch the page", "--allowedTools", "Bash,WebFetch")
			cmd.SysProcAttr = nil
			cmd.Args = append([]string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", wd.dnsPid),
				"--setuid", strconv.Itoa(int(s.User.Uid)), "--setgid", strconv.Itoa(int(s.User.Gid)), "--",
				"sh", "-c", `cd "$0" && exec "$@"`, proj, cmd.Path}, cmd.Args[1:]...)
			cmd.Path, _ = exec.LookPath("nsenter")
			r := testutil.RunCommand(t, cmd)
			close(done)
			if strings.Contains(r.Stderr, "not using network namespacing") {
				t.Errorf("the launcher did not enter the namespace: %s", r.Stderr)
			}
			if r.Code != 0 || !strings.Contains(r.Stdout, "Fetched "+wd.m) {
				t.Errorf("claude -p through the launcher in namespace %s: %v", name, r)
			}
			rs := results(t, api, 2)
			for id, res := range rs {
				t.Logf("tool result %s (error %v): %q", id, res.IsError, res.Content)
			}
			got := rs["webfetch"]
			if got.IsError || strings.Contains(got.Content, "EAI_AGAIN") {
				t.Errorf("WebFetch of %s: %+v, want the page", wd.webName, got)
			}
			// The agent hands the page to the small model (a request
			// without tools, answered with SideText): the page came.
			fetched := false
			for _, req := range api.Requests() {
				fetched = fetched || !req.Loop && strings.Contains(string(req.Body), "approved page "+wd.m)
			}
			if !fetched {
				t.Errorf("no request to the API carries the page of %s: WebFetch did not get it", wd.webName)
			}
			if !strings.Contains(wd.auth.names(), wd.webName) {
				t.Errorf("the internet's DNS server was never asked for %s (asked %q)", wd.webName, wd.auth.names())
			}
			// The unlisted name that nobody allowed: refused (after its
			// hold), and listed after the session with the command that
			// allows it.
			if got := rs["evilname"].Content; strings.Contains(got, "evil page") || strings.HasSuffix(got, "rc=0") {
				t.Errorf("curl of an unlisted name nobody allowed: %q, want a failure", got)
			}
			for _, want := range []string{"claude: netns-dns refused A " + wd.evilName + " ", "to allow it: claude-sandbox net allow " + wd.evilName + " --always\n"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("the launcher's stderr after the session lacks %q:\n%s", want, r.Stderr)
				}
			}
			if strings.Contains(r.Stderr, "refused A "+wd.webName) {
				t.Errorf("the launcher lists the allowed name as refused:\n%s", r.Stderr)
			}
			if tc.approve {
				a := <-allowed
				if a.Code != 0 || !strings.HasPrefix(a.Stdout, "allowed "+wd.webName+" in "+name+" once") || strings.Contains(a.Stdout, "answering 0") {
					t.Errorf("claude-sandbox net allow %s during the hold: %v", wd.webName, a)
				}
			}
		})
	}
}

// approveWhenHeld watches netns-dns's control socket as root until it
// holds a query of the web name in the world's namespace, then runs
// `claude-sandbox net allow NAME` as the test user in netns-dns's mount
// namespace, and returns its result; done ends the wait.
func approveWhenHeld(wd *loopWorld, s *testutil.Sandbox, done <-chan struct{}) testutil.Result {
	root := fmt.Sprintf("/proc/%d/root", wd.dnsPid)
	var c *netctl.Conn
	for c == nil {
		var err error
		if c, err = netctl.Dial(root + netctl.SocketPath); err != nil {
			select {
			case <-done:
				return testutil.Result{Code: -1, Stderr: "netns-dns has no control socket (the approvals' server side): " + err.Error()}
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	defer c.Close()
	// Root's watch counts as someone who can answer only for the
	// namespace it names (a watch of every namespace would hold them all).
	if _, err := c.Do(netctl.Request{Op: netctl.OpWatch, Namespace: wd.name}); err != nil {
		return testutil.Result{Code: -1, Stderr: "watch: " + err.Error()}
	}
	go func() { <-done; c.Close() }()
	for {
		var ev netctl.Event
		if err := c.Recv(&ev); err != nil {
			return testutil.Result{Code: -1, Stderr: "no held query of " + wd.webName + " before the agent ended: " + err.Error()}
		}
		if ev.Kind == netctl.EventHeld && ev.Name == wd.webName && ev.Namespace == wd.name {
			break
		}
	}
	uid, gid := strconv.Itoa(int(s.User.Uid)), strconv.Itoa(int(s.User.Gid))
	cmd := exec.Command("nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", wd.dnsPid),
		"--setuid", uid, "--setgid", gid, "--", wd.multi, "net", "allow", wd.webName, "--namespace", wd.name)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return testutil.Result{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errb.String() + fmt.Sprint(err)}
}

// skipWebFetchPreflight writes the settings of proj's sandbox home that
// keep WebFetch from asking claude.ai about a domain first.
func skipWebFetchPreflight(t *testing.T, s *testutil.Sandbox, proj string) {
	t.Helper()
	claudeDir := filepath.Join(projectHome(t, s, proj), ".claude")
	mkUserDir(t, s, filepath.Dir(claudeDir))
	for _, d := range []string{filepath.Dir(filepath.Dir(claudeDir)), filepath.Dir(claudeDir)} {
		s.User.Chown(t, d)
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mkUserDir(t, s, claudeDir)
	writeUserFile(t, s, filepath.Join(claudeDir, "settings.json"), `{"skipWebFetchPreflight": true}`+"\n", 0o600)
}
