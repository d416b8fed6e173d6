/* SPDX-License-Identifier: GPL-2.0 */
/* Spinning in a target's own code for a given time (monotonic clock): trunclib, dlclose. */
#ifndef FNPROF_TARGET_SPIN_H
#define FNPROF_TARGET_SPIN_H

#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long own_spin(double s)
{
	double t0 = now();
	unsigned long n = 0;

	while (now() - t0 < s)
		n++;
	return n;
}

#endif
