/* SPDX-License-Identifier: GPL-2.0 */
/* The one monotonic clock fnprof times itself with, and its thread's CPU clock. */
#ifndef FNPROF_CLOCK_H
#define FNPROF_CLOCK_H

#include <time.h>

static inline double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The same clock in ns: bpf_ktime_get_ns's, for a BPF program's start time. */
static inline unsigned long long monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * This thread's CPU time: what a loop of fnprof's own costs, without the
 * time the thread waited for a CPU while other work ran.
 */
static inline double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* FNPROF_CLOCK_H */
