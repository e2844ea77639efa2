//go:build linux

package network

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// TestSpoofedFromLAN: a machine on the LAN that routes 10.10.0.0/16 to the
// host sends netns-dns queries with a sandbox's address as their source.
// netns-dns tells namespaces apart by source address alone, so without a
// check of where the packet came in, the LAN could write that sandbox's
// denial log, use up its limits and have addresses pinned for it. The
// bridge firewall drops packets with a sandbox address that do not come
// from the bridge.
func TestSpoofedFromLAN(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := testutil.UniqueName("sa", 9)
	w.up(a)
	w.mustResolve(a, "allowed.test")
	addr := ""
	for _, f := range strings.Fields(testutil.InNetns(t, a, "ip", "-4", "-o", "address", "show", "dev", "eth0")) {
		if p, _, ok := strings.Cut(f, "/"); ok && strings.HasPrefix(p, "10.10.") {
			addr = p
		}
	}
	if addr == "" {
		t.Fatalf("no address of %s", a)
	}
	ip(t, "-n", w.lan, "route", "add", "10.10.0.0/16", "via", lanHost)

	// As root on the LAN machine: IP_TRANSPARENT lets it send from any
	// address.
	q := new(dns.Msg)
	q.SetQuestion("spoofed-from-lan.evil.test.", dns.TypeA)
	pkt, _ := q.Pack()
	err := inNetns(w.lan, func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		if err := syscall.SetsockoptInt(fd, syscall.SOL_IP, syscall.IP_TRANSPARENT, 1); err != nil {
			return err
		}
		src := &syscall.SockaddrInet4{}
		copy(src.Addr[:], net.ParseIP(addr).To4())
		if err := syscall.Bind(fd, src); err != nil {
			return err
		}
		dst := &syscall.SockaddrInet4{Port: 53}
		copy(dst.Addr[:], net.ParseIP(gateway).To4())
		for i := 0; i < 3; i++ {
			if err := syscall.Sendto(fd, pkt, 0, dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("spoofed query from the LAN: %v", err)
	}
	// A query of a itself, after the spoofed ones: once its refusal is in
	// the log, netns-dns has handled whatever arrived before it.
	if rcode, _ := w.resolve(a, "after-spoof.evil.test"); rcode != "REFUSED" {
		t.Fatalf("a's own query: %s", rcode)
	}
	got := w.waitDenial(a, "after-spoof.evil.test")
	if strings.Contains(got, "spoofed-from-lan") {
		t.Fatalf("a query from the LAN with %s's address reached netns-dns:\n%s", a, got)
	}
}

// TestForgeFromSandbox: the namespace tables tell sandboxes apart by
// source address, and netns-dns its clients. An unprivileged program in a
// sandbox cannot send from another address: IP_FREEBIND lets it bind one,
// but the kernel routes only its own (ENETUNREACH), and raw sockets and
// IP_TRANSPARENT need capabilities it lacks.
func TestForgeFromSandbox(t *testing.T) {
	w := newPolicyWorld(t, allowlistConf, 0)
	if err := os.WriteFile(filepath.Join(w.presetDir, "web"), []byte("allowed.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := testutil.UniqueName("fa", 9), testutil.UniqueName("fb", 9)
	w.up(a)
	w.up(b)
	bAddr := sandboxAddr(t, b).String()
	e := newEnterer(t, a)
	res := e.probe(t, a, probeSpec{Checks: []check{
		{Name: "dns as b", Kind: "forge-udp", Host: bAddr, Addr: gateway + ":53"},
		{Name: "dns as b over tcp", Kind: "forge-tcp", Host: bAddr, Addr: gateway + ":53"},
		{Name: "internet as an unused address", Kind: "forge-tcp", Host: "10.10.250.250", Addr: evilIP + ":80"},
	}})
	for name, o := range res.Outcome {
		if o != "network is unreachable" {
			t.Errorf("%s: %s, want network is unreachable", name, o)
		}
	}
}
