//go:build linux

package seccomp

import (
	"testing"

	"golang.org/x/net/bpf"
)

// Classic BPF opcodes the kernel's cache emulation knows.
const (
	opLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	opRetK   = 0x06 // BPF_RET | BPF_K
	opJa     = 0x05 // BPF_JMP | BPF_JA
	opJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	opJgtK   = 0x25
	opJgeK   = 0x35
	opJsetK  = 0x45
	opAndK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
)

// constAllow is kernel/seccomp.c's seccomp_is_const_allow (Linux 5.11+):
// the kernel runs the filter once per syscall number at attach time, with
// only nr and arch known; if the result is SECCOMP_RET_ALLOW without any
// other load, the number goes into the cache bitmap and the filter is never
// run for it again. Any instruction outside this list makes it uncacheable.
func constAllow(prog []bpf.RawInstruction, nr, arch uint32) bool {
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Op {
		case opLdWAbs:
			switch in.K {
			case offNr:
				a = nr
			case offArch:
				a = arch
			default:
				return false
			}
		case opRetK:
			return in.K == uint32(allow)
		case opJa:
			pc += int(in.K)
		case opJeqK, opJgeK, opJgtK, opJsetK:
			var res bool
			switch in.Op {
			case opJeqK:
				res = a == in.K
			case opJgeK:
				res = a >= in.K
			case opJgtK:
				res = a > in.K
			case opJsetK:
				res = a&in.K != 0
			}
			if res {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case opAndK:
			a &= in.K
		default:
			return false
		}
	}
	return false // ran off the end
}

// TestCacheShape proves that every syscall the plan allows without a
// condition is cacheable by the kernel, and that nothing else is.
func TestCacheShape(t *testing.T) {
	for _, goarch := range Arches() {
		for _, opts := range []Options{{}, {Allow: []string{"perf_event_open", "keyctl"}, Deny: []string{"ptrace"}}} {
			f, err := BuildArch(goarch, opts)
			if err != nil {
				t.Fatal(err)
			}
			prog := rawProgram(t, f)
			p, _ := newPlan(goarch, opts)
			byNr := map[uint32]entry{}
			for _, e := range p.entries {
				byNr[e.Nr] = e
			}
			cached, allowed := 0, 0
			// The kernel's bitmap covers 0..NR_syscalls-1; go a little beyond.
			for nr := uint32(0); nr < p.max+64; nr++ {
				e, known := byNr[nr]
				want := known && e.Rule == nil && e.Action == allow
				got := constAllow(prog, nr, p.arch.audit)
				if got != want {
					t.Errorf("%s %+v: nr %d (%s): cacheable = %v, want %v", goarch, opts, nr, e.Name, got, want)
				}
				if want {
					allowed++
				}
				if got {
					cached++
				}
			}
			if allowed < 250 {
				t.Errorf("%s: only %d unconditionally allowed syscalls", goarch, allowed)
			}
			// A foreign arch is never cached as allowed.
			for _, audit := range []uint32{auditI386, auditARM, 0} {
				for nr := uint32(0); nr < 500; nr++ {
					if constAllow(prog, nr, audit) {
						t.Fatalf("%s: nr %d with audit arch %#x is cacheable", goarch, nr, audit)
					}
				}
			}
			t.Logf("%s %+v: %d of %d numbers cacheable, %d instructions", goarch, opts, cached, p.max+1, f.Len())
		}
	}
}

// TestCacheEmulation makes sure constAllow can say no: a program that loads
// an argument before its ret is not cacheable.
func TestCacheEmulation(t *testing.T) {
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipFalse: 2},
		bpf.LoadAbsolute{Off: offArgLow(0), Size: 4},
		bpf.RetConstant{Val: uint32(allow)},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xff},
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: 9, SkipTrue: 1},
		bpf.RetConstant{Val: uint32(allow)},
		bpf.RetConstant{Val: uint32(eperm)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for nr, want := range map[uint32]bool{1: false, 2: true, 9: true, 10: false, 0x105: true} {
		if got := constAllow(prog, nr, 0); got != want {
			t.Errorf("constAllow(nr=%d) = %v, want %v", nr, got, want)
		}
	}
}
