/* cputime: run a command and print the CPU time (user + system) it and
 * its descendants used, "ns=...", for the seccomp benchmark. The command's
 * output goes to /dev/null.
 *
 *   cputime CMD [ARGS...] */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: cputime CMD [ARGS...]\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 1;
	}
	long long ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
	printf("ns=%lld\n", ns);
	return WIFEXITED(status) && WEXITSTATUS(status) == 127;
}
