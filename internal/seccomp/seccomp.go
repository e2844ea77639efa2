// Package seccomp builds the sandbox's seccomp filter: a policy written as
// data, compiled in pure Go to classic BPF.
package seccomp

import (
	"errors"
	"io"
)

// Options are the user's changes to the default policy, by syscall name.
type Options struct {
	// Allow lists syscalls to allow although the policy denies them.
	Allow []string
	// Deny lists syscalls to deny (EPERM) although the policy allows them.
	Deny []string
}

// Filter is a compiled program.
type Filter struct {
	raw []byte
	n   int
}

// Bytes returns the program as struct sock_filter records in native byte
// order, the format bwrap --seccomp reads.
func (f *Filter) Bytes() []byte { return f.raw }

// Len returns the number of instructions.
func (f *Filter) Len() int { return f.n }

// Build compiles the policy for the running architecture.
func Build(opts Options) (*Filter, error) {
	return nil, errors.ErrUnsupported
}

// Known reports whether name is a syscall the policy can allow or deny.
func Known(name string) bool { return false }

// WriteTable writes the policy, with opts applied, as a readable table
// (syscall, condition, action).
func WriteTable(w io.Writer, opts Options) error {
	return errors.ErrUnsupported
}
