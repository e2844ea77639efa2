package netnsdns

import (
	"net/netip"
	"testing"
)

func TestParseIPv4(t *testing.T) {
	pkt := make([]byte, 28)
	pkt[0] = 0x45
	pkt[9] = 6
	copy(pkt[16:20], []byte{203, 0, 113, 9})
	pkt[22], pkt[23] = 0x01, 0xbb
	proto, dst, port, ok := parseIPv4(pkt)
	if !ok || proto != "tcp" || dst != netip.MustParseAddr("203.0.113.9") || port != 443 {
		t.Fatalf("parseIPv4 = %s %s %d %v", proto, dst, port, ok)
	}
	if _, _, _, ok := parseIPv4(pkt[:10]); ok {
		t.Fatal("parseIPv4 of a short packet ok")
	}
}

func FuzzParseDrop(f *testing.F) {
	f.Add([]byte{8, 0, 10, 0, 'a', 'b', 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseDrop(b) // must not panic
	})
}
