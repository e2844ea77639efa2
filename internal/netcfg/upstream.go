package netcfg

import "net/netip"

// Upstreams are the servers netns-dns forwards to: the config's resolver
// lines, else the host resolv.conf's nameservers (loopback ones included:
// netns-dns runs on the host), port 53; with none, the gateway's stub.
func Upstreams(hostResolv []byte, override []netip.Addr) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(a netip.Addr) {
		ap := netip.AddrPortFrom(a.Unmap(), 53)
		for _, o := range out {
			if o == ap {
				return
			}
		}
		if len(out) < maxNameservers {
			out = append(out, ap)
		}
	}
	for _, a := range override {
		add(a)
	}
	if len(out) > 0 {
		return out
	}
	for _, f := range directives(hostResolv) {
		if f[0] != "nameserver" || len(f) < 2 {
			continue
		}
		if a, err := netip.ParseAddr(f[1]); err == nil && a.Zone() == "" {
			add(a)
		}
	}
	if len(out) == 0 {
		add(netip.AddrFrom4([4]byte{127, 0, 0, 53}))
	}
	return out
}
