/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Latency heatmaps (--svg with -f): each traced function's calls per time
 * column and latency bucket, kept from the per-interval aggregates (nothing
 * per call), drawn with the p50 and p99 of each column, a panel of on-CPU,
 * run-queue and blocked time per call (column averages: the kernel side keeps
 * a histogram of wall time only), and the run's histogram beside it.
 *
 * Columns are the -i intervals, or with no -i automatic ones of
 * HEATMAP_AUTO_S (or duration / HEATMAP_MAX_COLS); while there are more than
 * HEATMAP_MAX_COLS, neighbours are merged in pairs and new columns hold twice
 * as much time. At most HEATMAP_MAX_FUNCS functions are drawn (the most wall
 * time first), in at most HEATMAP_MAX_ROWS rows of buckets each. Memory:
 * per function and column, 16 bytes for each latency bucket with calls.
 */
#ifndef FNPROF_HEATMAP_H
#define FNPROF_HEATMAP_H

#include <stdbool.h>

#include "trace/calib.h"
#include "fnprof.h"
#include "target/probe.h"
#include "format/svg.h"

#define HEATMAP_AUTO_S 0.1
#define HEATMAP_MAX_COLS 100
#define HEATMAP_MAX_FUNCS 12
#define HEATMAP_MAX_ROWS 48

struct heatmap;

/*
 * An empty heatmap of the probes in pl (which must outlive it), starting at
 * t0 (monotonic s). interval_s: the -i interval, whose reports make the
 * columns; 0 for automatic columns (duration_s, when known, sets their
 * width). NULL: no memory.
 */
struct heatmap *heatmap_new(const struct probe_list *pl, double t0, double interval_s, double duration_s);
void heatmap_free(struct heatmap *hm);

/* Automatic columns: when the current one ends (monotonic s); a huge value with -i. */
double heatmap_next(const struct heatmap *hm);

/*
 * The aggregates of the interval that ends at t (pl->nr functions of the
 * target, from tracer_collect), with the probe bias of cal (NULL: none
 * subtracted), as the reports compute it. 0 or -ENOMEM.
 */
int heatmap_add(struct heatmap *hm, double t, const struct fn_stats *stats, const struct calibration *cal);

/*
 * Draws the heatmaps at doc->height and adds their height. heading: the
 * block's first line. Each function is a <g class="heatmap" data-fn="NAME"
 * data-calls="N">; its cells are <rect class="c" data-n="CALLS" data-c="COL">
 * and its histogram bars <rect class="hb" data-n="CALLS">. 0 or -ENOMEM.
 */
int heatmap_render(struct heatmap *hm, struct svg *doc, const char *heading);

#endif /* FNPROF_HEATMAP_H */
