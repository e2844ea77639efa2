package nft

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// goldenSpec is the ruleset of a host whose sandboxes use a LAN resolver and
// that allows a proxy, a mirror's port range and an IPv6 network.
func goldenSpec() Spec {
	return Spec{
		Bridge:    "br-netns",
		Subnet:    netip.MustParsePrefix("10.10.0.0/16"),
		Resolvers: []netip.Addr{netip.MustParseAddr("192.168.1.1")},
		Allow: []netpolicy.Allow{
			{Dest: netip.MustParsePrefix("192.168.1.10/32"), Proto: "tcp", PortLo: 3128, PortHi: 3128},
			{Dest: netip.MustParsePrefix("10.1.0.0/16"), Proto: "tcp", PortLo: 8000, PortHi: 8100},
			{Dest: netip.MustParsePrefix("100.64.0.0/10"), Proto: "udp", PortLo: 123, PortHi: 123},
			{Dest: netip.MustParsePrefix("fd00:1::/64")},
		},
	}
}

// stubSpec is the default install on a host with systemd-resolved.
func stubSpec() Spec {
	return Spec{
		Bridge:    "br-netns",
		Subnet:    netip.MustParsePrefix("10.10.0.0/16"),
		Resolvers: []netip.Addr{netip.MustParseAddr("10.10.0.1")},
	}
}

// policySpec is a host whose sandboxes have a policy: DNS only to
// netns-dns's socket on the gateway.
func policySpec() Spec {
	return Spec{
		Bridge:   "br-netns",
		Subnet:   netip.MustParsePrefix("10.10.0.0/16"),
		NetnsDNS: netip.MustParseAddr("10.10.0.1"),
	}
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"lan-resolver", goldenSpec()},
		{"resolved-stub", stubSpec()},
		{"netns-dns", policySpec()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Build(tt.spec).String()
			testutil.Golden(t, filepath.Join("testdata", tt.name+".nft"), got)
		})
	}
}
