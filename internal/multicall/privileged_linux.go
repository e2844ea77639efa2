package multicall

import "golang.org/x/sys/unix"

// atSecure is AT_SECURE from <elf.h>: the kernel sets it for setuid and
// setgid executions and those that gain file capabilities.
const atSecure = 23

// Privileged reports whether the process runs with credentials its caller
// does not have: a setuid or setgid execution, or one with file capabilities.
func Privileged() bool {
	if unix.Geteuid() != unix.Getuid() || unix.Getegid() != unix.Getgid() {
		return true
	}
	auxv, err := unix.Auxv()
	if err != nil {
		// Without the aux vector we cannot rule it out: fail closed.
		return true
	}
	for _, kv := range auxv {
		if kv[0] == atSecure {
			return kv[1] != 0
		}
	}
	return false
}
