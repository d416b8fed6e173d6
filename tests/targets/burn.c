// SPDX-License-Identifier: GPL-2.0
/*
 * Two functions burning CPU in a known ratio, called from a common caller,
 * each measuring its own CPU time. No library calls in the hot loops, so
 * frame-pointer stacks are whole.
 * Usage: burn SECONDS [RATIO_A RATIO_B]   (default 3 1)
 *        burn sleep SECONDS               (a process that sleeps)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static volatile unsigned long sink;

/* About 1 ms of arithmetic per unit, the same loop for both. */
static void work(unsigned long units)
{
	unsigned long i, x = sink;

	for (i = 0; i < units * 300000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

static unsigned long long a_ns, b_ns;

NOINLINE void burn_a(unsigned long units)
{
	unsigned long long t0 = cpu_ns();

	work(units);
	a_ns += cpu_ns() - t0;
}

NOINLINE void burn_b(unsigned long units)
{
	unsigned long long t0 = cpu_ns();

	work(units);
	b_ns += cpu_ns() - t0;
}

NOINLINE void burn_both(unsigned long ua, unsigned long ub)
{
	burn_a(ua);
	burn_b(ub);
	__asm__ volatile("");  /* not a tail call: burn_both stays on the stack */
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 && strcmp(argv[1], "sleep") ? atof(argv[1]) : 0;
	unsigned long ua = argc > 3 ? strtoul(argv[2], NULL, 10) : 3, ub = argc > 3 ? strtoul(argv[3], NULL, 10) : 1;
	struct timespec t0, t;

	if (argc > 2 && !strcmp(argv[1], "sleep")) {
		struct timespec ts = { .tv_sec = atoi(argv[2]) };

		nanosleep(&ts, NULL);
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		burn_both(ua, ub);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	fprintf(stderr, "truth burn a_ns=%llu b_ns=%llu ratio=%.3f\n", a_ns, b_ns, (double)a_ns / b_ns);
	return 0;
}
