//go:build linux

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestPolicyNames(t *testing.T) {
	seen := map[string]string{}
	for _, r := range rules {
		if r.Why == "" {
			t.Errorf("rule %v has no Why", r.Names)
		}
		for _, n := range r.Names {
			if !Known(n) {
				t.Errorf("rule names %q, which no table knows", n)
			}
			if prev, ok := seen[n]; ok {
				t.Errorf("%q is in two rules: %q and %q", n, prev, r.Why)
			}
			seen[n] = r.Why
		}
		for _, c := range r.Conds {
			if c.Arg < 0 || c.Arg > 5 || len(c.Values) == 0 || (c.Op == opAnyBit && len(c.Values) != 1) {
				t.Errorf("rule %v: bad cond %+v", r.Names, c)
			}
		}
	}
}

// TestPolicyConstants checks the policy's constants against x/sys/unix
// (the host's values; they are the same on amd64 and arm64).
func TestPolicyConstants(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uint64
	}{
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"TIOCSETD", tiocsetd, unix.TIOCSETD},
		{"TIOCEXCL", tiocexcl, unix.TIOCEXCL},
		// x/sys/unix lacks the KD* ioctls: linux/kd.h's values, _IO-style
		// numbers that do not vary by architecture.
		{"KDSKBENT", kdskbent, 0x4b47},
		{"KDSKBSENT", kdskbsent, 0x4b49},
		{"KDSETKEYCODE", kdsetkeycode, 0x4b4d},
		{"AF_UNIX", afUnix, unix.AF_UNIX},
		{"AF_INET", afInet, unix.AF_INET},
		{"AF_INET6", afInet6, unix.AF_INET6},
		{"AF_NETLINK", afNetlink, unix.AF_NETLINK},
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"EPERM", uint64(eperm &^ retErrno), uint64(unix.EPERM)},
		{"ENOSYS", uint64(enosys &^ retErrno), uint64(unix.ENOSYS)},
		{"EAFNOSUPPORT", uint64(eafnosupport &^ retErrno), uint64(unix.EAFNOSUPPORT)},
		{"SECCOMP_RET_ALLOW", uint64(allow), unix.SECCOMP_RET_ALLOW},
		{"SECCOMP_RET_KILL_PROCESS", uint64(killProcess), unix.SECCOMP_RET_KILL_PROCESS},
		{"SECCOMP_RET_ERRNO", uint64(retErrno), unix.SECCOMP_RET_ERRNO},
		{"AUDIT_ARCH_X86_64", uint64(arches["amd64"].audit), unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", uint64(arches["arm64"].audit), unix.AUDIT_ARCH_AARCH64},
		{"AUDIT_ARCH_I386", auditI386, unix.AUDIT_ARCH_I386},
		{"AUDIT_ARCH_ARM", auditARM, unix.AUDIT_ARCH_ARM},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %#x, x/sys/unix says %#x", tc.name, tc.got, tc.want)
		}
	}
	// Every CLONE_NEW* flag clone(2) takes is in the mask. CLONE_NEWTIME
	// lives in the exit-signal byte of clone(2): only clone3 (ENOSYS) and
	// unshare (EPERM) take it.
	if cloneNewAny|unix.CLONE_NEWTIME != cloneNewAny|0x80 || unix.CLONE_NEWTIME&^0xff != 0 {
		t.Errorf("CLONE_NEWTIME moved out of CSIGNAL: %#x", unix.CLONE_NEWTIME)
	}
}
