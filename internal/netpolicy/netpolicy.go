// Package netpolicy is the network policy of the sandboxes: the firewall
// config file (netns-firewall.conf and netns-firewall.d/NAME.conf), its
// domains, presets and merge, the ranges every namespace is kept from, and
// the policy file netns-dns reads for each namespace, with the one domain
// matcher (Policy.Allows).
//
// It is pure but for LoadConfig and LoadNamespace, which read the root-owned
// files. Package nft turns a policy into rulesets; netns-setup applies both.
package netpolicy

import "net/netip"

// Allow is one extra allowed destination.
type Allow struct {
	Dest netip.Prefix
	// Proto is "tcp", "udp", or "" for every protocol and port.
	Proto          string
	PortLo, PortHi uint16
}

// The one table of blocked destinations: what a sandbox may not reach
// unless an allow line covers it. The firewall's tables (both: the
// host's and the one inside each namespace, internal/nft), netns-dns's
// answer filter (no answer leads there, so no approval pins it) and the
// config's checks all read it (Blocked, Blocked4, Blocked6).

// Blocked4 are the IPv4 ranges: this network, private (RFC 1918), shared
// (RFC 6598: carrier NAT, and Alibaba's metadata address 100.100.100.200),
// loopback, link-local (cloud metadata), IETF protocol assignments, the
// 6to4 relay anycast, benchmarking (proxies' fake-ip ranges), multicast and
// reserved (with broadcast).
var Blocked4 = prefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"224.0.0.0/4", "240.0.0.0/4",
)

// Blocked6 are the IPv6 ranges: unspecified and loopback, IPv4-mapped, the
// forms that carry an IPv4 address a gateway may reach for the sandbox
// (NAT64's well-known and local-use prefixes, 6to4, Teredo), blocked whole
// whatever IPv4 address they carry, discard-only, unique local,
// link-local, site-local and multicast.
var Blocked6 = prefixes(
	"::/127", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
	"2001::/32", "2002::/16",
	"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
)

// Blocked reports whether a is in the table (Blocked4 for an IPv4
// address, Blocked6 otherwise).
func Blocked(a netip.Addr) bool {
	list := Blocked4
	if !a.Is4() {
		list = Blocked6
	}
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// destString writes a single address without its length, as the config
// file does.
func destString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}
