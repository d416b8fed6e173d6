// SPDX-License-Identifier: GPL-2.0
/*
 * Heap ids truth: keep_early allocates KEEP blocks of 1000 bytes and never
 * frees them (a leak, still live at exit); then churn allocates CHURN blocks
 * of 64 bytes, each freed at once. The whole run is on one CPU, so that
 * every sampled allocation takes an id of that CPU's: with the heap profile
 * sampling every allocation (--heap-rate 1), the kept blocks' ids are far
 * older than the churn's, the leak hunt's case.
 * Usage: heapids KEEP CHURN. Prints "truth heapids kept=B keep_nr=K churned=N".
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_SIZE 1000

static void *volatile sink;

NOINLINE unsigned long long keep_early(long n, void **kept)
{
	unsigned long long bytes = 0;
	long i;

	for (i = 0; i < n; i++) {
		kept[i] = malloc(KEEP_SIZE);
		bytes += KEEP_SIZE;
		/* Now and then a pause: the reader unwinds these stacks, not their frame-pointer fallback. */
		if (i % 64 == 63)
			usleep(1000);
	}
	return bytes;
}

NOINLINE void churn(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		sink = malloc(64);
		free(sink);
	}
}

int main(int argc, char **argv)
{
	long keep = argc > 1 ? atol(argv[1]) : 2000, n = argc > 2 ? atol(argv[2]) : 1000000;
	void **kept = calloc(keep > 0 ? keep : 1, sizeof(*kept));
	unsigned long long bytes;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() > 0 ? sched_getcpu() : 0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	bytes = keep_early(keep, kept);
	churn(n);
	/* The kept blocks are never freed: in use at exit, where the final report finds them. */
	printf("truth heapids kept=%llu keep_nr=%ld churned=%ld\n", bytes, keep, n);
	return 0;
}
