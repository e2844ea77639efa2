package netnssetup

import (
	"fmt"
)

// ipForward turns on IPv4 forwarding on the host, where it is off; a
// failed run turns it off again.
func ipForward(undo *undoStack) error {
	v, err := readSysctl("net.ipv4.ip_forward")
	if err != nil {
		return err
	}
	if v == "1" {
		return nil
	}
	if err := writeSysctl("net.ipv4.ip_forward", "1"); err != nil {
		return fmt.Errorf("enable net.ipv4.ip_forward: %w", err)
	}
	undo.push("net.ipv4.ip_forward = 1", func() error { return writeSysctl("net.ipv4.ip_forward", v) })
	return nil
}
