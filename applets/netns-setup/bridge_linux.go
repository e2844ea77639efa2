package netnssetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// Where systemd says it runs, and systemd-networkd.
const (
	systemdRunning  = "/run/systemd/system"
	networkdRunning = "/run/systemd/netif/state"
)

// bridgeWait is how long up waits for systemd-networkd to create the bridge
// and give it its address (at boot, netns@.service may start first).
const bridgeWait = 10 * time.Second

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
