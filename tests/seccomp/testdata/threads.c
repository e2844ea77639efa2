/* threads: start threads with pthread_create (glibc tries clone3 first and
 * falls back to clone on ENOSYS) and join them. */
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg) {
	long *p = arg;
	for (int i = 0; i < 1000; i++)
		*p += i;
	return NULL;
}

int main(void) {
	pthread_t t[8];
	long sums[8] = {0};
	for (int i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, work, &sums[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	long total = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		total += sums[i];
	}
	printf("threads: %ld\n", total);
	return total == 8 * 499500 ? 0 : 1;
}
