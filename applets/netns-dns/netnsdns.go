// Package netnsdns is the netns-dns applet: the DNS server of the sandbox
// namespaces. It listens on the bridge address (port 53, UDP and TCP),
// tells the namespaces apart by the source address of their queries and
// answers each by its policy, which netns-setup up writes to
// /run/netns-policy/NAME.json:
//
//   - allowlist: A, AAAA and CNAME queries for allowed names are forwarded
//     upstream, and the addresses of the answer (at the end of its CNAME
//     chain) are put into the namespace's nftables pin sets, with a timeout
//     of the larger of their TTL and a floor (DefaultPinFloor); every other
//     name is REFUSED, logged, and never forwarded; AAAA gets an empty
//     answer where the namespace has no IPv6;
//   - open: every query is forwarded.
//
// It follows the policy directory as namespaces come and go, and writes the
// denial log (refused names, and the firewall's drops, read from nflog) to
// /var/log/netns-dns/NAME.log, which netns-setup denials prints.
//
//	netns-dns      run in the foreground (netns-dns.service runs exactly that)
package netnsdns

import (
	"context"
	"flag"
	"io"
	"net/netip"

	"github.com/claude-sandbox/claude-sandbox/internal/buildinfo"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// Applet is the netns-dns applet.
var Applet = multicall.Applet{Name: "netns-dns", Run: run}

const usage = "usage: netns-dns (no arguments: serves every namespace netns-setup up made, in the foreground)"

// options are netns-dns's settings; the flags that change them are for
// tests only and not in the usage line.
type options struct {
	listen    netip.AddrPort
	policyDir string
	logDir    string
	pinFloor  flagDuration
}

func run(ctx context.Context, args []string, stdio multicall.Stdio) error {
	cfg := netcfg.DefaultAt(buildinfo.Sysconfdir, buildinfo.Prefix)
	o := options{policyDir: cfg.PolicyDir, logDir: cfg.LogDir}
	fs := flag.NewFlagSet("netns-dns", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", netip.AddrPortFrom(cfg.Gateway(), 53).String(), "")
	fs.StringVar(&o.policyDir, "policy-dir", o.policyDir, "")
	fs.StringVar(&o.logDir, "log-dir", o.logDir, "")
	fs.Var(&o.pinFloor, "pin-floor", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return multicall.Usagef("%s", usage)
	}
	ap, err := netip.ParseAddrPort(*listen)
	if err != nil {
		return multicall.Usagef("--listen: %v", err)
	}
	o.listen = ap
	return serve(ctx, o, stdio)
}
