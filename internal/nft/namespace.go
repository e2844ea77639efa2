package nft

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

// NamespaceTablePrefix starts the name of a namespace's own table.
const NamespaceTablePrefix = "claude_sandbox_ns_"

// NamespaceTable is the table of namespace name (family inet): only
// namespaces in allowlist mode have one.
func NamespaceTable(name string) string { return NamespaceTablePrefix + name }

// PinSet is the name of the set of pinned addresses reachable on the i-th
// port group (see netpolicy.PortGroups).
func PinSet(i int) string { return fmt.Sprintf("pin%d", i) }

// ApprovedSet is the set of a namespace table that holds the address .
// protocol . port of the answers to names its owners approved: any
// protocol, not only the port groups of domain lines.
const ApprovedSet = "approved"

// Flow is one element of ApprovedSet: an address, "tcp" or "udp", a port.
type Flow struct {
	Addr  netip.Addr
	Proto string
	Port  uint16
}

// LogGroup is the nflog group of the drops of every namespace table; netns-dns
// reads it for the denial log.
const LogGroup = 7301

// LogPrefix starts the nflog prefix of a namespace's drops; the name follows.
const LogPrefix = "claude-sbx-deny "

// NamespaceSpec is what the table of an allowlist namespace depends on.
type NamespaceSpec struct {
	Name   string
	Bridge string
	// Addr is the namespace's address on the bridge: its packets are told
	// from other namespaces' by it (sandboxes cannot forge it: they hold no
	// capability in the namespace, and the bridge isolates its ports).
	Addr netip.Addr
	// Ports are the port groups (netpolicy.PortGroups of its domains).
	Ports []netpolicy.Ports
	// Allow are the allow lines of the main file and the namespace's.
	Allow []netpolicy.Allow
}

// BuildNamespace plans the table of an allowlist namespace. It only adds
// refusals: the bridge's table (Build) still judges everything this one
// accepts. Forwarded from the namespace: replies pass, pinned addresses on
// their group's ports pass, allow lines pass, approved address . protocol
// . port triples (ApprovedSet) pass; the rest is logged (at most
// 10 a second, to nflog group LogGroup) and rejected (ICMP administratively
// prohibited: connect fails at once, and the program's error points at the
// denial log). That covers other DNS servers, DNS over TLS (853), QUIC and
// every other UDP, ICMP echo (errors about accepted connections are
// related, and pass), and addresses no allowed name resolved to. DNS to
// the bridge (netns-dns) is input, not forwarded, and the bridge's table
// lets it in.
func BuildNamespace(s NamespaceSpec) Ruleset {
	accept := Verdict{Kind: Accept}
	rules := []Rule{{Match: []Match{{Kind: MatchEstablished}}, Verdict: accept}}
	var sets []Set
	for i, p := range s.Ports {
		sets = append(sets, Set{Name: PinSet(i), Timeout: true})
		rules = append(rules, Rule{Match: []Match{{Kind: MatchDAddrSet, Name: PinSet(i)}, dport(p.Proto, p.Lo, p.Hi)}, Verdict: accept})
	}
	for _, a := range s.Allow {
		m := []Match{daddr(a.Dest)}
		if a.Proto != "" {
			m = append(m, dport(a.Proto, a.PortLo, a.PortHi))
		}
		rules = append(rules, Rule{Match: m, Verdict: accept})
	}
	sets = append(sets, Set{Name: ApprovedSet, Timeout: true, Flows: true})
	rules = append(rules,
		Rule{Match: []Match{{Kind: MatchFlowSet, Name: ApprovedSet}}, Verdict: accept},
		Rule{Match: []Match{{Kind: MatchLimit, PortLo: 10, PortHi: 20}}, Verdict: Verdict{Kind: Log, Prefix: LogPrefix + s.Name + " ", Group: LogGroup}},
		Rule{Verdict: Verdict{Kind: RejectAdminProhibited}},
	)
	return Ruleset{
		Table: NamespaceTable(s.Name),
		Sets:  sets,
		Chains: []Chain{
			{Name: chainForward, Base: &Base{Type: "filter", Hook: "forward", Priority: "filter"}, Rules: []Rule{
				{Match: []Match{{Kind: MatchIIFName, Name: s.Bridge}, {Kind: MatchSAddr, Prefix: netip.PrefixFrom(s.Addr, 32)}}, Verdict: Verdict{Kind: Jump, Chain: "egress"}},
			}},
			{Name: "egress", Rules: rules},
		},
	}
}

// InsideTable is the table inside every sandbox namespace (family inet),
// the second layer: it holds without the host's tables.
const InsideTable = "claude_sandbox_in"

// InsideSpec is what the table inside a namespace depends on.
type InsideSpec struct {
	// Gateway is the host's bridge address, from which the host itself
	// reaches the sandbox.
	Gateway netip.Addr
	// Resolvers are the DNS servers of its resolv.conf: port 53 of each
	// is open.
	Resolvers []netip.Addr
	// Allow are the allow lines of the main file and the namespace's.
	Allow []netpolicy.Allow
	// Host are the host's own addresses (its uplink, its LAN address).
	Host []netip.Addr
}

// BuildInside plans the table inside a sandbox namespace, which only root
// there can change (the sandbox holds no capability in the namespace). It
// does not depend on the host's tables, and so still holds when they are
// gone (an nft flush ruleset on the host): nothing comes in but replies
// and the host's own connections (from the gateway);
// out go replies, DNS to the resolvers, the allow lines, and anything that
// is neither an address of the host nor in the blocked ranges
// (netpolicy.Blocked4, Blocked6), which the host's tables then judge. The
// host is dropped here, the LAN, link-local (cloud metadata) and the other
// sandboxes rejected (ICMP administratively prohibited), as the bridge's
// table does, whatever the host's tables say.
func BuildInside(s InsideSpec) Ruleset {
	accept := Verdict{Kind: Accept}
	reject := Verdict{Kind: RejectAdminProhibited}
	established := Match{Kind: MatchEstablished}
	out := []Rule{
		{Match: []Match{{Kind: MatchOIFName, Name: "lo"}}, Verdict: accept},
		{Match: []Match{established}, Verdict: accept},
	}
	for _, r := range s.Resolvers {
		for _, proto := range []string{"udp", "tcp"} {
			out = append(out, Rule{Match: []Match{daddr(netip.PrefixFrom(r, r.BitLen())), dport(proto, 53, 53)}, Verdict: accept})
		}
	}
	for _, a := range s.Allow {
		m := []Match{daddr(a.Dest)}
		if a.Proto != "" {
			m = append(m, dport(a.Proto, a.PortLo, a.PortHi))
		}
		out = append(out, Rule{Match: m, Verdict: accept})
	}
	sets := []Set{
		{Name: "blocked4", Elements: netpolicy.Blocked4},
		{Name: "blocked6", IPv6: true, Elements: netpolicy.Blocked6},
	}
	var host4, host6 []netip.Prefix
	hosts := slices.Clone(s.Host)
	slices.SortFunc(hosts, netip.Addr.Compare)
	for _, a := range slices.Compact(hosts) {
		if a.Is4() {
			host4 = append(host4, netip.PrefixFrom(a, 32))
		} else {
			host6 = append(host6, netip.PrefixFrom(a, 128))
		}
	}
	if len(host4) > 0 {
		sets = append(sets, Set{Name: "host4", Elements: host4})
		out = append(out, Rule{Match: []Match{{Kind: MatchDAddrSet, Name: "host4"}}, Verdict: Verdict{Kind: Drop}})
	}
	if len(host6) > 0 {
		sets = append(sets, Set{Name: "host6", IPv6: true, Elements: host6})
		out = append(out, Rule{Match: []Match{{Kind: MatchDAddrSet, Name: "host6", IPv6: true}}, Verdict: Verdict{Kind: Drop}})
	}
	out = append(out,
		Rule{Match: []Match{{Kind: MatchDAddrSet, Name: "blocked4"}}, Verdict: reject},
		Rule{Match: []Match{{Kind: MatchDAddrSet, Name: "blocked6", IPv6: true}}, Verdict: reject},
	)
	return Ruleset{
		Table: InsideTable,
		Sets:  sets,
		Chains: []Chain{
			{Name: chainInput, Base: &Base{Type: "filter", Hook: "input", Priority: "filter"}, Rules: []Rule{
				{Match: []Match{{Kind: MatchIIFName, Name: "lo"}}, Verdict: accept},
				{Match: []Match{established}, Verdict: accept},
				{Match: []Match{{Kind: MatchSAddr, Prefix: netip.PrefixFrom(s.Gateway, s.Gateway.BitLen())}}, Verdict: accept},
				{Verdict: Verdict{Kind: Drop}},
			}},
			{Name: "output", Base: &Base{Type: "filter", Hook: "output", Priority: "filter"}, Rules: out},
		},
	}
}
