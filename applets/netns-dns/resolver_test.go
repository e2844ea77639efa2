package netnsdns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// fakeUpstream answers from a zone and records the names it was asked.
type fakeUpstream struct {
	mu    sync.Mutex
	asked []string
	zone  map[string][]dns.RR
}

func (f *fakeUpstream) Exchange(_ context.Context, m *dns.Msg, _ netip.AddrPort) (*dns.Msg, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := m.Question[0]
	f.asked = append(f.asked, q.Name)
	r := new(dns.Msg)
	r.SetReply(m)
	r.Answer = f.zone[q.Name]
	if r.Answer == nil {
		r.Rcode = dns.RcodeNameError
	}
	return r, nil
}

type pinCall struct {
	table, set string
	addrs      []netip.Addr
	timeout    time.Duration
}

type fakePinner struct {
	mu    sync.Mutex
	calls []pinCall
	// flows: what the approved set holds.
	flows map[nft.Flow]bool
	// flowTimeouts: the timeout of each flow's last PinFlows; flushes:
	// how many FlushFlows.
	flowTimeouts map[nft.Flow]time.Duration
	flushes      int
}

func (p *fakePinner) Pin(table, set string, addrs []netip.Addr, timeout time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, pinCall{table, set, addrs, timeout})
	return nil
}

func (p *fakePinner) PinFlows(table, set string, flows []nft.Flow, timeout time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flows == nil {
		p.flows = map[nft.Flow]bool{}
	}
	if p.flowTimeouts == nil {
		p.flowTimeouts = map[nft.Flow]time.Duration{}
	}
	for _, f := range flows {
		p.flows[f] = true
		p.flowTimeouts[f] = timeout
	}
	return nil
}

func (p *fakePinner) UnpinFlows(table, set string, flows []nft.Flow) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range flows {
		delete(p.flows, f)
	}
	return nil
}

func (p *fakePinner) FlushFlows(table, set string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushes++
	clear(p.flows)
	return nil
}

// flowList is what the approved set holds, as "ADDR PROTO PORT", sorted.
func (p *fakePinner) flowList() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for f := range p.flows {
		out = append(out, fmt.Sprintf("%s %s %d", f.Addr, f.Proto, f.Port))
	}
	slices.Sort(out)
	return out
}

func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	allowSrc = netip.MustParseAddr("10.10.0.2")
	openSrc  = netip.MustParseAddr("10.10.0.3")
)

func newTestResolver(t *testing.T) (*Resolver, *fakeUpstream, *fakePinner, string) {
	up := &fakeUpstream{zone: map[string][]dns.RR{
		"api.example.com.": {rr(t, "api.example.com. 60 IN A 203.0.113.10")},
		"www.example.com.": {
			rr(t, "www.example.com. 30 IN CNAME edge.cdn.test."),
			rr(t, "unrelated.test. 30 IN A 198.51.100.99"),
			rr(t, "edge.cdn.test. 10 IN CNAME last.cdn.test."),
			rr(t, "last.cdn.test. 600 IN A 203.0.113.20"),
		},
		"evil.test.": {rr(t, "evil.test. 60 IN A 203.0.113.66")},
	}}
	pin := &fakePinner{}
	dir := t.TempDir()
	r := &Resolver{Pinner: pin, Upstream: up, Log: &DenialLog{Dir: dir, now: func() time.Time { return time.Unix(0, 0) }}, PinFloor: time.Minute}
	ups := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53")}
	allow := netpolicy.Policy{Name: "agents", Addr: allowSrc, Mode: "allowlist", Upstream: ups, Table: "claude_sandbox_ns_agents",
		Domains: []netpolicy.PolicyDomain{
			{Pattern: "api.example.com", Sets: []string{"pin0", "pin1"}},
			{Pattern: "*.example.com", Sets: []string{"pin1"}},
		}}
	open := netpolicy.Policy{Name: "open", Addr: openSrc, Mode: "open", Upstream: ups}
	if errs := r.SetPolicies(map[string][]byte{"a.json": allow.Marshal(), "o.json": open.Marshal()}); errs != nil {
		t.Fatal(errs)
	}
	return r, up, pin, dir
}

func query(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

func TestAllowedNamePinned(t *testing.T) {
	r, _, pin, _ := newTestResolver(t)
	resp := r.Answer(context.Background(), allowSrc, query("API.example.com.", dns.TypeA))
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 {
		t.Fatalf("answer = %v", resp)
	}
	want := []pinCall{
		{"claude_sandbox_ns_agents", "pin0", []netip.Addr{netip.MustParseAddr("203.0.113.10")}, 67500 * time.Millisecond},
		{"claude_sandbox_ns_agents", "pin1", []netip.Addr{netip.MustParseAddr("203.0.113.10")}, 67500 * time.Millisecond},
	}
	if len(pin.calls) != 2 || pin.calls[0].set > pin.calls[1].set {
		pin.calls = append(pin.calls[1:], pin.calls[0])
	}
	for i := range want {
		if i >= len(pin.calls) || pin.calls[i].set != want[i].set || pin.calls[i].addrs[0] != want[i].addrs[0] || pin.calls[i].timeout != want[i].timeout {
			t.Fatalf("pins = %+v, want %+v", pin.calls, want)
		}
	}
	// Asked again within the pin: no netlink call.
	r.Answer(context.Background(), allowSrc, query("api.example.com.", dns.TypeA))
	if len(pin.calls) != 2 {
		t.Fatalf("second answer pinned again: %+v", pin.calls)
	}
}

func TestUnlistedRefusedNeverForwarded(t *testing.T) {
	r, up, pin, dir := newTestResolver(t)
	for _, name := range []string{"evil.test.", "example.com.", "xexample.com.", "secret-data.evil.test."} {
		resp := r.Answer(context.Background(), allowSrc, query(name, dns.TypeA))
		if resp.Rcode != dns.RcodeRefused {
			t.Fatalf("%s: rcode %s, want REFUSED", name, dns.RcodeToString[resp.Rcode])
		}
	}
	if len(up.asked) != 0 || len(pin.calls) != 0 {
		t.Fatalf("upstream asked %v, pins %v; want none", up.asked, pin.calls)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "agents.log"))
	if !strings.Contains(string(b), "1970-01-01T00:00:00Z refused A evil.test: allow with: domain evil.test\n") {
		t.Fatalf("denial log:\n%s", b)
	}
	// A query from an address no policy names is refused too.
	if resp := r.Answer(context.Background(), netip.MustParseAddr("10.10.9.9"), query("api.example.com.", dns.TypeA)); resp.Rcode != dns.RcodeRefused {
		t.Fatalf("unknown source: rcode %d", resp.Rcode)
	}
}

func TestCNAMEChain(t *testing.T) {
	r, up, pin, _ := newTestResolver(t)
	resp := r.Answer(context.Background(), allowSrc, query("www.example.com.", dns.TypeA))
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 3 {
		t.Fatalf("answer = %v, want the chain of 3 without the unrelated record", resp)
	}
	if len(pin.calls) != 1 || pin.calls[0].addrs[0] != netip.MustParseAddr("203.0.113.20") || pin.calls[0].timeout != 675*time.Second {
		t.Fatalf("pins = %+v, want 203.0.113.20 for its TTL of 600 s and an eighth", pin.calls)
	}
	// The chain's names are now allowed (what resolving the name needs).
	if resp := r.Answer(context.Background(), allowSrc, query("last.cdn.test.", dns.TypeA)); resp.Rcode == dns.RcodeRefused {
		t.Fatalf("CNAME target: rcode %s", dns.RcodeToString[resp.Rcode])
	}
	if resp := r.Answer(context.Background(), allowSrc, query("unrelated.test.", dns.TypeA)); resp.Rcode != dns.RcodeRefused {
		t.Fatalf("unrelated record's name: rcode %s", dns.RcodeToString[resp.Rcode])
	}
	if strings.Join(up.asked, " ") != "www.example.com. last.cdn.test." {
		t.Fatalf("upstream asked %v", up.asked)
	}
}

func TestAAAAAndOtherTypes(t *testing.T) {
	r, up, _, _ := newTestResolver(t)
	for _, qt := range []uint16{dns.TypeAAAA, dns.TypeHTTPS, dns.TypeTXT} {
		resp := r.Answer(context.Background(), allowSrc, query("api.example.com.", qt))
		if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 0 {
			t.Fatalf("%s: %v, want an empty answer", dns.TypeToString[qt], resp)
		}
	}
	if len(up.asked) != 0 {
		t.Fatalf("upstream asked %v", up.asked)
	}
}

func TestOpenForwardsAll(t *testing.T) {
	r, up, pin, _ := newTestResolver(t)
	resp := r.Answer(context.Background(), openSrc, query("evil.test.", dns.TypeA))
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 || len(up.asked) != 1 || len(pin.calls) != 0 {
		t.Fatalf("open: %v, asked %v, pins %v", resp, up.asked, pin.calls)
	}
}

func TestPolicyReloadKeepsUnchanged(t *testing.T) {
	r, _, pin, _ := newTestResolver(t)
	r.Answer(context.Background(), allowSrc, query("api.example.com.", dns.TypeA))
	n := len(pin.calls)
	r.mu.RLock()
	raw := r.nss[allowSrc].raw
	r.mu.RUnlock()
	r.SetPolicies(map[string][]byte{"a.json": raw})
	r.Answer(context.Background(), allowSrc, query("api.example.com.", dns.TypeA))
	if len(pin.calls) != n {
		t.Fatalf("an unchanged policy forgot its pins")
	}
	if r.Answer(context.Background(), openSrc, query("evil.test.", dns.TypeA)).Rcode != dns.RcodeRefused {
		t.Fatalf("a removed policy still answers")
	}
}

// TestUDPExchanger talks to a real server on loopback.
func TestUDPExchanger(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, m *dns.Msg) {
		r := new(dns.Msg)
		r.SetReply(m)
		a, _ := dns.NewRR(m.Question[0].Name + " 5 IN A 192.0.2.1")
		r.Answer = []dns.RR{a}
		w.WriteMsg(r)
	})}
	go srv.ActivateAndServe()
	defer srv.Shutdown()
	resp, err := (&UDPExchanger{}).Exchange(context.Background(), query("x.test.", dns.TypeA), netip.MustParseAddrPort(pc.LocalAddr().String()))
	if err != nil || len(resp.Answer) != 1 {
		t.Fatalf("Exchange = %v, %v", resp, err)
	}
}

// TestRefreshFirst: a namespace whose policy arrived after the last reload
// is answered, not refused: Answer refreshes first.
func TestRefreshFirst(t *testing.T) {
	r, _, _, _ := newTestResolver(t)
	late := netpolicy.Policy{Name: "late", Addr: netip.MustParseAddr("10.10.0.9"), Mode: "open", Upstream: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53")}}
	refreshed := 0
	r.Refresh = func() {
		refreshed++
		r.SetPolicies(map[string][]byte{"late.json": late.Marshal()})
	}
	if resp := r.Answer(context.Background(), late.Addr, query("evil.test.", dns.TypeA)); resp.Rcode != dns.RcodeSuccess || refreshed != 1 {
		t.Fatalf("query from a namespace not yet loaded: %s after %d refreshes, want NOERROR after 1", dns.RcodeToString[resp.Rcode], refreshed)
	}
}

// TestEscapedLabels: a label holding a dot ("evil.example", written
// evil\.example) makes the name read as if it ended in .example.com while
// its labels are x, evil.example and com: a name under com, not under
// example.com. Such names, and every other byte no host name has, are
// refused and never forwarded.
func TestEscapedLabels(t *testing.T) {
	r, up, _, _ := newTestResolver(t)
	for _, name := range []string{
		`x.evil\.example.com.`,
		`evil\.example.com.`,
		`a\.api.example.com.`,
		`x\000.example.com.`,
		`x\ y.example.com.`,
		`x\\.example.com.`,
	} {
		// The wire form, as a client sends it.
		b, err := query(name, dns.TypeA).Pack()
		if err != nil {
			t.Fatalf("pack %s: %v", name, err)
		}
		q := new(dns.Msg)
		if err := q.Unpack(b); err != nil {
			t.Fatal(err)
		}
		if resp := r.Answer(context.Background(), allowSrc, q); resp.Rcode != dns.RcodeRefused {
			t.Errorf("%s: %s, want REFUSED", name, dns.RcodeToString[resp.Rcode])
		}
	}
	if len(up.asked) != 0 {
		t.Fatalf("upstream asked %q", up.asked)
	}
}
