//go:build linux

package network

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// Addresses of the world. 203.0.113.0/24 (TEST-NET-3) stands for the
// internet; it exists only inside the test's namespaces.
const (
	inetHost  = "203.0.113.1"  // the host's uplink address
	inetAddr  = "203.0.113.10" // a server on the internet, and its DNS
	lanHost   = "192.168.77.1" // the host's LAN address
	lanAddr   = "192.168.77.10"
	metadata  = "169.254.169.254"
	gateway   = "10.10.0.1"
	exampleIP = inetAddr // what example.test resolves to
)

// world is a host namespace with br-netns 10.10.0.1/16, an uplink to "the
// internet" and a link to "the LAN", plus the files netns-setup reads and
// writes (in a directory the test user can read).
type world struct {
	t               *testing.T
	host, inet, lan string
	dir             string
	etc             string // --testonly-etc-dir
	firewallConf    string // --testonly-firewall-config
	resolvConf      string // --testonly-host-resolv-conf
	lock            string // --testonly-lock-file
	extraArgs       []string
	extraEnv        []string // for netns-setup, e.g. noNftablesEnv
	forward         string   // net.ipv4.ip_forward of host as the test set it
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newWorld builds the namespaces and their links; hostResolv is the host's
// resolv.conf, firewall the allowlist config.
func newWorld(t *testing.T, hostResolv, firewall string) *world {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireCommand(t, "nsenter")
	w := &world{t: t, host: testutil.Netns(t, "nh"), inet: testutil.Netns(t, "ni"), lan: testutil.Netns(t, "nl")}
	w.dir = testutil.PublicDir(t)
	w.etc = filepath.Join(w.dir, "etc-netns")
	w.firewallConf = filepath.Join(w.dir, "netns-firewall.conf")
	w.resolvConf = filepath.Join(w.dir, "resolv.conf")
	w.lock = filepath.Join(w.dir, "lock")
	if err := os.WriteFile(w.resolvConf, []byte(hostResolv), 0o644); err != nil {
		t.Fatal(err)
	}
	if firewall != "" {
		if err := os.WriteFile(w.firewallConf, []byte(firewall), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, i, l := w.host, w.inet, w.lan
	for _, ns := range []string{h, i, l} {
		ip(t, "-n", ns, "link", "set", "lo", "up")
	}
	ip(t, "-n", h, "link", "add", "br-netns", "type", "bridge")
	ip(t, "-n", h, "address", "add", gateway+"/16", "dev", "br-netns")
	ip(t, "-n", h, "link", "set", "br-netns", "up")
	// Uplink: host up0 <-> internet eth0; the host's default route.
	ip(t, "-n", h, "link", "add", "up0", "type", "veth", "peer", "name", "eth0", "netns", i)
	ip(t, "-n", h, "address", "add", inetHost+"/24", "dev", "up0")
	ip(t, "-n", h, "link", "set", "up0", "up")
	ip(t, "-n", i, "address", "add", inetAddr+"/24", "dev", "eth0")
	ip(t, "-n", i, "link", "set", "eth0", "up")
	ip(t, "-n", h, "route", "add", "default", "via", inetAddr)
	// LAN: host lan0 <-> LAN eth0, which also holds the metadata address.
	ip(t, "-n", h, "link", "add", "lan0", "type", "veth", "peer", "name", "eth0", "netns", l)
	ip(t, "-n", h, "address", "add", lanHost+"/24", "dev", "lan0")
	ip(t, "-n", h, "link", "set", "lan0", "up")
	ip(t, "-n", l, "address", "add", lanAddr+"/24", "dev", "eth0")
	ip(t, "-n", l, "address", "add", metadata+"/32", "dev", "eth0")
	ip(t, "-n", l, "link", "set", "eth0", "up")
	ip(t, "-n", l, "route", "add", "default", "via", lanHost)
	ip(t, "-n", h, "route", "add", metadata+"/32", "via", lanAddr)
	// A new namespace inherits the machine's forwarding (on wherever Docker
	// or the installed product runs): the world starts with it off, as a
	// fresh host does, and says so.
	w.setForward("0")
	return w
}

// setForward sets net.ipv4.ip_forward in the world's host namespace and
// records it as what a failed up must leave behind.
func (w *world) setForward(v string) {
	w.t.Helper()
	testutil.InNetns(w.t, w.host, "sysctl", "-q", "-w", "net.ipv4.ip_forward="+v)
	w.forward = w.readForward()
	if w.forward != v {
		w.t.Fatalf("ip_forward in %s = %s after setting it to %s", w.host, w.forward, v)
	}
}

func (w *world) readForward() string {
	w.t.Helper()
	return strings.TrimSpace(testutil.InNetns(w.t, w.host, "sysctl", "-n", "net.ipv4.ip_forward"))
}

// setupCmd returns netns-setup ARGS run inside the host namespace.
func (w *world) setupCmd(args ...string) *exec.Cmd {
	full := []string{"--net=/run/netns/" + w.host, "--", selfBinary(w.t),
		"--testonly-etc-dir=" + w.etc, "--testonly-firewall-config=" + w.firewallConf,
		"--testonly-host-resolv-conf=" + w.resolvConf, "--testonly-lock-file=" + w.lock,
		"--testonly-handover-socket=" + w.handoverSocket()}
	full = append(full, w.extraArgs...)
	cmd := exec.Command("nsenter", append(full, args...)...)
	cmd.Env = append(append(os.Environ(), roleEnv+"=netns-setup"), w.extraEnv...)
	return cmd
}

// handoverSocket is where the world's netns-dns (if it runs) takes the
// sockets of its namespaces: never the machine's.
func (w *world) handoverSocket() string { return filepath.Join(w.dir, "run", "handover.sock") }

// setup runs netns-setup and returns its result.
func (w *world) setup(args ...string) testutil.Result {
	w.t.Helper()
	return testutil.RunCommand(w.t, w.setupCmd(args...))
}

// mustSetup runs netns-setup and fails the test unless it exits 0.
func (w *world) mustSetup(args ...string) string {
	w.t.Helper()
	r := w.setup(args...)
	if r.Code != 0 {
		w.t.Fatalf("netns-setup %s: %s", strings.Join(args, " "), r)
	}
	return r.Stdout
}

// up brings sandbox name up and removes it (down) when the test ends.
func (w *world) up(name string) {
	w.t.Helper()
	w.t.Cleanup(func() {
		w.setup("down", name)
		// Whatever down left is a failure elsewhere; do not leak it.
		exec.Command("umount", "-l", "/run/netns/"+name).Run()
		os.Remove("/run/netns/" + name)
	})
	w.mustSetup("up", name)
}

// sandboxAddr returns the IPv4 address of eth0 in namespace name.
func sandboxAddr(t testing.TB, name string) netip.Addr {
	t.Helper()
	out := testutil.InNetns(t, name, "ip", "-4", "-o", "address", "show", "dev", "eth0")
	f := strings.Fields(out)
	for i, s := range f {
		if s == "inet" && i+1 < len(f) {
			p, err := netip.ParsePrefix(f[i+1])
			if err != nil {
				t.Fatal(err)
			}
			return p.Addr()
		}
	}
	t.Fatalf("no IPv4 address on eth0 in %s: %q", name, out)
	return netip.Addr{}
}

// inNetns runs f on a thread in namespace ns; the thread is thrown away.
func inNetns(ns string, f func() error) error { return testutil.InNetnsThread(ns, f) }

// serveHTTP serves "BODY from REMOTE-IP" on addr in namespace ns.
func serveHTTP(t testing.TB, ns, addr, body string) {
	t.Helper()
	var l net.Listener
	if err := inNetns(ns, func() (err error) { l, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, ns, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(rw, "%s from %s", body, host)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// serveDNS answers A queries for example.test with exampleIP on UDP addr in
// namespace ns, and NXDOMAIN for everything else.
func serveDNS(t testing.TB, ns, addr string) {
	t.Helper()
	var pc net.PacketConn
	if err := inNetns(ns, func() (err error) { pc, err = net.ListenPacket("udp4", addr); return err }); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, err := dnsAnswer(buf[:n]); err == nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
}

func dnsAnswer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	h.Response, h.Authoritative, h.RecursionAvailable = true, true, true
	known := strings.EqualFold(q.Name.String(), "example.test.")
	if !known {
		h.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if known && q.Type == dnsmessage.TypeA {
		a := netip.MustParseAddr(exampleIP).As4()
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: a}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
