package netcfg

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestResolvers(t *testing.T) {
	gw := netip.MustParseAddr("10.10.0.1")
	tests := []struct {
		name     string
		host     string
		override []string
		want     string
	}{
		{"systemd-resolved stub", "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n", nil, "[10.10.0.1]"},
		{"LAN resolver", "# from DHCP\nnameserver 192.168.1.1\n", nil, "[192.168.1.1]"},
		{"mixed", "nameserver 127.0.0.1\nnameserver ::1\nnameserver fe80::1%eth0\nnameserver 192.168.1.1\nnameserver 127.0.0.53\n", nil, "[10.10.0.1 192.168.1.1]"},
		{"ipv6 only", "nameserver 2001:db8::53\n", nil, "[10.10.0.1]"},
		{"empty", "", nil, "[10.10.0.1]"},
		{"garbage", "nameserver\nnameserver banana\nnameserver 1.1.1.1 # comment\n", nil, "[1.1.1.1]"},
		{"more than three", "nameserver 1.1.1.1\nnameserver 1.0.0.1\nnameserver 9.9.9.9\nnameserver 8.8.8.8\n", nil, "[1.1.1.1 1.0.0.1 9.9.9.9]"},
		{"override", "nameserver 127.0.0.53\n", []string{"192.168.1.53"}, "[192.168.1.53]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ov []netip.Addr
			for _, s := range tt.override {
				ov = append(ov, netip.MustParseAddr(s))
			}
			if got := fmt.Sprint(Resolvers([]byte(tt.host), ov, gw)); got != tt.want {
				t.Fatalf("Resolvers(%q) = %s, want %s", tt.host, got, tt.want)
			}
		})
	}
}

func TestResolvConf(t *testing.T) {
	host := "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan example.com\n"
	got := string(ResolvConf("agents", []netip.Addr{netip.MustParseAddr("10.10.0.1")}, []byte(host)))
	want := "# Written by netns-setup for the network namespace agents; netns-setup down removes it.\n" +
		"nameserver 10.10.0.1\noptions edns0 trust-ad\nsearch lan example.com\n"
	if got != want {
		t.Fatalf("ResolvConf = %q, want %q", got, want)
	}
}

// FuzzResolvers: whatever the host's file says, a sandbox gets one to three
// IPv4 non-loopback nameservers and a resolv.conf whose lines are only ours
// or the host's search/domain/options lines.
func FuzzResolvers(f *testing.F) {
	f.Add("nameserver 127.0.0.53\nsearch lan\n")
	f.Add("nameserver 192.168.1.1\nnameserver ::ffff:127.0.0.1\n")
	f.Add("options\x00 x\rnameserver 1.2.3.4")
	gw := netip.MustParseAddr("10.10.0.1")
	f.Fuzz(func(t *testing.T, host string) {
		rs := Resolvers([]byte(host), nil, gw)
		if len(rs) < 1 || len(rs) > 3 {
			t.Fatalf("Resolvers gave %d servers", len(rs))
		}
		for _, r := range rs {
			if !r.Is4() || r.IsLoopback() {
				t.Fatalf("Resolvers gave %s", r)
			}
		}
		out := string(ResolvConf("x", rs, []byte(host)))
		for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			f := strings.Fields(line)
			if i == 0 && strings.HasPrefix(line, ResolvHeader) {
				continue
			}
			if len(f) == 0 {
				t.Fatalf("empty line in %q", out)
			}
			switch f[0] {
			case "nameserver", "search", "domain", "options":
			default:
				t.Fatalf("line %q in %q", line, out)
			}
		}
	})
}
