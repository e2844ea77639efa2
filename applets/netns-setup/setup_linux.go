package netnssetup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// Where systemd says it runs, and systemd-networkd.
const (
	systemdRunning  = "/run/systemd/system"
	networkdRunning = "/run/systemd/netif/state"
)

// bridgeWait is how long up waits for systemd-networkd to create the bridge
// and give it its address (at boot, netns@.service may start first).
const bridgeWait = 10 * time.Second

// up makes or repairs namespace name. It checks the config file and the
// bridge before it changes anything, and on a failure undoes what this run
// made (the tests check that nothing is left).
func up(ctx context.Context, cfg netcfg.Config, name string, _ multicall.Stdio) (err error) {
	fw, err := loadPolicy(cfg, name)
	if err != nil {
		return err
	}
	host, release, err := lockedHost(cfg)
	if err != nil {
		return err
	}
	defer release()
	br, err := waitBridge(ctx, host, cfg)
	if err != nil {
		return err
	}
	hostResolv, err := os.ReadFile(cfg.HostResolvConf)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	resolvers := netcfg.Resolvers(hostResolv, fw.Resolvers, cfg.Gateway())
	// A loopback resolver line is netns-dns's upstream on the host (only
	// with a policy line): no rule for the sandboxes to reach it.
	tableResolvers := slices.DeleteFunc(slices.Clone(resolvers), netip.Addr.IsLoopback)
	if fw.Policy != "" {
		// netns-dns on the gateway, and only it.
		resolvers = []netip.Addr{cfg.Gateway()}
	}
	if gatewayDNS(cfg, fw) {
		tableResolvers = withGateway(tableResolvers, cfg.Gateway())
	}

	var undo undoStack
	defer undo.run(&err)

	// The firewall first: where nftables is missing, nothing else is made.
	hadTable, err := nft.Exists(nft.TableName, -1)
	if err != nil {
		return fmt.Errorf("firewall: %w", err)
	}
	main, err := netpolicy.LoadConfig(cfg.FirewallConfig)
	if err != nil {
		return err
	}
	spec := nft.Spec{Bridge: cfg.Bridge, Subnet: cfg.Subnet(), Resolvers: tableResolvers, Allow: main.Allow}
	if err := nft.Apply(nft.Build(spec), -1); err != nil {
		return fmt.Errorf("firewall: %w", err)
	}
	if !hadTable {
		undo.push("nftables table "+nft.TableName, func() error {
			// Only if no other sandbox needs it (a flush of the ruleset
			// may have removed it under them).
			others, err := sandboxLinks(host)
			if err != nil || len(others) > 0 {
				return err
			}
			return nft.Delete(nft.TableName, -1)
		})
	}
	if v, err := readSysctl("net.ipv4.ip_forward"); err != nil {
		return err
	} else if v != "1" {
		if err := writeSysctl("net.ipv4.ip_forward", "1"); err != nil {
			return fmt.Errorf("enable net.ipv4.ip_forward: %w", err)
		}
		undo.push("net.ipv4.ip_forward = 1", func() error { return writeSysctl("net.ipv4.ip_forward", v) })
	}

	path := cfg.NetnsPath(name)
	state, err := inspectNetns(path)
	if err != nil {
		return err
	}
	if state != nsPresent {
		if state == nsStale {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
		if err := makeRunDirShared(cfg.RunDir); err != nil {
			return err
		}
		if err := createNetns(path); err != nil {
			return err
		}
		undo.push("namespace "+path, func() error { return removeNetns(path) })
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer ns.Close()
	in, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", name, err)
	}
	defer in.Close()

	pingRange, err := readSysctl("net.ipv4.ping_group_range")
	if err != nil {
		return err
	}
	// Before eth0 exists, so that it never gets an IPv6 address: the
	// firewall and the bridge are IPv4 only. lo keeps ::1.
	err = inNetns(path, func() error {
		if err := writeSysctl("net.ipv4.ping_group_range", pingRange); err != nil {
			return err
		}
		return disableIPv6("default")
	})
	if err != nil {
		return fmt.Errorf("sysctl in %s: %w", name, err)
	}

	link := netcfg.Link{HostVeth: netcfg.HostVeth(name), Bridge: cfg.Bridge, Gateway: cfg.Gateway()}
	have, err := observe(host, in, ns, link.HostVeth)
	if err != nil {
		return err
	}
	inUse, err := addressesInUse(host, cfg, name)
	if err != nil {
		return err
	}
	taken := func(a netip.Addr) bool { return inUse[a] }
	var current []netip.Prefix
	if have.Peer != nil {
		current = have.Peer.Addrs
	}
	addr, ok := netcfg.Keep(current, cfg.BridgeAddr, taken)
	if !ok {
		if addr, err = netcfg.Address(name, cfg.BridgeAddr, taken); err != nil {
			return err
		}
	}
	link.Addr = netip.PrefixFrom(addr, cfg.BridgeAddr.Bits())
	steps, err := netcfg.Steps(link, have)
	if err != nil {
		return err
	}
	for _, s := range steps {
		if err := apply(host, in, ns, br, link, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		if s.Op == netcfg.OpCreateVeth {
			undo.push("link "+link.HostVeth, func() error { return deleteLink(host, link.HostVeth) })
		}
	}
	if err := inNetns(path, func() error { return disableIPv6(netcfg.PeerName) }); err != nil {
		return fmt.Errorf("sysctl in %s: %w", name, err)
	}

	undoPolicy, err := applyPolicy(cfg, name, addr, fw, hostResolv)
	if err != nil {
		return err
	}
	undo.push("firewall table and policy of "+name, undoPolicy)

	created, err := writeResolvConf(cfg, name, netcfg.ResolvConf(name, resolvers, hostResolv))
	if err != nil {
		return err
	}
	if created {
		undo.push(cfg.ResolvConfPath(name), func() error { return removeResolvConf(cfg, name) })
	}
	return nil
}

// disableIPv6 turns IPv6 off on dev, where the kernel has IPv6.
func disableIPv6(dev string) error {
	err := writeSysctl("net.ipv6.conf."+dev+".disable_ipv6", "1")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// waitBridge returns the bridge once it exists and has its address. Only
// where systemd-networkd runs (and so may still be setting it up) does it
// wait.
func waitBridge(ctx context.Context, host *netlink.Handle, cfg netcfg.Config) (netlink.Link, error) {
	_, statErr := os.Stat(networkdRunning)
	networkd := statErr == nil
	deadline := time.Now().Add(bridgeWait)
	for {
		br, err := bridge(host, cfg)
		if err == nil || !networkd || time.Now().After(deadline) {
			if errors.Is(err, errNoBridge) {
				_, statErr := os.Stat(systemdRunning)
				err = bridgeMissing(cfg, statErr == nil, networkd)
			}
			return br, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var errNoBridge = errors.New("no bridge")

func bridge(host *netlink.Handle, cfg netcfg.Config) (netlink.Link, error) {
	br, err := host.LinkByName(cfg.Bridge)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil, errNoBridge
	}
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", cfg.Bridge, err)
	}
	if br.Type() != "bridge" {
		return nil, fmt.Errorf("%s is a %s, not a bridge", cfg.Bridge, br.Type())
	}
	addrs, err := addrList(host, br)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if a == cfg.BridgeAddr {
			return br, nil
		}
	}
	return nil, fmt.Errorf("bridge %s has no address %s: the sandboxes' gateway must be there (networkctl reload, or ip address add %s dev %s)", cfg.Bridge, cfg.BridgeAddr, cfg.BridgeAddr, cfg.Bridge)
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

// writeResolvConf writes the namespace's resolv.conf atomically; created
// says whether it did not exist before.
func writeResolvConf(cfg netcfg.Config, name string, content []byte) (created bool, err error) {
	path := cfg.ResolvConfPath(name)
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, content) {
		return false, nil
	}
	if err == nil && !bytes.HasPrefix(old, []byte(netcfg.ResolvHeader)) {
		return false, fmt.Errorf("%s exists and was not written by netns-setup: remove it", path)
	}
	created = errors.Is(err, os.ErrNotExist)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".resolv.conf.")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	return created, os.Rename(tmp.Name(), path)
}

// removeResolvConf removes the resolv.conf up wrote, and its directory if
// that is then empty.
func removeResolvConf(cfg netcfg.Config, name string) error {
	path := cfg.ResolvConfPath(name)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rmdirIfEmpty(filepath.Dir(path))
	}
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte(netcfg.ResolvHeader)) {
		return nil // not ours: leave it
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return rmdirIfEmpty(filepath.Dir(path))
}

func rmdirIfEmpty(dir string) error {
	err := unix.Rmdir(dir)
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		return nil
	}
	return os.NewSyscallError("rmdir "+dir, err)
}

// lockedHost takes the lock that serialises runs and opens a netlink handle
// in the host's namespace; release closes the handle, then unlocks.
func lockedHost(cfg netcfg.Config) (host *netlink.Handle, release func(), err error) {
	unlock, err := lock(cfg.LockFile)
	if err != nil {
		return nil, nil, err
	}
	host, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("netlink: %w", err)
	}
	return host, func() { host.Close(); unlock() }, nil
}

// down removes what up made; what is already gone is no error.
func down(ctx context.Context, cfg netcfg.Config, name string, _ multicall.Stdio) error {
	host, release, err := lockedHost(cfg)
	if err != nil {
		return err
	}
	defer release()
	// The link first: that cuts the network of processes still inside.
	hostVeth := netcfg.HostVeth(name)
	if l, err := linkByName(host, hostVeth); err != nil {
		return err
	} else if l != nil && l.Type() == "veth" {
		if err := host.LinkDel(l); err != nil {
			return fmt.Errorf("delete %s: %w", hostVeth, err)
		}
	}
	if err := removeNetns(cfg.NetnsPath(name)); err != nil {
		return err
	}
	if err := removeResolvConf(cfg, name); err != nil {
		return err
	}
	if err := removePolicy(cfg, name); err != nil {
		return err
	}
	others, err := sandboxLinks(host)
	if err != nil {
		return err
	}
	if len(others) == 0 {
		if err := nft.Delete(nft.TableName, -1); err != nil {
			return fmt.Errorf("firewall: %w", err)
		}
	}
	return nil
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

// lock takes the lock file, waiting for another netns-setup to finish.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
