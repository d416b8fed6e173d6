// SPDX-License-Identifier: GPL-2.0
/*
 * Loads for the profiles' overhead (bench/profiles.py). Each prints
 * "result ns_per_op=X" for its own loop, timed by itself:
 *   profload alloc N    malloc(64) + free, N times (every call hits the heap probes)
 *   profload switch N   two threads on one CPU ping-pong over a pipe N times (2 context switches each)
 *   profload mutex N    4 threads take one mutex N times in all, holding it ~20 us (futex waits)
 *   profload alloc2 N   malloc(64) + free and ~2 us of work, N times (for --max-overhead)
 *   profload alloc50 N  the same with ~50 us of work
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static long n;
static volatile unsigned long sink;

static void alloc_loop(void)
{
	long i;

	for (i = 0; i < n; i++) {
		char *p = malloc(64);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
}

/* malloc+free and us microseconds of spinning on the clock, n times. */
static void alloc_work_loop(long us)
{
	unsigned long long end;
	long i;

	for (i = 0; i < n; i++) {
		char *p = malloc(64);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		for (end = now_ns() + us * 1000; now_ns() < end;)
			sink++;
	}
}

static int ping[2], pong[2];

static void *ponger(void *arg)
{
	char c;
	long i;

	(void)arg;
	for (i = 0; i < n; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

/* Both threads on CPU 0: every round trip is two context switches, whatever the other CPU does. */
static void switch_loop(void)
{
	pthread_t t;
	cpu_set_t one;
	char c = 0;
	long i;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (pipe(ping) || pipe(pong))
		exit(1);
	pthread_create(&t, NULL, ponger, NULL);
	for (i = 0; i < n; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			break;
	pthread_join(t, NULL);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *contender(void *arg)
{
	long i, k;

	(void)arg;
	for (i = 0; i < n / 4; i++) {
		pthread_mutex_lock(&mu);
		for (k = 0; k < 20000; k++)
			sink = sink * 3 + k;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void mutex_loop(void)
{
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, contender, NULL);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
	unsigned long long t0;

	if (argc != 3)
		return 2;
	n = atol(argv[2]);
	t0 = now_ns();
	if (!strcmp(argv[1], "alloc"))
		alloc_loop();
	else if (!strcmp(argv[1], "switch"))
		switch_loop();
	else if (!strcmp(argv[1], "mutex"))
		mutex_loop();
	else if (!strcmp(argv[1], "alloc2"))
		alloc_work_loop(2);
	else if (!strcmp(argv[1], "alloc50"))
		alloc_work_loop(50);
	else
		return 2;
	printf("result ns_per_op=%.1f\n", (double)(now_ns() - t0) / n);
	return 0;
}
