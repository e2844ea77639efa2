/* getppid: the seccomp benchmark's loop. Makes N syscalls (default 10^6)
 * and prints the CPU time of the loop, "ns=..." (CLOCK_PROCESS_CPUTIME_ID:
 * user and system time, so that neither starting the sandbox nor waiting
 * for a busy CPU is measured).
 *
 *   getppid [N] [ioctl]
 *
 * getppid is decided from the syscall number alone: the kernel's seccomp
 * cache allows it without running the filter. "ioctl" makes FIONREAD
 * ioctls instead, which the filter has to run for (argument rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int use_ioctl = argc > 2 && !strcmp(argv[2], "ioctl");
	int fds[2], avail;
	if (use_ioctl && pipe(fds) != 0)
		return 1;
	struct timespec a, b;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++) {
		if (use_ioctl)
			syscall(SYS_ioctl, fds[0], FIONREAD, &avail);
		else
			syscall(SYS_getppid);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	printf("ns=%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
