/* SPDX-License-Identifier: GPL-2.0 */
/* The one monotonic clock fnprof times itself with. */
#ifndef FNPROF_CLOCK_H
#define FNPROF_CLOCK_H

#include <time.h>

static inline double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* FNPROF_CLOCK_H */
