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

// Blocked4 are the IPv4 destinations a sandbox may not reach unless
// allowed: this network, private (RFC 1918), shared (RFC 6598), loopback,
// link-local (cloud metadata), IETF protocol assignments, benchmarking
// (proxies' fake-ip ranges), multicast and reserved (with broadcast).
var Blocked4 = prefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"224.0.0.0/4", "240.0.0.0/4",
)

// Blocked6 are the IPv6 equivalents: unspecified and loopback, IPv4-mapped,
// local-use NAT64, discard-only, unique local, link-local, site-local and
// multicast.
var Blocked6 = prefixes(
	"::/127", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64",
	"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
)

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
