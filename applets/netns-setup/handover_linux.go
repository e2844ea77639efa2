package netnssetup

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/handover"
	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
	"github.com/claude-sandbox/claude-sandbox/internal/netpolicy"
	"github.com/claude-sandbox/claude-sandbox/internal/nft"
)

// handOver gives netns-dns two netfilter sockets opened inside namespace
// name (package handover): one to pin into the sets of the table inside
// it, one for the nflog of its drops. It returns the connection, whose
// end closes when netns-dns stops, or handover.ErrNotListening when
// netns-dns does not run (it then answers the namespace's allowed names
// with SERVFAIL until it has them: guard hands them over when it starts).
func handOver(cfg netcfg.Config, name string) (*net.UnixConn, error) {
	path := cfg.PolicyPath(name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy of %s: %w", name, err)
	}
	p, err := netpolicy.ParsePolicy(path, b)
	if err != nil {
		return nil, err
	}
	// First whether netns-dns listens: guard asks every poll while it
	// does not.
	c, err := handover.Dial(cfg.HandoverSocket)
	if err != nil {
		if errors.Is(err, handover.ErrNotListening) {
			return nil, err
		}
		return nil, fmt.Errorf("sockets of %s for netns-dns: %w", name, err)
	}
	handed := false
	defer func() {
		if !handed {
			c.Close()
		}
	}()
	ns, err := netns.GetFromPath(cfg.NetnsPath(name))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.NetnsPath(name), err)
	}
	defer ns.Close()
	s := handover.Sockets{Name: name, Generation: p.Generation, Pin: -1, Log: -1}
	defer func() {
		for _, fd := range []int{s.Pin, s.Log} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if s.Pin, err = nft.Socket(int(ns)); err != nil {
		return nil, fmt.Errorf("netfilter socket in %s: %w", name, err)
	}
	if s.Log, err = nft.Socket(int(ns)); err != nil {
		return nil, fmt.Errorf("netfilter socket in %s: %w", name, err)
	}
	if err := handover.Hand(c, s); err != nil {
		return nil, fmt.Errorf("sockets of %s for netns-dns: %w", name, err)
	}
	handed = true
	return c, nil
}
