package netnsdns

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Control answers the requests of the control socket for the user uid
// (the kernel's word: SO_PEERCRED). Watch and session requests are
// answered here (their first line); the stream is the caller's.
func (r *Resolver) Control(uid uint32, req netctl.Request) netctl.Reply {
	return r.ControlAs(uid, nil, req)
}

// ControlAs is Control for uid, a member of the groups gids (the kernel's
// word: SO_PEERCRED and SO_PEERGROUPS), which approvers @GROUP lines name.
func (r *Resolver) ControlAs(uid uint32, gids []uint32, req netctl.Request) netctl.Reply {
	if r.Refresh != nil {
		r.Refresh() // a namespace whose up just finished is known
	}
	if req.Op == netctl.OpOwned {
		return netctl.Reply{Namespaces: r.owned(uid, gids)}
	}
	if req.Op == netctl.OpWatch && req.Namespace == "" {
		return netctl.Reply{Namespaces: r.owned(uid, gids)}
	}
	if req.Op == netctl.OpReady {
		return r.ready(req.Namespace)
	}
	p, err := r.authorize(uid, gids, req.Namespace)
	if err != nil {
		return netctl.Reply{Error: err.Error()}
	}
	switch req.Op {
	case netctl.OpList:
		return netctl.Reply{Allowances: r.allowances(p)}
	case netctl.OpDenials:
		if req.EndHolds {
			r.refuseHolds(r.holds.takeSince(p.Name, req.Since))
		}
		return netctl.Reply{Denials: r.denials(p, req)}
	case netctl.OpAllow:
		return r.allow(uid, p, req)
	case netctl.OpRevoke:
		return r.revoke(p, req)
	case netctl.OpWatch, netctl.OpSession:
		return netctl.Reply{Namespaces: []string{p.Name}}
	}
	return netctl.Reply{Error: fmt.Sprintf("unknown op %s: use list, denials, allow, revoke, watch, session or owned", quote.String(req.Op))}
}

// ready answers OpReady: whether namespace ns is served as its policy
// says. It tells a caller no more than netns-setup status tells root.
func (r *Resolver) ready(ns string) netctl.Reply {
	p := r.policyOf(ns)
	switch {
	case p == nil:
		return netctl.Reply{NotReady: true, Error: fmt.Sprintf("netns-dns has no policy of namespace %s: sudo systemctl restart netns@%s", quote.String(ns), quote.String(ns))}
	case p.Mode == netpolicy.PolicyAllowlist && r.Inside != nil && r.Inside(p.Name, p.Generation) == nil:
		return netctl.Reply{NotReady: true, Error: fmt.Sprintf("netns-dns lacks the sockets of the table inside namespace %s, and answers none of its names: sudo systemctl restart netns@%s", p.Name, p.Name)}
	}
	return netctl.Reply{}
}

// authorize returns the policy of namespace ns if uid, a member of gids,
// may act on it.
func (r *Resolver) authorize(uid uint32, gids []uint32, ns string) (*netpolicy.Policy, error) {
	if ns == "" {
		return nil, fmt.Errorf("no namespace named: name one (claude-sandbox net owned lists yours)")
	}
	p := r.policyOf(ns)
	if p == nil {
		return nil, fmt.Errorf("namespace %s has no policy netns-dns knows: is it up (sudo netns-setup up %s)?", quote.String(ns), quote.String(ns))
	}
	if !p.Owner(uid, gids...) {
		return nil, fmt.Errorf("uid %d is not an owner of namespace %s: its owner is the user of a namespace NAME-UID, or one an approvers line of netns-firewall.conf names (a user, or a group of theirs)", uid, ns)
	}
	return p, nil
}

// owned are the namespaces uid, a member of gids, may act on.
func (r *Resolver) owned(uid uint32, gids []uint32) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, ns := range r.nss {
		if ns.policy.Owner(uid, gids...) {
			out = append(out, ns.policy.Name)
		}
	}
	sort.Strings(out)
	return out
}

// owns reports whether uid, a member of gids, owns namespace ns.
func (r *Resolver) owns(uid uint32, gids []uint32, ns string) bool {
	p := r.policyOf(ns)
	return p != nil && p.Owner(uid, gids...)
}

func (r *Resolver) allowances(p *netpolicy.Policy) []netctl.Allowance {
	var out []netctl.Allowance
	for _, d := range p.Domains {
		out = append(out, netctl.Allowance{Pattern: d.Pattern, Ports: d.Ports, Source: d.Source})
	}
	now := r.clock()
	open := r.openFlows(p.Name, now)
	for _, ap := range r.approvals.list(p.Name, now) {
		out = append(out, netctl.Allowance{Pattern: ap.Pattern, Ports: portStrings(ap.Ports), Source: "approval", Scope: ap.Scope, By: ap.By, Until: ap.Until, Flows: open[ap.Pattern]})
		delete(open, ap.Pattern)
	}
	// Approvals that ended (a once one) while their flows are open.
	var ended []string
	for pattern := range open {
		ended = append(ended, pattern)
	}
	slices.Sort(ended)
	for _, pattern := range ended {
		out = append(out, netctl.Allowance{Pattern: pattern, Source: "approval", Scope: netctl.ScopeEnded, Flows: open[pattern]})
	}
	return out
}

// openFlows are the flows of namespace ns still open at now, by the
// approval pattern whose answers opened them.
func (r *Resolver) openFlows(nsName string, now time.Time) map[string][]netctl.OpenFlow {
	out := map[string][]netctl.OpenFlow{}
	ns := r.namespaceOf(nsName)
	if ns == nil {
		return out
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for k, by := range ns.approvedBy {
		until, ok := ns.pinned[k]
		f, isFlow := flowOf(k.set)
		if !ok || !isFlow || !now.Before(until) {
			continue
		}
		out[by] = append(out[by], netctl.OpenFlow{Addr: k.addr.String(), Proto: f.Proto, Port: f.Port, Until: until})
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b netctl.OpenFlow) int {
			return strings.Compare(fmt.Sprintf("%s %s %05d", a.Addr, a.Proto, a.Port), fmt.Sprintf("%s %s %05d", b.Addr, b.Proto, b.Port))
		})
	}
	return out
}

func (r *Resolver) denials(p *netpolicy.Policy, req netctl.Request) []netctl.Denial {
	out := r.recent.since(p.Name, req.Since)
	for i := range out {
		out[i].Approvable = out[i].Drop == "" && !otherClass(out[i].Type) && approvable(p, out[i].Name)
	}
	return out
}

// allow approves req.Name in p's namespace for uid and answers its held
// queries.
func (r *Resolver) allow(uid uint32, p *netpolicy.Policy, req netctl.Request) netctl.Reply {
	ap, err := r.checkAllow(uid, p, req)
	if err != nil {
		return netctl.Reply{Error: err.Error()}
	}
	if err := r.approvals.add(p.Name, ap, r.clock()); err != nil {
		return netctl.Reply{Error: err.Error()}
	}
	// The last session may have ended since checkAllow counted it, its
	// end removing the session approvals before this one came: then
	// this one ends too. (A session that ends later removes it itself.)
	if ap.Scope == netctl.ScopeSession && r.hub.sessions(p.Name) == 0 {
		r.endSessions([]string{p.Name})
		return netctl.Reply{Error: noSession(p.Name).Error()}
	}
	r.hub.publish(netctl.Event{Kind: netctl.EventApproved, Time: r.clock(), Namespace: p.Name, Name: ap.Pattern, Scope: ap.Scope})
	return netctl.Reply{Held: r.answerHolds(p.Name, ap.Pattern)}
}

// checkAllow is the approval req asks for, or why there is none.
func (r *Resolver) checkAllow(uid uint32, p *netpolicy.Policy, req netctl.Request) (approval, error) {
	switch {
	case p.Mode != netpolicy.PolicyAllowlist:
		return approval{}, fmt.Errorf("namespace %s has policy open: every name resolves already", p.Name)
	case p.Approve() == netpolicy.UserApproveNo:
		return approval{}, fmt.Errorf("namespace %s does not take approvals (user-approve no): ask an administrator for a domain line", p.Name)
	}
	d, err := netpolicy.ParsePattern(req.Name)
	if err != nil {
		return approval{}, fmt.Errorf("name: %w", err)
	}
	pattern := d.Pattern()
	if deniedPattern(p, d) {
		return approval{}, fmt.Errorf("%s is denied in namespace %s (deny lines of netns-firewall.conf): no approval can open it", pattern, p.Name)
	}
	ports, err := approvalPorts(req.Ports)
	if err != nil {
		return approval{}, err
	}
	now := r.clock()
	ap := approval{Pattern: pattern, Ports: ports, Scope: req.Scope, By: uid, Time: now}
	switch req.Scope {
	case "", netctl.ScopeOnce:
		ap.Scope, ap.Until = netctl.ScopeOnce, now.Add(netctl.OnceWindow)
	case netctl.ScopeSession:
		if r.hub.sessions(p.Name) == 0 {
			return approval{}, noSession(p.Name)
		}
	case netctl.ScopeAlways:
	default:
		return approval{}, fmt.Errorf("scope %s: use once, session or always", quote.String(req.Scope))
	}
	return ap, nil
}

func noSession(ns string) error {
	return fmt.Errorf("no launcher session of namespace %s is running: allow --once or --always", ns)
}

// revoke removes the approvals of req.Name (as written in the approval:
// NAME or *.NAME) in p's namespace, whoever made them, and their flows,
// and refuses the held queries it covers now.
func (r *Resolver) revoke(p *netpolicy.Policy, req netctl.Request) netctl.Reply {
	d, err := netpolicy.ParsePattern(req.Name)
	if err != nil {
		return netctl.Reply{Error: fmt.Sprintf("name: %v", err)}
	}
	pattern := d.Pattern()
	refused := r.refuseHolds(r.holds.take(p.Name, func(name string) bool { return patternCovers(pattern, name) }))
	gone, err := r.approvals.remove(p.Name, func(ap approval) bool { return ap.Pattern == pattern })
	if err != nil {
		return netctl.Reply{Error: err.Error()}
	}
	// Its flows go whether or not the approval is still live: a once
	// approval that ended leaves flows open until their pins run out.
	unpinned := r.unpin(p.Name, []string{pattern})
	if len(gone) == 0 && refused == 0 && unpinned == 0 {
		return netctl.Reply{Error: fmt.Sprintf("no approval of %s in namespace %s (claude-sandbox net list shows them)", pattern, p.Name)}
	}
	return netctl.Reply{}
}

// endSessions drops the session approvals of namespaces whose last
// session ended, and their flows.
func (r *Resolver) endSessions(nss []string) {
	for _, ns := range nss {
		gone, _ := r.approvals.remove(ns, func(ap approval) bool { return ap.Scope == netctl.ScopeSession })
		var patterns []string
		for _, ap := range gone {
			patterns = append(patterns, ap.Pattern)
		}
		r.unpin(ns, patterns)
	}
}

// deniedPattern reports whether a deny line covers every name d does: d
// itself, or for *.X a deny *.Y with X equal to or below Y. (A deny line
// of some names below an approved *.X keeps them refused at each query.)
func deniedPattern(p *netpolicy.Policy, d netpolicy.Domain) bool {
	if !d.Wildcard {
		return p.Denied(d.Name) != ""
	}
	return slices.ContainsFunc(p.Deny, func(deny string) bool {
		y, ok := strings.CutPrefix(deny, "*.")
		return ok && (d.Name == y || strings.HasSuffix(d.Name, "."+y))
	})
}

func portStrings(ps []netpolicy.Ports) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
