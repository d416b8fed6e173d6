/* SPDX-License-Identifier: GPL-2.0 */
/* Log-linear latency histograms: bucket bounds, percentiles, bcc-style printing. */
#ifndef FNPROF_HIST_H
#define FNPROF_HIST_H

#include <stdio.h>
#include <linux/types.h>

#include "fnprof.h"

unsigned int hist_bucket_of(__u64 ns);
/* Bucket b holds values in [lo, hi). */
__u64 hist_bucket_lo(unsigned int b);
__u64 hist_bucket_hi(unsigned int b);

/*
 * The p-th percentile (0 < p <= 100) of the values in hist, interpolated
 * inside the bucket, clamped to [min, max] (the exact extremes seen), each
 * value first lowered by bias_ns (the probe's own cost, never below 0).
 */
double hist_percentile(const __u64 *hist, __u64 min, __u64 max, double p, __u64 bias_ns);

/* Mean of the values up to the p-th percentile (bucket midpoints): a mean that one outlier cannot move. */
double hist_trimmed_mean(const __u64 *hist, double p);

/* The power-of-two histogram in the "lo -> hi : count |****|" layout of bcc's print_log2_hist. */
void hist_print_log2(FILE *f, const __u64 *hist, __u64 bias_ns);

/* Formats a duration in ns with a unit that fits: "812ns", "56.1us", "1.00ms", "2.50s". */
const char *fmt_ns(double ns, char *buf, size_t size);

#endif /* FNPROF_HIST_H */
