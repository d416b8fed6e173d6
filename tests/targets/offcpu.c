// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU truth. sleep_1ms sleeps 1 ms per call and measures the time it
 * spent (wall clock less its own CPU time). The sleep itself is made by
 * nanosleep_call, one level below: glibc has no frame pointers, so the
 * function that calls into it directly is not on frame-pointer stacks (the
 * caller's caller is); the wrapper keeps sleep_1ms itself visible.
 * Usage: offcpu SECONDS            main thread sleeps SECONDS in 1 ms calls
 *        offcpu thread DELAY SECONDS  a thread started after DELAY s does it
 *        offcpu thread usr1 SECONDS   ... started once SIGUSR1 comes (once fnprof is in)
 *        offcpu runq SECONDS       3 threads burn on one CPU: run-queue waits
 * Prints "ready" first, then "truth offcpu calls=N slept_ns=T" (runq:
 * "truth runq wait_ns=W cpu_ns=C").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

NOINLINE int nanosleep_call(const struct timespec *ts)
{
	int r = nanosleep(ts, NULL);

	__asm__ volatile("");  /* not a tail call */
	return r;
}

static unsigned long long slept_ns, calls;

NOINLINE void sleep_1ms(void)
{
	struct timespec ts = { 0, 1000000 };
	unsigned long long w = clock_ns(CLOCK_MONOTONIC), c = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	nanosleep_call(&ts);
	slept_ns += (clock_ns(CLOCK_MONOTONIC) - w) - (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c);
	calls++;
}

NOINLINE void sleep_loop(double seconds)
{
	unsigned long long end = clock_ns(CLOCK_MONOTONIC) + seconds * 1e9;

	while (clock_ns(CLOCK_MONOTONIC) < end)
		sleep_1ms();
	__asm__ volatile("");
}

static double thread_seconds;

static void *sleeper(void *arg)
{
	(void)arg;
	sleep_loop(thread_seconds);
	return NULL;
}

static volatile unsigned long sink;
static unsigned long long runq_wait[3], runq_cpu[3];
static double runq_seconds;

/* Burns on CPU 0 with two others: the time it is not running, it waits in the run queue. */
NOINLINE void *burner(void *arg)
{
	long i = (long)arg;
	unsigned long long w = clock_ns(CLOCK_MONOTONIC), c = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	unsigned long long end = w + runq_seconds * 1e9;
	unsigned long x = 1;

	while (clock_ns(CLOCK_MONOTONIC) < end)
		for (int k = 0; k < 10000; k++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
	runq_cpu[i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c;
	runq_wait[i] = clock_ns(CLOCK_MONOTONIC) - w - runq_cpu[i];
	return NULL;
}

static int run_queue(double seconds)
{
	pthread_t t[3];
	cpu_set_t one;
	long i;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	runq_seconds = seconds;
	for (i = 0; i < 3; i++) {
		pthread_create(&t[i], NULL, burner, (void *)i);
		pthread_setaffinity_np(t[i], sizeof(one), &one);
	}
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("truth runq wait_ns=%llu cpu_ns=%llu\n", runq_wait[0] + runq_wait[1] + runq_wait[2],
	       runq_cpu[0] + runq_cpu[1] + runq_cpu[2]);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;
	sigset_t usr1;

	/* Held from before "ready": a SIGUSR1 sent at once waits for sigwait(), never kills. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (argc == 3 && !strcmp(argv[1], "runq"))
		return run_queue(atof(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "thread")) {
		struct timespec d = { 0, 0 };
		double delay = atof(argv[2]);
		int sig;

		d.tv_sec = (time_t)delay;
		d.tv_nsec = (long)((delay - d.tv_sec) * 1e9);
		if (!strcmp(argv[2], "usr1")) {
			sigwait(&usr1, &sig);
		} else {
			nanosleep(&d, NULL);
		}
		thread_seconds = atof(argv[3]);
		pthread_create(&t, NULL, sleeper, NULL);
		pthread_join(t, NULL);
	} else {
		sleep_loop(argc > 1 ? atof(argv[1]) : 1);
	}
	printf("truth offcpu calls=%llu slept_ns=%llu\n", calls, slept_ns);
	return 0;
}
