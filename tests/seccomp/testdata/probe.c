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
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

/* The setuid/setgid probes work in the current directory on a file or
 * directory named after the probe. A mode above 32 bits (NAME64) is what
 * the kernel truncates to umode_t: the filter must see the same bits. */
#define SUID (S_ISUID | 0755)
#define SGID (S_ISGID | 0755)
#define HIGH (1UL << 32)

/* plain creates the file n with mode 0644 and returns an fd for it. */
static long plain(const char *n) {
	return syscall(SYS_openat, AT_FDCWD, n, O_CREAT | O_WRONLY | O_EXCL | O_CLOEXEC, 0644);
}

static long modes(const char *n) {
	long fd;
	if (!strncmp(n, "chmod-", 6) || !strncmp(n, "fchmod-", 7) || !strncmp(n, "fchmodat-", 9) ||
	    !strncmp(n, "fchmodat2-", 10)) {
		unsigned long mode = strstr(n, "-suid") ? SUID : strstr(n, "-sgid") ? SGID : strstr(n, "-sticky") ? (S_ISVTX | 0755) : 0755;
		if (strstr(n, "64"))
			mode |= HIGH;
		if ((fd = plain(n)) < 0)
			return fd;
		if (!strncmp(n, "chmod-", 6)) {
#ifdef SYS_chmod
			return syscall(SYS_chmod, n, mode);
#else
			errno = ENOSYS;
			return -1;
#endif
		}
		if (!strncmp(n, "fchmod-", 7))
			return syscall(SYS_fchmod, fd, mode);
		if (!strncmp(n, "fchmodat-", 9))
			return syscall(SYS_fchmodat, AT_FDCWD, n, mode);
		return syscall(SYS_fchmodat2, AT_FDCWD, n, mode, 0);
	}
	unsigned long mode = strstr(n, "-suid") ? SUID : strstr(n, "-sgid") ? SGID : 0755;
	if (strstr(n, "64"))
		mode |= HIGH;
	if (!strncmp(n, "openat-", 7))
		return syscall(SYS_openat, AT_FDCWD, n, O_CREAT | O_WRONLY | O_EXCL, mode);
	if (!strncmp(n, "tmpfile-", 8)) { /* O_TMPFILE, then linked in as n */
		char p[64];
		fd = syscall(SYS_openat, AT_FDCWD, ".", O_TMPFILE | O_WRONLY, mode);
		if (fd < 0)
			return fd;
		snprintf(p, sizeof p, "/proc/self/fd/%ld", fd);
		return syscall(SYS_linkat, AT_FDCWD, p, AT_FDCWD, n, AT_SYMLINK_FOLLOW);
	}
	if (!strncmp(n, "mkdirat-", 8))
		return syscall(SYS_mkdirat, AT_FDCWD, n, mode);
	if (!strncmp(n, "mknodat-", 8))
		return syscall(SYS_mknodat, AT_FDCWD, n, S_IFREG | mode, 0);
	if (!strncmp(n, "openat2-", 8)) {
		struct open_how how = {.flags = O_CREAT | O_WRONLY | O_EXCL, .mode = mode};
		return syscall(SYS_openat2, AT_FDCWD, n, &how, sizeof how);
	}
#ifdef SYS_open
	if (!strncmp(n, "open-", 5))
		return syscall(SYS_open, n, O_CREAT | O_WRONLY | O_EXCL, mode);
	if (!strncmp(n, "creat-", 6))
		return syscall(SYS_creat, n, mode);
	if (!strncmp(n, "mkdir-", 6))
		return syscall(SYS_mkdir, n, mode);
	if (!strncmp(n, "mknod-", 6))
		return syscall(SYS_mknod, n, S_IFREG | mode, 0);
#else
	if (!strncmp(n, "open-", 5) || !strncmp(n, "creat-", 6) || !strncmp(n, "mkdir-", 6) || !strncmp(n, "mknod-", 6)) {
		errno = ENOSYS;
		return -1;
	}
#endif
	fprintf(stderr, "probe: unknown name %s\n", n);
	exit(2);
}

static long run(const char *n) {
	if (strchr(n, '-') && (strstr(n, "-suid") || strstr(n, "-sgid") || strstr(n, "-plain") || strstr(n, "-sticky")))
		return modes(n);
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
