// SPDX-License-Identifier: GPL-2.0
/*
 * longjmp out of a deep recursion: dive() recurses DEPTH levels and jumps
 * back to main's setjmp from the bottom, ROUNDS times; then after() is
 * called CALLS times, each spinning 20 us. First one call of after(),
 * "ready", and a line on stdin: the tracer has seen the process by then. A tracer that leaves the kernel
 * holding 64 abandoned uretprobe returns loses every later one: after()'s
 * calls would not be timed.
 * Usage: deepjump DEPTH ROUNDS CALLS
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "spin.h"

#define NOINLINE __attribute__((noinline))

static jmp_buf env;
static volatile int sink;

static volatile int jump = 1;

NOINLINE int dive(int d)
{
	if (d <= 0) {
		if (jump)
			longjmp(env, 1);
		return 0;
	}
	sink = dive(d - 1);
	return sink + 1;
}

NOINLINE void after(void)
{
	own_spin(20e-6);
	sink++;   /* no tail call: its own ret */
}

int main(int argc, char **argv)
{
	int depth = argc > 3 ? atoi(argv[1]) : 100, rounds = argc > 3 ? atoi(argv[2]) : 3;
	int calls = argc > 3 ? atoi(argv[3]) : 1000, i;
	volatile int r = 0;
	char line[16];

	after();
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (setjmp(env))
		r++;
	if (r < rounds)
		dive(depth);
	for (i = 0; i < calls; i++)
		after();
	printf("deepjump done\n");
	fprintf(stderr, "truth dive rounds=%d depth=%d\ntruth after calls=%d\n", rounds, depth, calls + 1);
	return 0;
}
