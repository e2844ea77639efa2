//go:build !linux

package multicall

// Privileged reports true off Linux: the privileged applet is Linux-only and
// nothing else should guess.
func Privileged() bool { return true }
