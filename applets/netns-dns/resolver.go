package netnsdns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// DefaultPinFloor is the shortest time an answered address stays pinned.
// Programs keep addresses longer than their records' TTL: the JVM caches
// them 30 s whatever the TTL, browsers and HTTP clients about a minute,
// connection pools reconnect to an address they resolved minutes ago, and
// CDNs hand out TTLs of 20 to 60 s. An answer pinned for exactly its TTL
// would break such programs in ways that look random; 5 minutes covers
// them and still lets an address go soon after names stop resolving to it.
const DefaultPinFloor = 5 * time.Minute

// DefaultMaxTTL caps the TTL of an answer: its records' TTLs in the reply,
// how long its addresses stay pinned and its CNAME targets allowed. A
// server's TTL of 4294967295 would otherwise pin an address for 136 years.
const DefaultMaxTTL = 24 * time.Hour

// upstreamTimeout bounds one upstream query.
const upstreamTimeout = 3 * time.Second

// maxInflight is how many queries of one namespace may wait for the
// upstream at once; more get SERVFAIL at once. Each holds a socket and a
// goroutine until the upstream answers or times out, and netns-dns serves
// every namespace: without a bound, one sandbox asking names whose server
// never answers would use up its files and memory, and every sandbox would
// lose DNS.
const maxInflight = 64

// Pinner puts addresses into a namespace table's pin sets, and flows into
// its approved set.
type Pinner interface {
	Pin(table, set string, addrs []netip.Addr, timeout time.Duration) error
	PinFlows(table, set string, flows []nft.Flow, timeout time.Duration) error
	UnpinFlows(table, set string, flows []nft.Flow) error
	// FlushFlows empties the approved set: the flows of answers netns-dns
	// cannot attribute to an approval (pinned before it took the
	// namespace over).
	FlushFlows(table, set string) error
}

// Exchanger sends a query upstream.
type Exchanger interface {
	Exchange(ctx context.Context, m *dns.Msg, upstream netip.AddrPort) (*dns.Msg, error)
}

// Resolver answers the namespaces' queries according to their policies.
type Resolver struct {
	Pinner   Pinner
	Upstream Exchanger
	Log      *DenialLog
	// PinFloor is the shortest pin (DefaultPinFloor).
	PinFloor time.Duration
	// MaxTTL caps TTLs where a policy does not (DefaultMaxTTL).
	MaxTTL time.Duration
	// Inside, if set, returns the pinner of the table inside namespace
	// name made at generation (nil if netns-dns has none: netns-setup
	// has not handed its socket over). An allowlist answer's addresses
	// are pinned there first, then on the host, or the answer is
	// SERVFAIL. Unset (unit tests), only the host's tables are pinned.
	Inside func(name string, generation int64) Pinner
	// Local, if set, returns the host's own addresses and the bridge's
	// network: removed from answers like the blocked ranges.
	Local func() []netip.Prefix
	// Logf reports errors of the resolver itself (a failed pin).
	Logf func(format string, args ...any)
	// Refresh, if set, brings the policies up to date (cheaply when
	// nothing changed); Answer calls it first, so that no answer rests on
	// old news: a namespace whose up just finished is known, and one made
	// anew (its sets empty) is pinned again.
	Refresh func()
	now     func() time.Time

	mu  sync.RWMutex
	nss map[netip.Addr]*namespace

	approvals approvals
	holds     holds
	hub       hub
	recent    recent

	failMu sync.Mutex
	fails  map[string]*failLog
}

// upstreamLogEvery is how often a namespace's upstream failures reach the
// journal: a sandbox asking names whose servers never answer fails a query
// whenever one times out, and must not fill the journal with it.
const upstreamLogEvery = 10 * time.Second

type failLog struct {
	last    time.Time
	skipped int
}

// upstreamFailed logs a failed upstream query of namespace ns: the first,
// then one line per upstreamLogEvery with the count of those in between.
func (r *Resolver) upstreamFailed(ns string, err error) {
	now := r.clock()
	r.failMu.Lock()
	if r.fails == nil {
		r.fails = map[string]*failLog{}
	}
	f := r.fails[ns]
	if f == nil {
		f = &failLog{}
		r.fails[ns] = f
	} else if now.Sub(f.last) < upstreamLogEvery {
		f.skipped++
		r.failMu.Unlock()
		return
	}
	skipped := f.skipped
	f.last, f.skipped = now, 0
	r.failMu.Unlock()
	if skipped > 0 {
		r.logf("upstream of %s: %v (and %d more failures since the last line)", ns, err, skipped)
		return
	}
	r.logf("upstream of %s: %v", ns, err)
}

// namespace is one policy and what was learned answering under it.
type namespace struct {
	policy netpolicy.Policy
	raw    []byte

	// inflight holds a token per query waiting for the upstream.
	inflight chan struct{}

	mu sync.Mutex
	// pinned: until when each (set, address) is pinned, so that repeated
	// answers cost no netlink round trip.
	pinned map[pinKey]time.Time
	// cnames: targets of CNAMEs of allowed names, allowed like their name
	// until the record expires (what resolving the name needs).
	cnames map[string]cnameGrant
	// approvedBy: the approval pattern whose answer put each flow
	// (pinKey{a flowKeys key, addr}) into the approved set, for revoke.
	approvedBy map[pinKey]string
}

// grant is why a name resolves: the pin sets of its domain lines, and the
// ports of an approval (flows of the approved set).
type grant struct {
	sets    []string
	pattern string
	// ports and approved: the approval that covers the name.
	ports    []netpolicy.Ports
	approved string
	// once: the approval is a once one, whose flows last the pin floor at
	// most, whatever the answer's TTL.
	once bool
}

func (g grant) ok() bool { return g.sets != nil || g.ports != nil }

type pinKey struct {
	set  string
	addr netip.Addr
}

type cnameGrant struct {
	grant
	until time.Time
}

// SetPolicies replaces the policies; a namespace whose policy file did not
// change keeps what was learned (its table, and so its pins, are the same).
func (r *Resolver) SetPolicies(files map[string][]byte) []error {
	var errs []error
	next := map[netip.Addr]*namespace{}
	var fresh []*namespace
	r.mu.RLock()
	old := map[string]*namespace{}
	for _, ns := range r.nss {
		old[ns.policy.Name] = ns
	}
	r.mu.RUnlock()
	for file, raw := range files {
		p, err := netpolicy.ParsePolicy(file, raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ns := old[p.Name]
		if ns == nil || string(ns.raw) != string(raw) {
			ns = &namespace{policy: p, raw: raw, inflight: make(chan struct{}, maxInflight), pinned: map[pinKey]time.Time{}, cnames: map[string]cnameGrant{}, approvedBy: map[pinKey]string{}}
			fresh = append(fresh, ns)
		}
		next[p.Addr] = ns
	}
	r.mu.Lock()
	r.nss = next
	r.mu.Unlock()
	for _, ns := range fresh {
		r.flushFlows(ns)
	}
	return errs
}

// Addrs are the addresses of the namespaces with a policy.
func (r *Resolver) Addrs() []netip.Addr {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]netip.Addr, 0, len(r.nss))
	for a := range r.nss {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func (r *Resolver) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// ServeDNS answers one query from src (over TCP: a held query keeps its
// connection's goroutine, which the limit per source bounds).
func (r *Resolver) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	src := netip.Addr{}
	if ap, err := netip.ParseAddrPort(w.RemoteAddr().String()); err == nil {
		src = ap.Addr().Unmap()
	}
	later := make(chan *dns.Msg, 1)
	resp := r.Handle(context.Background(), src, q, func(m *dns.Msg) { later <- m })
	if resp == nil {
		resp = <-later
	}
	if resp != nil {
		w.WriteMsg(resp)
	}
}

// Answer is the reply to query q from src, never held.
func (r *Resolver) Answer(ctx context.Context, src netip.Addr, q *dns.Msg) *dns.Msg {
	return r.Handle(ctx, src, q, nil)
}

// Handle is the reply to query q from src, or nil when it is held: then
// release gets the reply (nil: none is sent) once an approval answers it
// or its hold ends. With release nil it never holds.
func (r *Resolver) Handle(ctx context.Context, src netip.Addr, q *dns.Msg, release func(*dns.Msg)) *dns.Msg {
	if q.Opcode != dns.OpcodeQuery || len(q.Question) != 1 {
		return reply(q, dns.RcodeRefused)
	}
	if r.Refresh != nil {
		r.Refresh()
	}
	r.mu.RLock()
	ns := r.nss[src]
	r.mu.RUnlock()
	if ns == nil {
		return reply(q, dns.RcodeRefused)
	}
	p := &ns.policy
	select {
	case ns.inflight <- struct{}{}:
		defer func() { <-ns.inflight }()
	default:
		return reply(q, dns.RcodeServerFailure) // too many of this namespace's queries wait already
	}
	if p.Mode == "open" {
		return r.forward(ctx, p, q, q)
	}
	question := q.Question[0]
	name := strings.ToLower(question.Name)
	var g grant
	if hostName(name) {
		g = r.allowed(ns, name, r.clock())
	}
	if !g.ok() || question.Qclass != dns.ClassINET {
		if release != nil && question.Qclass == dns.ClassINET && r.hold(ns, src, q, name, release) {
			return nil
		}
		r.refused(p, question)
		return reply(q, dns.RcodeRefused)
	}
	if r.Inside != nil && r.Inside(p.Name, p.Generation) == nil {
		// Without the table inside, no address could be pinned there:
		// no allowed name answers (and netns-setup status sees it).
		return reply(q, dns.RcodeServerFailure)
	}
	switch question.Qtype {
	case dns.TypeA, dns.TypeCNAME:
	case dns.TypeAAAA:
		if !p.IPv6 {
			return reply(q, dns.RcodeSuccess) // no IPv6 in the namespace: no address
		}
	default:
		// Other types of an allowed name (HTTPS and SVCB carry address
		// hints the set would not hold, TXT and MX nothing a connection
		// needs): an empty answer.
		return reply(q, dns.RcodeSuccess)
	}
	up := new(dns.Msg)
	up.SetQuestion(name, question.Qtype)
	up.RecursionDesired = true
	up.SetEdns0(1232, false)
	resp := r.forward(ctx, p, q, up)
	if resp.Rcode != dns.RcodeSuccess {
		return resp
	}
	answer, err := r.pinChain(ns, name, g, resp.Answer)
	if err != nil {
		// Fail closed: no address that is not pinned in both tables.
		return reply(q, dns.RcodeServerFailure)
	}
	resp.Answer = answer
	resp.Ns, resp.Extra = nil, nil
	return resp
}

// hostName reports whether name (lower case, as miekg/dns writes it) has
// only the bytes of host names: letters, digits, - and _ in its labels.
// Anything else is written with a backslash, and a name whose label holds
// a dot (x.evil\.example.com: the labels x, "evil.example" and com) would
// read as if it were below example.com while it is below com.
func hostName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// allowed is why name resolves in ns (not ok if it does not): its domain
// lines, an approval, or a CNAME of such a name that led to it.
func (r *Resolver) allowed(ns *namespace, name string, now time.Time) grant {
	var g grant
	for _, d := range ns.policy.Allows(name) {
		g.sets = append(g.sets, d.Sets...)
		if g.pattern == "" {
			g.pattern = d.Pattern
		}
	}
	if g.sets != nil {
		g.sets = dedupe(g.sets)
	}
	if ap := r.approvalOf(&ns.policy, name, now); ap != nil {
		g.ports, g.approved, g.once = ap.Ports, ap.Pattern, ap.Scope == netctl.ScopeOnce
		if g.pattern == "" {
			g.pattern = ap.Pattern
		}
	}
	if g.ok() {
		return g
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if c, ok := ns.cnames[name]; ok && now.Before(c.until) {
		g = c.grant
		if g.ports != nil && ns.policy.Denied(name) != "" {
			g.ports, g.approved, g.once = nil, "", false // an approval does not reach a denied name through a CNAME
		}
		return g
	}
	return grant{}
}

// approvalOf is the approval that opens name in the namespace of p, if
// its settings let approvals open it.
func (r *Resolver) approvalOf(p *netpolicy.Policy, name string, now time.Time) *approval {
	if p.Mode != netpolicy.PolicyAllowlist || p.Approve() == netpolicy.UserApproveNo {
		return nil
	}
	name = strings.TrimSuffix(name, ".")
	if p.Denied(name) != "" {
		return nil
	}
	return r.approvals.match(p.Name, name, now)
}

// pinChain keeps the answer records of the chain that starts at name
// (CNAMEs and the A and AAAA records at their ends), pins their addresses
// and allows the CNAME targets; it drops every other record, whose
// addresses the client could not reach anyway. An address it could not
// pin, inside the namespace or on the host, is an error: the answer must
// not be sent.
func (r *Resolver) pinChain(ns *namespace, name string, g grant, answer []dns.RR) ([]dns.RR, error) {
	now := r.clock()
	inChain := map[string]bool{name: true}
	// CNAMEs first, in as many rounds as the chain is long, whatever
	// their order in the message.
	for changed := true; changed; {
		changed = false
		for _, rr := range answer {
			if c, ok := rr.(*dns.CNAME); ok && inChain[strings.ToLower(c.Hdr.Name)] && !inChain[strings.ToLower(c.Target)] {
				inChain[strings.ToLower(c.Target)] = true
				changed = true
			}
		}
	}
	var keep []dns.RR
	type pin struct {
		addr netip.Addr
		ttl  uint32
	}
	var pins []pin
	local := r.localPrefixes()
	var removed []netip.Addr
	maxTTL := uint32(r.maxTTL(ns) / time.Second)
	ns.mu.Lock()
	for _, rr := range answer {
		owner := strings.ToLower(rr.Header().Name)
		if !inChain[owner] {
			continue
		}
		rr.Header().Ttl = min(rr.Header().Ttl, maxTTL)
		switch v := rr.(type) {
		case *dns.CNAME:
			keep = append(keep, rr)
			target := strings.ToLower(v.Target)
			until := now.Add(max(time.Duration(v.Hdr.Ttl)*time.Second, r.floor()))
			if c, ok := ns.cnames[target]; !ok || c.until.Before(until) {
				ns.cnames[target] = cnameGrant{grant: g, until: until}
			}
		case *dns.A:
			a, ok := netip.AddrFromSlice(v.A.To4())
			if !ok {
				continue
			}
			if ns.isLocal(a, local) {
				removed = append(removed, a)
				continue
			}
			keep = append(keep, rr)
			pins = append(pins, pin{a, v.Hdr.Ttl})
		case *dns.AAAA:
			if !ns.policy.IPv6 {
				continue
			}
			if a, ok := netip.AddrFromSlice(v.AAAA); ok && ns.isLocal(a, local) {
				removed = append(removed, a)
				continue
			}
			keep = append(keep, rr)
		}
	}
	// Which pins need the kernel: those not pinned for at least the TTL.
	todo := map[string][]netip.Addr{}
	timeout := map[string]time.Duration{}
	for _, p := range pins {
		ttl := time.Duration(p.ttl) * time.Second
		// An eighth more than the TTL, so that a client that uses the
		// answer to its last second still finds the pin, and so that
		// repeated answers need the kernel only every eighth of it.
		d := max(ttl+ttl/8, r.floor())
		for _, s := range append(slices.Clone(g.sets), flowKeys(g.ports)...) {
			k := pinKey{s, p.addr}
			d, enough := d, max(ttl, r.floor()*7/8)
			if _, flow := flowOf(s); flow && g.once {
				// A once approval's flows: the floor, never the TTL (a
				// day's TTL would keep them open a day after the
				// approval ended, unseen in net list).
				d, enough = r.floor(), 0
			}
			if !ns.pinned[k].Before(now.Add(enough)) {
				continue // pinned long enough already
			}
			todo[s] = append(todo[s], p.addr)
			timeout[s] = max(timeout[s], d)
		}
	}
	ns.mu.Unlock()
	for _, a := range removed {
		r.Log.Removed(ns.policy.Name, name, a)
	}
	var inside Pinner
	if r.Inside != nil && len(todo) > 0 {
		if inside = r.Inside(ns.policy.Name, ns.policy.Generation); inside == nil {
			r.logf("pin in %s: netns-dns holds no socket of the table inside the namespace (netns-setup up %s hands it over)", ns.policy.Name, ns.policy.Name)
			return nil, errNoInside
		}
	}
	for s, addrs := range todo {
		// The table inside first, then the host's: the same sets in both.
		pin := func(p Pinner, table string) error {
			if f, ok := flowOf(s); ok {
				return p.PinFlows(table, nft.ApprovedSet, flows(f, addrs), timeout[s])
			}
			return p.Pin(table, s, addrs, timeout[s])
		}
		if inside != nil {
			if err := pin(inside, nft.InsideTable); err != nil {
				r.logf("pin %v in %s inside %s: %v", addrs, s, ns.policy.Name, err)
				return nil, err
			}
		}
		if err := pin(r.Pinner, ns.policy.Table); err != nil {
			r.logf("pin %v in %s of %s: %v", addrs, s, ns.policy.Table, err)
			return nil, err
		}
		ns.mu.Lock()
		for _, a := range addrs {
			ns.pinned[pinKey{s, a}] = now.Add(timeout[s])
			if _, ok := flowOf(s); ok {
				ns.approvedBy[pinKey{s, a}] = g.approved
			}
		}
		ns.mu.Unlock()
	}
	ns.expire(now)
	return keep, nil
}

// errNoInside: netns-dns cannot pin into the table inside a namespace.
var errNoInside = errors.New("no socket of the table inside the namespace")

// expire forgets what the kernel has forgotten, so that memory follows the
// set's size.
func (ns *namespace) expire(now time.Time) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if len(ns.pinned)+len(ns.cnames) < 1024 {
		return
	}
	for k, t := range ns.pinned {
		if t.Before(now) {
			delete(ns.pinned, k)
		}
	}
	for k, g := range ns.cnames {
		if g.until.Before(now) {
			delete(ns.cnames, k)
		}
	}
	for k := range ns.approvedBy {
		if _, ok := ns.pinned[k]; !ok {
			delete(ns.approvedBy, k)
		}
	}
}

// isLocal reports whether a answer's address a is one no name may lead to
// (the blocked ranges, netpolicy.Blocked: where the host, its LAN, the
// bridge and the cloud's metadata are; the host's own and the bridge's,
// local), unless the namespace's allow lines cover it. Such answers are
// how DNS rebinding reaches the inside from a name the sandbox may
// resolve; removed, they are never pinned either.
func (ns *namespace) isLocal(a netip.Addr, local []netip.Prefix) bool {
	if !netpolicy.Blocked(a) &&
		!slices.ContainsFunc(local, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return false
	}
	return !slices.ContainsFunc(ns.policy.Allow, func(p netip.Prefix) bool { return p.Contains(a) })
}

func (r *Resolver) localPrefixes() []netip.Prefix {
	if r.Local == nil {
		return nil
	}
	return r.Local()
}

// maxTTL is the TTL cap of ns: its policy's (the max-ttl line), else
// r.MaxTTL, else DefaultMaxTTL.
func (r *Resolver) maxTTL(ns *namespace) time.Duration {
	if ns.policy.MaxTTL > 0 {
		return time.Duration(ns.policy.MaxTTL) * time.Second
	}
	if r.MaxTTL > 0 {
		return r.MaxTTL
	}
	return DefaultMaxTTL
}

func (r *Resolver) floor() time.Duration {
	if r.PinFloor > 0 {
		return r.PinFloor
	}
	return DefaultPinFloor
}

func (r *Resolver) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// forward sends up to the namespace's upstreams in turn and returns the
// first answer as the reply to q; SERVFAIL when none answers.
func (r *Resolver) forward(ctx context.Context, p *netpolicy.Policy, q, up *dns.Msg) *dns.Msg {
	var lastErr error
	for _, u := range p.Upstream {
		resp, err := r.Upstream.Exchange(ctx, up, u)
		if err != nil {
			lastErr = err
			continue
		}
		resp.Id = q.Id
		resp.Question = q.Question
		return resp
	}
	r.upstreamFailed(p.Name, lastErr)
	return reply(q, dns.RcodeServerFailure)
}

func reply(q *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(q, rcode)
	m.RecursionAvailable = true
	return m
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// UDPExchanger queries over UDP, on connected sockets it keeps for the
// next query (a socket per query costs more than the query on a near
// upstream), then TCP when the answer is truncated. Each query gets a
// fresh random ID; answers with another ID (late ones of a query that
// timed out) are skipped. A socket serves at most maxReuse queries, so
// that its source port changes often (with the ID, what an off-path
// spoofer of answers must guess).
type UDPExchanger struct {
	pools sync.Map // netip.AddrPort -> *sync.Pool of *dns.Conn
}

// Exchange implements Exchanger.
func (x *UDPExchanger) Exchange(ctx context.Context, m *dns.Msg, upstream netip.AddrPort) (*dns.Msg, error) {
	m = m.Copy()
	m.Id = dns.Id()
	deadline := time.Now().Add(upstreamTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	resp, err := x.udp(m, upstream, deadline)
	if err == nil && resp.Truncated {
		c := &dns.Client{Net: "tcp"}
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		resp, _, err = c.ExchangeContext(ctx, m, upstream.String())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", upstream, err)
	}
	return resp, nil
}

func (x *UDPExchanger) udp(m *dns.Msg, upstream netip.AddrPort, deadline time.Time) (*dns.Msg, error) {
	pv, _ := x.pools.LoadOrStore(upstream, &sync.Pool{})
	pool := pv.(*sync.Pool)
	c, _ := pool.Get().(*upstreamConn)
	if c == nil {
		conn, err := net.Dial("udp", upstream.String())
		if err != nil {
			return nil, err
		}
		c = &upstreamConn{Conn: &dns.Conn{Conn: conn, UDPSize: 1232}}
	}
	c.uses++
	c.SetDeadline(deadline)
	if err := c.WriteMsg(m); err != nil {
		c.Close()
		return nil, err
	}
	for {
		r, err := c.ReadMsg()
		if err != nil {
			c.Close()
			return nil, err
		}
		if r.Id == m.Id && len(r.Question) == 1 && strings.EqualFold(r.Question[0].Name, m.Question[0].Name) && r.Question[0].Qtype == m.Question[0].Qtype {
			if c.uses < maxReuse {
				pool.Put(c)
			} else {
				c.Close()
			}
			return r, nil
		}
	}
}

// maxReuse is how many queries one upstream socket sends.
const maxReuse = 16

type upstreamConn struct {
	*dns.Conn
	uses int
}

// ResetFlows empties the approved sets of namespace name, host and
// inside, and forgets which flows netns-dns pinned there: what netns-dns
// does when it takes a namespace over (a new socket of the table inside,
// from netns-setup up or guard), since a flow pinned before cannot be
// attributed to an approval, and so could outlive its revoke or its
// session. The flows of approvals still live come back at their name's
// next answer.
func (r *Resolver) ResetFlows(name string) {
	if ns := r.namespaceOf(name); ns != nil {
		r.flushFlows(ns)
	}
}

func (r *Resolver) flushFlows(ns *namespace) {
	ns.mu.Lock()
	for k := range ns.approvedBy {
		delete(ns.pinned, k)
		delete(ns.approvedBy, k)
	}
	for k := range ns.pinned {
		if _, ok := flowOf(k.set); ok {
			delete(ns.pinned, k)
		}
	}
	for target, c := range ns.cnames {
		if c.approved != "" {
			delete(ns.cnames, target)
		}
	}
	ns.mu.Unlock()
	if r.Inside != nil {
		if in := r.Inside(ns.policy.Name, ns.policy.Generation); in != nil {
			if err := in.FlushFlows(nft.InsideTable, nft.ApprovedSet); err != nil {
				r.logf("empty the approved set inside %s: %v", ns.policy.Name, err)
			}
		}
	}
	if ns.policy.Table == "" || r.Pinner == nil {
		return
	}
	if err := r.Pinner.FlushFlows(ns.policy.Table, nft.ApprovedSet); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.logf("empty the approved set of %s: %v", ns.policy.Table, err)
	}
}
