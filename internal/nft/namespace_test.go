package nft

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

func namespaceSpec() NamespaceSpec {
	domains := []netpolicy.Domain{
		{Name: "api.example.com", Ports: netpolicy.DefaultPorts},
		{Name: "example.org", Wildcard: true, Ports: []netpolicy.Ports{{Proto: "tcp", Lo: 443, Hi: 443}}},
		{Name: "git.example.org", Ports: []netpolicy.Ports{{Proto: "tcp", Lo: 22, Hi: 22}}},
	}
	return NamespaceSpec{
		Name:   "agents",
		Bridge: "br-netns",
		Addr:   netip.MustParseAddr("10.10.12.34"),
		Ports:  netpolicy.PortGroups(domains),
		Allow:  []netpolicy.Allow{{Dest: netip.MustParsePrefix("192.168.1.10/32"), Proto: "tcp", PortLo: 3128, PortHi: 3128}},
	}
}

func TestGoldenNamespace(t *testing.T) {
	testutil.Golden(t, filepath.Join("testdata", "namespace-allowlist.nft"), BuildNamespace(namespaceSpec()).String())
}

// insideSpec is the table inside a namespace whose resolver is netns-dns,
// with one allow line, on a host with an uplink and a LAN address.
func insideSpec() InsideSpec {
	return InsideSpec{
		Gateway:   netip.MustParseAddr("10.10.0.1"),
		Resolvers: []netip.Addr{netip.MustParseAddr("10.10.0.1")},
		Allow:     []netpolicy.Allow{{Dest: netip.MustParsePrefix("192.168.1.10/32"), Proto: "tcp", PortLo: 3128, PortHi: 3128}},
		Host:      []netip.Addr{netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("192.168.1.2"), netip.MustParseAddr("10.10.0.1")},
	}
}

func TestGoldenInside(t *testing.T) {
	testutil.Golden(t, filepath.Join("testdata", "inside.nft"), BuildInside(insideSpec()).String())
}
