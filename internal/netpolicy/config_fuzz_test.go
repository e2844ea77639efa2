package netpolicy_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// FuzzParseConfig: a config either fails with a FILE:LINE message or gives
// entries whose rules render on one line each and match nothing wider than
// they say.
func FuzzParseConfig(f *testing.F) {
	f.Add("allow 10.1.0.0/16 tcp 80-90\nresolver 192.168.1.1\n")
	f.Add("allow fd00::1\n# c\nallow 1.2.3.4 udp 53")
	f.Add("resolver 1.1.1.1 1.1.1.2")
	f.Add("max-ttl 1d\nmax-ttl 99999999999h")
	// The default install on a host with systemd-resolved.
	stubSpec := nft.Spec{Bridge: "br-netns", Subnet: netip.MustParsePrefix("10.10.0.0/16"), Resolvers: []netip.Addr{netip.MustParseAddr("10.10.0.1")}}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := netpolicy.ParseConfig("f", []byte(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one FILE:LINE line", err)
			}
			return
		}
		if c.MaxTTL != 0 && (c.MaxTTL < time.Minute || c.MaxTTL > 7*24*time.Hour) {
			t.Fatalf("max-ttl %v", c.MaxTTL)
		}
		for _, a := range c.Allow {
			if !a.Dest.IsValid() || a.Dest.Bits() == 0 || a.Dest.Masked() != a.Dest {
				t.Fatalf("allow %v", a)
			}
			if a.Proto != "" && (a.PortLo == 0 || a.PortLo > a.PortHi) {
				t.Fatalf("allow ports %v", a)
			}
		}
		s := nft.Build(nft.Spec{Bridge: "br-netns", Subnet: netip.MustParsePrefix("10.10.0.0/16"), Resolvers: c.Resolvers, Allow: c.Allow}).String()
		if want := strings.Count(nft.Build(stubSpec).String(), "\n") - 4 + 4*len(c.Resolvers) + 2*len(c.Allow); strings.Count(s, "\n") != want {
			t.Fatalf("ruleset has %d lines, want %d:\n%s", strings.Count(s, "\n"), want, s)
		}
	})
}
