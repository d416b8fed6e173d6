// SPDX-License-Identifier: GPL-2.0
/*
 * Waits in glibc, built without frame pointers (as production code is): the
 * named functions call glibc directly, so a frame-pointer walk from inside
 * glibc loses them; the offcpu and mutex profiles' DWARF stacks must not.
 * Usage: waits sleep SECONDS   a thread sleeps 1 ms per call in sleep_us()
 *        waits mutex SECONDS   4 threads on one mutex; the holder works
 *                              ~100 us, then releases it in hold_and_release()
 * Prints "ready", then "truth sleep calls=N slept_ns=T" (wall less CPU time
 * inside sleep_us) or "truth mutex wait_ns=W" (time in pthread_mutex_lock).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define NR_THREADS 4

static double seconds;

static unsigned long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static unsigned long long slept_ns, calls;

NOINLINE void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	unsigned long long w = clock_ns(CLOCK_MONOTONIC), c = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	nanosleep(&ts, NULL);
	slept_ns += (clock_ns(CLOCK_MONOTONIC) - w) - (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c);
	calls++;
}

static void *sleeper(void *arg)
{
	unsigned long long end = clock_ns(CLOCK_MONOTONIC) + seconds * 1e9;

	(void)arg;
	while (clock_ns(CLOCK_MONOTONIC) < end)
		sleep_us(1000);
	return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

/* The time this thread spent getting the lock. */
NOINLINE unsigned long long take_lock(void)
{
	unsigned long long t = clock_ns(CLOCK_MONOTONIC);

	pthread_mutex_lock(&mu);
	return clock_ns(CLOCK_MONOTONIC) - t;
}

NOINLINE void hold_and_release(void)
{
	unsigned long long end = clock_ns(CLOCK_MONOTONIC) + 100000;

	while (clock_ns(CLOCK_MONOTONIC) < end)
		sink++;
	pthread_mutex_unlock(&mu);
	__asm__ volatile("");  /* not a tail call */
}

static unsigned long long waited[NR_THREADS];

static void *contender(void *arg)
{
	long i = (long)arg;
	unsigned long long end = clock_ns(CLOCK_MONOTONIC) + seconds * 1e9;

	while (clock_ns(CLOCK_MONOTONIC) < end) {
		waited[i] += take_lock();
		hold_and_release();
	}
	return NULL;
}

static void run_threads(int n, void *(*fn)(void *))
{
	pthread_t t[NR_THREADS];
	long i;

	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, fn, (void *)i);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	unsigned long long w = 0;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3 || (strcmp(argv[1], "sleep") && strcmp(argv[1], "mutex"))) {
		fprintf(stderr, "usage: waits sleep|mutex SECONDS\n");
		return 2;
	}
	seconds = atof(argv[2]);
	printf("ready\n");
	if (!strcmp(argv[1], "sleep")) {
		run_threads(1, sleeper);
		printf("truth sleep calls=%llu slept_ns=%llu\n", calls, slept_ns);
		return 0;
	}
	run_threads(NR_THREADS, contender);
	for (i = 0; i < NR_THREADS; i++)
		w += waited[i];
	printf("truth mutex wait_ns=%llu\n", w);
	return 0;
}
