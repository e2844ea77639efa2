package seccomp

// The policy, top to bottom. Everything the filter decides is written here as
// data; compile.go turns it into BPF and never adds a decision of its own.
//
// Order of evaluation in the compiled program:
//  1. the audit arch is the running one's (AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64)
//     else KILL_PROCESS: i386 (int $0x80) and AArch32 syscalls never run;
//  2. on x86_64, numbers with the x32 bit (0x40000000) are KILL_PROCESS;
//  3. the syscall number picks one rule below (binary search on the number);
//     a number no table knows returns ENOSYS, a known syscall that no rule
//     names returns EPERM; -1 (a tracer cancelled the syscall) is allowed,
//     as the kernel runs nothing for it;
//  4. only ioctl, socket, socketpair, clone, personality and the syscalls
//     that set a file's mode look at an argument, and only the low 32 bits
//     of it (the kernel takes all of them as int, unsigned int or umode_t,
//     so the high bits cannot change its meaning).

// Actions.
var (
	eperm        = errno(1)  // EPERM
	enosys       = errno(38) // ENOSYS
	eafnosupport = errno(97) // EAFNOSUPPORT
)

// Default actions.
var (
	// knownDefault is the answer for a syscall the tables know that no rule
	// names: the container profiles' default.
	knownDefault = eperm
	// unknownDefault is the answer for a number the tables do not know (a
	// newer kernel's syscall, a hole in the table): programs probe new
	// syscalls and fall back on ENOSYS only.
	unknownDefault = enosys
	// badArch is the answer for a foreign ABI (i386, x32, AArch32).
	badArch = killProcess
)

// Constants the rules compare with. They are the same on x86_64 and arm64
// (asm-generic); policy_test.go checks them against golang.org/x/sys/unix.
const (
	tiocsti   = 0x5412 // TIOCSTI: push a byte into the terminal's input
	tioclinux = 0x541c // TIOCLINUX: console selection paste, and more
	tiocsetd  = 0x5423 // TIOCSETD: change the line discipline
	tiocexcl  = 0x540c // TIOCEXCL: no one else may open the terminal

	// The VT keymap ioctls (linux/kd.h): they rebind keys for every user
	// of the console, not just the caller.
	kdskbent     = 0x4b47 // KDSKBENT: set a key's meaning
	kdskbsent    = 0x4b49 // KDSKBSENT: set a function key's string
	kdsetkeycode = 0x4b4d // KDSETKEYCODE: remap a scancode

	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16

	// CLONE_NEW*: every namespace flag clone(2) accepts. CLONE_NEWTIME
	// (0x80) is in CSIGNAL's byte for clone(2); only clone3 and unshare
	// take it, and both are refused whole.
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
	cloneNewAny    = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	// The mode bits that make an executable run with its owner's user or
	// group (linux/stat.h). S_ISVTX (sticky) grants nothing and stays.
	sISUID = 0o4000
	sISGID = 0o2000

	perLinux         = 0x0000000
	perLinux32       = 0x0000008
	uname26          = 0x0020000
	addrNoRandomize  = 0x0040000
	personalityQuery = 0xffffffff
)

// hot are syscalls with argument rules that programs make often (libuv
// sets O_NONBLOCK with ioctl FIONBIO; terminals query their size): the
// kernel cannot cache them, so the program tests for them before the
// binary search, which halves their path. Other syscalls pay one jeq, and
// only those the cache does not already allow.
var hot = []string{"openat", "ioctl"}

// rules are the policy. A name may appear in one rule only (checked by
// tests); names that do not exist on an architecture are skipped there.
var rules = []rule{
	{
		Why: "the default container profile's allowlist: github.com/moby/profiles, " +
			"seccomp/default_linux.go (Docker), syscalls without a capability " +
			"condition, as of 2025; ioctl, socket, socketpair, personality and " +
			"the syscalls that set a file's mode have rules below",
		Action: allow,
		Names: []string{
			"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat",
			"capget", "capset", "chdir", "chown", "clock_adjtime", "clock_getres",
			"clock_gettime", "clock_nanosleep", "close", "close_range", "connect",
			"copy_file_range", "dup", "dup2", "dup3", "epoll_create",
			"epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2",
			"epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
			"exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate",
			"fanotify_mark", "fchdir", "fchown",
			"fchownat", "fcntl", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork",
			"fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync", "ftruncate", "futex",
			"futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "futimesat",
			"get_robust_list", "get_thread_area", "getcpu", "getcwd", "getdents",
			"getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer",
			"getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
			"getrandom", "getresgid", "getresuid", "getrlimit", "getrusage", "getsid",
			"getsockname", "getsockopt", "gettid", "gettimeofday", "getuid", "getxattr",
			"getxattrat", "inotify_add_watch", "inotify_init", "inotify_init1",
			"inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_pgetevents",
			"io_setup", "io_submit", "ioprio_get", "ioprio_set", "kill", "landlock_add_rule",
			"landlock_create_ruleset", "landlock_restrict_self", "lchown", "lgetxattr",
			"link", "linkat", "listen", "listmount", "listxattr", "listxattrat",
			"llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise",
			"map_shadow_stack", "membarrier", "memfd_create", "memfd_secret", "mincore",
			"mlock", "mlock2", "mlockall", "mmap",
			"mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
			"mq_timedsend", "mq_unlink", "mremap", "mseal", "msgctl", "msgget", "msgrcv",
			"msgsnd", "msync", "munlock", "munlockall", "munmap", "name_to_handle_at",
			"nanosleep", "newfstatat", "pause", "pidfd_open",
			"pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect",
			"poll", "ppoll", "prctl", "pread64", "preadv", "preadv2", "prlimit64",
			"process_mrelease", "pselect6", "pwrite64", "pwritev", "pwritev2", "read",
			"readahead", "readlink", "readlinkat", "readv", "recvfrom", "recvmmsg",
			"recvmsg", "remap_file_pages", "removexattr", "removexattrat", "rename",
			"renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction",
			"rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
			"rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo",
			"sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
			"sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
			"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler",
			"sched_yield", "seccomp", "select", "semctl", "semget", "semop", "semtimedop",
			"sendfile", "sendmmsg", "sendmsg", "sendto", "set_robust_list",
			"set_thread_area", "set_tid_address", "setfsgid", "setfsuid", "setgid",
			"setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid",
			"setresuid", "setreuid", "setrlimit", "setsid", "setsockopt", "setuid",
			"setxattr", "setxattrat", "shmat", "shmctl", "shmdt", "shmget", "shutdown",
			"sigaltstack", "signalfd", "signalfd4", "splice", "stat", "statfs",
			"statmount", "statx", "symlink", "symlinkat", "sync", "sync_file_range",
			"syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
			"timer_getoverrun", "timer_gettime", "timer_settime", "timerfd_create",
			"timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate", "umask",
			"uname", "unlink", "unlinkat", "uretprobe", "utime", "utimensat", "utimes",
			"vfork", "vmsplice", "wait4", "waitid", "write", "writev",
		},
	},
	{
		Why: "ptrace and its relatives: the pid namespace limits them to the " +
			"sandbox's own processes, and since Linux 4.8 seccomp runs after the " +
			"tracer so it cannot be bypassed; gdb and strace need them " +
			"(Docker grants them with CAP_SYS_PTRACE)",
		Action: allow,
		Names: []string{
			"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
			"pidfd_getfd", "process_madvise",
		},
	},
	{
		Why:    "architecture specific, allowed by the container profile",
		Action: allow,
		Names:  []string{"arch_prctl", "modify_ldt", "uprobe"},
	},
	{
		Why: "Linux 6.17 file attribute syscalls: the same operation as the " +
			"FS_IOC_FSGETXATTR/FSSETXATTR ioctls, which are allowed",
		Action: allow,
		Names:  []string{"file_getattr", "file_setattr"},
	},
	{
		Why: "ENOSYS so that programs fall back: glibc retries clone3 as clone " +
			"only on ENOSYS (clone3's flags are in memory, where seccomp cannot " +
			"read the CLONE_NEW* bits)",
		Action: enosys,
		Names:  []string{"clone3"},
	},
	{
		Why: "ENOSYS so that programs fall back: io_uring operations do not pass " +
			"through seccomp",
		Action: enosys,
		Names:  []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
	},
	{
		Why:    "ENOSYS so that programs fall back: the new mount API",
		Action: enosys,
		Names: []string{
			"fsopen", "fsconfig", "fsmount", "fspick", "open_tree",
			"open_tree_attr", "move_mount", "mount_setattr",
		},
	},
	{
		Why: "ENOSYS: newer than the container profile and not reviewed yet " +
			"(Linux 6.19); programs fall back",
		Action: enosys,
		Names:  []string{"listns", "rseq_slice_yield"},
	},
	{
		Why: "keyrings are not namespaced: the user's session and user keys " +
			"would be reachable",
		Action: eperm,
		Names:  []string{"keyctl", "add_key", "request_key"},
	},
	{
		Why:    "mounts and namespaces: the sandbox's layout is fixed by bwrap",
		Action: eperm,
		Names: []string{
			"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
		},
	},
	{
		Why: "kernel attack surface or observation of the host: eBPF, perf " +
			"events, userfaultfd (used to widen kernel race windows)",
		Action: eperm,
		Names:  []string{"bpf", "perf_event_open", "userfaultfd"},
	},
	{
		Why:    "host administration",
		Action: eperm,
		Names: []string{
			"kexec_load", "kexec_file_load", "init_module", "finit_module",
			"delete_module", "create_module", "query_module", "get_kernel_syms",
			"syslog", "acct", "quotactl", "quotactl_fd", "swapon", "swapoff",
			"reboot",
		},
	},
	{
		Why: "the sandbox shares the user's terminal: TIOCSTI types into the " +
			"user's shell after the agent exits, TIOCLINUX pastes the console " +
			"selection, TIOCSETD swaps the terminal's line discipline, " +
			"TIOCEXCL locks everyone else out of it, and on a virtual console " +
			"KDSKBENT, KDSKBSENT and KDSETKEYCODE rebind keys (a function key " +
			"that types a command into the user's shell); the command is " +
			"compared on its low 32 bits (CVE-2019-10063)",
		Names:  []string{"ioctl"},
		Action: allow,
		Conds: []cond{{
			Arg: 1, Op: opIn, Action: eperm,
			Values: []value{
				{"TIOCSTI", tiocsti}, {"TIOCLINUX", tioclinux}, {"TIOCSETD", tiocsetd}, {"TIOCEXCL", tiocexcl},
				{"KDSKBENT", kdskbent}, {"KDSKBSENT", kdskbsent}, {"KDSETKEYCODE", kdsetkeycode},
			},
		}},
	},
	{
		Why:    setIDWhy + "; the mode is argument 1 of chmod, fchmod, creat, mkdir and mknod",
		Names:  []string{"chmod", "fchmod", "creat", "mkdir", "mknod"},
		Action: allow,
		Conds:  []cond{setIDCond(1)},
	},
	{
		Why:    setIDWhy + "; the mode is argument 2 of open, fchmodat, fchmodat2, mkdirat and mknodat",
		Names:  []string{"open", "fchmodat", "fchmodat2", "mkdirat", "mknodat"},
		Action: allow,
		Conds:  []cond{setIDCond(2)},
	},
	{
		Why:    setIDWhy + "; the mode is argument 3 of openat",
		Names:  []string{"openat"},
		Action: allow,
		Conds:  []cond{setIDCond(3)},
	},
	{
		Why: "ENOSYS so that programs fall back to openat: openat2 takes its " +
			"mode inside struct open_how, in memory, where seccomp cannot read " +
			"S_ISUID or S_ISGID",
		Action: enosys,
		Names:  []string{"openat2"},
	},
	{
		Why: "address families: local, IP and netlink only; any other family " +
			"(AF_PACKET, AF_ALG, AF_VSOCK, ...) is kernel attack surface or " +
			"leaves the network namespace",
		Names:  []string{"socket", "socketpair"},
		Action: allow,
		Conds: []cond{{
			Arg: 0, Op: opNotIn, Action: eafnosupport,
			Values: []value{{"AF_UNIX", afUnix}, {"AF_INET", afInet}, {"AF_INET6", afInet6}, {"AF_NETLINK", afNetlink}},
		}},
	},
	{
		Why: "no new namespaces (as the container profile); the flags are " +
			"argument 0 on x86_64 and arm64",
		Names:  []string{"clone"},
		Action: allow,
		Conds: []cond{{
			Arg: 0, Op: opAnyBit, Action: eperm,
			Values: []value{{"CLONE_NEW*", cloneNewAny}},
		}},
	},
	{
		Why: "the container profile's safe personalities, plus ADDR_NO_RANDOMIZE " +
			"which gdb sets for the programs it starts",
		Names:  []string{"personality"},
		Action: eperm,
		Conds: []cond{{
			Arg: 0, Op: opIn, Action: allow,
			Values: []value{
				{"PER_LINUX", perLinux}, {"PER_LINUX32", perLinux32},
				{"UNAME26", uname26}, {"UNAME26+PER_LINUX32", uname26 | perLinux32},
				{"ADDR_NO_RANDOMIZE", addrNoRandomize}, {"query (0xffffffff)", personalityQuery},
			},
		}},
	},
}

// noLocalSockets replaces the rule for socket with Options.NoLocalSockets
// (claude-update's smoke test): AF_UNIX is refused with EPERM, so neither
// a path-named socket the sandbox can see nor an abstract one of its
// network namespace can be reached; the other families are as in the
// policy. socketpair keeps its rule: the pair it makes reaches nothing.
var noLocalSockets = rule{
	Why: "no local sockets (NoLocalSockets): AF_UNIX is EPERM, so no " +
		"path-named or abstract socket is reachable; other families as " +
		"the policy: IP and netlink only",
	Names:  []string{"socket"},
	Action: allow,
	Conds: []cond{
		{Arg: 0, Op: opIn, Action: eperm, Values: []value{{"AF_UNIX", afUnix}}},
		{
			Arg: 0, Op: opNotIn, Action: eafnosupport,
			Values: []value{{"AF_INET", afInet}, {"AF_INET6", afInet6}, {"AF_NETLINK", afNetlink}},
		},
	},
}

// setIDWhy is why the syscalls that set a file's mode have a rule.
const setIDWhy = "no setuid or setgid files: the sandbox writes into the " +
	"user's project and other binds, which the host does not mount nosuid; " +
	"an executable made setuid (or setgid) there runs with the user's " +
	"rights (or group) when another local user starts it. EPERM when the " +
	"mode has S_ISUID or S_ISGID, whatever the other flags (open's mode " +
	"counts only with O_CREAT or O_TMPFILE, and libc then passes 0); the " +
	"mode is compared on its low 32 bits, as the kernel takes a umode_t"

// setIDCond is the setuid/setgid test on the mode in argument arg.
func setIDCond(arg int) cond {
	return cond{Arg: arg, Op: opAnyBit, Action: eperm, Values: []value{{"S_ISUID|S_ISGID", sISUID | sISGID}}}
}
