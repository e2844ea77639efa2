package netnsdns

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

// TestRebinding: an allowed name whose server answers with loopback,
// link-local (the metadata address), private, bridge or host addresses
// gets none of them: they are neither pinned nor returned (the client
// would reach the host or the LAN through a name, DNS rebinding), and
// each removal is in the denial log. Public addresses of the same answer
// stay.
func TestRebinding(t *testing.T) {
	r, up, pin, dir := newTestResolver(t)
	r.Local = func() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("198.51.100.7/32")} }
	up.zone["rebind.example.com."] = []dns.RR{
		rr(t, "rebind.example.com. 60 IN A 127.0.0.1"),
		rr(t, "rebind.example.com. 60 IN A 169.254.169.254"),
		rr(t, "rebind.example.com. 60 IN A 10.10.0.1"),
		rr(t, "rebind.example.com. 60 IN A 192.168.1.5"),
		rr(t, "rebind.example.com. 60 IN A 172.16.0.9"),
		rr(t, "rebind.example.com. 60 IN A 0.0.0.0"),
		rr(t, "rebind.example.com. 60 IN A 198.51.100.7"), // the host's own public address
		rr(t, "rebind.example.com. 60 IN A 203.0.113.5"),
	}
	resp := r.Answer(context.Background(), allowSrc, query("rebind.example.com.", dns.TypeA))
	var got []string
	for _, a := range resp.Answer {
		got = append(got, a.(*dns.A).A.String())
	}
	if strings.Join(got, " ") != "203.0.113.5" {
		t.Errorf("answer = %v, want only 203.0.113.5", got)
	}
	for _, c := range pin.calls {
		for _, a := range c.addrs {
			if a != netip.MustParseAddr("203.0.113.5") {
				t.Errorf("pinned %s in %s", a, c.set)
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "agents.log"))
	for _, a := range []string{"127.0.0.1", "169.254.169.254", "10.10.0.1", "192.168.1.5", "172.16.0.9", "0.0.0.0", "198.51.100.7"} {
		if want := "removed " + a + " from the answer to rebind.example.com (a local or private address): allow with: allow " + a + "\n"; !strings.Contains(string(b), want) {
			t.Errorf("log lacks %q:\n%s", want, b)
		}
	}
}

// TestRebindingAllowed: an allow line that covers a private address lets a
// name resolve to it.
func TestRebindingAllowed(t *testing.T) {
	r, up, pin, _ := newTestResolver(t)
	r.mu.Lock()
	r.nss[allowSrc].policy.Allow = []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}
	r.mu.Unlock()
	up.zone["lan.example.com."] = []dns.RR{rr(t, "lan.example.com. 60 IN A 192.168.1.5")}
	resp := r.Answer(context.Background(), allowSrc, query("lan.example.com.", dns.TypeA))
	if len(resp.Answer) != 1 || len(pin.calls) == 0 {
		t.Errorf("answer %v, pins %v: want 192.168.1.5, pinned", resp.Answer, pin.calls)
	}
}

// TestTTLCap: a huge TTL pins for at most the cap (an eighth more, as
// every pin), and the answer's TTL is capped too.
func TestTTLCap(t *testing.T) {
	r, up, pin, _ := newTestResolver(t)
	up.zone["long.example.com."] = []dns.RR{
		rr(t, "long.example.com. 4294967295 IN CNAME far.cdn.test."),
		rr(t, "far.cdn.test. 4294967295 IN A 203.0.113.77"),
	}
	resp := r.Answer(context.Background(), allowSrc, query("long.example.com.", dns.TypeA))
	if len(resp.Answer) != 2 {
		t.Fatalf("answer = %v", resp.Answer)
	}
	for _, a := range resp.Answer {
		if a.Header().Ttl > uint32(DefaultMaxTTL/time.Second) {
			t.Errorf("answer TTL %d, want at most %d", a.Header().Ttl, DefaultMaxTTL/time.Second)
		}
	}
	want := DefaultMaxTTL + DefaultMaxTTL/8
	if len(pin.calls) == 0 || slices.ContainsFunc(pin.calls, func(c pinCall) bool { return c.timeout > want }) {
		t.Errorf("pins %+v, want timeouts of at most %v", pin.calls, want)
	}
	r.mu.RLock()
	g := r.nss[allowSrc].cnames["far.cdn.test."]
	r.mu.RUnlock()
	if g.until.After(time.Now().Add(want)) {
		t.Errorf("CNAME target allowed until %v, want at most %v from now", g.until, want)
	}

	// A max-ttl line of netns-firewall.conf, in the policy, caps lower.
	r.mu.Lock()
	r.nss[allowSrc].policy.MaxTTL = 3600
	r.nss[allowSrc].pinned = map[pinKey]time.Time{}
	r.mu.Unlock()
	pin.calls = nil
	resp = r.Answer(context.Background(), allowSrc, query("long.example.com.", dns.TypeA))
	if ttl := resp.Answer[len(resp.Answer)-1].Header().Ttl; ttl != 3600 {
		t.Errorf("answer TTL under max-ttl 1h: %d, want 3600", ttl)
	}
	if len(pin.calls) == 0 || pin.calls[0].timeout != time.Hour+time.Hour/8 {
		t.Errorf("pins under max-ttl 1h: %+v, want a timeout of 1h7m30s", pin.calls)
	}
}

// TestBlockedTableWalk walks the one table of blocked ranges
// (netpolicy.Blocked4, Blocked6): an allowed name answered with an
// address in each range gets none of them, and none is pinned, while the
// public address of the same answer stays. Before the table was one, the
// resolver kept 100.100.100.200 (Alibaba's metadata address, shared
// space), 198.18.0.0/15, 192.0.0.0/24, NAT64 and 6to4 answers.
func TestBlockedTableWalk(t *testing.T) {
	for _, p := range append(append([]netip.Prefix(nil), netpolicy.Blocked4...), netpolicy.Blocked6...) {
		r, up, pin, _ := newTestResolver(t)
		r.mu.Lock()
		r.nss[allowSrc].policy.IPv6 = true
		r.mu.Unlock()
		in := p.Addr().Next()
		if !p.Contains(in) {
			in = p.Addr()
		}
		typ, public, rec := dns.TypeA, "203.0.113.5", "A"
		if !in.Is4() {
			typ, public, rec = dns.TypeAAAA, "2001:db8::5", "AAAA"
		}
		up.zone["walk.example.com."] = []dns.RR{
			rr(t, "walk.example.com. 60 IN "+rec+" "+in.String()),
			rr(t, "walk.example.com. 60 IN "+rec+" "+public),
		}
		resp := r.Answer(context.Background(), allowSrc, query("walk.example.com.", typ))
		var got []string
		for _, a := range resp.Answer {
			switch a := a.(type) {
			case *dns.A:
				got = append(got, a.A.String())
			case *dns.AAAA:
				got = append(got, a.AAAA.String())
			}
		}
		if strings.Join(got, " ") != public {
			t.Errorf("%s (%s): answer = %v, want only %s", in, p, got, public)
		}
		for _, c := range pin.calls {
			for _, a := range c.addrs {
				if p.Contains(a) {
					t.Errorf("%s (%s): pinned in %s", a, p, c.set)
				}
			}
		}
	}
	for _, a := range []string{"100.100.100.200", "198.18.0.1", "192.0.0.170", "64:ff9b::a00:1", "64:ff9b:1::c0a8:105", "2002:c0a8:105::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"} {
		if !netpolicy.Blocked(netip.MustParseAddr(a)) {
			t.Errorf("%s is not in the table of blocked ranges", a)
		}
	}
}
