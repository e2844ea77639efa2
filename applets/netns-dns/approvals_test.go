package netnsdns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// clock is a test's time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const owner, stranger = 1000, 1001

// newApproveResolver is newTestResolver's namespace "agents" owned by uid
// 1000, with a deny line, as change leaves it.
func newApproveResolver(t *testing.T, change func(*netpolicy.Policy)) (*Resolver, *fakePinner, *clock) {
	t.Helper()
	r, up, pin, _ := newTestResolver(t)
	up.zone["paste.test."] = []dns.RR{rr(t, "paste.test. 60 IN A 203.0.113.77")}
	up.zone["other.evil.test."] = []dns.RR{rr(t, "other.evil.test. 60 IN A 203.0.113.67")}
	p := netpolicy.Policy{Name: "agents", Addr: allowSrc, Mode: "allowlist", Upstream: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53")},
		Table: "claude_sandbox_ns_agents", Owners: []uint32{owner}, Deny: []string{"paste.test"},
		Domains: []netpolicy.PolicyDomain{{Pattern: "api.example.com", Sets: []string{"pin0"}, Ports: []string{"tcp 443"}, Source: "config f:3"}}}
	if change != nil {
		change(&p)
	}
	if errs := r.SetPolicies(map[string][]byte{"a.json": p.Marshal()}); errs != nil {
		t.Fatal(errs)
	}
	c := &clock{t: time.Unix(1000, 0)}
	r.now = c.now
	r.hub.owns = r.owns
	return r, pin, c
}

func rcode(r *Resolver, name string, qtype uint16) string {
	return dns.RcodeToString[r.Answer(context.Background(), allowSrc, query(name, qtype)).Rcode]
}

func TestApprovalOpensNameAndItsAddresses(t *testing.T) {
	r, pin, _ := newApproveResolver(t, nil)
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" {
		t.Fatalf("before the approval: %s, want REFUSED", got)
	}
	rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "Evil.Test.", Scope: netctl.ScopeAlways, Ports: []string{"tcp 22", "udp 3478"}})
	if rep.Error != "" {
		t.Fatalf("allow by the owner: %s", rep.Error)
	}
	resp := r.Answer(context.Background(), allowSrc, query("evil.test.", dns.TypeA))
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 {
		t.Fatalf("approved name: %v", resp)
	}
	if got, want := pin.flowList(), []string{"203.0.113.66 tcp 22", "203.0.113.66 udp 3478"}; !slices.Equal(got, want) {
		t.Fatalf("approved set = %v, want %v", got, want)
	}
	if got := rcode(r, "other.evil.test.", dns.TypeA); got != "REFUSED" {
		t.Fatalf("a name below the approved one: %s, want REFUSED", got)
	}
	list := r.Control(owner, netctl.Request{Op: netctl.OpList, Namespace: "agents"}).Allowances
	want := []netctl.Allowance{
		{Pattern: "api.example.com", Ports: []string{"tcp 443"}, Source: "config f:3"},
		{Pattern: "evil.test", Ports: []string{"tcp 22", "udp 3478"}, Source: "approval", Scope: "always", By: owner},
	}
	if len(list) != 2 || list[0].Source != want[0].Source || list[1].Pattern != want[1].Pattern || list[1].Scope != "always" || list[1].By != owner || !slices.Equal(list[1].Ports, want[1].Ports) {
		t.Fatalf("list = %+v, want %+v", list, want)
	}

	// Revoked: refused again, and its flows are gone.
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpRevoke, Namespace: "agents", Name: "evil.test"}); rep.Error != "" {
		t.Fatalf("revoke: %s", rep.Error)
	}
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" || len(pin.flowList()) != 0 {
		t.Fatalf("after revoke: %s, approved set %v; want REFUSED and empty", got, pin.flowList())
	}
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpRevoke, Namespace: "agents", Name: "evil.test"}); rep.Error != "no approval of evil.test in namespace agents (claude-sandbox net list shows them)" {
		t.Fatalf("revoke again: %q", rep.Error)
	}
}

func TestApprovalRefusals(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	for _, tt := range []struct {
		name string
		uid  uint32
		req  netctl.Request
		want string
	}{
		{"stranger", stranger, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test"},
			"uid 1001 is not an owner of namespace agents: its owner is the user of a namespace NAME-UID, or one an approvers line of netns-firewall.conf names (a user, or a group of theirs)"},
		{"stranger lists", stranger, netctl.Request{Op: netctl.OpList, Namespace: "agents"},
			"uid 1001 is not an owner of namespace agents: its owner is the user of a namespace NAME-UID, or one an approvers line of netns-firewall.conf names (a user, or a group of theirs)"},
		{"stranger watches", stranger, netctl.Request{Op: netctl.OpWatch, Namespace: "agents"},
			"uid 1001 is not an owner of namespace agents: its owner is the user of a namespace NAME-UID, or one an approvers line of netns-firewall.conf names (a user, or a group of theirs)"},
		{"denied", owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "paste.test"},
			"paste.test is denied in namespace agents (deny lines of netns-firewall.conf): no approval can open it"},
		{"no namespace", owner, netctl.Request{Op: netctl.OpAllow, Namespace: "nope", Name: "evil.test"},
			"namespace nope has no policy netns-dns knows: is it up (sudo netns-setup up nope)?"},
		{"no session", owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeSession},
			"no launcher session of namespace agents is running: allow --once or --always"},
		{"scope", owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: "forever"},
			`scope forever: use once, session or always`},
		{"tld", owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "*.test"},
			`name: "*.test": a top-level domain alone: name a domain below it`},
		{"ports", owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Ports: []string{"tcp 1-100"}},
			"ports: 100 ports, more than 64: name fewer (an approval opens each port of each address)"},
		{"op", owner, netctl.Request{Op: "grant", Namespace: "agents"},
			"unknown op grant: use list, denials, allow, revoke, watch, session or owned"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if rep := r.Control(tt.uid, tt.req); rep.Error != tt.want {
				t.Fatalf("Control(%d, %+v) error %q, want %q", tt.uid, tt.req, rep.Error, tt.want)
			}
		})
	}
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" {
		t.Fatalf("after refused approvals: %s, want REFUSED", got)
	}
	if rep := r.Control(0, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test"}); rep.Error != "" {
		t.Fatalf("root's approval: %s", rep.Error)
	}
	if got := r.Control(stranger, netctl.Request{Op: netctl.OpOwned}).Namespaces; got != nil {
		t.Fatalf("a stranger's namespaces: %v, want none", got)
	}
	if got := r.Control(owner, netctl.Request{Op: netctl.OpOwned}).Namespaces; !slices.Equal(got, []string{"agents"}) {
		t.Fatalf("the owner's namespaces: %v, want [agents]", got)
	}

	no, _, _ := newApproveResolver(t, func(p *netpolicy.Policy) { p.UserApprove = netpolicy.UserApproveNo })
	if rep := no.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test"}); rep.Error != "namespace agents does not take approvals (user-approve no): ask an administrator for a domain line" {
		t.Fatalf("user-approve no: %q", rep.Error)
	}
}

// watch subscribes uid to ns's events.
func watch(r *Resolver, uid uint32, ns string, session bool) *subscriber {
	s := &subscriber{uid: uid, nss: []string{ns}, session: session, asks: true, events: make(chan netctl.Event, eventBuffer)}
	r.hub.add(s)
	return s
}

func nextEvent(t *testing.T, s *subscriber) netctl.Event {
	t.Helper()
	select {
	case e := <-s.events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return netctl.Event{}
	}
}

// hold sends q as the UDP server does, returning the channel of its
// later reply, or nil when it was answered at once.
func handle(t *testing.T, r *Resolver, q *dns.Msg) (now *dns.Msg, later chan *dns.Msg) {
	later = make(chan *dns.Msg, 4)
	now = r.Handle(context.Background(), allowSrc, q, func(m *dns.Msg) { later <- m })
	return now, later
}

func TestHeldQueryAnsweredByApproval(t *testing.T) {
	r, pin, _ := newApproveResolver(t, nil)
	// Nobody listens: refused at once.
	if now, _ := handle(t, r, query("evil.test.", dns.TypeA)); now == nil || now.Rcode != dns.RcodeRefused {
		t.Fatalf("without a watcher: %v, want REFUSED at once", now)
	}
	w := watch(r, owner, "agents", false)
	q := query("evil.test.", dns.TypeA)
	now, first := handle(t, r, q)
	if now != nil {
		t.Fatalf("with the owner watching: answered at once %v, want held", now)
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventHeld || e.Name != "evil.test" || e.Type != "A" || e.Until != time.Unix(1000, 0).Add(DefaultHold) {
		t.Fatalf("event %+v, want held evil.test A until +%s", e, DefaultHold)
	}
	// Its retransmission (same id) takes its place; the AAAA query of the
	// same lookup joins the hold.
	now, again := handle(t, r, q.Copy())
	if now != nil {
		t.Fatal("retransmission answered at once")
	}
	if m := <-first; m != nil {
		t.Fatalf("the replaced copy got %v, want nothing", m)
	}
	q6 := query("evil.test.", dns.TypeAAAA)
	_, later6 := handle(t, r, q6)
	if n := r.holds.held("agents"); n != 2 {
		t.Fatalf("held %d, want 2", n)
	}
	if e := len(w.events); e != 0 {
		t.Fatalf("%d more events for the same name, want none", e)
	}
	rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeOnce})
	if rep.Error != "" || rep.Held != 2 {
		t.Fatalf("allow: %+v, want 2 held answered", rep)
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventApproved || e.Scope != "once" {
		t.Fatalf("event %+v, want approved once", e)
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventReleased || !e.Answered {
		t.Fatalf("event %+v, want released answered", e)
	}
	if m := <-later6; m == nil || m.Rcode != dns.RcodeSuccess {
		t.Fatalf("held AAAA: %v, want NOERROR", m)
	}
	if m := <-again; m == nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
		t.Fatalf("held A (its retransmission): %v, want NOERROR with the address", m)
	}
	if got := pin.flowList(); !slices.Equal(got, []string{"203.0.113.66 tcp 443", "203.0.113.66 tcp 80"}) {
		t.Fatalf("approved set %v, want the default ports of 203.0.113.66", got)
	}
}

func TestHeldQueryRefusedAfterHold(t *testing.T) {
	r, _, c := newApproveResolver(t, func(p *netpolicy.Policy) { p.HoldMS = 1500 })
	w := watch(r, owner, "agents", true)
	now, later := handle(t, r, query("evil.test.", dns.TypeA))
	if now != nil {
		t.Fatalf("answered at once: %v", now)
	}
	nextEvent(t, w)
	c.add(1499 * time.Millisecond)
	r.SweepHolds()
	if len(later) != 0 {
		t.Fatal("released before its hold ended")
	}
	c.add(time.Millisecond)
	r.SweepHolds()
	if m := <-later; m == nil || m.Rcode != dns.RcodeRefused {
		t.Fatalf("after the hold: %v, want REFUSED", m)
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventReleased || e.Answered {
		t.Fatalf("event %+v, want released, not answered", e)
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventRefused || e.Name != "evil.test" {
		t.Fatalf("event %+v, want refused evil.test", e)
	}
	d := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents"}).Denials
	if len(d) != 1 || d[0].Name != "evil.test" || d[0].Count != 1 || !d[0].Approvable {
		t.Fatalf("denials %+v, want evil.test once, approvable", d)
	}
	// Denied names and user-approve yes are never held.
	if now, _ := handle(t, r, query("paste.test.", dns.TypeA)); now == nil || now.Rcode != dns.RcodeRefused {
		t.Fatalf("a denied name: %v, want REFUSED at once", now)
	}
	d = r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents"}).Denials
	if len(d) != 2 || d[1].Name != "paste.test" || d[1].Approvable {
		t.Fatalf("denials %+v, want paste.test not approvable", d)
	}
	yes, _, _ := newApproveResolver(t, func(p *netpolicy.Policy) { p.UserApprove = netpolicy.UserApproveYes })
	watch(yes, owner, "agents", false)
	if now, _ := handle(t, yes, query("evil.test.", dns.TypeA)); now == nil || now.Rcode != dns.RcodeRefused {
		t.Fatalf("user-approve yes: %v, want REFUSED at once", now)
	}
}

func TestRevokeTakesCNAMETargets(t *testing.T) {
	r, pin, _ := newApproveResolver(t, nil)
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "www.example.com", Scope: netctl.ScopeAlways, Ports: []string{"tcp 22"}}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if got := rcode(r, "www.example.com.", dns.TypeA); got != "NOERROR" || !slices.Equal(pin.flowList(), []string{"203.0.113.20 tcp 22"}) {
		t.Fatalf("approved CNAME chain: %s, flows %v", got, pin.flowList())
	}
	if got := rcode(r, "last.cdn.test.", dns.TypeA); got != "NXDOMAIN" {
		t.Fatalf("its CNAME target: %s, want NXDOMAIN (forwarded: the fake upstream has no record of it alone)", got)
	}
	r.Control(owner, netctl.Request{Op: netctl.OpRevoke, Namespace: "agents", Name: "www.example.com"})
	if got := rcode(r, "last.cdn.test.", dns.TypeA); got != "REFUSED" || len(pin.flowList()) != 0 {
		t.Fatalf("its CNAME target after revoke: %s, flows %v; want REFUSED and none", got, pin.flowList())
	}
}

func TestSessionApprovalEndsWithLastSession(t *testing.T) {
	r, pin, _ := newApproveResolver(t, nil)
	s1, s2 := watch(r, owner, "agents", true), watch(r, owner, "agents", true)
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeSession}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	r.endSessions(r.hub.remove(s1))
	if got := rcode(r, "evil.test.", dns.TypeA); got != "NOERROR" {
		t.Fatalf("one session left: %s, want NOERROR", got)
	}
	r.endSessions(r.hub.remove(s2))
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" || len(pin.flowList()) != 0 {
		t.Fatalf("no session left: %s, flows %v; want REFUSED and none", got, pin.flowList())
	}
}

func TestOnceApprovalEnds(t *testing.T) {
	r, _, c := newApproveResolver(t, nil)
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test"}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	c.add(netctl.OnceWindow - time.Second)
	if got := rcode(r, "evil.test.", dns.TypeA); got != "NOERROR" {
		t.Fatalf("within the window: %s", got)
	}
	if got := rcode(r, "evil.test.", dns.TypeAAAA); got != "NOERROR" {
		t.Fatalf("its AAAA: %s", got)
	}
	c.add(onceGrace)
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" {
		t.Fatalf("after its answer: %s, want REFUSED", got)
	}
}

func TestAlwaysApprovalSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	r, _, _ := newApproveResolver(t, nil)
	r.approvals.dir = dir
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "*.evil.test", Scope: netctl.ScopeAlways}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "once.test"}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	again, _, _ := newApproveResolver(t, nil)
	again.approvals.dir = dir
	if errs := again.approvals.load(); errs != nil {
		t.Fatal(errs)
	}
	if got := rcode(again, "other.evil.test.", dns.TypeA); got != "NOERROR" {
		t.Fatalf("after a restart: %s, want NOERROR", got)
	}
	if l := again.approvals.list("agents", again.clock()); len(l) != 1 || l[0].Pattern != "*.evil.test" {
		t.Fatalf("approvals after a restart %+v, want the always one alone", l)
	}
}

func TestDenialsKeepDrops(t *testing.T) {
	r, _, c := newApproveResolver(t, nil)
	r.dropped("agents", "tcp", netip.MustParseAddr("203.0.113.7"), 22)
	c.add(time.Second)
	rcode(r, "evil.test.", dns.TypeA)
	rcode(r, "evil.test.", dns.TypeA)
	d := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents"}).Denials
	if len(d) != 2 || d[0].Drop != "tcp 203.0.113.7:22" || d[0].Approvable || d[1].Name != "evil.test" || d[1].Count != 2 || !d[1].Approvable {
		t.Fatalf("denials %+v, want the drop, then evil.test twice", d)
	}
	if d := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents", Since: time.Unix(1000, 0).Add(time.Second)}).Denials; len(d) != 1 || d[0].Name != "evil.test" {
		t.Fatalf("denials since the drop %+v, want evil.test alone", d)
	}
}

// FuzzControl: whatever another user sends on the control socket, it is
// refused and changes nothing; whatever the owner sends, nothing panics.
func FuzzControl(f *testing.F) {
	f.Add("allow", "agents", "evil.test", "always", "tcp 22")
	f.Add("revoke", "agents", "*.evil.test", "", "")
	f.Add("session", "agents", "", "", "udp 1-65535")
	f.Add("owned", "", "x\x00y", "once", "tcp")
	f.Fuzz(func(t *testing.T, op, ns, name, scope, ports string) {
		r, _, _ := newApproveResolver(t, nil)
		req := netctl.Request{Op: op, Namespace: ns, Name: name, Scope: scope}
		if ports != "" {
			req.Ports = []string{ports}
		}
		rep := r.Control(stranger, req)
		if op != netctl.OpOwned && !(op == netctl.OpWatch && ns == "") && rep.Error == "" {
			t.Fatalf("a stranger's %+v: %+v, want an error", req, rep)
		}
		if len(rep.Namespaces) != 0 || len(r.approvals.list("agents", r.clock())) != 0 {
			t.Fatalf("a stranger's %+v changed something: %+v", req, rep)
		}
		r.Control(owner, req)
	})
}

// TestReady: anyone may ask whether a namespace is served; without the
// sockets of its inside table, or its policy, the answer says what to do.
func TestReady(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	if rep := r.Control(stranger, netctl.Request{Op: netctl.OpReady, Namespace: "agents"}); rep.Error != "" {
		t.Errorf("ready of a served namespace: %q, want none", rep.Error)
	}
	r.Inside = func(string, int64) Pinner { return nil }
	if rep := r.Control(stranger, netctl.Request{Op: netctl.OpReady, Namespace: "agents"}); rep.Error != "netns-dns lacks the sockets of the table inside namespace agents, and answers none of its names: sudo systemctl restart netns@agents" {
		t.Errorf("ready without the inside sockets: %q", rep.Error)
	}
	if rep := r.Control(stranger, netctl.Request{Op: netctl.OpReady, Namespace: "other"}); rep.Error != "netns-dns has no policy of namespace other: sudo systemctl restart netns@other" {
		t.Errorf("ready of an unknown namespace: %q", rep.Error)
	}
}

// TestHeldLookupRefusedPerQuery: a lookup's A and AAAA, held together,
// are two refusals when the hold runs out, as without it (the summary
// after a session names the A).
func TestHeldLookupRefusedPerQuery(t *testing.T) {
	r, _, c := newApproveResolver(t, func(p *netpolicy.Policy) { p.HoldMS = 1000 })
	watch(r, owner, "agents", true)
	aaaa := query("evil.test.", dns.TypeAAAA)
	aaaa.Id++
	for _, q := range []*dns.Msg{aaaa, query("evil.test.", dns.TypeA)} {
		if now, _ := handle(t, r, q); now != nil {
			t.Fatalf("answered at once: %v", now)
		}
	}
	c.add(time.Second)
	r.SweepHolds()
	var got []string
	for _, d := range r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents"}).Denials {
		got = append(got, d.Name+" "+d.Type)
	}
	slices.Sort(got)
	if want := []string{"evil.test A", "evil.test AAAA"}; !slices.Equal(got, want) {
		t.Fatalf("denials after the hold: %q, want %q", got, want)
	}
}

// TestDenialsOfHostileNamesFitOneLine: the sandbox chooses the names it
// is refused; a thousand of them, each as long as DNS allows and made of
// the bytes JSON writes longest, still make a denials reply that a client
// (the launcher's summary, claude-sandbox net denials) can read: the
// sandbox cannot hide its refusals behind a reply too long to read.
func TestDenialsOfHostileNamesFitOneLine(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	for _, fill := range []string{"<", `"`} {
		for i := range maxRecent {
			l := strings.Repeat(fill, 63)
			name := fmt.Sprintf("%s.%s.%s.%04d%s.", l, l, l, i, strings.Repeat(fill, 55))
			if got := rcode(r, name, dns.TypeA); got != "REFUSED" {
				t.Fatalf("%s: %s, want REFUSED", name, got)
			}
		}
		rep := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents"})
		if len(rep.Denials) != maxRecent {
			t.Fatalf("%d denials, want %d", len(rep.Denials), maxRecent)
		}
		a, b := net.Pipe()
		go func() {
			netctl.NewConn(a).Send(rep)
			a.Close()
		}()
		var got netctl.Reply
		if err := netctl.NewConn(b).Recv(&got); err != nil {
			t.Fatalf("names of %q: the client reads the denials reply: %v", fill, err)
		}
		b.Close()
		if len(got.Denials) != maxRecent {
			t.Fatalf("names of %q: the client read %d denials, want %d", fill, len(got.Denials), maxRecent)
		}
	}
}

// TestRevokeRefusesHeldQuery: claude-sandbox-net(1) says a revoke given
// while a query of the name is held refuses that query now (the Deny of
// the launcher's notification is such a revoke): the query must not wait
// out its hold, nor be answered by an approval made in the meantime.
func TestRevokeRefusesHeldQuery(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	w := watch(r, owner, "agents", true)
	now, later := handle(t, r, query("evil.test.", dns.TypeA))
	if now != nil {
		t.Fatalf("answered at once: %v", now)
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventHeld {
		t.Fatalf("event %+v, want held", e)
	}
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpRevoke, Namespace: "agents", Name: "evil.test"}); rep.Error != "" {
		t.Fatalf("revoke of a held name: %s", rep.Error)
	}
	select {
	case m := <-later:
		if m == nil || m.Rcode != dns.RcodeRefused {
			t.Fatalf("after the revoke: %v, want REFUSED", m)
		}
	default:
		t.Fatal("after the revoke the query is still held")
	}
	if e := nextEvent(t, w); e.Kind != netctl.EventReleased || e.Answered {
		t.Fatalf("event %+v, want released, not answered", e)
	}
	if r.holds.held("agents") != 0 {
		t.Fatalf("%d queries still held", r.holds.held("agents"))
	}
}

// TestSessionApprovalNotKeptPastLastSession: a session approval made
// while the last session of its namespace ends must end with it, not
// stay until netns-dns stops (the session's end removed the session
// approvals between the check that one runs and the approval's record).
func TestSessionApprovalNotKeptPastLastSession(t *testing.T) {
	r, _, c := newApproveResolver(t, nil)
	s := watch(r, owner, "agents", true)
	calls := 0
	r.now = func() time.Time {
		// The allow reads the clock twice: in its checks (the session
		// runs), then to record the approval; the session ends between.
		if calls++; calls == 2 {
			r.endSessions(r.hub.remove(s))
		}
		return c.now()
	}
	rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeSession})
	r.now = c.now
	if calls < 2 {
		t.Fatalf("the allow read the clock %d times: the session did not end during it", calls)
	}
	if l := r.approvals.list("agents", c.now()); len(l) != 0 {
		t.Fatalf("approvals %+v after the last session ended, want none", l)
	}
	if want := "no launcher session of namespace agents is running: allow --once or --always"; rep.Error != want {
		t.Fatalf("allow: %q, want %q", rep.Error, want)
	}
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" {
		t.Fatalf("evil.test after the session: %s, want REFUSED", got)
	}
}

// TestQueriesDoNotWaitForApprovalFiles: while an always approval's file is
// being written (a slow disk, or an owner looping allow and revoke), the
// queries of every namespace are answered: they never wait for the disk.
func TestQueriesDoNotWaitForApprovalFiles(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	r.approvals.dir = t.TempDir()
	writing, release := make(chan struct{}), make(chan struct{})
	r.approvals.write = func(string, []byte) error {
		close(writing)
		<-release
		return nil
	}
	done := make(chan netctl.Reply)
	go func() {
		done <- r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeAlways})
	}()
	<-writing
	answered := make(chan string)
	go func() { answered <- rcode(r, "api.example.com.", dns.TypeA) }()
	select {
	case got := <-answered:
		if got != "NOERROR" {
			t.Errorf("an allowed name while the file is written: %s, want NOERROR", got)
		}
	case <-done:
		t.Fatal("the approval ended before its file was written")
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a query waited for the approvals file to be written")
	}
	if got := rcode(r, "evil.test.", dns.TypeA); got != "REFUSED" {
		t.Errorf("the approved name before its file is written: %s, want REFUSED", got)
	}
	close(release)
	if rep := <-done; rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if got := rcode(r, "evil.test.", dns.TypeA); got != "NOERROR" {
		t.Errorf("the approved name once its file is written: %s, want NOERROR", got)
	}
}

// TestRestartEmptiesApprovedSet: a netns-dns that starts (a restart, an
// upgrade, a crash) cannot tell which approval pinned the flows already in
// a namespace's approved set, so it empties it: after a restart, neither
// a revoke of an always approval nor the end of a session could take them
// out, and they would last up to the pins' timeout (a day's TTL).
func TestRestartEmptiesApprovedSet(t *testing.T) {
	for _, scope := range []string{netctl.ScopeAlways, netctl.ScopeSession} {
		t.Run(scope, func(t *testing.T) {
			r, pin, _ := newApproveResolver(t, nil)
			if scope == netctl.ScopeSession {
				watch(r, owner, "agents", true)
			}
			if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: scope}); rep.Error != "" {
				t.Fatal(rep.Error)
			}
			if got := rcode(r, "evil.test.", dns.TypeA); got != "NOERROR" || len(pin.flowList()) == 0 {
				t.Fatalf("approved: %s, flows %v", got, pin.flowList())
			}
			// The new process: the same tables, nothing in memory.
			r2 := &Resolver{Pinner: pin, Upstream: r.Upstream, Log: r.Log, PinFloor: r.PinFloor}
			if errs := r2.SetPolicies(map[string][]byte{"a.json": r.namespaceOf("agents").raw}); errs != nil {
				t.Fatal(errs)
			}
			if got := pin.flowList(); len(got) != 0 {
				t.Fatalf("approved set after the restart: %v, want it empty (flows nobody can revoke)", got)
			}
		})
	}
}

// TestTakeOverEmptiesApprovedSets: a new socket of the table inside (up,
// or guard at its start) empties both approved sets; the flows of a live
// approval come back at the next answer.
func TestTakeOverEmptiesApprovedSets(t *testing.T) {
	r, pin, _ := newApproveResolver(t, nil)
	in := &fakePinner{}
	r.Inside = func(string, int64) Pinner { return in }
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeAlways}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	rcode(r, "evil.test.", dns.TypeA)
	r.ResetFlows("agents")
	if len(pin.flowList()) != 0 || len(in.flowList()) != 0 || in.flushes != 1 {
		t.Fatalf("after the take-over: host %v, inside %v (%d flushes); want both empty", pin.flowList(), in.flowList(), in.flushes)
	}
	rcode(r, "evil.test.", dns.TypeA)
	if got, want := in.flowList(), []string{"203.0.113.66 tcp 443", "203.0.113.66 tcp 80"}; !slices.Equal(got, want) || !slices.Equal(pin.flowList(), want) {
		t.Fatalf("next answer: inside %v, host %v; want %v in both", got, pin.flowList(), want)
	}
}

// TestOnceFlowsLastTheFloor: a once approval's flows are pinned for the
// pin floor, not for the answer's TTL (a day), and revoke takes them out
// after the approval ended.
func TestOnceFlowsLastTheFloor(t *testing.T) {
	r, pin, c := newApproveResolver(t, nil)
	r.Upstream.(*fakeUpstream).zone["day.test."] = []dns.RR{rr(t, "day.test. 86400 IN A 203.0.113.90")}
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "day.test", Scope: netctl.ScopeOnce, Ports: []string{"tcp 443"}}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if got := rcode(r, "day.test.", dns.TypeA); got != "NOERROR" {
		t.Fatalf("once approval: %s", got)
	}
	f := nft.Flow{Addr: netip.MustParseAddr("203.0.113.90"), Proto: "tcp", Port: 443}
	if got := pin.flowTimeouts[f]; got != r.PinFloor {
		t.Fatalf("once flow pinned for %s, want the pin floor %s", got, r.PinFloor)
	}
	c.add(time.Minute) // the approval has ended; its flow has not
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpRevoke, Namespace: "agents", Name: "day.test"}); rep.Error != "" {
		t.Fatalf("revoke of an ended once approval with an open flow: %q", rep.Error)
	}
	if got := pin.flowList(); len(got) != 0 {
		t.Fatalf("after revoke: %v, want no flow", got)
	}
}

// TestHoldOnlyWhenSomeoneCanAnswer: a launcher session that cannot show
// a notification is nobody who can answer: its namespace's refused names
// are refused at once, not held for the hold time (glibc's retry made
// that 8 s a lookup). A watch, or a session that can ask, holds.
func TestHoldOnlyWhenSomeoneCanAnswer(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	s := &subscriber{uid: owner, nss: []string{"agents"}, session: true, events: make(chan netctl.Event, eventBuffer)}
	r.hub.add(s)
	if now, _ := handle(t, r, query("evil.test.", dns.TypeA)); now == nil || now.Rcode != dns.RcodeRefused {
		t.Fatalf("with a session that cannot ask: %v, want REFUSED at once", now)
	}
	r.hub.remove(s)
	s.asks = true
	r.hub.add(s)
	if now, _ := handle(t, r, query("evil.test.", dns.TypeA)); now != nil {
		t.Fatalf("with a session that can ask: %v, want it held", now)
	}
}

// TestRetryAfterHoldRefusedAtOnce: the stub's retry of a query whose hold
// just ran out is refused at once, not held again: one hold per lookup.
func TestRetryAfterHoldRefusedAtOnce(t *testing.T) {
	r, _, c := newApproveResolver(t, func(p *netpolicy.Policy) { p.HoldMS = 1500 })
	w := watch(r, owner, "agents", false)
	q := query("evil.test.", dns.TypeA)
	if now, _ := handle(t, r, q); now != nil {
		t.Fatalf("first query: %v, want it held", now)
	}
	c.add(1500 * time.Millisecond)
	r.SweepHolds()
	if now, _ := handle(t, r, q); now == nil || now.Rcode != dns.RcodeRefused {
		t.Fatalf("retry after the hold ran out: %v, want REFUSED at once", now)
	}
	holds := 0
	for len(w.events) > 0 {
		if e := <-w.events; e.Kind == netctl.EventHeld {
			holds++
		}
	}
	if holds != 1 {
		t.Fatalf("%d holds for one lookup and its retry, want 1", holds)
	}
	c.add(1500 * time.Millisecond)
	r.SweepHolds()
	if now, _ := handle(t, r, query("evil.test.", dns.TypeA)); now != nil {
		t.Fatalf("a lookup a hold's time later: %v, want it held", now)
	}
}

// TestHoldsPerNameBound: one name's flood holds maxHeldPerName queries;
// the rest of it is refused at once, and another name is still held.
func TestHoldsPerNameBound(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	watch(r, owner, "agents", false)
	for i := range maxHeldPerName {
		q := query("evil.test.", dns.TypeA)
		q.Id = uint16(i + 1)
		if now, _ := handle(t, r, q); now != nil {
			t.Fatalf("query %d: %v, want it held", i, now)
		}
	}
	q := query("evil.test.", dns.TypeA)
	q.Id = maxHeldPerName + 1
	if now, _ := handle(t, r, q); now == nil || now.Rcode != dns.RcodeRefused {
		t.Fatalf("query %d of one name: %v, want REFUSED at once", maxHeldPerName+1, now)
	}
	if now, _ := handle(t, r, query("other.evil.test.", dns.TypeA)); now != nil {
		t.Fatalf("another name after the flood: %v, want it held", now)
	}
}

// TestSummaryIsTheSessionsOwn: five sessions one after the other, each
// refusing a name of its own whose hold runs out at a different time
// (before the session ends, or not yet when it ends), each list exactly
// their own name: what is still held at the end is refused then, and a
// hold that runs out later is listed at the time it was asked, not in the
// next session's list.
func TestSummaryIsTheSessionsOwn(t *testing.T) {
	r, _, c := newApproveResolver(t, func(p *netpolicy.Policy) { p.HoldMS = 2000 })
	for i := range 5 {
		start := c.now()
		s := watch(r, owner, "agents", true)
		c.add(100 * time.Millisecond)
		name := fmt.Sprintf("n%d.evil.test", i)
		if now, _ := handle(t, r, query(name+".", dns.TypeA)); now != nil {
			t.Fatalf("session %d: %s answered at once: %v", i, name, now)
		}
		c.add(time.Duration(i) * 700 * time.Millisecond) // 0, 0.7, 1.4 s: held at the end; 2.1, 2.8 s: ran out
		r.SweepHolds()
		r.endSessions(r.hub.remove(s))
		d := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents", Since: start, EndHolds: true}).Denials
		var got []string
		for _, x := range d {
			got = append(got, x.Name)
		}
		if !slices.Equal(got, []string{name}) {
			t.Fatalf("session %d lists %v, want exactly [%s]", i, got, name)
		}
		c.add(time.Second)
	}
	// A launcher that died without its summary: its hold runs out
	// in the next session, which must not list it.
	q := "late.evil.test."
	s := watch(r, owner, "agents", true)
	handle(t, r, query(q, dns.TypeA))
	r.endSessions(r.hub.remove(s))
	c.add(time.Second)
	next := c.now()
	c.add(2 * time.Second)
	r.SweepHolds()
	d := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents", Since: next, EndHolds: true}).Denials
	if len(d) != 0 {
		t.Fatalf("the next session lists %+v, want nothing (late.evil.test was asked before it began)", d)
	}
}

// TestOtherClassListedWithItsClass: a CHAOS query of an allowed name is
// listed with its class, and is not approvable (no advice to allow it):
// else the sandbox could plant "refused A allowed.test ... net allow
// allowed.test --always" in the user's summary.
func TestOtherClassListedWithItsClass(t *testing.T) {
	r, _, _ := newApproveResolver(t, nil)
	q := query("api.example.com.", dns.TypeTXT)
	q.Question[0].Qclass = dns.ClassCHAOS
	if got := r.Answer(context.Background(), allowSrc, q); got.Rcode != dns.RcodeRefused {
		t.Fatalf("CHAOS query: %v, want REFUSED", got)
	}
	d := r.Control(owner, netctl.Request{Op: netctl.OpDenials, Namespace: "agents"}).Denials
	if len(d) != 1 || d[0].Type != "CH TXT" || d[0].Approvable {
		t.Fatalf("denials %+v, want one CH TXT of api.example.com, not approvable", d)
	}
	if cmd, _ := netctl.Advice(d[0], netctl.ScopeAlways, ""); cmd != "" {
		t.Fatalf("advice %q for a CHAOS query, want none", cmd)
	}
}

// TestListShowsOpenFlows: net list shows each flow an approval's answers
// opened, with when it closes, and a once approval that ended stays
// listed (scope ended) while its flows are open, until they close.
func TestListShowsOpenFlows(t *testing.T) {
	r, _, c := newApproveResolver(t, nil)
	if rep := r.Control(owner, netctl.Request{Op: netctl.OpAllow, Namespace: "agents", Name: "evil.test", Scope: netctl.ScopeOnce, Ports: []string{"tcp 443"}}); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	rcode(r, "evil.test.", dns.TypeA)
	closes := c.now().Add(r.PinFloor)
	c.add(10 * time.Second) // the once approval has ended
	list := r.Control(owner, netctl.Request{Op: netctl.OpList, Namespace: "agents"}).Allowances
	want := netctl.Allowance{Pattern: "evil.test", Source: "approval", Scope: netctl.ScopeEnded,
		Flows: []netctl.OpenFlow{{Addr: "203.0.113.66", Proto: "tcp", Port: 443, Until: closes}}}
	if len(list) != 2 || !reflect.DeepEqual(list[1], want) {
		t.Fatalf("list after the once approval ended = %+v, want its open flow last: %+v", list, want)
	}
	c.add(r.PinFloor)
	if list := r.Control(owner, netctl.Request{Op: netctl.OpList, Namespace: "agents"}).Allowances; len(list) != 1 {
		t.Fatalf("list once the flow closed = %+v, want the domain line only", list)
	}
}
