package nft

import (
	"fmt"
	"net/netip"

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
// their group's ports pass, allow lines pass; the rest is logged (at most
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
	rules = append(rules,
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
