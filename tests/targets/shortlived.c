// SPDX-License-Identifier: GPL-2.0
/*
 * Short-lived processes for -a: each burns MS milliseconds of its own CPU
 * time (its thread's clock, so a busy machine makes it live longer, not
 * burn less) in a named function, then exits.
 *   shortlived burn MS     in shortlived_burn(), its own code
 *   shortlived memset MS   in libc's memset (a function stripped libc names by no symbol)
 *   shortlived spawn N MS  runs N "burn MS" children one after another (fork, exec, wait),
 *                          printing "child pid=P" for each and "done" at the end
 * Each burning process prints "truth pid=P mode=M".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE unsigned long long shortlived_burn(double s)
{
	double end = cpu_now() + s;
	unsigned long long x = 1;

	while (cpu_now() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL + (x >> 11);
	return x;
}

static char buf[1 << 20];
/* Called through a volatile pointer: the compiler neither inlines nor drops the libc call. */
static void *(*volatile memset_fn)(void *, int, size_t) = memset;

NOINLINE unsigned long long shortlived_memset(double s)
{
	double end = cpu_now() + s;
	unsigned long long x = 0;

	while (cpu_now() < end)
		for (int i = 0; i < 16; i++)
			x += ((unsigned char *)memset_fn(buf, i, sizeof(buf)))[i];
	return x;
}

static int spawn(const char *self, int n, const char *ms)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			execl(self, self, "burn", ms, (char *)NULL);
			_exit(127);
		}
		printf("child pid=%d\n", pid);
		fflush(stdout);
		waitpid(pid, NULL, 0);
	}
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	double s = argc > 2 ? atof(argv[2]) / 1e3 : 0.03;
	unsigned long long r;

	if (argc > 3 && !strcmp(argv[1], "spawn")) {
		/* By its own path, not /proc/self/exe: the children's name (comm) is "shortlived". */
		char self[4096];
		ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (len <= 0)
			return 1;
		self[len] = 0;
		return spawn(self, atoi(argv[2]), argv[3]);
	}
	if (argc < 3 || (strcmp(argv[1], "burn") && strcmp(argv[1], "memset"))) {
		fprintf(stderr, "usage: shortlived burn|memset MS | spawn N MS\n");
		return 2;
	}
	printf("truth pid=%d mode=%s\n", getpid(), argv[1]);
	fflush(stdout);
	r = !strcmp(argv[1], "burn") ? shortlived_burn(s) : shortlived_memset(s);
	return r == 42;   /* the result used: the work is not optimized away */
}
