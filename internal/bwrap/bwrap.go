// Package bwrap describes a bubblewrap sandbox as a Plan and turns it into
// bwrap's arguments. It also finds the bwrap binary and checks that it and
// the kernel can run the plan.
package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Kind is the kind of an Op.
type Kind int

// Op kinds, each one bwrap option.
const (
	ROBind     Kind = iota // --ro-bind SRC DEST
	ROBindTry              // --ro-bind-try SRC DEST
	Bind                   // --bind SRC DEST
	BindTry                // --bind-try SRC DEST
	DevBind                // --dev-bind SRC DEST
	DevBindTry             // --dev-bind-try SRC DEST
	Tmpfs                  // [--perms MODE] --tmpfs DEST
	Dir                    // [--perms MODE] --dir DEST
	Symlink                // --symlink SRC DEST (SRC is the link's target)
	Proc                   // --proc DEST
	Dev                    // --dev DEST
	Mqueue                 // --mqueue DEST
	Setenv                 // --setenv SRC DEST (name, value)
	Unsetenv               // --unsetenv DEST (name)
	Raw                    // Args verbatim
	ROData                 // [--perms MODE] --ro-bind-data FD DEST (Data; FD is SrcFD)
)

var flags = [...]string{
	ROBind: "--ro-bind", ROBindTry: "--ro-bind-try", Bind: "--bind", BindTry: "--bind-try",
	DevBind: "--dev-bind", DevBindTry: "--dev-bind-try", Tmpfs: "--tmpfs", Dir: "--dir",
	Symlink: "--symlink", Proc: "--proc", Dev: "--dev", Mqueue: "--mqueue",
	Setenv: "--setenv", Unsetenv: "--unsetenv", ROData: "--ro-bind-data",
}

// Op is one step of setting up the sandbox, applied in order.
type Op struct {
	Kind Kind
	Src  string
	Dest string
	// Perms, if not zero, sets the mode of a Tmpfs, Dir or ROData.
	Perms fs.FileMode
	// Size, if not zero, is the size in bytes of a Tmpfs (bwrap --size,
	// from bubblewrap 0.8).
	Size uint64
	// Args are the arguments of a Raw op.
	Args []string
	// Data is the content of the file a ROData op makes at Dest: a file
	// the launcher generates, read-only inside, in no host directory.
	Data []byte
	// SrcFD, if above 2, is an open fd of Src to bind from instead of the
	// path (bwrap --bind-fd/--ro-bind-fd; a -try op becomes a plain one),
	// or, for ROData, the fd bwrap reads Data from. Only the launcher sets
	// it, when it has opened and checked Src or written Data; a ROData op
	// without it shows "-", which bwrap refuses.
	SrcFD int
	// Origin names where the op comes from in messages (a config line), or
	// is empty for the launcher's own.
	Origin string
}

// IsWritable reports whether the op binds a host path the sandbox can
// write.
func (o Op) IsWritable() bool {
	switch o.Kind {
	case Bind, BindTry, DevBind, DevBindTry:
		return true
	}
	return false
}

// IsBind reports whether the op binds a host path.
func (o Op) IsBind() bool {
	switch o.Kind {
	case ROBind, ROBindTry, Bind, BindTry, DevBind, DevBindTry:
		return true
	}
	return false
}

// Plan is a sandbox.
type Plan struct {
	// Namespaces to unshare, by bwrap's name: user, pid, ipc, uts, cgroup,
	// net.
	Unshare []string
	// DisableUserns forbids user namespaces inside and asserts it.
	DisableUserns bool
	// DieWithParent kills the sandbox when bwrap's parent dies.
	DieWithParent bool
	// Hostname, if not empty, is the sandbox's hostname (bwrap --hostname;
	// it needs "uts" in Unshare, or bwrap refuses to start).
	Hostname string
	// Ops are applied in order; later mounts shadow earlier ones.
	Ops []Op
	// Chdir is the directory the command starts in.
	Chdir string
	// SeccompFD, if not negative, is the fd bwrap reads the seccomp
	// program from.
	SeccompFD int
}

// Args returns the plan as bwrap options (without the command).
func (p *Plan) Args() []string {
	var a []string
	for _, ns := range p.Unshare {
		a = append(a, "--unshare-"+ns)
	}
	if p.DisableUserns {
		a = append(a, "--disable-userns", "--assert-userns-disabled")
	}
	if p.DieWithParent {
		a = append(a, "--die-with-parent")
	}
	if p.Hostname != "" {
		a = append(a, "--hostname", p.Hostname)
	}
	for _, o := range p.Ops {
		switch o.Kind {
		case Raw:
			a = append(a, o.Args...)
		case Tmpfs, Dir:
			if o.Perms != 0 {
				a = append(a, "--perms", fmt.Sprintf("%04o", uint32(o.Perms.Perm())))
			}
			if o.Kind == Tmpfs && o.Size != 0 {
				a = append(a, "--size", strconv.FormatUint(o.Size, 10))
			}
			a = append(a, flags[o.Kind], o.Dest)
		case ROData:
			if o.Perms != 0 {
				a = append(a, "--perms", fmt.Sprintf("%04o", uint32(o.Perms.Perm())))
			}
			fd := "-"
			if o.SrcFD > 2 {
				fd = strconv.Itoa(o.SrcFD)
			}
			a = append(a, flags[o.Kind], fd, o.Dest)
		case Proc, Dev, Mqueue, Unsetenv:
			a = append(a, flags[o.Kind], o.Dest)
		case ROBind, ROBindTry, Bind, BindTry:
			if o.SrcFD > 2 {
				f := "--bind-fd"
				if o.Kind == ROBind || o.Kind == ROBindTry {
					f = "--ro-bind-fd"
				}
				a = append(a, f, strconv.Itoa(o.SrcFD), o.Dest)
				break
			}
			a = append(a, flags[o.Kind], o.Src, o.Dest)
		default:
			a = append(a, flags[o.Kind], o.Src, o.Dest)
		}
	}
	if p.Chdir != "" {
		a = append(a, "--chdir", p.Chdir)
	}
	if p.SeccompFD >= 0 {
		a = append(a, "--seccomp", strconv.Itoa(p.SeccompFD))
	}
	return a
}

// Argv returns the command line that runs command in the sandbox when the
// plan's arguments are readable, NUL-separated, from argsFD (see Encode).
// The command stays on the command line: bwrap takes only options from
// --args.
func Argv(bwrapPath string, argsFD int, command []string) []string {
	return append([]string{bwrapPath, "--args", strconv.Itoa(argsFD), "--"}, command...)
}

// ErrNUL is returned by Encode for an argument that contains a NUL byte.
var ErrNUL = errors.New("argument contains a NUL byte")

// Encode returns args in the format of bwrap --args: each argument
// followed by a NUL byte.
func Encode(args []string) ([]byte, error) {
	var b bytes.Buffer
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("%q: %w", a, ErrNUL)
		}
		b.WriteString(a)
		b.WriteByte(0)
	}
	return b.Bytes(), nil
}
