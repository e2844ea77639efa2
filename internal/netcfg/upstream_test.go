package netcfg

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestUpstreams(t *testing.T) {
	tests := []struct {
		name, resolv string
		override     []string
		want         string
	}{
		{"resolved stub", "nameserver 127.0.0.53\noptions edns0\n", nil, "[127.0.0.53:53]"},
		{"lan and v6", "nameserver 192.168.1.1\nnameserver fd00::1\nnameserver fe80::1%eth0\n", nil, "[192.168.1.1:53 [fd00::1]:53]"},
		{"override wins", "nameserver 127.0.0.53\n", []string{"192.168.1.53"}, "[192.168.1.53:53]"},
		{"none", "# empty\n", nil, "[127.0.0.53:53]"},
		{"at most 3, no duplicates", "nameserver 1.1.1.1\nnameserver 1.1.1.1\nnameserver 2.2.2.2\nnameserver 3.3.3.3\nnameserver 4.4.4.4\n", nil, "[1.1.1.1:53 2.2.2.2:53 3.3.3.3:53]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o []netip.Addr
			for _, s := range tt.override {
				o = append(o, netip.MustParseAddr(s))
			}
			if got := fmt.Sprint(Upstreams([]byte(tt.resolv), o)); got != tt.want {
				t.Fatalf("Upstreams(%q, %v) = %s, want %s", tt.resolv, tt.override, got, tt.want)
			}
		})
	}
}
