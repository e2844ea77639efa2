//go:build linux

package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

const (
	auditI386  = 0x40000003 // AUDIT_ARCH_I386
	auditARM   = 0x40000028 // AUDIT_ARCH_ARM
	auditX8664 = 0xc000003e
	auditArm64 = 0xc00000b7
)

// rawProgram decodes Filter.Bytes back into sock_filter records.
func rawProgram(t testing.TB, f *Filter) []bpf.RawInstruction {
	t.Helper()
	b := f.Bytes()
	if len(b)%8 != 0 || len(b)/8 != f.Len() {
		t.Fatalf("Bytes() is %d bytes for %d instructions", len(b), f.Len())
	}
	var prog []bpf.RawInstruction
	for ; len(b) > 0; b = b[8:] {
		prog = append(prog, bpf.RawInstruction{
			Op: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3],
			K: binary.LittleEndian.Uint32(b[4:]),
		})
	}
	return prog
}

// machine runs a filter in golang.org/x/net/bpf's interpreter.
type machine struct {
	vm    *bpf.VM
	audit uint32
}

func newMachine(t testing.TB, goarch string, opts Options) *machine {
	t.Helper()
	f, err := BuildArch(goarch, opts)
	if err != nil {
		t.Fatalf("BuildArch(%s, %+v): %v", goarch, opts, err)
	}
	insns, ok := bpf.Disassemble(rawProgram(t, f))
	if !ok {
		t.Fatalf("program does not disassemble")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	return &machine{vm: vm, audit: arches[goarch].audit}
}

// seccompData encodes struct seccomp_data for the interpreter. The kernel
// loads 32-bit words in native (little-endian) order; the interpreter loads
// them big-endian, as in a packet. So each word is stored big-endian at the
// offset the kernel would read it from: the low half of an argument at the
// lower address.
func seccompData(audit, nr uint32, args [6]uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], audit)
	// instruction_pointer (8..15) stays 0
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32))
	}
	return b
}

func (m *machine) run(t testing.TB, audit, nr uint32, args [6]uint64) Action {
	t.Helper()
	r, err := m.vm.Run(seccompData(audit, nr, args))
	if err != nil {
		t.Fatalf("run nr %d: %v", nr, err)
	}
	return Action(uint32(r))
}
