package netnssetup

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// links gives the namespace its veth pair on the bridge, its address (the
// one it has if still free, else one derived from its name) and its default
// route, and turns IPv6 off on eth0. It returns the address.
func links(cfg netcfg.Config, name, path string, host *netlink.Handle, br netlink.Link, undo *undoStack) (netip.Addr, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer ns.Close()
	in, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netlink in %s: %w", name, err)
	}
	defer in.Close()

	link := netcfg.Link{HostVeth: netcfg.HostVeth(name), Bridge: cfg.Bridge, Gateway: cfg.Gateway()}
	have, err := observe(host, in, ns, link.HostVeth)
	if err != nil {
		return netip.Addr{}, err
	}
	inUse, err := addressesInUse(host, cfg, name)
	if err != nil {
		return netip.Addr{}, err
	}
	taken := func(a netip.Addr) bool { return inUse[a] }
	var current []netip.Prefix
	if have.Peer != nil {
		current = have.Peer.Addrs
	}
	addr, ok := netcfg.Keep(current, cfg.BridgeAddr, taken)
	if !ok {
		if addr, err = netcfg.Address(name, cfg.BridgeAddr, taken); err != nil {
			return netip.Addr{}, err
		}
	}
	link.Addr = netip.PrefixFrom(addr, cfg.BridgeAddr.Bits())
	steps, err := netcfg.Steps(link, have)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, s := range steps {
		if err := apply(host, in, ns, br, link, s); err != nil {
			return netip.Addr{}, fmt.Errorf("%s: %w", s, err)
		}
		if s.Op == netcfg.OpCreateVeth {
			undo.push("link "+link.HostVeth, func() error { return deleteLink(host, link.HostVeth) })
		}
	}
	if err := inNetns(path, func() error { return disableIPv6(netcfg.PeerName) }); err != nil {
		return netip.Addr{}, fmt.Errorf("sysctl in %s: %w", name, err)
	}
	return addr, nil
}

// observe reads the state of the namespace's links.
func observe(host, in *netlink.Handle, ns netns.NsHandle, hostVeth string) (netcfg.Observed, error) {
	var o netcfg.Observed
	lo, err := in.LinkByName("lo")
	if err != nil {
		return o, fmt.Errorf("lo: %w", err)
	}
	o.LoUp = lo.Attrs().Flags&net.FlagUp != 0

	peer, err := linkByName(in, netcfg.PeerName)
	if err != nil {
		return o, err
	}
	if peer != nil {
		p := &netcfg.PeerLink{Veth: peer.Type() == "veth", Up: peer.Attrs().Flags&net.FlagUp != 0}
		if p.Addrs, err = addrList(in, peer); err != nil {
			return o, err
		}
		routes, err := in.RouteList(peer, netlink.FAMILY_V4)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return o, fmt.Errorf("routes: %w", err)
		}
		for _, r := range routes {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask) {
				if gw, ok := netip.AddrFromSlice(r.Gw); ok {
					p.Gateway = gw.Unmap()
				}
			}
		}
		o.Peer = p
	}

	h, err := linkByName(host, hostVeth)
	if err != nil || h == nil {
		return o, err
	}
	hl := &netcfg.HostLink{Veth: h.Type() == "veth", Up: h.Attrs().Flags&net.FlagUp != 0}
	if hl.Veth && peer != nil {
		nsid, err := host.GetNetNsIdByFd(int(ns))
		if err != nil {
			return o, fmt.Errorf("netns id: %w", err)
		}
		a := h.Attrs()
		hl.Paired = nsid >= 0 && a.NetNsID == nsid && a.ParentIndex == peer.Attrs().Index && peer.Attrs().ParentIndex == a.Index
	}
	if m := h.Attrs().MasterIndex; m > 0 {
		master, err := host.LinkByIndex(m)
		if err != nil {
			return o, fmt.Errorf("master of %s: %w", hostVeth, err)
		}
		hl.Master = master.Attrs().Name
		pi, err := host.LinkGetProtinfo(h)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return o, fmt.Errorf("bridge port %s: %w", hostVeth, err)
		}
		hl.Isolated = pi.Isolated
	}
	o.Host = hl
	return o, nil
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

// linkByName returns the link or nil if there is none.
func linkByName(h *netlink.Handle, name string) (netlink.Link, error) {
	l, err := h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	return l, nil
}

// addrList returns the IPv4 addresses of link (all links if nil), dumping
// again when a concurrent change interrupted the dump.
func addrList(h *netlink.Handle, link netlink.Link) ([]netip.Prefix, error) {
	var addrs []netlink.Addr
	var err error
	for range 10 {
		if addrs, err = h.AddrList(link, netlink.FAMILY_V4); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("addresses: %w", err)
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out, nil
}

// addressesInUse collects the addresses of the subnet that are taken: on
// the host, and in every other namespace of RunDir.
func addressesInUse(host *netlink.Handle, cfg netcfg.Config, self string) (map[netip.Addr]bool, error) {
	used := map[netip.Addr]bool{}
	add := func(ps []netip.Prefix) {
		for _, p := range ps {
			if cfg.Subnet().Contains(p.Addr()) {
				used[p.Addr()] = true
			}
		}
	}
	hostAddrs, err := addrList(host, nil)
	if err != nil {
		return nil, err
	}
	add(hostAddrs)
	entries, err := os.ReadDir(cfg.RunDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Name() == self {
			continue
		}
		path := filepath.Join(cfg.RunDir, e.Name())
		if st, err := inspectNetns(path); err != nil || st != nsPresent {
			continue // not a network namespace: holds no address
		}
		ns, err := netns.GetFromPath(path)
		if err != nil {
			continue // removed meanwhile
		}
		// A namespace removed while we look holds no address.
		h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
		if err != nil {
			ns.Close()
			continue
		}
		addrs, err := addrList(h, nil)
		h.Close()
		ns.Close()
		if err == nil {
			add(addrs)
		}
	}
	return used, nil
}

// apply carries out one step of the link plan.
func apply(host, in *netlink.Handle, ns netns.NsHandle, br netlink.Link, want netcfg.Link, s netcfg.Step) error {
	hostLink := func() (netlink.Link, error) { return host.LinkByName(want.HostVeth) }
	peerLink := func() (netlink.Link, error) { return in.LinkByName(netcfg.PeerName) }
	switch s.Op {
	case netcfg.OpDeleteHost:
		return deleteLink(host, want.HostVeth)
	case netcfg.OpDeletePeer:
		return deleteLink(in, netcfg.PeerName)
	case netcfg.OpCreateVeth:
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: want.HostVeth, MTU: br.Attrs().MTU},
			PeerName:      netcfg.PeerName,
			PeerMTU:       uint32(br.Attrs().MTU),
			PeerNamespace: netlink.NsFd(ns),
		}
		return host.LinkAdd(veth)
	case netcfg.OpSetMaster, netcfg.OpIsolate, netcfg.OpHostUp:
		l, err := hostLink()
		if err != nil {
			return err
		}
		switch s.Op {
		case netcfg.OpSetMaster:
			return host.LinkSetMasterByIndex(l, br.Attrs().Index)
		case netcfg.OpIsolate:
			return host.LinkSetIsolated(l, true)
		default:
			return host.LinkSetUp(l)
		}
	case netcfg.OpLoUp:
		lo, err := in.LinkByName("lo")
		if err != nil {
			return err
		}
		return in.LinkSetUp(lo)
	case netcfg.OpPeerUp, netcfg.OpDelAddr, netcfg.OpAddAddr, netcfg.OpDefaultRoute:
		p, err := peerLink()
		if err != nil {
			return err
		}
		switch s.Op {
		case netcfg.OpPeerUp:
			return in.LinkSetUp(p)
		case netcfg.OpDelAddr:
			return in.AddrDel(p, nlAddr(s.Addr))
		case netcfg.OpAddAddr:
			return in.AddrAdd(p, nlAddr(s.Addr))
		default:
			return in.RouteReplace(&netlink.Route{
				LinkIndex: p.Attrs().Index,
				Dst:       &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
				Gw:        want.Gateway.AsSlice(),
			})
		}
	}
	return fmt.Errorf("unknown step %s", s)
}

func nlAddr(p netip.Prefix) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
}

// deleteLink deletes the link called name if it is there.
func deleteLink(h *netlink.Handle, name string) error {
	l, err := linkByName(h, name)
	if err != nil || l == nil {
		return err
	}
	return h.LinkDel(l)
}

// sandboxLinks returns the host ends of the veth pairs up made.
func sandboxLinks(host *netlink.Handle) ([]string, error) {
	var links []netlink.Link
	var err error
	for range 10 {
		if links, err = host.LinkList(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("links: %w", err)
	}
	var out []string
	for _, l := range links {
		if l.Type() == "veth" && strings.HasPrefix(l.Attrs().Name, netcfg.HostPrefix) {
			out = append(out, l.Attrs().Name)
		}
	}
	return out, nil
}
