//go:build linux

package seccomp

import (
	"errors"
	"testing"
)

// FuzzFilter compares the compiled program, run in the interpreter, with
// the plan evaluated directly, over arbitrary syscalls and option names.
func FuzzFilter(f *testing.F) {
	f.Add(uint8(0), uint32(auditX8664), uint32(16), uint64(0), uint64(0x5412|1<<32), "", "")
	f.Add(uint8(0), uint32(auditI386), uint32(54), uint64(0), uint64(0x5412), "", "")
	f.Add(uint8(0), uint32(auditX8664), uint32(0x40000027), uint64(0), uint64(0), "", "")
	f.Add(uint8(1), uint32(auditArm64), uint32(198), uint64(17), uint64(3), "", "socket")
	f.Add(uint8(1), uint32(auditArm64), uint32(220), uint64(0x10000000), uint64(0), "perf_event_open", "")
	f.Add(uint8(0), uint32(auditX8664), uint32(135), uint64(0x40000), uint64(0), "ioctl", "ptrace")
	// The mode rules: chmod (90), openat (257; the fuzzer's args[3] is
	// a1>>3) and arm64's fchmodat (53; args[2] is a0^a1).
	f.Add(uint8(0), uint32(auditX8664), uint32(90), uint64(0), uint64(0o4755|1<<32), "", "")
	f.Add(uint8(0), uint32(auditX8664), uint32(257), uint64(0), uint64(0o2755<<3), "", "")
	f.Add(uint8(1), uint32(auditArm64), uint32(53), uint64(0o6000), uint64(0o755), "", "")
	f.Add(uint8(1), uint32(auditArm64), uint32(56), uint64(0), uint64(0o4755<<3), "openat", "")
	f.Fuzz(func(t *testing.T, sel uint8, audit, nr uint32, a0, a1 uint64, allowName, denyName string) {
		goarch := Arches()[int(sel)%len(Arches())]
		var opts Options
		if allowName != "" {
			opts.Allow = []string{allowName}
		}
		if denyName != "" {
			opts.Deny = []string{denyName}
		}
		_, err := BuildArch(goarch, opts)
		var ue *UnknownSyscallError
		switch {
		case err == nil:
		case errors.As(err, &ue):
			if Known(ue.Name) {
				t.Fatalf("UnknownSyscallError for known %q", ue.Name)
			}
			return
		case allowName == denyName:
			return
		default:
			t.Fatalf("BuildArch(%s, %+v): %v", goarch, opts, err)
		}
		m := newMachine(t, goarch, opts)
		p, _ := newPlan(goarch, opts)
		args := [6]uint64{a0, a1, a0 ^ a1, a1 >> 3, ^a0, 0}
		for _, au := range []uint32{audit, m.audit} {
			if got, want := m.run(t, au, nr, args), p.decide(au, nr, args); got != want {
				t.Fatalf("%s %+v: filter(audit=%#x nr=%d args=%#x) = %v, plan says %v", goarch, opts, au, nr, args, got, want)
			}
		}
	})
}
