// Package seccomp builds the sandbox's seccomp filter: a policy written as
// data (policy.go), compiled in pure Go to classic BPF (compile.go) for
// x86_64 and arm64, with syscall tables generated from golang.org/x/sys/unix
// (zsysnum.go).
//
// The program dispatches on the syscall number first and loads an argument
// only for the few syscalls with argument rules, so every other allowed
// syscall is decided from the number and arch alone: the kernel's seccomp
// action cache (Linux 5.11+) then skips the filter for it.
package seccomp

// The syscall tables first, then the default program compiled from them.
//go:generate go run mksysnum.go
//go:generate go test -run ^TestDefaultPrecompiled$ -update .

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// Options are the user's changes to the default policy, by syscall name.
type Options struct {
	// Allow lists syscalls to allow although the policy denies them.
	Allow []string
	// Deny lists syscalls to deny (EPERM) although the policy allows them.
	Deny []string
	// NoLocalSockets refuses socket(AF_UNIX) with EPERM (see
	// noLocalSockets in policy.go): a program that sees the host's files
	// cannot connect to the host's path-named or abstract sockets.
	NoLocalSockets bool
}

// UnknownSyscallError is returned by Build for a name in Options that no
// syscall table knows.
type UnknownSyscallError struct{ Name string }

func (e *UnknownSyscallError) Error() string {
	return fmt.Sprintf("unknown syscall %q", e.Name)
}

// Filter is a compiled program.
type Filter struct {
	arch string
	raw  []byte
	n    int
}

// Bytes returns the program as struct sock_filter records in native byte
// order, the format bwrap --seccomp reads. (Both supported architectures
// are little-endian.)
func (f *Filter) Bytes() []byte { return f.raw }

// Len returns the number of instructions.
func (f *Filter) Len() int { return f.n }

// Arch returns the GOARCH the program was built for.
func (f *Filter) Arch() string { return f.arch }

// Build compiles the policy for the running architecture.
func Build(opts Options) (*Filter, error) {
	return BuildArch(runtime.GOARCH, opts)
}

// BuildArch compiles the policy for a GOARCH (amd64 or arm64). The
// default policy (no Options) comes precompiled from zdefault.go, which
// TestDefaultPrecompiled keeps equal to what compileArch makes: compiling
// it takes about a millisecond of the launcher's start on a cold process.
func BuildArch(goarch string, opts Options) (*Filter, error) {
	if len(opts.Allow) == 0 && len(opts.Deny) == 0 && !opts.NoLocalSockets {
		if raw, ok := precompiled(goarch); ok {
			return &Filter{arch: goarch, raw: []byte(raw), n: len(raw) / 8}, nil
		}
	}
	return compileArch(goarch, opts)
}

// compileArch compiles the policy for a GOARCH (amd64 or arm64).
func compileArch(goarch string, opts Options) (*Filter, error) {
	p, err := newPlan(goarch, opts)
	if err != nil {
		return nil, err
	}
	prog, err := compile(p)
	if err != nil {
		return nil, fmt.Errorf("compile seccomp filter for %s: %w", goarch, err)
	}
	raw := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		raw = binary.LittleEndian.AppendUint16(raw, ins.Op)
		raw = append(raw, ins.Jt, ins.Jf)
		raw = binary.LittleEndian.AppendUint32(raw, ins.K)
	}
	return &Filter{arch: goarch, raw: raw, n: len(prog)}, nil
}

// Known reports whether name is a syscall the policy can allow or deny: a
// syscall of x86_64 or arm64 (a name that exists on one architecture only
// is accepted everywhere and ignored where it does not exist, so one config
// file serves both).
func Known(name string) bool {
	for _, a := range arches {
		if a.table.index(name) >= 0 {
			return true
		}
	}
	return false
}

// Arches lists the GOARCH values Build supports.
func Arches() []string {
	var s []string
	for k := range arches {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// checkOptions rejects unknown names and a name both allowed and denied.
func checkOptions(opts Options) error {
	allowed := map[string]bool{}
	for _, n := range opts.Allow {
		if !Known(n) {
			return &UnknownSyscallError{Name: n}
		}
		allowed[n] = true
	}
	for _, n := range opts.Deny {
		if !Known(n) {
			return &UnknownSyscallError{Name: n}
		}
		if allowed[n] {
			return fmt.Errorf("syscall %q is both allowed and denied", n)
		}
	}
	return nil
}

// archName is the kernel's name of a GOARCH.
func archName(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return goarch
}

// unsupportedArch is the error for an architecture without tables.
func unsupportedArch(goarch string) error {
	return fmt.Errorf("seccomp filter: architecture %s not supported (supported: %s)",
		goarch, strings.Join(Arches(), ", "))
}
