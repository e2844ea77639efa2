// Package netcfg plans the network of a sandbox namespace: the names of its
// links, its IPv4 address, the steps that bring the kernel's state to the
// wanted one, and the resolv.conf it gets.
//
// It is pure: the netns-setup applet observes the kernel, asks this package
// what to do, and does it.
package netcfg

import (
	"net/netip"
	"path/filepath"

	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// Config holds the paths and addresses netns-setup works with. Default gives
// the installed values; tests point the paths elsewhere.
type Config struct {
	// RunDir holds one bind mount per namespace, as ip-netns(8) makes them.
	RunDir string
	// EtcDir holds NAME/resolv.conf, which the launcher binds over
	// /etc/resolv.conf inside the sandbox.
	EtcDir string
	// FirewallConfig is the root-owned allowlist file.
	FirewallConfig string
	// HostResolvConf is the host's resolv.conf, read to pick the resolver
	// the sandbox uses.
	HostResolvConf string
	// LockFile serialises concurrent runs of netns-setup.
	LockFile string
	// Bridge is the bridge the host ends of the veth pairs are enslaved to.
	Bridge string
	// BridgeAddr is the bridge's address and prefix: the sandboxes' gateway
	// and subnet.
	BridgeAddr netip.Prefix
	// PresetDir holds the preset files of preset lines.
	PresetDir string
	// PolicyDir holds NAME.json, each namespace's policy for netns-dns.
	PolicyDir string
	// LogDir holds NAME.log, each namespace's denial log (netns-dns writes
	// it).
	LogDir string
	// StateDir holds NAME.json, each namespace's "always" approvals
	// (netns-dns's StateDirectory).
	StateDir string
}

// Default returns the configuration of an installed system; sysconfdir is
// the directory of the firewall allowlist (SYSCONFDIR of the Makefile).
func Default(sysconfdir string) Config {
	return DefaultAt(sysconfdir, "/usr/local")
}

// DefaultAt is Default for an installation under prefix (PREFIX of the
// Makefile), where the presets are.
func DefaultAt(sysconfdir, prefix string) Config {
	return Config{
		RunDir:         nsname.RunDir,
		EtcDir:         nsname.EtcDir,
		FirewallConfig: filepath.Join(sysconfdir, "netns-firewall.conf"),
		HostResolvConf: "/etc/resolv.conf",
		LockFile:       "/run/netns-setup.lock",
		Bridge:         "br-netns",
		BridgeAddr:     netip.MustParsePrefix("10.10.0.1/16"),
		PresetDir:      filepath.Join(prefix, "share/claude-sandbox/presets"),
		PolicyDir:      "/run/netns-policy",
		LogDir:         "/var/log/netns-dns",
		StateDir:       "/var/lib/netns-dns",
	}
}

// Subnet is the sandboxes' subnet (10.10.0.0/16 by default).
func (c Config) Subnet() netip.Prefix { return c.BridgeAddr.Masked() }

// Gateway is the bridge's address, the sandboxes' default route.
func (c Config) Gateway() netip.Addr { return c.BridgeAddr.Addr() }

// NetnsPath is the bind mount of namespace name.
func (c Config) NetnsPath(name string) string { return filepath.Join(c.RunDir, name) }

// ResolvConfPath is the resolv.conf written for namespace name.
func (c Config) ResolvConfPath(name string) string {
	return filepath.Join(c.EtcDir, name, "resolv.conf")
}

// PolicyPath is the policy file of namespace name.
func (c Config) PolicyPath(name string) string { return filepath.Join(c.PolicyDir, name+".json") }

// DenialLog is the denial log of namespace name, which netns-dns writes.
func (c Config) DenialLog(name string) string { return filepath.Join(c.LogDir, name+".log") }
