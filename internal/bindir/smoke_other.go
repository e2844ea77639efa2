//go:build !linux

package bindir

import (
	"errors"
	"os/exec"
)

// startConfined is Linux-only: the confinement needs bwrap, its
// namespaces, no_new_privs and seccomp.
func startConfined(*exec.Cmd, string) (func(), error) { return nil, errors.ErrUnsupported }

// findBwrap finds no bwrap: startConfined cannot use it.
func (d *Dir) findBwrap() string { return "" }
