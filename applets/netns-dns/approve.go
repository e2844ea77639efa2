package netnsdns

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// flowKeys name the flows of ports where pinChain names pin sets:
// "flow tcp 443", one per port.
func flowKeys(ports []netpolicy.Ports) []string {
	var out []string
	for _, p := range ports {
		for port := int(p.Lo); port <= int(p.Hi); port++ {
			out = append(out, fmt.Sprintf("flow %s %d", p.Proto, port))
		}
	}
	return out
}

// flowOf reads a flowKeys key back; not ok for a pin set's name.
func flowOf(key string) (nft.Flow, bool) {
	f := strings.Fields(key)
	if len(f) != 3 || f[0] != "flow" {
		return nft.Flow{}, false
	}
	port, err := strconv.ParseUint(f[2], 10, 16)
	if err != nil {
		return nft.Flow{}, false
	}
	return nft.Flow{Proto: f[1], Port: uint16(port)}, true
}

func flows(f nft.Flow, addrs []netip.Addr) []nft.Flow {
	out := make([]nft.Flow, len(addrs))
	for i, a := range addrs {
		out[i] = nft.Flow{Addr: a, Proto: f.Proto, Port: f.Port}
	}
	return out
}

// holdTime is how long ns holds a query.
func holdTime(p *netpolicy.Policy) time.Duration {
	if p.HoldMS > 0 {
		return time.Duration(p.HoldMS) * time.Millisecond
	}
	return DefaultHold
}

// approvable reports whether an owner of p's namespace could approve name
// (lower case, no trailing dot).
func approvable(p *netpolicy.Policy, name string) bool {
	if p.Mode != netpolicy.PolicyAllowlist || p.Approve() == netpolicy.UserApproveNo || !hostName(name) || p.Denied(name) != "" {
		return false
	}
	_, err := netpolicy.ParsePattern(name)
	return err == nil
}

// hold parks q of name (lower case, trailing dot) from src when the
// namespace asks (user-approve ask), the name could be approved, and an
// owner listens; it reports whether it did.
func (r *Resolver) hold(ns *namespace, src netip.Addr, q *dns.Msg, name string, release func(*dns.Msg)) bool {
	p := &ns.policy
	name = strings.TrimSuffix(name, ".")
	if p.Approve() != netpolicy.UserApproveAsk || !approvable(p, name) || !r.hub.askable(p.Name) {
		return false
	}
	now := r.clock()
	ok, isNew := r.holds.add(p.Name, name, waiter{src: src, q: q, release: release}, now, now.Add(holdTime(p)))
	if isNew {
		r.hub.publish(netctl.Event{Kind: netctl.EventHeld, Time: r.clock(), Namespace: p.Name, Name: name, Type: dns.Type(q.Question[0].Qtype).String(), Until: now.Add(holdTime(p))})
	}
	return ok
}

// refused records a refusal: the denial log, the recent refusals, the
// streams.
func (r *Resolver) refused(p *netpolicy.Policy, q dns.Question) {
	r.refusedAt(p, q, r.clock())
}

// refusedAt is refused of a query that came at at: a held one is listed
// at the time it was asked, not when its hold ran out, so that a session
// that began meanwhile does not list it as its own.
func (r *Resolver) refusedAt(p *netpolicy.Policy, q dns.Question, at time.Time) {
	r.Log.Refused(p.Name, q)
	name := logName(strings.TrimSuffix(strings.ToLower(q.Name), "."))
	typ := classType(q)
	r.recent.add(p.Name, name, typ, at)
	r.hub.publish(netctl.Event{Kind: netctl.EventRefused, Time: r.clock(), Namespace: p.Name, Name: name, Type: typ})
}

// dropped records a connection the firewall of ns dropped.
func (r *Resolver) dropped(ns, proto string, dst netip.Addr, port uint16) {
	drop := proto + " " + dst.String()
	if proto == "tcp" || proto == "udp" {
		drop = proto + " " + netip.AddrPortFrom(dst, port).String()
	}
	r.recent.addDrop(ns, drop, r.clock())
}

// SweepHolds ends the holds that ran out: their queries are refused, as
// without a hold.
func (r *Resolver) SweepHolds() {
	r.refuseHolds(r.holds.expired(r.clock()))
}

// refuseHolds ends holds: their queries are refused, as without a hold;
// it returns how many.
func (r *Resolver) refuseHolds(hds []*hold) int {
	n := 0
	for _, hd := range hds {
		for _, w := range hd.waiters {
			n++
			w.release(reply(w.q, dns.RcodeRefused))
		}
		r.hub.publish(netctl.Event{Kind: netctl.EventReleased, Time: r.clock(), Namespace: hd.ns, Name: hd.name, Type: dns.Type(hd.qtype).String()})
		// Each query is a refusal, as without the hold: the A and the
		// AAAA of one lookup are two, of two types.
		if p := r.policyOf(hd.ns); p != nil {
			at := hd.start
			if at.IsZero() {
				at = r.clock()
			}
			for _, w := range hd.waiters {
				r.refusedAt(p, w.q.Question[0], at)
			}
		}
	}
	return n
}

// answerHolds answers the held queries of ns that pattern covers, each
// in a goroutine of its own (they resolve now); it returns how many.
func (r *Resolver) answerHolds(ns, pattern string) int {
	n := 0
	for _, hd := range r.holds.take(ns, func(name string) bool { return patternCovers(pattern, name) }) {
		for _, w := range hd.waiters {
			n++
			go func() { w.release(r.Answer(context.Background(), w.src, w.q)) }()
		}
		r.hub.publish(netctl.Event{Kind: netctl.EventReleased, Time: r.clock(), Namespace: ns, Name: hd.name, Type: dns.Type(hd.qtype).String(), Answered: true})
	}
	return n
}

// unpin takes the flows that the answers to the approvals of patterns put
// into the approved set of ns out of it (a name approved by another
// pattern on the same address gets its flow back at its next answer), and
// forgets the CNAME targets their answers allowed; it returns how many
// flows it took out.
func (r *Resolver) unpin(nsName string, patterns []string) int {
	ns := r.namespaceOf(nsName)
	if ns == nil || len(patterns) == 0 {
		return 0
	}
	var out []nft.Flow
	ns.mu.Lock()
	for target, c := range ns.cnames {
		if c.approved != "" && containsString(patterns, c.approved) {
			delete(ns.cnames, target) // its CNAME targets go with it
		}
	}
	for k, by := range ns.approvedBy {
		if !containsString(patterns, by) {
			continue
		}
		if f, ok := flowOf(k.set); ok {
			f.Addr = k.addr
			out = append(out, f)
		}
		delete(ns.approvedBy, k)
		delete(ns.pinned, k)
	}
	ns.mu.Unlock()
	if len(out) == 0 {
		return 0
	}
	// Inside the namespace too, where the answers pinned them.
	if r.Inside != nil {
		if in := r.Inside(ns.policy.Name, ns.policy.Generation); in != nil {
			if err := in.UnpinFlows(nft.InsideTable, nft.ApprovedSet, out); err != nil {
				r.logf("unpin %d flows inside %s: %v", len(out), ns.policy.Name, err)
			}
		}
	}
	if err := r.Pinner.UnpinFlows(ns.policy.Table, nft.ApprovedSet, out); err != nil {
		r.logf("unpin %d flows of %s: %v", len(out), ns.policy.Table, err)
	}
	return len(out)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// namespaceOf is the namespace named name (nil if it has no policy).
func (r *Resolver) namespaceOf(name string) *namespace {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, ns := range r.nss {
		if ns.policy.Name == name {
			return ns
		}
	}
	return nil
}

// policyOf is the policy of namespace name (nil if none).
func (r *Resolver) policyOf(name string) *netpolicy.Policy {
	if ns := r.namespaceOf(name); ns != nil {
		p := ns.policy
		return &p
	}
	return nil
}

// classType is q's type as the lists show it: "A", or with its class
// before it when that is not IN ("CH TXT"), so that a CHAOS query of an
// allowed name does not read as a refused address lookup, and gets no
// advice to allow it (no approval answers another class).
func classType(q dns.Question) string {
	t := dns.Type(q.Qtype).String()
	if q.Qclass != dns.ClassINET {
		return dns.Class(q.Qclass).String() + " " + t
	}
	return t
}

// otherClass reports whether typ, a classType, is of a class other than IN.
func otherClass(typ string) bool { return strings.Contains(typ, " ") }
