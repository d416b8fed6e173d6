/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Cumulative per-function metrics for --listen, in the Prometheus text format
 * or OpenMetrics. Every figure only grows: each drained interval adds its
 * figures (probe bias subtracted, as the report derives them), so counters
 * never go backwards, whatever the traced processes do.
 *
 * Latency buckets: 8 per power of two of nanoseconds (each at most 12.5% of
 * its value wide), upper bounds from 1.024 us to 2^35 ns (34.4 s), then +Inf:
 * METRICS_BUCKETS boundaries. A bucket le=X counts calls shorter than X
 * seconds (cumulative, as Prometheus wants); histogram_quantile() then errs
 * by at most half a bucket, 6.25%.
 *
 * Thread-safe: the tracing loop adds, the HTTP thread renders.
 */
#ifndef FNPROF_METRICS_H
#define FNPROF_METRICS_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "fnprof.h"
#include "report/report.h"

#define METRICS_MIN_POW 10
#define METRICS_MAX_POW 35
#define METRICS_PER_POW 8
/* Finite upper bounds: one below 2^MIN_POW, then PER_POW per power of two. */
#define METRICS_BUCKETS (1 + (METRICS_MAX_POW - METRICS_MIN_POW) * METRICS_PER_POW)

/* What --by adds as a label to every per-function metric. */
enum metrics_by {
	BY_NONE,
	BY_PID,
	BY_COMM,
	BY_CGROUP,
};

struct metrics;

/* pl must outlive the metrics. max_series: per-function series (label values) kept apart. NULL on ENOMEM. */
struct metrics *metrics_new(const struct probe_list *pl, enum metrics_by by, unsigned int max_series);
void metrics_free(struct metrics *m);

/*
 * Adds one interval: r is a report of its figures (stats: nr_procs blocks of
 * pl->nr, drops, cal) and labels[k] the --by label value of block k (unused
 * with BY_NONE; NULL for a block of no process).
 */
void metrics_add(struct metrics *m, const struct report *r, const char *const *labels);

/* Writes every metric family to f; openmetrics: that format's names (without the "# EOF"). */
void metrics_write(struct metrics *m, FILE *f, bool openmetrics);

/* Index of the bucket for a latency of ns (METRICS_BUCKETS: +Inf), and the upper bound of bucket b in ns. */
unsigned int metrics_bucket_of(double ns);
double metrics_bucket_le(unsigned int b);

/* The label name of a --by mode ("pid", "comm", "cgroup"); NULL for BY_NONE. */
const char *metrics_by_label(enum metrics_by by);

/* Writes the family header: HELP and TYPE lines (counters lose "_total" in OpenMetrics). */
void metrics_family(FILE *f, bool openmetrics, const char *name, const char *type, const char *help);

/* Writes v as a label value: \\, \" and \n escaped, bytes that are not UTF-8 as U+FFFD. */
void metrics_label_value(FILE *f, const char *v);

#endif /* FNPROF_METRICS_H */
