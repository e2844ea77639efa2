package netnssetup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/claude-sandbox/claude-sandbox/internal/handover"
	"github.com/claude-sandbox/claude-sandbox/internal/multicall"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// guardEvery is how often guard looks for the firewall's tables: a lost
// table is back within about that (and the time of an up).
const guardEvery = 250 * time.Millisecond

// guard keeps the firewall of namespace name in place until SIGTERM: the
// long-running part of netns@NAME.service. When the bridge's table, the
// namespace's own table (allowlist) or the table inside the namespace is
// missing while the namespace is up (an nft flush ruleset removes every
// table of the host: a restart of nftables, firewalld or Docker), it runs
// up, which puts them back (the pin sets empty: netns-dns pins again as
// the sandbox resolves, and forgets what it had pinned), and logs that it
// did. Meanwhile the table inside the namespace, which a flush on the host
// does not touch, keeps the host and the LAN out of reach, and holds the
// allowlist. It also hands netns-dns the namespace's sockets (handOver)
// whenever a netns-dns runs that does not have them: one started after
// up, or restarted; without them it answers no allowed name. It polls rather
// than follow nftables events: a poll also sees what an event lost, and
// costs one table listing.
func guard(ctx context.Context, cfg netcfg.Config, name string, stdio multicall.Stdio) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	tick := time.NewTicker(guardEvery)
	defer tick.Stop()
	last := "" // a failure is logged once, not every poll
	logf := func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); msg != last {
			fmt.Fprintf(stdio.Err, "netns-setup: %s\n", msg)
			last = msg
		}
	}
	// The connection of the last handover: its end closes when netns-dns
	// stops, and a new netns-dns gets the sockets again on the next poll.
	var dnsConn *net.UnixConn
	defer func() {
		if dnsConn != nil {
			dnsConn.Close()
		}
	}()
	for {
		if dnsConn != nil && !handover.Alive(dnsConn) {
			dnsConn.Close()
			dnsConn = nil
		}
		if dnsConn == nil && upNow(cfg, name) {
			c, err := handOver(cfg, name)
			switch {
			case err == nil:
				dnsConn = c
			case !errors.Is(err, handover.ErrNotListening):
				logf("%v", err)
			}
		}
		missing, err := missingTable(cfg, name)
		switch {
		case err != nil:
			logf("guard %s: %v", name, err)
		case missing != "":
			if err := up(ctx, cfg, name, stdio); err != nil {
				logf("firewall of %s was missing (%s): restoring it failed: %v", name, missing, err)
			} else {
				fmt.Fprintf(stdio.Err, "netns-setup: firewall of %s was missing (%s): restored it\n", name, missing)
				last = ""
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// upNow reports whether namespace name and its link are there (not on
// their way down).
func upNow(cfg netcfg.Config, name string) bool {
	if st, err := inspectNetns(cfg.NetnsPath(name)); err != nil || st != nsPresent {
		return false
	}
	_, err := netlink.LinkByName(netcfg.HostVeth(name))
	return err == nil
}

// missingTable names a table of namespace name's firewall that is missing
// while the namespace is up ("" if none is, or if the namespace or its
// link is gone: then there is nothing to guard, and down is not undone).
func missingTable(cfg netcfg.Config, name string) (string, error) {
	path := cfg.NetnsPath(name)
	if st, err := inspectNetns(path); err != nil || st != nsPresent {
		return "", err
	}
	// down removes the link first: a namespace on its way down is not
	// brought back.
	if _, err := netlink.LinkByName(netcfg.HostVeth(name)); err != nil {
		return "", nil
	}
	if ok, err := nft.Exists(nft.TableName, -1); err != nil || !ok {
		return "table inet " + nft.TableName, err
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return "", nil // removed meanwhile
	}
	defer ns.Close()
	if ok, err := nft.Exists(nft.InsideTable, int(ns)); err != nil || !ok {
		return "table inet " + nft.InsideTable + " in the namespace", err
	}
	// The policy up wrote says whether the namespace has a table of its own.
	b, err := os.ReadFile(cfg.PolicyPath(name))
	if err != nil {
		return "", nil // no policy: no table of its own
	}
	if p, err := netpolicy.ParsePolicy(cfg.PolicyPath(name), b); err == nil && p.Mode == netpolicy.PolicyAllowlist {
		if ok, err := nft.Exists(p.Table, -1); err != nil || !ok {
			return "table inet " + p.Table, err
		}
	}
	return "", nil
}
