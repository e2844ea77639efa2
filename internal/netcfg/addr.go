package netcfg

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// ErrExhausted is returned when every usable address of the subnet is in
// use.
var ErrExhausted = errors.New("address space exhausted")

// Address returns the IPv4 address of namespace name in the subnet of
// bridge (an address with its prefix, such as 10.10.0.1/16).
//
// The address is derived from a hash of the name, so a namespace gets the
// same address every time while it is free; if it is taken (inUse reports
// true) the next one is tried, in order, wrapping around. Never returned:
// the network and broadcast addresses, the bridge's own, and any address
// whose last byte is 0 or 255 (software that assumes a /24 rejects those).
func Address(name string, bridge netip.Prefix, inUse func(netip.Addr) bool) (netip.Addr, error) {
	if !bridge.Addr().Is4() {
		return netip.Addr{}, fmt.Errorf("bridge address %s is not IPv4", bridge)
	}
	hostBits := 32 - bridge.Bits()
	if hostBits < 2 {
		return netip.Addr{}, fmt.Errorf("subnet %s is too small for sandboxes", bridge.Masked())
	}
	size := uint64(1) << hostBits
	base := binary.BigEndian.Uint32(bridge.Masked().Addr().AsSlice())
	sum := sha256.Sum256([]byte(name))
	// Host numbers 1 .. size-2: not the network (0), not broadcast (size-1).
	n := size - 2
	start := binary.BigEndian.Uint64(sum[:8]) % n
	for i := uint64(0); i < n; i++ {
		host := 1 + (start+i)%n
		a := addrFrom(base + uint32(host))
		if a == bridge.Addr() || a.As4()[3] == 0 || a.As4()[3] == 255 {
			continue
		}
		if inUse != nil && inUse(a) {
			continue
		}
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("%w: every address of %s is in use", ErrExhausted, bridge.Masked())
}

// Usable reports whether a could have been returned by Address for bridge
// (ignoring whether it is in use).
func Usable(a netip.Addr, bridge netip.Prefix) bool {
	subnet := bridge.Masked()
	if !a.Is4() || !subnet.Contains(a) || a == bridge.Addr() || a == subnet.Addr() {
		return false
	}
	b := a.As4()
	if b[3] == 0 || b[3] == 255 {
		return false
	}
	if bridge.Bits() < 32 {
		last := binary.BigEndian.Uint32(subnet.Addr().AsSlice()) | (uint32(1)<<(32-bridge.Bits()) - 1)
		if a == addrFrom(last) {
			return false
		}
	}
	return true
}

func addrFrom(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}
