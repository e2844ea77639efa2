// Package netnssetup is the netns-setup applet: it makes, repairs and
// removes the persistent network namespace a sandbox runs in, its veth pair
// on the br-netns bridge, its address and resolv.conf, and the firewall of
// the bridge.
//
//	netns-setup up NAME       make or repair namespace NAME (idempotent)
//	netns-setup down NAME     remove what up made (idempotent)
//	netns-setup status NAME   print the state; exit 1 unless it is fully up
//	netns-setup guard NAME    keep its firewall in place (netns@.service)
//	netns-setup denials NAME [--follow]
//	                          print what the namespace's policy refused
//
// netns@.service runs up and down. The firewall (nftables table inet
// claude_sandbox) is written by every up, atomically, and deleted by the
// down that removes the last namespace.
package netnssetup

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall/kongparse"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/nsname"
)

// Applet is the netns-setup applet.
var Applet = multicall.Applet{Name: "netns-setup", Run: run}

// usage names the verbs netns@.service and people use to manage a
// namespace; denials has its own line.
const (
	usage        = "usage: netns-setup up|down|status NAME"
	usageDenials = "usage: netns-setup denials NAME [--follow]"
)

// flags is the command line. The testonly- flags point the applet at
// throwaway directories, files and addresses; they are hidden from the
// usage line and left unset (empty) they keep the installed value.
type flags struct {
	Args   []string `arg:"" optional:"" name:"verb-and-name"`
	Follow bool     `short:"f" help:"With denials: keep printing lines as they are added."`
	Help   bool     `short:"h" help:"Print the usage line (exit 2)."`

	RunDir         string `name:"testonly-run-dir" hidden:""`
	EtcDir         string `name:"testonly-etc-dir" hidden:""`
	FirewallConfig string `name:"testonly-firewall-config" hidden:""`
	HostResolvConf string `name:"testonly-host-resolv-conf" hidden:""`
	LockFile       string `name:"testonly-lock-file" hidden:""`
	PresetDir      string `name:"testonly-preset-dir" hidden:""`
	PolicyDir      string `name:"testonly-policy-dir" hidden:""`
	LogDir         string `name:"testonly-log-dir" hidden:""`
	HandoverSocket string `name:"testonly-handover-socket" hidden:""`
	BridgeAddr     string `name:"testonly-bridge-addr" hidden:""`
}

// usageOf is the usage line for args: denials has its own.
func usageOf(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			if a == "denials" {
				return usageDenials
			}
			break
		}
	}
	return usage
}

// apply sets the fields of cfg that a testonly- flag names.
func (f *flags) apply(cfg *netcfg.Config) error {
	for _, o := range []struct {
		to  *string
		val string
	}{
		{&cfg.RunDir, f.RunDir}, {&cfg.EtcDir, f.EtcDir}, {&cfg.FirewallConfig, f.FirewallConfig},
		{&cfg.HostResolvConf, f.HostResolvConf}, {&cfg.LockFile, f.LockFile}, {&cfg.PresetDir, f.PresetDir},
		{&cfg.PolicyDir, f.PolicyDir}, {&cfg.LogDir, f.LogDir}, {&cfg.HandoverSocket, f.HandoverSocket},
	} {
		if o.val != "" {
			*o.to = o.val
		}
	}
	if f.BridgeAddr != "" {
		p, err := netip.ParsePrefix(f.BridgeAddr)
		if err != nil {
			return multicall.Usagef("--testonly-bridge-addr: %w", err)
		}
		cfg.BridgeAddr = p
	}
	return nil
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	cfg := netcfg.DefaultAt(buildinfo.Sysconfdir, buildinfo.Prefix)
	var f flags
	if err := kongparse.ParseUsage(&f, &f.Help, "netns-setup", usageOf(args), args); err != nil {
		return err
	}
	if err := f.apply(&cfg); err != nil {
		return err
	}
	denialsVerb := len(f.Args) >= 1 && f.Args[0] == "denials"
	if denialsVerb && len(f.Args) != 2 || f.Follow && !denialsVerb {
		return multicall.Usagef("%s", usageDenials)
	}
	if len(f.Args) != 2 {
		return multicall.Usagef("%s", usage)
	}
	follow := f.Follow
	verb, name := f.Args[0], f.Args[1]
	if err := nsname.Check(name); err != nil {
		return multicall.Usagef("%v", err)
	}
	var do func(context.Context, netcfg.Config, string, multicall.Stdio) error
	switch verb {
	case "up":
		do = up
	case "down":
		do = down
	case "status":
		do = status
	case "guard":
		do = guard
	case "denials":
		do = func(ctx context.Context, cfg netcfg.Config, name string, stdio multicall.Stdio) error {
			return denials(ctx, cfg, name, follow, stdio)
		}
	default:
		return multicall.Usagef("unknown command %q; %s", verb, usage)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("must be run as root (netns@%s.service runs it)", name)
	}
	return do(ctx, cfg, name, stdio)
}

// bridgeMissing says which unit to start, or what to run without systemd.
func bridgeMissing(cfg netcfg.Config, systemd, networkd bool) error {
	switch {
	case networkd:
		return fmt.Errorf("bridge %s does not exist although systemd-networkd runs: is br-netns.netdev installed (make install-network)? then: networkctl reload", cfg.Bridge)
	case systemd:
		return fmt.Errorf("bridge %s does not exist: start systemd-networkd (systemctl enable --now systemd-networkd), which creates it from br-netns.netdev", cfg.Bridge)
	default:
		return fmt.Errorf("bridge %s does not exist and systemd-networkd is not running: create it with ip link add %s type bridge && ip address add %s dev %s && ip link set %s up",
			cfg.Bridge, cfg.Bridge, cfg.BridgeAddr, cfg.Bridge, cfg.Bridge)
	}
}
