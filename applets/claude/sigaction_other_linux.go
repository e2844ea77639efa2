//go:build linux && !amd64 && !arm64

package claude

import (
	"errors"
	"syscall"
)

// sigaction stands in for the kernel's struct, whose layout is known here
// for amd64 and arm64 only; the launcher refuses to start elsewhere, as
// its seccomp filter has no syscall table for any other architecture.
type sigaction struct{ handler uintptr }

const sigIgn = 1

func rtSigaction(syscall.Signal, *sigaction, *sigaction) error { return errors.ErrUnsupported }
