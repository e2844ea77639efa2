package netcfg

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
)

var defaultBridge = netip.MustParsePrefix("10.10.0.1/16")

func TestAddress500Names(t *testing.T) {
	used := map[netip.Addr]string{}
	inUse := func(a netip.Addr) bool { _, ok := used[a]; return ok }
	subnet := defaultBridge.Masked()
	for i := range 500 {
		name := fmt.Sprintf("ns%d", i)
		a, err := Address(name, defaultBridge, inUse)
		if err != nil {
			t.Fatalf("Address(%q) error: %v", name, err)
		}
		if other, dup := used[a]; dup {
			t.Fatalf("Address(%q) = %s, already given to %q", name, a, other)
		}
		b := a.As4()
		switch {
		case !subnet.Contains(a):
			t.Fatalf("Address(%q) = %s, outside %s", name, a, subnet)
		case a == defaultBridge.Addr():
			t.Fatalf("Address(%q) = %s, the bridge address", name, a)
		case b[3] == 0 || b[3] == 255:
			t.Fatalf("Address(%q) = %s, ends in .0 or .255", name, a)
		case a == netip.MustParseAddr("10.10.255.255") || a == subnet.Addr():
			t.Fatalf("Address(%q) = %s, broadcast or network", name, a)
		}
		if !Usable(a, defaultBridge) {
			t.Fatalf("Usable(%s) = false for an address Address returned", a)
		}
		used[a] = name
	}
}

func TestAddressDeterministic(t *testing.T) {
	a1, err := Address("agents", defaultBridge, nil)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := Address("agents", defaultBridge, nil)
	if a1 != a2 {
		t.Fatalf("Address(agents) = %s then %s", a1, a2)
	}
	b, _ := Address("agents2", defaultBridge, nil)
	if a1 == b {
		t.Fatalf("Address(agents) = Address(agents2) = %s", a1)
	}
}

func TestAddressCollision(t *testing.T) {
	first, err := Address("agents", defaultBridge, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The hashed address is taken: the next free one follows it.
	got, err := Address("agents", defaultBridge, func(a netip.Addr) bool { return a == first })
	if err != nil {
		t.Fatal(err)
	}
	want := first.Next()
	for !Usable(want, defaultBridge) {
		want = want.Next()
	}
	if got != want {
		t.Fatalf("Address(agents) with %s taken = %s, want %s", first, got, want)
	}
}

func TestAddressSmallSubnets(t *testing.T) {
	tests := []struct {
		name   string
		bridge string
		want   []string // every address the subnet can give, in any order
	}{
		// /30: .0 network, .1 bridge, .3 broadcast.
		{"slash30", "192.0.2.1/30", []string{"192.0.2.2"}},
		// /29 with the bridge in the middle.
		{"slash29", "192.0.2.13/29", []string{"192.0.2.9", "192.0.2.10", "192.0.2.11", "192.0.2.12", "192.0.2.14"}},
		// A /23 whose .255 and .0 in the middle are valid but avoided.
		{"slash23 edges", "192.0.2.1/23", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bridge := netip.MustParsePrefix(tt.bridge)
			got := map[netip.Addr]bool{}
			for i := 0; ; i++ {
				a, err := Address(fmt.Sprint(i), bridge, func(a netip.Addr) bool { return got[a] })
				if errors.Is(err, ErrExhausted) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got[a] = true
			}
			if tt.want == nil {
				// 512 addresses less network, broadcast, bridge,
				// 192.0.2.255 and 192.0.3.0.
				if len(got) != 507 || got[netip.MustParseAddr("192.0.2.255")] || got[netip.MustParseAddr("192.0.3.0")] {
					t.Fatalf("gave %d addresses (want 507), .255 %v, .0 %v", len(got), got[netip.MustParseAddr("192.0.2.255")], got[netip.MustParseAddr("192.0.3.0")])
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("gave %v, want %v", got, tt.want)
			}
			for _, w := range tt.want {
				if !got[netip.MustParseAddr(w)] {
					t.Fatalf("gave %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestAddressErrors(t *testing.T) {
	tests := []struct {
		name, bridge, want string
	}{
		{"too small", "192.0.2.1/31", "subnet 192.0.2.0/31 is too small for sandboxes"},
		{"ipv6", "fd00::1/64", "bridge address fd00::1/64 is not IPv4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Address("x", netip.MustParsePrefix(tt.bridge), nil)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Address error = %v, want %q", err, tt.want)
			}
		})
	}
	_, err := Address("x", netip.MustParsePrefix("192.0.2.1/30"), func(netip.Addr) bool { return true })
	if !errors.Is(err, ErrExhausted) || err.Error() != "address space exhausted: every address of 192.0.2.0/30 is in use" {
		t.Fatalf("Address with all taken = %v", err)
	}
}

func TestUsable(t *testing.T) {
	tests := []struct {
		name string
		addr string
		want bool
	}{
		{"host", "10.10.3.7", true},
		{"network", "10.10.0.0", false},
		{"bridge", "10.10.0.1", false},
		{"broadcast", "10.10.255.255", false},
		{"dot zero", "10.10.4.0", false},
		{"dot 255", "10.10.4.255", false},
		{"outside", "10.11.0.5", false},
		{"ipv6", "fd00::5", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Usable(netip.MustParseAddr(tt.addr), defaultBridge); got != tt.want {
				t.Fatalf("Usable(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}
