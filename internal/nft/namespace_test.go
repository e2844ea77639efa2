package nft

import (
	"net/netip"
	"path/filepath"
	"strings"
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

// insideSpec is the table inside an allowlist namespace whose resolver is
// netns-dns, with one allow line, on a host with an uplink and a LAN
// address.
func insideSpec() InsideSpec {
	ns := BuildNamespace(namespaceSpec())
	return InsideSpec{
		Name:      "agents",
		Namespace: &ns,
		Gateway:   netip.MustParseAddr("10.10.0.1"),
		Resolvers: []netip.Addr{netip.MustParseAddr("10.10.0.1")},
		Allow:     []netpolicy.Allow{{Dest: netip.MustParsePrefix("192.168.1.10/32"), Proto: "tcp", PortLo: 3128, PortHi: 3128}},
		Host:      []netip.Addr{netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("192.168.1.2"), netip.MustParseAddr("10.10.0.1")},
	}
}

func TestGoldenInside(t *testing.T) {
	testutil.Golden(t, filepath.Join("testdata", "inside.nft"), BuildInside(insideSpec()).String())
}

// TestMirror: the mirror of a namespace table holds its sets and its
// egress chain as they are, and its forward rules without the matches on
// the bridge and the namespace's address.
func TestMirror(t *testing.T) {
	ns := BuildNamespace(namespaceSpec())
	sets, chains, jump := Mirror(ns)
	if len(sets) != len(ns.Sets) {
		t.Errorf("Mirror sets = %v, want those of the namespace table %v", sets, ns.Sets)
	}
	var names []string
	for _, c := range chains {
		names = append(names, c.Name)
		if c.Base != nil {
			t.Errorf("Mirror chain %s is a base chain", c.Name)
		}
	}
	if got, want := strings.Join(names, " "), "allowlist egress"; got != want {
		t.Errorf("Mirror chains = %s, want %s", got, want)
	}
	if got, want := chains[0].Rules[0].String(), "jump egress"; got != want {
		t.Errorf("Mirror forward rule = %s, want %s", got, want)
	}
	if len(jump) != 1 || jump[0].String() != "jump allowlist" {
		t.Errorf("Mirror jump = %v, want jump allowlist", jump)
	}
	if ns.Chains[0].Rules[0].String() != `iifname "br-netns" ip saddr 10.10.12.34 jump egress` {
		t.Errorf("Mirror changed the namespace table: %s", ns.Chains[0].Rules[0])
	}
}
