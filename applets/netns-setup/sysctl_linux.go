package netnssetup

import (
	"errors"
	"fmt"
	"os"
)

// namespaceSysctls sets the namespace's sysctls before eth0 exists, so
// that it never gets an IPv6 address: the firewall and the bridge are IPv4
// only. lo keeps ::1. ping works for the groups it works for on the host.
func namespaceSysctls(path, name string) error {
	pingRange, err := readSysctl("net.ipv4.ping_group_range")
	if err != nil {
		return err
	}
	err = inNetns(path, func() error {
		if err := writeSysctl("net.ipv4.ping_group_range", pingRange); err != nil {
			return err
		}
		return disableIPv6("default")
	})
	if err != nil {
		return fmt.Errorf("sysctl in %s: %w", name, err)
	}
	return nil
}

// disableIPv6 turns IPv6 off on dev, where the kernel has IPv6.
func disableIPv6(dev string) error {
	err := writeSysctl("net.ipv6.conf."+dev+".disable_ipv6", "1")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
