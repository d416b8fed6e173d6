/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-function statistics (struct fn_stats, laid out in bpf/fnprof.h):
 * what user space does with them besides printing.
 */
#ifndef FNPROF_STATS_H
#define FNPROF_STATS_H

#include <linux/types.h>

#include "fnprof.h"

/*
 * Adds b into a: sums, min of mins, max of maxes, histograms. Every field is
 * a __u64 sum except wall_min and wall_max, so a new field is merged as a sum
 * without a change here; FN_STATS_WORDS makes the build fail until the
 * printers (report.c) have been looked at too.
 */
void fn_stats_merge(struct fn_stats *a, const struct fn_stats *b);

/*
 * The number of __u64 words in struct fn_stats that the printers know about.
 * Adding a field fails the build (report.c) until this count is raised,
 * after the field is shown or deliberately left out.
 */
#define FN_STATS_WORDS (27 + 3 * FNPROF_MAX_EVENTS + FNPROF_HIST_BUCKETS)

#endif /* FNPROF_STATS_H */
