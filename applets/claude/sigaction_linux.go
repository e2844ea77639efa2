//go:build linux && (amd64 || arm64)

package claude

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigaction is the kernel's struct sigaction on amd64 and arm64 (the
// layout of the runtime's sigactiont there), the architectures the
// seccomp filter, and so the launcher, is built for.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigIgn is SIG_IGN.
const sigIgn = 1

// rtSigaction sets the action for sig to act, if not nil, and stores the
// previous one in old, if not nil. It is the raw system call, as os/signal
// cannot put back a default action once it has ignored a signal.
func rtSigaction(sig syscall.Signal, act, old *sigaction) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		return os.NewSyscallError("rt_sigaction", errno)
	}
	return nil
}
