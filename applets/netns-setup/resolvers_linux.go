package netnssetup

import (
	"errors"
	"net/netip"
	"os"
	"slices"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
)

// dnsPlan is who the namespace asks for names, and what the bridge
// firewall opens for that.
type dnsPlan struct {
	// hostResolv is the host's resolv.conf (nil if it has none).
	hostResolv []byte
	// resolvers go into the namespace's resolv.conf.
	resolvers []netip.Addr
	// tableResolvers get port 53 open in the bridge firewall.
	tableResolvers []netip.Addr
	// netnsDNS, if set, is the gateway, where netns-dns answers: port 53
	// there is open only for its socket.
	netnsDNS netip.Addr
}

// planResolvers picks the namespace's resolvers from the config's resolver
// lines or the host's resolv.conf; with a policy line, netns-dns on the
// gateway, and only it.
func planResolvers(cfg netcfg.Config, fw netpolicy.Config) (dnsPlan, error) {
	hostResolv, err := os.ReadFile(cfg.HostResolvConf)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return dnsPlan{}, err
	}
	resolvers := netcfg.Resolvers(hostResolv, fw.Resolvers, cfg.Gateway())
	// A loopback resolver line is netns-dns's upstream on the host (only
	// with a policy line): no rule for the sandboxes to reach it.
	tableResolvers := slices.DeleteFunc(slices.Clone(resolvers), netip.Addr.IsLoopback)
	if fw.Policy != "" {
		// netns-dns on the gateway, and only it.
		resolvers = []netip.Addr{cfg.Gateway()}
	}
	var netnsDNS netip.Addr
	if gatewayDNS(cfg, fw) {
		// netns-dns holds the gateway's port 53: only its socket may get
		// the sandboxes' queries there.
		netnsDNS = cfg.Gateway()
		tableResolvers = slices.DeleteFunc(tableResolvers, func(a netip.Addr) bool { return a == netnsDNS })
	}
	return dnsPlan{hostResolv: hostResolv, resolvers: resolvers, tableResolvers: tableResolvers, netnsDNS: netnsDNS}, nil
}
