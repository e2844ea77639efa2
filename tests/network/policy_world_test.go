//go:build linux

package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// Addresses of the policy tests' internet (all on its eth0 beside
// inetAddr, which is the authoritative DNS server netns-dns forwards to).
const (
	allowedIP = "203.0.113.21" // allowed.test
	wildIP    = "203.0.113.22" // a.wild.test
	cnameIP   = "203.0.113.23" // cname.test -> hop.cdn.test -> end.cdn.test
	shortIP   = "203.0.113.24" // short.test, TTL 1
	evilIP    = "203.0.113.30" // evil.test, not allowed
	otherDNS  = "203.0.113.40" // another DNS server
)

// authServer is "the internet's" authoritative DNS server, which logs the
// names it is asked.
type authServer struct {
	mu    sync.Mutex
	asked []string
	// delay is how long it takes to answer (the benchmark's model of an
	// upstream that is not next door).
	delay time.Duration
}

func (a *authServer) names() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.asked, " ")
}

func (a *authServer) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	name := strings.ToLower(q.Question[0].Name)
	a.mu.Lock()
	a.asked = append(a.asked, name)
	delay := a.delay
	a.mu.Unlock()
	if strings.HasSuffix(name, ".hang.wild.test.") {
		return // a server that never answers: each query holds netns-dns until its timeout
	}
	time.Sleep(delay)
	zone := map[string][]string{
		"allowed.test.": {"allowed.test. 60 IN A " + allowedIP},
		"a.wild.test.":  {"a.wild.test. 60 IN A " + wildIP},
		"wild.test.":    {"wild.test. 60 IN A " + wildIP},
		"cname.test.":   {"cname.test. 60 IN CNAME hop.cdn.test.", "hop.cdn.test. 60 IN CNAME end.cdn.test.", "end.cdn.test. 60 IN A " + cnameIP},
		"short.test.":   {"short.test. 1 IN A " + shortIP},
		"evil.test.":    {"evil.test. 60 IN A " + evilIP},
		// DNS rebinding: an allowed name that leads inside (rebind_test.go).
		"rebind.test.": {"rebind.test. 4294967295 IN A 127.0.0.1", "rebind.test. 60 IN A " + metadata, "rebind.test. 60 IN A " + gateway, "rebind.test. 60 IN A " + lanAddr, "rebind.test. 4294967295 IN A " + allowedIP},
	}
	var i, j int
	if n, _ := fmt.Sscanf(name, "n%d-%d.bulk.test.", &i, &j); n == 2 {
		// The benchmark's 10,000 names, each its own address.
		zone[name] = []string{fmt.Sprintf("%s 3600 IN A 45.%d.%d.%d", name, i, j/256, j%256)}
	}
	r := new(dns.Msg)
	r.SetReply(q)
	r.Authoritative = true
	if q.Question[0].Qtype == dns.TypeA {
		for _, s := range zone[name] {
			rr, _ := dns.NewRR(s)
			r.Answer = append(r.Answer, rr)
		}
	}
	if zone[name] == nil {
		r.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(r)
}

// serveAuth serves a on UDP and TCP port 53 of addr in namespace ns.
func serveAuth(t *testing.T, ns, addr string, a dns.Handler) {
	t.Helper()
	var pc net.PacketConn
	var ln net.Listener
	err := inNetns(ns, func() (err error) {
		if pc, err = net.ListenPacket("udp4", addr+":53"); err != nil {
			return err
		}
		ln, err = net.Listen("tcp4", addr+":53")
		return err
	})
	if err != nil {
		t.Fatalf("listen %s:53 in %s: %v", addr, ns, err)
	}
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: a}, {Listener: ln, Handler: a}} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
}

// policyWorld is a world whose sandboxes have policies, with netns-dns
// running in its host.
type policyWorld struct {
	*world
	auth      *authServer
	other     *authServer // otherDNS: must never be asked
	policyDir string
	logDir    string
	presetDir string
	udpSeen   chan string // what the UDP 443 and 853 listeners received
	dnsPid    int         // netns-dns
	stopDNS   func()
	control   string // netns-dns's control socket
	stateDir  string // netns-dns's state directory
	pinFloor  time.Duration
	nofile    int
}

// newPolicyWorld builds the world with firewall as netns-firewall.conf and
// starts netns-dns with pinFloor (0: its default).
func newPolicyWorld(t *testing.T, firewall string, pinFloor time.Duration) *policyWorld {
	t.Helper()
	return newPolicyWorldLimit(t, firewall, pinFloor, 0)
}

// newPolicyWorldLimit is newPolicyWorld with netns-dns limited to nofile
// open files (0: no limit of its own).
func newPolicyWorldLimit(t *testing.T, firewall string, pinFloor time.Duration, nofile int) *policyWorld {
	t.Helper()
	w := &policyWorld{world: newWorld(t, "nameserver "+inetAddr+"\n", firewall), auth: &authServer{}, other: &authServer{}, udpSeen: make(chan string, 16)}
	// A fixed bridge address, as systemd-networkd gives it: a bridge made
	// by ip link takes the lowest of its ports' addresses, which changes as
	// namespaces come and go and leaves the others' ARP entries stale.
	ip(t, "-n", w.host, "link", "set", "br-netns", "address", "02:00:5e:10:00:01")
	w.policyDir = filepath.Join(w.dir, "policy")
	w.logDir = filepath.Join(w.dir, "log")
	w.presetDir = filepath.Join(w.dir, "presets")
	if err := os.Mkdir(w.presetDir, 0o755); err != nil {
		t.Fatal(err)
	}
	w.extraArgs = append(w.extraArgs, "--testonly-policy-dir="+w.policyDir, "--testonly-log-dir="+w.logDir, "--testonly-preset-dir="+w.presetDir)
	for _, a := range []string{allowedIP, wildIP, cnameIP, shortIP, evilIP, otherDNS} {
		ip(t, "-n", w.inet, "address", "add", a+"/24", "dev", "eth0")
	}
	serveAuth(t, w.inet, inetAddr, w.auth)
	serveAuth(t, w.inet, otherDNS, w.other)
	for _, a := range []string{allowedIP, wildIP, cnameIP, shortIP, evilIP} {
		serveHTTP(t, w.inet, a+":80", "web")
	}
	serveHTTP(t, w.inet, allowedIP+":853", "dot")
	for _, port := range []string{"443", "853"} {
		var pc net.PacketConn
		if err := inNetns(w.inet, func() (err error) { pc, err = net.ListenPacket("udp4", allowedIP+":"+port); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 1500)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				w.udpSeen <- port + ":" + string(buf[:n])
			}
		}()
	}

	// The control socket in a directory every user can traverse (the
	// tests' other users connect to it), the state in one of the test's.
	w.control = filepath.Join(w.dir, "control", "control.sock")
	w.stateDir = filepath.Join(w.dir, "state")
	if err := os.Mkdir(filepath.Dir(w.control), 0o755); err != nil {
		t.Fatal(err)
	}
	w.pinFloor, w.nofile = pinFloor, nofile
	w.startDNS()
	return w
}

// startDNS starts netns-dns in the world's host; the test's end stops it.
func (w *policyWorld) startDNS() {
	t := w.t
	t.Helper()
	args := []string{"--net=/run/netns/" + w.host, "--", testutil.Binary(t), "netns-dns",
		"--testonly-listen=" + gateway + ":53", "--testonly-policy-dir=" + w.policyDir, "--testonly-log-dir=" + w.logDir,
		"--testonly-control=" + w.control, "--testonly-state-dir=" + w.stateDir}
	if w.pinFloor > 0 {
		args = append(args, "--testonly-pin-floor="+w.pinFloor.String())
	}
	if w.nofile > 0 {
		args = append([]string{"prlimit", fmt.Sprintf("--nofile=%d:%d", w.nofile, w.nofile), "nsenter"}, args...)
	} else {
		args = append([]string{"nsenter"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.dnsPid = cmd.Process.Pid // prlimit and nsenter exec it: no fork for a network namespace
	var once sync.Once
	w.stopDNS = func() {
		once.Do(func() {
			if t.Failed() && os.Getenv("NETNS_DNS_DUMP") != "" {
				cmd.Process.Signal(syscall.SIGQUIT)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				t.Logf("netns-dns:\n%s", stderr.String())
			}
		})
	}
	t.Cleanup(w.stopDNS)
}

// writeNsConf writes netns-firewall.d/NAME.conf.
func (w *policyWorld) writeNsConf(name, content string) {
	w.t.Helper()
	dir := filepath.Join(w.dir, "netns-firewall.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".conf"), []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// resolve asks netns-dns, from inside sandbox ns, for the A record of name
// and returns the rcode and addresses.
func (w *policyWorld) resolve(ns, name string) (rcode string, addrs []string) {
	w.t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	var resp *dns.Msg
	err := inNetns(ns, func() (err error) {
		c := &dns.Client{Timeout: 5 * time.Second}
		resp, _, err = c.Exchange(q, gateway+":53")
		return err
	})
	if err != nil {
		w.t.Fatalf("resolve %s in %s: %v", name, ns, err)
	}
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			addrs = append(addrs, a.A.String())
		}
	}
	return dns.RcodeToString[resp.Rcode], addrs
}

// mustResolve resolves name and fails unless it gets NOERROR. It does not
// wait for netns-dns to notice the namespace: a query right after up must
// be answered.
func (w *policyWorld) mustResolve(ns, name string) []string {
	w.t.Helper()
	rcode, addrs := w.resolve(ns, name)
	if rcode != "NOERROR" {
		w.t.Fatalf("resolve %s in %s: %s", name, ns, rcode)
	}
	return addrs
}

// dial connects from sandbox ns to addr (tcp or udp) and, for tcp, reads
// the HTTP answer; for udp it sends a datagram and waits for an error.
// It returns "ok", or the errno the kernel gave.
func dial(t *testing.T, ns, network, addr string) string {
	t.Helper()
	out := ""
	err := inNetns(ns, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			out = errnoOf(err)
			return nil
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if network == "udp4" {
			c.Write([]byte("hello"))
			time.Sleep(200 * time.Millisecond)
			_, err := c.Write([]byte("again"))
			if err != nil {
				out = errnoOf(err)
			} else {
				_, err = c.Read(make([]byte, 10))
				out = errnoOf(err)
			}
			return nil
		}
		fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
		b := make([]byte, 512)
		n, err := c.Read(b)
		if n > 0 && strings.Contains(string(b[:n]), "web from") {
			out = "ok"
		} else {
			out = errnoOf(err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func errnoOf(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// ping sends one ICMP echo request from sandbox ns to addr (a raw socket:
// the test runs as root) and returns "reply", "unreachable CODE" (an ICMP
// destination unreachable read as a message), or the errno.
func ping(t *testing.T, ns, addr string) string {
	t.Helper()
	out := ""
	err := inNetns(ns, func() error {
		c, err := net.Dial("ip4:icmp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 0x5b5, Seq: 1, Data: []byte("policy")}}
		b, err := msg.Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := c.Write(b); err != nil {
			out = errnoOf(err)
			return nil
		}
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 1500)
		for {
			n, err := c.Read(buf)
			if err != nil {
				out = errnoOf(err)
				return nil
			}
			// A raw IPv4 socket reads the IP header too.
			ihl := int(buf[0]&0x0f) * 4
			m, err := icmp.ParseMessage(1, buf[ihl:n])
			if err != nil {
				continue
			}
			switch m.Type {
			case ipv4.ICMPTypeEchoReply:
				out = "reply"
				return nil
			case ipv4.ICMPTypeDestinationUnreachable:
				out = fmt.Sprintf("unreachable %d", m.Code)
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// denials runs netns-setup denials NAME.
func (w *policyWorld) denials(name string) string {
	w.t.Helper()
	return w.mustSetup("denials", name)
}

// waitDenial waits up to 10 s for the denial log of ns to contain want
// (netns-dns writes nflog records as they come).
func (w *policyWorld) waitDenial(ns, want string) string {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := w.denials(ns)
		if strings.Contains(got, want) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}
