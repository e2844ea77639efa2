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
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
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

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	cfg := netcfg.DefaultAt(buildinfo.Sysconfdir, buildinfo.Prefix)
	fs := flag.NewFlagSet("netns-setup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// Hidden flags, for tests only: they point the applet at throwaway
	// directories and files. They are not in the usage line on purpose.
	fs.StringVar(&cfg.RunDir, "run-dir", cfg.RunDir, "")
	fs.StringVar(&cfg.EtcDir, "etc-dir", cfg.EtcDir, "")
	fs.StringVar(&cfg.FirewallConfig, "firewall-config", cfg.FirewallConfig, "")
	fs.StringVar(&cfg.HostResolvConf, "host-resolv-conf", cfg.HostResolvConf, "")
	fs.StringVar(&cfg.LockFile, "lock-file", cfg.LockFile, "")
	fs.StringVar(&cfg.PresetDir, "preset-dir", cfg.PresetDir, "")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "")
	fs.StringVar(&cfg.LogDir, "log-dir", cfg.LogDir, "")
	bridgeAddr := fs.String("bridge-addr", cfg.BridgeAddr.String(), "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return multicall.Usagef("%s", usage)
		}
		return multicall.Usagef("%v; %s", err, usage)
	}
	p, err := netip.ParsePrefix(*bridgeAddr)
	if err != nil {
		return multicall.Usagef("--bridge-addr: %v", err)
	}
	cfg.BridgeAddr = p
	follow := fs.NArg() == 3 && fs.Arg(0) == "denials" && (fs.Arg(2) == "--follow" || fs.Arg(2) == "-f")
	if fs.NArg() >= 1 && fs.Arg(0) == "denials" && fs.NArg() != 2 && !follow {
		return multicall.Usagef("%s", usageDenials)
	}
	if fs.NArg() != 2 && !follow {
		return multicall.Usagef("%s", usage)
	}
	verb, name := fs.Arg(0), fs.Arg(1)
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
