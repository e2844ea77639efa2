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
