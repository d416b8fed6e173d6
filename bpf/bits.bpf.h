/* SPDX-License-Identifier: GPL-2.0 */
/* Small arithmetic helpers for BPF programs. */
#ifndef FNPROF_BITS_BPF_H
#define FNPROF_BITS_BPF_H

#include "fnprof.h"

/* Also compiled into user space (user/base/hist.c), so that both sides bucket alike. */
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* floor(log2(v)) for v > 0, branch-light (bcc libbpf-tools bits.bpf.h). */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
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
