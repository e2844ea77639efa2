package netnssetup

import (
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/claude-sandbox/claude-sandbox/internal/netcfg"
)

// lockedHost takes the lock that serialises runs and opens a netlink handle
// in the host's namespace; release closes the handle, then unlocks.
func lockedHost(cfg netcfg.Config) (host *netlink.Handle, release func(), err error) {
	unlock, err := lock(cfg.LockFile)
	if err != nil {
		return nil, nil, err
	}
	host, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("netlink: %w", err)
	}
	return host, func() { host.Close(); unlock() }, nil
}

// lock takes the lock file, waiting for another netns-setup to finish.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
