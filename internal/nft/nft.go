// Package nft is the firewall of the sandbox bridge: a ruleset planned as
// data (Build), rendered as nft(8) text for people and golden tests
// (Ruleset.String), and applied through netlink with google/nftables
// (Apply), without running nft.
//
// The ruleset is one table of the inet family, TableName. Its rules look
// only at packets that come from or go to the bridge; everything else is
// accepted by its chains and judged by the host's other tables as before.
package nft

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

// TableName is the name of our table (family inet).
const TableName = "claude_sandbox"

// Spec is what the ruleset depends on.
type Spec struct {
	// Bridge is the sandboxes' bridge (br-netns).
	Bridge string
	// Subnet is the sandboxes' subnet, masqueraded on the way out.
	Subnet netip.Prefix
	// Resolvers are the DNS servers the sandboxes are given: port 53 of
	// each is open, on the host or beyond.
	Resolvers []netip.Addr
	// Allow are the extra destinations of the config file.
	Allow []netpolicy.Allow
	// NetnsDNS, if set, is the gateway where netns-dns answers: its port 53
	// is open to the sandboxes only for a socket marked DNSMark (netns-dns
	// marks its own), so that no other server that binds it (or 0.0.0.0:53)
	// ever gets a sandbox's query, whether netns-dns runs or not.
	NetnsDNS netip.Addr
}

// DNSMark is the socket mark (SO_MARK) of netns-dns's listening sockets,
// which the rule for NetnsDNS requires. It stays clear of the bits other
// software marks with (kube-proxy's 0x4000 and 0x8000, Tailscale's
// 0xff0000, wg-quick's 0xca6c).
const DNSMark = 0x0e53

// Ruleset is a table as data.
type Ruleset struct {
	Table  string
	Sets   []Set
	Chains []Chain
}

// Set is a named interval set of addresses, or with Timeout a set of
// single addresses that each expire (filled at run time, by netns-dns).
// With Flows (and Timeout) its elements are IPv4 address . protocol .
// port triples.
type Set struct {
	Name     string
	IPv6     bool
	Timeout  bool
	Flows    bool
	Elements []netip.Prefix
}

// Chain is a base chain (Base set) or a regular one.
type Chain struct {
	Name  string
	Base  *Base
	Rules []Rule
}

// Base is the hook of a base chain; its policy is accept.
type Base struct {
	Type     string // filter or nat
	Hook     string // input, forward or postrouting
	Priority string // filter or srcnat
}

// Rule is matches, all of which must hold, and a verdict.
type Rule struct {
	Match   []Match
	Verdict Verdict
}

// MatchKind says what a Match looks at.
type MatchKind int

// Kinds of Match.
const (
	MatchIIFName     MatchKind = iota + 1 // input interface is Name
	MatchOIFName                          // output interface is (Not: is not) Name
	MatchEstablished                      // conntrack state established or related
	MatchDAddr                            // destination address in Prefix
	MatchSAddr                            // source address in Prefix
	MatchDAddrSet                         // destination address in set Name (IPv6: ip6)
	MatchDPort                            // Proto and destination port in PortLo..PortHi
	MatchLimit                            // under PortLo packets a second, burst PortHi
	MatchSocketMark                       // the local socket the packet goes to has mark Mark
	MatchFlowSet                          // destination address . protocol . port in set Name
)

// Match is one condition of a rule.
type Match struct {
	Kind           MatchKind
	Name           string
	Not            bool
	IPv6           bool
	Prefix         netip.Prefix
	Proto          string
	PortLo, PortHi uint16
	Mark           uint32
}

// VerdictKind is what a rule does.
type VerdictKind int

// Kinds of Verdict.
const (
	Accept VerdictKind = iota + 1
	Drop
	Jump
	RejectAdminProhibited // ICMP(v6) administratively prohibited
	Masquerade
	Log // not an end: log to nflog group Group with Prefix, and go on
)

// Verdict ends a rule.
type Verdict struct {
	Kind   VerdictKind
	Chain  string // for Jump
	Prefix string // for Log
	Group  uint16 // for Log
}

// Chain names.
const (
	chainInput      = "input"
	chainSandboxIn  = "sandbox_in"
	chainForward    = "forward"
	chainSandboxOut = "sandbox_out"
	chainPost       = "postrouting"
)

// Build plans the ruleset:
//
//   - input from the bridge (to any address of the host): replies to the
//     host's own connections pass; DNS to netns-dns's own socket (NetnsDNS),
//     DNS to a resolver and the allowlist pass; everything else is
//     dropped;
//   - forwarded from the bridge: back to the bridge (sandbox to sandbox) is
//     dropped; replies pass; DNS to a resolver and the allowlist pass;
//     private, shared, link-local, loopback, multicast and reserved
//     destinations (netpolicy.Blocked4, netpolicy.Blocked6) are rejected
//     (ICMP administratively prohibited: connect fails at once with
//     EHOSTUNREACH); the rest, the internet, passes;
//   - forwarded to the bridge: only replies pass;
//   - from the subnet out of any other interface: masqueraded.
func Build(s Spec) Ruleset {
	br := s.Bridge
	established := Match{Kind: MatchEstablished}
	accept, drop := Verdict{Kind: Accept}, Verdict{Kind: Drop}

	var open []Rule // DNS and allowlist, in both directions
	for _, r := range s.Resolvers {
		for _, proto := range []string{"udp", "tcp"} {
			open = append(open, Rule{Match: []Match{daddr(netip.PrefixFrom(r, r.BitLen())), dport(proto, 53, 53)}, Verdict: accept})
		}
	}
	for _, a := range s.Allow {
		m := []Match{daddr(a.Dest)}
		if a.Proto != "" {
			m = append(m, dport(a.Proto, a.PortLo, a.PortHi))
		}
		open = append(open, Rule{Match: m, Verdict: accept})
	}

	in := []Rule{{Match: []Match{established}, Verdict: accept}}
	if gw := s.NetnsDNS; gw.IsValid() {
		for _, proto := range []string{"udp", "tcp"} {
			in = append(in, Rule{Match: []Match{daddr(netip.PrefixFrom(gw, gw.BitLen())), dport(proto, 53, 53), {Kind: MatchSocketMark, Mark: DNSMark}}, Verdict: accept})
		}
	}
	in = append(in, open...)
	in = append(in, Rule{Verdict: drop})

	out := []Rule{
		{Match: []Match{{Kind: MatchOIFName, Name: br}}, Verdict: drop},
		{Match: []Match{established}, Verdict: accept},
	}
	out = append(out, open...)
	out = append(out,
		Rule{Match: []Match{{Kind: MatchDAddrSet, Name: "blocked4"}}, Verdict: Verdict{Kind: RejectAdminProhibited}},
		Rule{Match: []Match{{Kind: MatchDAddrSet, Name: "blocked6", IPv6: true}}, Verdict: Verdict{Kind: RejectAdminProhibited}},
	)

	return Ruleset{
		Table: TableName,
		Sets: []Set{
			{Name: "blocked4", Elements: netpolicy.Blocked4},
			{Name: "blocked6", IPv6: true, Elements: netpolicy.Blocked6},
		},
		Chains: []Chain{
			{Name: chainInput, Base: &Base{Type: "filter", Hook: "input", Priority: "filter"}, Rules: []Rule{
				// A sandbox's address from anywhere but the bridge is forged
				// (netns-dns tells namespaces apart by it); the host's own
				// traffic to its bridge address comes in on lo.
				{Match: []Match{{Kind: MatchSAddr, Prefix: s.Subnet}, {Kind: MatchIIFName, Name: br, Not: true}, {Kind: MatchIIFName, Name: "lo", Not: true}}, Verdict: drop},
				{Match: []Match{{Kind: MatchIIFName, Name: br}}, Verdict: Verdict{Kind: Jump, Chain: chainSandboxIn}},
			}},
			{Name: chainSandboxIn, Rules: in},
			{Name: chainForward, Base: &Base{Type: "filter", Hook: "forward", Priority: "filter"}, Rules: []Rule{
				{Match: []Match{{Kind: MatchIIFName, Name: br}}, Verdict: Verdict{Kind: Jump, Chain: chainSandboxOut}},
				{Match: []Match{{Kind: MatchOIFName, Name: br}, established}, Verdict: accept},
				{Match: []Match{{Kind: MatchOIFName, Name: br}}, Verdict: drop},
			}},
			{Name: chainSandboxOut, Rules: out},
			{Name: chainPost, Base: &Base{Type: "nat", Hook: "postrouting", Priority: "srcnat"}, Rules: []Rule{
				{Match: []Match{{Kind: MatchSAddr, Prefix: s.Subnet}, {Kind: MatchOIFName, Name: br, Not: true}}, Verdict: Verdict{Kind: Masquerade}},
			}},
		},
	}
}

func daddr(p netip.Prefix) Match {
	return Match{Kind: MatchDAddr, Prefix: p, IPv6: !p.Addr().Is4()}
}

func dport(proto string, lo, hi uint16) Match {
	return Match{Kind: MatchDPort, Proto: proto, PortLo: lo, PortHi: hi}
}

// String renders the ruleset in the syntax of nft -f, as nft list prints it
// (but for line breaks in long sets).
func (r Ruleset) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", r.Table)
	for i, s := range r.Sets {
		if i > 0 {
			b.WriteString("\n")
		}
		typ := "ipv4_addr"
		if s.IPv6 {
			typ = "ipv6_addr"
		}
		if s.Flows {
			typ = "ipv4_addr . inet_proto . inet_service"
		}
		els := make([]string, len(s.Elements))
		for i, e := range s.Elements {
			els[i] = prefixString(e)
		}
		if s.Timeout {
			fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s\n\t\tflags timeout\n\t}\n", s.Name, typ)
			continue
		}
		fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s\n\t\tflags interval\n\t\telements = { %s }\n\t}\n", s.Name, typ, strings.Join(els, ", "))
	}
	for _, c := range r.Chains {
		fmt.Fprintf(&b, "\n\tchain %s {\n", c.Name)
		if c.Base != nil {
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %s; policy accept;\n", c.Base.Type, c.Base.Hook, c.Base.Priority)
		}
		for _, rule := range c.Rules {
			b.WriteString("\t\t" + rule.String() + "\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func (r Rule) String() string {
	var parts []string
	for _, m := range r.Match {
		parts = append(parts, m.String())
	}
	return strings.Join(append(parts, r.Verdict.String()), " ")
}

func (m Match) String() string {
	ip := "ip"
	if m.IPv6 {
		ip = "ip6"
	}
	not := ""
	if m.Not {
		not = "!= "
	}
	switch m.Kind {
	case MatchIIFName:
		return fmt.Sprintf("iifname %s%q", not, m.Name)
	case MatchOIFName:
		return fmt.Sprintf("oifname %s%q", not, m.Name)
	case MatchEstablished:
		return "ct state established,related"
	case MatchDAddr:
		return fmt.Sprintf("%s daddr %s", ip, prefixString(m.Prefix))
	case MatchSAddr:
		return fmt.Sprintf("%s saddr %s", ip, prefixString(m.Prefix))
	case MatchDAddrSet:
		return fmt.Sprintf("%s daddr @%s", ip, m.Name)
	case MatchFlowSet:
		return fmt.Sprintf("ip daddr . meta l4proto . th dport @%s", m.Name)
	case MatchDPort:
		if m.PortLo == m.PortHi {
			return fmt.Sprintf("%s dport %d", m.Proto, m.PortLo)
		}
		return fmt.Sprintf("%s dport %d-%d", m.Proto, m.PortLo, m.PortHi)
	case MatchLimit:
		return fmt.Sprintf("limit rate %d/second burst %d packets", m.PortLo, m.PortHi)
	case MatchSocketMark:
		return fmt.Sprintf("socket mark 0x%08x", m.Mark)
	}
	return fmt.Sprintf("match(%d)", m.Kind)
}

func (v Verdict) String() string {
	switch v.Kind {
	case Accept:
		return "accept"
	case Drop:
		return "drop"
	case Jump:
		return "jump " + v.Chain
	case RejectAdminProhibited:
		return "reject with icmpx admin-prohibited"
	case Masquerade:
		return "masquerade"
	case Log:
		return fmt.Sprintf("log prefix %q group %d", v.Prefix, v.Group)
	}
	return fmt.Sprintf("verdict(%d)", v.Kind)
}

// prefixString writes a single address without its length, as nft does.
func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}
