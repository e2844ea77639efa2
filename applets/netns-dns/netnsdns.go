// Package netnsdns is the netns-dns applet: the DNS server of the sandbox
// namespaces. It listens on the bridge address (port 53, UDP and TCP),
// tells the namespaces apart by the source address of their queries and
// answers each by its policy, which netns-setup up writes to
// /run/netns-policy/NAME.json:
//
//   - allowlist: A, AAAA and CNAME queries for allowed names are forwarded
//     upstream, and the addresses of the answer (at the end of its CNAME
//     chain) are put into the namespace's nftables pin sets, with a timeout
//     of the larger of their TTL (at most DefaultMaxTTL) and a floor
//     (DefaultPinFloor); local and private addresses are removed from the
//     answer unless an allow line covers them; every other name is
//     REFUSED, logged, and never forwarded; AAAA gets an empty answer
//     where the namespace has no IPv6;
//   - open: every query is forwarded.
//
// It follows the policy directory as namespaces come and go, and writes the
// denial log (refused names, and the firewall's drops, read from nflog) to
// /var/log/netns-dns/NAME.log, which netns-setup denials prints.
//
// Owners of a namespace (Policy.Owners) approve names on the control
// socket (package netctl); an approval resolves like a domain line and
// puts its answers' address . protocol . port into the namespace's
// approved set. With user-approve ask, a refused query of a name an owner
// could approve is held while an owner listens (a watch or session
// stream), until an approval answers it or the hold ends.
//
//	netns-dns      run in the foreground (netns-dns.service runs exactly that)
package netnsdns

import (
	"context"
	"net/netip"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall/kongparse"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netctl"
)

// Applet is the netns-dns applet.
var Applet = multicall.Applet{Name: "netns-dns", Run: run}

const usage = "usage: netns-dns (no arguments: serves every namespace netns-setup up made, in the foreground)"

// options are netns-dns's settings.
type options struct {
	listen    netip.AddrPort
	policyDir string
	logDir    string
	pinFloor  time.Duration
	control   string
	stateDir  string
}

// flags is the command line: no arguments. The testonly- flags point it at
// throwaway addresses and directories; they are hidden from the usage line
// and left unset keep the installed values.
type flags struct {
	Help bool `short:"h" help:"Print the usage line (exit 2)."`

	Listen    string        `name:"testonly-listen" hidden:""`
	PolicyDir string        `name:"testonly-policy-dir" hidden:""`
	LogDir    string        `name:"testonly-log-dir" hidden:""`
	PinFloor  time.Duration `name:"testonly-pin-floor" hidden:""`
	Control   string        `name:"testonly-control" hidden:""`
	StateDir  string        `name:"testonly-state-dir" hidden:""`
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	cfg := netcfg.DefaultAt(buildinfo.Sysconfdir, buildinfo.Prefix)
	var f flags
	if err := kongparse.ParseUsage(&f, &f.Help, "netns-dns", usage, args); err != nil {
		return err
	}
	o := options{policyDir: cfg.PolicyDir, logDir: cfg.LogDir, pinFloor: f.PinFloor,
		listen: netip.AddrPortFrom(cfg.Gateway(), 53), control: netctl.SocketPath, stateDir: cfg.StateDir}
	if f.Control != "" {
		o.control = f.Control
	}
	if f.StateDir != "" {
		o.stateDir = f.StateDir
	}
	if f.PolicyDir != "" {
		o.policyDir = f.PolicyDir
	}
	if f.LogDir != "" {
		o.logDir = f.LogDir
	}
	if f.Listen != "" {
		ap, err := netip.ParseAddrPort(f.Listen)
		if err != nil {
			return multicall.Usagef("--testonly-listen: %w", err)
		}
		o.listen = ap
	}
	return serve(ctx, o, stdio)
}
