//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"testing"
)

// call is one syscall as the filter sees it.
type call struct {
	name  string // resolved through the arch's table, unless nr is set
	nr    uint32
	audit uint32 // 0: the arch's own
	args  [6]uint64
}

var (
	ePERM        = errno(1)
	eNOSYS       = errno(38)
	eAFNOSUPPORT = errno(97)
)

// Expected actions, written out by hand: they do not come from policy.go.
func decisionCases(goarch string) []struct {
	name string
	c    call
	want Action
} {
	type tc = struct {
		name string
		c    call
		want Action
	}
	const (
		tiocsti, tioclinux, tiocsetd, tcgets = 0x5412, 0x541c, 0x5423, 0x5401
		tiocexcl, tiocnxcl, tiocgexcl        = 0x540c, 0x540d, 0x80045440
		kdskbent, kdskbsent, kdsetkeycode    = 0x4b47, 0x4b49, 0x4b4d
		kdgkbent, kdgkbsent, kdgetkeycode    = 0x4b46, 0x4b48, 0x4b4c
		sigchld                              = 17
		cloneThreadFlags                     = 0x3d0f00 // what glibc's pthread_create passes
	)
	n := func(name string, args ...uint64) call {
		c := call{name: name}
		copy(c.args[:], args)
		return c
	}
	cs := []tc{
		{"read", n("read"), allow},
		{"getppid", n("getppid"), allow},
		{"execve", n("execve"), allow},
		{"ptrace", n("ptrace"), allow},
		{"process_vm_readv", n("process_vm_readv"), allow},
		{"seccomp", n("seccomp"), allow},
		{"prctl", n("prctl"), allow},
		{"mseal", n("mseal"), allow},

		{"ioctl TCGETS", n("ioctl", 0, tcgets), allow},
		{"ioctl TIOCSTI", n("ioctl", 0, tiocsti), ePERM},
		{"ioctl TIOCSTI|1<<32", n("ioctl", 0, tiocsti|1<<32), ePERM},
		{"ioctl TIOCSTI|0xffffffff<<32", n("ioctl", 0, tiocsti|0xffffffff<<32), ePERM},
		{"ioctl TIOCLINUX", n("ioctl", 0, tioclinux), ePERM},
		{"ioctl TIOCLINUX|1<<32", n("ioctl", 0, tioclinux|1<<32), ePERM},
		{"ioctl TIOCSETD", n("ioctl", 0, tiocsetd), ePERM},
		{"ioctl fd=TIOCSTI cmd=TCGETS", n("ioctl", tiocsti, tcgets), allow},
		{"ioctl TIOCSTI+1", n("ioctl", 0, tiocsti+1), allow},
		{"ioctl TIOCEXCL", n("ioctl", 0, tiocexcl), ePERM},
		{"ioctl TIOCEXCL|1<<32", n("ioctl", 0, tiocexcl|1<<32), ePERM},
		{"ioctl TIOCEXCL|0xffffffff<<32", n("ioctl", 0, tiocexcl|0xffffffff<<32), ePERM},
		{"ioctl TIOCNXCL", n("ioctl", 0, tiocnxcl), allow},
		{"ioctl TIOCGEXCL", n("ioctl", 0, tiocgexcl), allow},
		{"ioctl KDSKBENT", n("ioctl", 0, kdskbent), ePERM},
		{"ioctl KDSKBENT|1<<32", n("ioctl", 0, kdskbent|1<<32), ePERM},
		{"ioctl KDSKBSENT", n("ioctl", 0, kdskbsent), ePERM},
		{"ioctl KDSKBSENT|0xffffffff<<32", n("ioctl", 0, kdskbsent|0xffffffff<<32), ePERM},
		{"ioctl KDSETKEYCODE", n("ioctl", 0, kdsetkeycode), ePERM},
		{"ioctl KDSETKEYCODE|1<<63", n("ioctl", 0, kdsetkeycode|1<<63), ePERM},
		// Reading the keymap stays allowed (kbd's dumpkeys, showkey).
		{"ioctl KDGKBENT", n("ioctl", 0, kdgkbent), allow},
		{"ioctl KDGKBSENT", n("ioctl", 0, kdgkbsent), allow},
		{"ioctl KDGETKEYCODE", n("ioctl", 0, kdgetkeycode), allow},
		{"ioctl fd=TIOCEXCL cmd=TCGETS", n("ioctl", tiocexcl, tcgets), allow},

		{"keyctl", n("keyctl"), ePERM},
		{"add_key", n("add_key"), ePERM},
		{"request_key", n("request_key"), ePERM},
		{"mount", n("mount"), ePERM},
		{"umount2", n("umount2"), ePERM},
		{"pivot_root", n("pivot_root"), ePERM},
		{"chroot", n("chroot"), ePERM},
		{"unshare", n("unshare"), ePERM},
		{"setns", n("setns"), ePERM},
		{"bpf", n("bpf"), ePERM},
		{"perf_event_open", n("perf_event_open"), ePERM},
		{"userfaultfd", n("userfaultfd"), ePERM},
		{"kexec_load", n("kexec_load"), ePERM},
		{"kexec_file_load", n("kexec_file_load"), ePERM},
		{"init_module", n("init_module"), ePERM},
		{"finit_module", n("finit_module"), ePERM},
		{"delete_module", n("delete_module"), ePERM},
		{"syslog", n("syslog"), ePERM},
		{"acct", n("acct"), ePERM},
		{"quotactl", n("quotactl"), ePERM},
		{"quotactl_fd", n("quotactl_fd"), ePERM},
		{"swapon", n("swapon"), ePERM},
		{"swapoff", n("swapoff"), ePERM},
		{"reboot", n("reboot"), ePERM},
		{"sethostname (known, not allowed)", n("sethostname"), ePERM},
		{"open_by_handle_at (known, not allowed)", n("open_by_handle_at"), ePERM},

		{"clone3", n("clone3"), eNOSYS},
		{"io_uring_setup", n("io_uring_setup"), eNOSYS},
		{"io_uring_enter", n("io_uring_enter"), eNOSYS},
		{"io_uring_register", n("io_uring_register"), eNOSYS},
		{"fsopen", n("fsopen"), eNOSYS},
		{"fsconfig", n("fsconfig"), eNOSYS},
		{"fsmount", n("fsmount"), eNOSYS},
		{"fspick", n("fspick"), eNOSYS},
		{"open_tree", n("open_tree"), eNOSYS},
		{"open_tree_attr", n("open_tree_attr"), eNOSYS},
		{"move_mount", n("move_mount"), eNOSYS},
		{"mount_setattr", n("mount_setattr"), eNOSYS},
		{"number 1000 (unknown)", call{nr: 1000}, eNOSYS},
		{"number 0x3fffffff (unknown)", call{nr: 0x3fffffff}, eNOSYS},
		{"nr -1 (cancelled by a tracer)", call{nr: 0xffffffff}, allow},

		{"clone fork", n("clone", sigchld), allow},
		{"clone thread", n("clone", cloneThreadFlags), allow},
		{"clone 1<<32 (ignored by the kernel)", n("clone", 1<<32|sigchld), allow},
		{"clone CLONE_NEWUSER", n("clone", 0x10000000|sigchld), ePERM},
		{"clone CLONE_NEWUSER|1<<32", n("clone", 1<<32|0x10000000|sigchld), ePERM},
		{"clone CLONE_NEWNS", n("clone", 0x00020000|sigchld), ePERM},
		{"clone CLONE_NEWCGROUP", n("clone", 0x02000000), ePERM},
		{"clone CLONE_NEWUTS", n("clone", 0x04000000), ePERM},
		{"clone CLONE_NEWIPC", n("clone", 0x08000000), ePERM},
		{"clone CLONE_NEWPID", n("clone", 0x20000000), ePERM},
		{"clone CLONE_NEWNET", n("clone", 0x40000000), ePERM},
		{"clone CLONE_NEWUSER in arg1 (the stack)", n("clone", sigchld, 0x10000000), allow},

		{"personality PER_LINUX", n("personality", 0), allow},
		{"personality PER_LINUX32", n("personality", 8), allow},
		{"personality UNAME26", n("personality", 0x20000), allow},
		{"personality UNAME26|PER_LINUX32", n("personality", 0x20008), allow},
		{"personality ADDR_NO_RANDOMIZE", n("personality", 0x40000), allow},
		{"personality query", n("personality", 0xffffffff), allow},
		{"personality READ_IMPLIES_EXEC", n("personality", 0x400000), ePERM},
		{"personality MMAP_PAGE_ZERO", n("personality", 0x100000), ePERM},
		{"personality ADDR_NO_RANDOMIZE|READ_IMPLIES_EXEC", n("personality", 0x440000), ePERM},
	}
	// The mode of every syscall that sets one: S_ISUID or S_ISGID is
	// EPERM, in any argument position and with the high half set; the
	// sticky bit and the permission bits are not; bits above the 16 of
	// umode_t (which the kernel drops) change nothing.
	const (
		sISUID, sISGID, sISVTX = 0o4000, 0o2000, 0o1000
		oCreat, oTmpfile       = 0o100, 0o20200000
		sIFREG                 = 0o100000
		atFDCWD                = 0xffffff9c // AT_FDCWD (-100) as passed in a register
	)
	modeArg := map[string]int{
		"chmod": 1, "fchmod": 1, "creat": 1, "mkdir": 1, "mknod": 1,
		"open": 2, "fchmodat": 2, "fchmodat2": 2, "mkdirat": 2, "mknodat": 2,
		"openat": 3,
	}
	for _, sc := range []string{"chmod", "fchmod", "creat", "mkdir", "mknod", "open", "fchmodat", "fchmodat2", "mkdirat", "mknodat", "openat"} {
		if arches[goarch].table.index(sc) < 0 {
			continue // chmod, creat, mkdir, mknod and open are x86_64 only
		}
		i := modeArg[sc]
		with := func(mode uint64) call {
			c := n(sc, atFDCWD, oCreat, oCreat, oCreat)
			c.args[i] = mode
			return c
		}
		for _, m := range []struct {
			name string
			mode uint64
			want Action
		}{
			{"0755", 0o755, allow},
			{"0644", 0o644, allow},
			{"0", 0, allow},
			{"S_ISVTX|0777", sISVTX | 0o777, allow},
			{"S_IFREG|0755", sIFREG | 0o755, allow},
			{"S_ISUID|0755", sISUID | 0o755, ePERM},
			{"S_ISGID|0755", sISGID | 0o755, ePERM},
			{"S_ISUID|S_ISGID|0755", sISUID | sISGID | 0o755, ePERM},
			{"S_ISUID alone", sISUID, ePERM},
			{"S_ISGID|S_ISVTX", sISGID | sISVTX, ePERM},
			{"S_IFREG|S_ISUID|0755", sIFREG | sISUID | 0o755, ePERM},
			{"S_ISUID|1<<32", sISUID | 1<<32, ePERM},
			{"S_ISGID|0xffffffff<<32", sISGID | 0xffffffff<<32, ePERM},
			{"0755|1<<32", 0o755 | 1<<32, allow},
			{"S_ISUID<<32 (the kernel sees 0)", sISUID << 32, allow},
			{"0x10000|0755 (above umode_t)", 0x10000 | 0o755, allow},
			{"0xfffff3ff (all but the two bits)", 0xfffff3ff, allow},
			{"0xffffffff", 0xffffffff, ePERM},
		} {
			cs = append(cs, tc{sc + " mode " + m.name, with(m.mode), m.want})
		}
		// Only the mode argument counts.
		other := n(sc, sISUID|sISGID, sISUID|sISGID, sISUID|sISGID, sISUID|sISGID, sISUID|sISGID, sISUID|sISGID)
		other.args[i] = 0o755
		cs = append(cs, tc{sc + " S_ISUID|S_ISGID in every other argument", other, allow})
	}
	// open and openat without O_CREAT or O_TMPFILE ignore the mode in the
	// kernel; the filter does not read the flags and refuses the same.
	cs = append(cs,
		tc{"openat O_RDONLY mode 0", n("openat", atFDCWD, 0, 0, 0), allow},
		tc{"openat O_TMPFILE mode S_ISUID|0755", n("openat", atFDCWD, 0, oTmpfile, sISUID|0o755), ePERM},
		tc{"openat O_RDONLY mode S_ISUID|0755", n("openat", atFDCWD, 0, 0, sISUID|0o755), ePERM},
		tc{"openat2 (the mode is in memory)", n("openat2", atFDCWD, 0, 0, 24), eNOSYS},
	)

	// Every address family up to AF_MAX (46) and a few beyond.
	allowedAF := map[uint64]bool{1: true, 2: true, 10: true, 16: true}
	for af := uint64(0); af <= 50; af++ {
		want := eAFNOSUPPORT
		if allowedAF[af] {
			want = allow
		}
		for _, sc := range []string{"socket", "socketpair"} {
			cs = append(cs, tc{fmt.Sprintf("%s family %d", sc, af), n(sc, af, 1, 0), want})
		}
	}
	cs = append(cs,
		tc{"socket AF_PACKET", n("socket", 17, 3, 0x300), eAFNOSUPPORT},
		tc{"socket AF_ALG", n("socket", 38, 5, 0), eAFNOSUPPORT},
		tc{"socket AF_VSOCK", n("socket", 40, 1, 0), eAFNOSUPPORT},
		tc{"socket AF_INET|1<<32 (the kernel sees AF_INET)", n("socket", 1<<32|2, 1, 0), allow},
		tc{"socket AF_PACKET|1<<32", n("socket", 1<<32|17, 3, 0), eAFNOSUPPORT},
		tc{"socket 0xffffffff", n("socket", 0xffffffff, 1, 0), eAFNOSUPPORT},
	)

	switch goarch {
	case "amd64":
		cs = append(cs,
			tc{"arch_prctl", n("arch_prctl"), allow},
			tc{"modify_ldt", n("modify_ldt"), allow},
			tc{"iopl", n("iopl"), ePERM},
			tc{"number 400 (hole in the table)", call{nr: 400}, eNOSYS},
			tc{"number 472 (after the table)", call{nr: 472}, eNOSYS},
			// i386 through int $0x80: ioctl is 54, getpid 20, socketcall 102.
			tc{"i386 ioctl TIOCSTI", call{nr: 54, audit: auditI386, args: [6]uint64{0, tiocsti}}, killProcess},
			tc{"i386 getpid", call{nr: 20, audit: auditI386}, killProcess},
			tc{"i386 socketcall", call{nr: 102, audit: auditI386}, killProcess},
			tc{"i386 nr 0", call{nr: 0, audit: auditI386}, killProcess},
			// x32: number | 0x40000000 with the x86_64 audit arch; x32
			// ioctl is 514, getpid 39.
			tc{"x32 ioctl", call{nr: 0x40000000 | 514, args: [6]uint64{0, tiocsti}}, killProcess},
			tc{"x32 getpid", call{nr: 0x40000000 | 39}, killProcess},
			tc{"x32 read", call{nr: 0x40000000}, killProcess},
			tc{"x32 top", call{nr: 0xfffffffe}, killProcess},
			tc{"aarch64 audit arch on x86_64", call{nr: 39, audit: auditArm64}, killProcess},
			tc{"audit arch 0", call{nr: 39, audit: 0xffffffff}, killProcess},
		)
	case "arm64":
		cs = append(cs,
			tc{"number 250 (arch-specific hole)", call{nr: 250}, eNOSYS},
			tc{"number 472 (after the table)", call{nr: 472}, eNOSYS},
			tc{"number 0x40000000|172 (no x32 here)", call{nr: 0x40000000 | 172}, eNOSYS},
			tc{"AArch32 ioctl TIOCSTI", call{nr: 54, audit: auditARM, args: [6]uint64{0, tiocsti}}, killProcess},
			tc{"AArch32 getpid", call{nr: 20, audit: auditARM}, killProcess},
			tc{"x86_64 audit arch on aarch64", call{nr: 172, audit: auditX8664}, killProcess},
		)
	}
	return cs
}

func TestDecisions(t *testing.T) {
	for _, goarch := range Arches() {
		m := newMachine(t, goarch, Options{})
		for _, tc := range decisionCases(goarch) {
			t.Run(goarch+"/"+tc.name, func(t *testing.T) {
				c := tc.c
				if c.name != "" {
					nr, ok := arches[goarch].table.lookup(c.name)
					if !ok {
						t.Fatalf("no syscall %q on %s", c.name, goarch)
					}
					c.nr = nr
				}
				if c.audit == 0 {
					c.audit = m.audit
				}
				if got := m.run(t, c.audit, c.nr, c.args); got != tc.want {
					t.Errorf("filter(%s nr=%d audit=%#x args=%#x) = %v, want %v", c.name, c.nr, c.audit, c.args[:3], got, tc.want)
				}
			})
		}
	}
}

// TestCompiledEqualsPlan runs every number of the table (and the special
// ones) with argument sets that hit every cond, in the interpreter, and
// compares with the plan evaluated directly.
func TestCompiledEqualsPlan(t *testing.T) {
	argSets := [][6]uint64{{}, {0, 0x5412}, {0x5412, 0x541c | 1<<32}, {17, 0x5423}, {2}, {0x10000000}, {0x40000}, {0xffffffff, 0xffffffff},
		{0, 0x540c | 1<<32}, {0, 0x4b47}, {0, 0x4b49 | 0xffffffff<<32}, {0, 0x4b4d},
		{0, 0o4755}, {0, 0o2755 | 1<<32}, {0, 0o1777, 0o4000}, {0, 0, 0o2000 << 32, 0o6755}, {0, 0, 0, 0o755 | 1<<32}}
	for _, goarch := range Arches() {
		for _, opts := range []Options{{}, {Allow: []string{"ioctl", "perf_event_open"}, Deny: []string{"ptrace", "socket"}}, {NoLocalSockets: true}} {
			m := newMachine(t, goarch, opts)
			p, err := newPlan(goarch, opts)
			if err != nil {
				t.Fatal(err)
			}
			nrs := []uint32{0xffffffff, 0xfffffffe, 0x40000000, 0x3fffffff, 0x40000000 | 16, 0x80000000}
			for nr := uint32(0); nr <= p.max+2; nr++ {
				nrs = append(nrs, nr)
			}
			for _, audit := range []uint32{m.audit, auditI386, auditARM, 0} {
				for _, nr := range nrs {
					for _, args := range argSets {
						want := p.decide(audit, nr, args)
						if got := m.run(t, audit, nr, args); got != want {
							t.Fatalf("%s %+v: filter(nr=%d audit=%#x args=%#x) = %v, plan says %v", goarch, opts, nr, audit, args, got, want)
						}
					}
				}
			}
		}
	}
}

func TestOptions(t *testing.T) {
	for _, goarch := range Arches() {
		tab := arches[goarch].table
		for _, tc := range []struct {
			name string
			opts Options
			c    string
			args [6]uint64
			want Action
		}{
			{"allow perf_event_open", Options{Allow: []string{"perf_event_open"}}, "perf_event_open", [6]uint64{}, allow},
			{"allow keyctl", Options{Allow: []string{"keyctl"}}, "keyctl", [6]uint64{}, allow},
			{"deny ptrace", Options{Deny: []string{"ptrace"}}, "ptrace", [6]uint64{}, ePERM},
			{"deny clone3 turns ENOSYS into EPERM", Options{Deny: []string{"clone3"}}, "clone3", [6]uint64{}, ePERM},
			{"allow ioctl drops the TIOCSTI rule", Options{Allow: []string{"ioctl"}}, "ioctl", [6]uint64{0, 0x5412}, allow},
			{"allow ioctl drops the TIOCEXCL rule", Options{Allow: []string{"ioctl"}}, "ioctl", [6]uint64{0, 0x540c}, allow},
			{"deny socket denies every family", Options{Deny: []string{"socket"}}, "socket", [6]uint64{1}, ePERM},
			{"no local sockets: socket AF_UNIX", Options{NoLocalSockets: true}, "socket", [6]uint64{1, 1}, ePERM},
			{"no local sockets: socket AF_UNIX|1<<32", Options{NoLocalSockets: true}, "socket", [6]uint64{1 | 1<<32, 1}, ePERM},
			{"no local sockets: socket AF_INET", Options{NoLocalSockets: true}, "socket", [6]uint64{2, 1}, allow},
			{"no local sockets: socket AF_INET6", Options{NoLocalSockets: true}, "socket", [6]uint64{10, 1}, allow},
			{"no local sockets: socket AF_PACKET", Options{NoLocalSockets: true}, "socket", [6]uint64{17, 3}, eAFNOSUPPORT},
			{"no local sockets: socketpair AF_UNIX", Options{NoLocalSockets: true}, "socketpair", [6]uint64{1, 1}, allow},
			{"other syscalls unchanged", Options{Allow: []string{"perf_event_open"}}, "keyctl", [6]uint64{}, ePERM},
			{"a name of the other arch is ignored", Options{Allow: []string{"arch_prctl", "bpf"}}, "bpf", [6]uint64{}, allow},
		} {
			t.Run(goarch+"/"+tc.name, func(t *testing.T) {
				m := newMachine(t, goarch, tc.opts)
				if got := m.run(t, m.audit, nrOf(tab, tc.c), tc.args); got != tc.want {
					t.Errorf("filter(%s) = %v, want %v", tc.c, got, tc.want)
				}
			})
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr string
		unknown bool
	}{
		{"unknown allow", Options{Allow: []string{"perf_event_open", "perf_open"}}, `unknown syscall "perf_open"`, true},
		{"unknown deny", Options{Deny: []string{"PTRACE"}}, `unknown syscall "PTRACE"`, true},
		{"empty", Options{Deny: []string{""}}, `unknown syscall ""`, true},
		{"32-bit only name", Options{Allow: []string{"socketcall"}}, `unknown syscall "socketcall"`, true},
		{"both", Options{Allow: []string{"ptrace"}, Deny: []string{"ptrace"}}, `syscall "ptrace" is both allowed and denied`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.opts)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("Build(%+v) = %v, want %s", tc.opts, err, tc.wantErr)
			}
			var ue *UnknownSyscallError
			if errors.As(err, &ue) != tc.unknown {
				t.Errorf("errors.As(err, *UnknownSyscallError) = %v, want %v", !tc.unknown, tc.unknown)
			}
		})
	}
	if _, err := BuildArch("riscv64", Options{}); err == nil {
		t.Error("BuildArch(riscv64) succeeded")
	}
}

func TestKnown(t *testing.T) {
	for name, want := range map[string]bool{
		"read": true, "perf_event_open": true, "arch_prctl": true, "clone3": true,
		"io_uring_setup": true, "": false, "Read": false, "socketcall": false, "foo": false,
	} {
		if got := Known(name); got != want {
			t.Errorf("Known(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestBuildHost checks Build (runtime.GOARCH) and that the program is
// small: the original libseccomp one was 1165 instructions.
func TestBuildHost(t *testing.T) {
	f, err := Build(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() > 200 || f.Len() != len(f.Bytes())/8 {
		t.Errorf("Len() = %d, %d bytes", f.Len(), len(f.Bytes()))
	}
	t.Logf("%s: %d instructions", f.Arch(), f.Len())
}
