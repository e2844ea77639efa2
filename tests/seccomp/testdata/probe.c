/* probe: perform one operation the seccomp filter decides and print
 * "NAME: ok" or "NAME: ERRNAME" (the exact errno), one line each.
 *
 *   probe NAME...   names: see the table at the bottom
 *
 * Raw syscall(2) is used throughout so that libc cannot substitute another
 * syscall or mask an error. The i386 and x32 probes do not return when the
 * filter works: the kernel kills the process with SIGSYS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/kd.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

static int report(const char *name, long r) {
	if (r < 0) {
		const char *e = strerrorname_np(errno);
		printf("%s: %s\n", name, e ? e : "?");
	} else {
		printf("%s: ok\n", name);
	}
	fflush(stdout);
	return 0;
}

/* Push a whole command into the terminal's input, as an attacker would. */
static long sti(unsigned long cmd) {
	const char *s = "echo INJECTED\n";
	for (; *s; s++) {
		long r = syscall(SYS_ioctl, 0, cmd, s);
		if (r < 0)
			return r;
	}
	return 0;
}

/* sysret turns a raw syscall return (-errno on failure) into libc's. */
static __attribute__((unused)) long sysret(long r) {
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

static long i386_getpid(void) {
#if defined(__x86_64__)
	long r;
	/* int $0x80 from a 64-bit process: the i386 ABI, getpid is 20. */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	return sysret(r);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static long x32_getpid(void) {
#if defined(__x86_64__)
	long r;
	/* x32: __X32_SYSCALL_BIT | 39 (getpid) through the 64-bit entry. */
	__asm__ volatile("syscall" : "=a"(r) : "a"(0x40000000L | 39L) : "rcx", "r11", "memory");
	return sysret(r);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static long run(const char *n) {
	if (!strcmp(n, "tiocsti"))
		return sti(TIOCSTI);
	if (!strcmp(n, "tiocsti64"))
		return sti((unsigned long)TIOCSTI | (1UL << 32));
	if (!strcmp(n, "tioclinux")) {
		char sub = 3; /* TIOCL_PASTESEL */
		return syscall(SYS_ioctl, 0, TIOCLINUX, &sub);
	}
	if (!strcmp(n, "tiocsetd")) {
		int ldisc = 0; /* N_TTY */
		return syscall(SYS_ioctl, 0, TIOCSETD, &ldisc);
	}
	if (!strcmp(n, "tiocexcl"))
		return syscall(SYS_ioctl, 0, TIOCEXCL);
	if (!strcmp(n, "tiocexcl64"))
		return syscall(SYS_ioctl, 0, (unsigned long)TIOCEXCL | (1UL << 32));
	if (!strcmp(n, "tiocgexcl")) { /* EBUSY: no one else could open it now */
		int excl = 0;
		long r = syscall(SYS_ioctl, 0, TIOCGEXCL, &excl);
		if (r == 0 && excl) {
			errno = EBUSY;
			return -1;
		}
		return r;
	}
	/* The VT keymap: bind a key to a string that a shell would run. On
	 * anything but a virtual console the kernel says ENOTTY. */
	if (!strcmp(n, "kdskbent")) {
		struct kbentry e = {.kb_table = 0, .kb_index = 59 /* F1 */, .kb_value = 0x0100 /* K_F1 */};
		return syscall(SYS_ioctl, 0, KDSKBENT, &e);
	}
	if (!strcmp(n, "kdskbent64")) {
		struct kbentry e = {.kb_table = 0, .kb_index = 59, .kb_value = 0x0100};
		return syscall(SYS_ioctl, 0, (unsigned long)KDSKBENT | (1UL << 32), &e);
	}
	if (!strcmp(n, "kdskbsent")) {
		struct kbsentry e = {.kb_func = 0};
		strcpy((char *)e.kb_string, "echo INJECTED\n");
		return syscall(SYS_ioctl, 0, KDSKBSENT, &e);
	}
	if (!strcmp(n, "kdsetkeycode")) {
		struct kbkeycode k = {.scancode = 0xe001, .keycode = 59};
		return syscall(SYS_ioctl, 0, KDSETKEYCODE, &k);
	}
	if (!strcmp(n, "tcgets")) {
		char buf[64];
		return syscall(SYS_ioctl, 0, TCGETS, buf);
	}
	if (!strcmp(n, "i386"))
		return i386_getpid();
	if (!strcmp(n, "x32"))
		return x32_getpid();
	if (!strcmp(n, "keyctl")) /* KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING */
		return syscall(SYS_keyctl, 0, -3, 0);
	if (!strcmp(n, "add_key"))
		return syscall(SYS_add_key, "user", "x", "y", 1, -3);
	if (!strcmp(n, "mount")) /* bad pointers: EFAULT if the kernel sees it */
		return syscall(SYS_mount, (char *)1, (char *)1, (char *)1, 0, NULL);
	if (!strcmp(n, "umount2"))
		return syscall(SYS_umount2, (char *)1, 0);
	if (!strcmp(n, "unshare-user"))
		return syscall(SYS_unshare, CLONE_NEWUSER);
	if (!strcmp(n, "setns"))
		return syscall(SYS_setns, -1, 0);
	if (!strcmp(n, "chroot"))
		return syscall(SYS_chroot, (char *)1);
	if (!strcmp(n, "clone-newuser")) {
		long r = syscall(SYS_clone, CLONE_NEWUSER | 17 /* SIGCHLD */, 0, 0, 0, 0);
		if (r == 0)
			_exit(0);
		return r;
	}
	if (!strcmp(n, "bpf")) /* size > PAGE_SIZE: E2BIG if the kernel sees it */
		return syscall(SYS_bpf, 0, (char *)1, 1 << 20);
	if (!strcmp(n, "perf_event_open")) /* NULL attr: EFAULT */
		return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	if (!strcmp(n, "userfaultfd"))
		return syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY);
	if (!strcmp(n, "clone3")) /* size 0: EINVAL if the kernel sees it */
		return syscall(SYS_clone3, NULL, 0);
	if (!strcmp(n, "io_uring_setup")) /* NULL params: EFAULT */
		return syscall(SYS_io_uring_setup, 1, NULL);
	if (!strcmp(n, "fsopen"))
		return syscall(SYS_fsopen, "tmpfs", 0);
	if (!strcmp(n, "open_tree"))
		return syscall(SYS_open_tree, AT_FDCWD, "/", 0);
	if (!strcmp(n, "syscall-1000"))
		return syscall(1000);
	if (!strcmp(n, "af_unix"))
		return syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	if (!strcmp(n, "af_inet"))
		return syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0);
	if (!strcmp(n, "af_inet6"))
		return syscall(SYS_socket, AF_INET6, SOCK_DGRAM, 0);
	if (!strcmp(n, "af_netlink"))
		return syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0);
	if (!strcmp(n, "af_packet"))
		return syscall(SYS_socket, AF_PACKET, SOCK_RAW, 0);
	if (!strcmp(n, "af_alg"))
		return syscall(SYS_socket, AF_ALG, SOCK_SEQPACKET, 0);
	if (!strcmp(n, "af_vsock"))
		return syscall(SYS_socket, AF_VSOCK, SOCK_STREAM, 0);
	if (!strcmp(n, "af_packet_pair"))
		return syscall(SYS_socketpair, AF_PACKET, SOCK_RAW, 0, (int[2]){0});
	if (!strcmp(n, "personality-exec")) /* READ_IMPLIES_EXEC */
		return syscall(SYS_personality, 0x0400000);
	if (!strcmp(n, "personality-query"))
		return syscall(SYS_personality, 0xffffffffUL);
	fprintf(stderr, "probe: unknown name %s\n", n);
	exit(2);
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: probe NAME...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		report(argv[i], run(argv[i]));
	return 0;
}
