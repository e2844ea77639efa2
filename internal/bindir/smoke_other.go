//go:build !linux

package bindir

import (
	"errors"
	"os/exec"
)

// startConfined is Linux-only: the confinement needs its namespaces,
// no_new_privs and seccomp.
func startConfined(*exec.Cmd) error { return errors.ErrUnsupported }
