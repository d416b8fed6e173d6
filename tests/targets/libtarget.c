// SPDX-License-Identifier: GPL-2.0
/* A shared library with a function whose behaviour is known: for tracing across objects. */
#include <time.h>

/* The wall time lib_spin spent, as it sees it itself (inside any probes): the callers' truth. */
unsigned long long lib_spin_wall_ns;
static volatile unsigned long long sink;

__attribute__((noinline)) unsigned long lib_spin(unsigned int us)
{
	struct timespec t0, t;
	unsigned long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/*
		 * Most of the time in lib_spin's own instructions, not in
		 * clock_gettime's: a frame-pointer stack sampled in the frameless
		 * clock_gettime skips its caller, and lib_spin would be seen by
		 * sampling only now and then on a busy machine.
		 */
		for (int i = 0; i < 64; i++)
			sink = sink * 6364136223846793005ULL + 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		n++;
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < us * 1000L);
	lib_spin_wall_ns += (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec);
	return n;
}
