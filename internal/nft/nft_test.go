package nft

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenSpec is the ruleset of a host whose sandboxes use a LAN resolver and
// that allows a proxy, a mirror's port range and an IPv6 network.
func goldenSpec() Spec {
	return Spec{
		Bridge:    "br-netns",
		Subnet:    netip.MustParsePrefix("10.10.0.0/16"),
		Resolvers: []netip.Addr{netip.MustParseAddr("192.168.1.1")},
		Allow: []Allow{
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

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"lan-resolver", goldenSpec()},
		{"resolved-stub", stubSpec()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Build(tt.spec).String()
			path := filepath.Join("testdata", tt.name+".nft")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if got != string(want) {
				t.Fatalf("Build(%s).String() differs from %s:\n%s", tt.name, path, got)
			}
		})
	}
}
