// SPDX-License-Identifier: GPL-2.0
/*
 * --slow truth (built -O2 -fomit-frame-pointer, as production code is: the
 * stacks need DWARF). serve_loop calls handle N times (default 3000); each
 * call spins 10 us, every 100th also sleeps 5 ms in wait_for_disk. handle
 * times itself (wall, and its thread's CPU time) and counts its slow calls.
 * Usage: slowcall [gate] [N [DEPTH]]: with gate, it prints "ready" and waits
 * for a line on stdin before it starts (for -p: probes in place first); with DEPTH, serve_loop runs under DEPTH frames
 * of nest (a stack deeper than --slow keeps; "truth nest depth=DEPTH").
 * Prints "truth slow calls=N sleeps=S over=O near=M min_sleep_wall_ns=W
 * min_sleep_off_ns=B": O calls took 1 ms or more, M of all calls took
 * 0.9-1.1 ms (either side of a 1 ms threshold once probes add their cost),
 * and the sleeping calls' least wall and least off-CPU time.
 */
#define _GNU_SOURCE
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

static unsigned long long sleeps, over, near, min_wall = ~0ULL, min_off = ~0ULL;

NOINLINE void spin_us(unsigned long long us)
{
	unsigned long long end = clock_ns(CLOCK_MONOTONIC) + us * 1000;

	while (clock_ns(CLOCK_MONOTONIC) < end)
		;
	__asm__ volatile("");
}

NOINLINE void wait_for_disk(void)
{
	struct timespec ts = { 0, 5000000 };

	nanosleep(&ts, NULL);
	__asm__ volatile("");  /* not a tail call: wait_for_disk stays on the stack */
}

/* What one call of handle took, as handle measured it. */
static void account(unsigned long long wall, unsigned long long cpu, int slept)
{
	if (wall >= 1000000)
		over++;
	if (wall >= 900000 && wall <= 1100000)
		near++;
	if (!slept)
		return;
	sleeps++;
	min_wall = wall < min_wall ? wall : min_wall;
	min_off = wall - cpu < min_off ? wall - cpu : min_off;
}

NOINLINE void handle(int i)
{
	unsigned long long w = clock_ns(CLOCK_MONOTONIC), c = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int slept = i % 100 == 99;

	spin_us(10);
	if (slept)
		wait_for_disk();
	account(clock_ns(CLOCK_MONOTONIC) - w, clock_ns(CLOCK_THREAD_CPUTIME_ID) - c, slept);
}

NOINLINE void serve_loop(int n)
{
	int i;

	for (i = 0; i < n; i++)
		handle(i);
	__asm__ volatile("");
}

/* depth more frames under serve_loop, each a real call (not a tail call). */
NOINLINE void nest(int depth, int n)
{
	if (depth > 0)
		nest(depth - 1, n);
	else
		serve_loop(n);
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	int gate = argc > 1 && !strcmp(argv[1], "gate");
	int n, depth;
	char line[16];

	argc -= gate, argv += gate;
	n = argc > 1 ? atoi(argv[1]) : 3000, depth = argc > 2 ? atoi(argv[2]) : 0;
	if (gate) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}

	if (depth) {
		printf("truth nest depth=%d\n", depth);
		nest(depth, n);
	} else {
		serve_loop(n);   /* main calls serve_loop: the stacks the tests expect */
	}
	printf("truth slow calls=%d sleeps=%llu over=%llu near=%llu min_sleep_wall_ns=%llu min_sleep_off_ns=%llu\n",
	       n, sleeps, over, near, min_wall, min_off);
	return 0;
}
