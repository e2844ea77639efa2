package netcfg

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// PeerName is the name of the sandbox's end of the veth pair.
const PeerName = "eth0"

// HostPrefix starts the name of the host's end of every veth pair;
// bridging.network matches it (Name=netns-*).
const HostPrefix = "netns-"

// ifNameMax is IFNAMSIZ less the terminating NUL.
const ifNameMax = 15

// HostVeth returns the name of the host's end of namespace name's veth pair:
// netns-NAME when that fits in 15 bytes, otherwise netns-, the first three
// bytes of the name and six hex digits of a hash of it (netns-verabc123 for
// verylongname12).
func HostVeth(name string) string {
	if len(HostPrefix)+len(name) <= ifNameMax {
		return HostPrefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return HostPrefix + name[:3] + hex.EncodeToString(sum[:])[:ifNameMax-len(HostPrefix)-3]
}

// Link is the wanted state of a namespace's link.
type Link struct {
	// HostVeth is the host's end, in the host namespace.
	HostVeth string
	// Bridge is the bridge the host's end is enslaved to.
	Bridge string
	// Addr is the sandbox's address with the subnet's prefix length.
	Addr netip.Prefix
	// Gateway is the default route inside.
	Gateway netip.Addr
}

// Observed is the state of a namespace's link as the kernel has it.
type Observed struct {
	// Host is the link named HostVeth in the host namespace, nil if none.
	Host *HostLink
	// Peer is the link named PeerName inside the namespace, nil if none.
	Peer *PeerLink
	// LoUp says whether lo is up inside.
	LoUp bool
}

// HostLink is the observed host end.
type HostLink struct {
	Veth bool
	// Paired says whether its peer is the namespace's PeerName link.
	Paired   bool
	Master   string
	Up       bool
	Isolated bool
}

// PeerLink is the observed sandbox end.
type PeerLink struct {
	Veth bool
	Up   bool
	// Addrs are its IPv4 addresses.
	Addrs []netip.Prefix
	// Gateway is the gateway of the default route inside, if any.
	Gateway netip.Addr
}

// Op is one change to the links.
type Op int

// The operations of a plan, in the order Steps emits them.
const (
	OpDeleteHost   Op = iota + 1 // delete the host link (and so its peer)
	OpDeletePeer                 // delete PeerName inside
	OpCreateVeth                 // create HostVeth with its peer PeerName inside
	OpSetMaster                  // enslave HostVeth to Bridge
	OpIsolate                    // set bridge port isolation on HostVeth
	OpHostUp                     // bring HostVeth up
	OpLoUp                       // bring lo up inside
	OpPeerUp                     // bring PeerName up
	OpDelAddr                    // remove Step.Addr from PeerName
	OpAddAddr                    // add Step.Addr to PeerName
	OpDefaultRoute               // replace the default route inside: via Gateway
)

var opNames = map[Op]string{
	OpDeleteHost: "delete-host", OpDeletePeer: "delete-peer", OpCreateVeth: "create-veth",
	OpSetMaster: "set-master", OpIsolate: "isolate", OpHostUp: "host-up", OpLoUp: "lo-up",
	OpPeerUp: "peer-up", OpDelAddr: "del-addr", OpAddAddr: "add-addr", OpDefaultRoute: "default-route",
}

func (o Op) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Step is one operation of a plan.
type Step struct {
	Op   Op
	Addr netip.Prefix // for OpDelAddr and OpAddAddr
}

func (s Step) String() string {
	if s.Addr.IsValid() {
		return s.Op.String() + " " + s.Addr.String()
	}
	return s.Op.String()
}

// FormatSteps renders a plan as one line, for messages and tests.
func FormatSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", ")
}

// Steps returns the operations that turn have into want; none when they
// agree. A veth pair that is not intact (a host end without its peer inside,
// or a peer without the host end) is deleted and made again. A host link of
// that name that is not a veth is not ours: Steps refuses to touch it.
func Steps(want Link, have Observed) ([]Step, error) {
	var steps []Step
	host, peer := have.Host, have.Peer
	if host != nil && !host.Veth {
		return nil, fmt.Errorf("interface %s exists and is not a veth: it is not ours, remove it or use another namespace name", want.HostVeth)
	}
	if host != nil && (!host.Paired || peer == nil) {
		steps = append(steps, Step{Op: OpDeleteHost})
		host = nil
	}
	if peer != nil && host == nil {
		steps = append(steps, Step{Op: OpDeletePeer})
		peer = nil
	}
	if host == nil {
		steps = append(steps, Step{Op: OpCreateVeth})
		host, peer = &HostLink{Veth: true, Paired: true}, &PeerLink{Veth: true}
	}
	if want.Bridge != "" && host.Master != want.Bridge {
		steps = append(steps, Step{Op: OpSetMaster})
		host.Isolated = false
	}
	if want.Bridge != "" && !host.Isolated {
		steps = append(steps, Step{Op: OpIsolate})
	}
	if !host.Up {
		steps = append(steps, Step{Op: OpHostUp})
	}
	if !have.LoUp {
		steps = append(steps, Step{Op: OpLoUp})
	}
	if !peer.Up {
		steps = append(steps, Step{Op: OpPeerUp})
	}
	// Deleting a primary address deletes the secondaries of its subnet
	// with it, so anything but exactly the wanted address is redone.
	hasAddr := len(peer.Addrs) == 1 && peer.Addrs[0] == want.Addr
	if !hasAddr {
		for _, a := range peer.Addrs {
			steps = append(steps, Step{Op: OpDelAddr, Addr: a})
		}
		steps = append(steps, Step{Op: OpAddAddr, Addr: want.Addr})
	}
	if !hasAddr || peer.Gateway != want.Gateway {
		// A new address comes without the route through it.
		steps = append(steps, Step{Op: OpDefaultRoute})
	}
	return steps, nil
}

// Keep returns the address among current (the sandbox's addresses now) that
// it may keep: one Address could have given, not in use elsewhere.
func Keep(current []netip.Prefix, bridge netip.Prefix, inUse func(netip.Addr) bool) (netip.Addr, bool) {
	for _, p := range current {
		a := p.Addr()
		if p.Bits() == bridge.Bits() && Usable(a, bridge) && (inUse == nil || !inUse(a)) {
			return a, true
		}
	}
	return netip.Addr{}, false
}
