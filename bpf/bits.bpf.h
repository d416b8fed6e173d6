/* SPDX-License-Identifier: GPL-2.0 */
/* Small arithmetic helpers for BPF programs. */
#ifndef FNPROF_BITS_BPF_H
#define FNPROF_BITS_BPF_H

#include "fnprof.h"

/* Also compiled into user space (user/base/hist.c), so that both sides bucket alike. */
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * floor(log2(v)) for v > 0, without a branch: the bits below the highest
 * one set, then counted (SWAR popcount). BPF has no conditional move, so
 * bcc's branch-light form (a compare per halving) was five branches, whose
 * 32 ways the verifier walked one by one, each with its own constants (the
 * bucket indexes the histogram, so every one of them is kept precise): two
 * thirds of the instructions it verified in every return program.
 */
static __always_inline __u32 log2_u64(__u64 v)
{
	v |= v >> 1;
	v |= v >> 2;
	v |= v >> 4;
	v |= v >> 8;
	v |= v >> 16;
	v |= v >> 32;
	v -= (v >> 1) & 0x5555555555555555ULL;
	v = (v & 0x3333333333333333ULL) + ((v >> 2) & 0x3333333333333333ULL);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((v * 0x0101010101010101ULL) >> 56) - 1;
}

/* Log-linear bucket of a latency in ns; the inverse lives in user/base/hist.c. */
static __always_inline __u32 hist_bucket(__u64 v)
{
	__u32 e;

	if (v < FNPROF_HIST_SUB)
		return v;
	e = log2_u64(v);
	if (e >= FNPROF_HIST_MAX_POW)
		return FNPROF_HIST_BUCKETS - 1;
	return FNPROF_HIST_SUB + (e - FNPROF_HIST_SUB_BITS) * FNPROF_HIST_SUB +
	       ((v >> (e - FNPROF_HIST_SUB_BITS)) & (FNPROF_HIST_SUB - 1));
}

#endif /* FNPROF_BITS_BPF_H */
