/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The traced functions' bookkeeping over a run (-f): the figures since the
 * last drain, the interval's and the run's total, with their drop counts;
 * drains that feed --listen's metrics and --svg's heatmap columns; and the
 * reports (table or JSON, report.h) of each interval and of the whole run.
 * main.c decides when; this module knows what each figure adds to.
 */
#ifndef FNPROF_TALLY_H
#define FNPROF_TALLY_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

struct burst;
struct calibration;
struct events;
struct export;
struct heatmap;
struct probe_list;
struct slow;
struct tracer;
struct traced_proc;

/* What the tally reads and where it reports; the pointers must outlive it. */
struct tally_conf {
	const struct probe_list *pl;
	struct tracer *tracer;
	pid_t pid;                  /* the target; 0 system-wide */
	bool system_wide;           /* reports sum every process; the metrics keep them apart */
	bool json, hist;            /* --json, --hist */
	double max_overhead_pct;    /* --max-overhead, 0 without */
	const struct events *evs;   /* -e counters, or NULL */
	struct slow *slow;          /* --slow, or NULL */
	FILE *out;
	double t_exec;              /* when fnprof started (monotonic_s): a total's self CPU is over that */
};

/* When a report is, and the target's CPU time then, as main.c reads it (proc.h, or a reaped child's rusage). */
struct tally_moment {
	double now;                   /* monotonic_s() */
	double span_s, total_s;       /* since the last report, since the start */
	bool cpu_known;
	__u64 cpu_now_ns;             /* the target's CPU time so far */
	__u64 cpu_interval_ns, cpu_total_ns;  /* since the last report, since the start */
};

struct tally;

/* Allocates the figures for the tracer's slots. 0 or -ENOMEM. */
int tally_new(const struct tally_conf *conf, struct tally **out);
void tally_free(struct tally *t);

/*
 * Where each drain's figures also go (NULL: nowhere): --listen's metrics,
 * --svg's heatmaps (heat[k] of slot k's process: a -p list's, in order;
 * nr_heat of them, the array the caller's), --max-overhead's bursts (burst[k]
 * the account of slot k's process, nr_bursts of them); the
 * calibration's bias to subtract (NULL: none, --raw). Set before the first drain.
 */
void tally_set_sinks(struct tally *t, struct export *e, struct heatmap *const *heat, size_t nr_heat,
		     struct burst *burst, size_t nr_bursts, const struct calibration *cal);

/*
 * Takes the figures since the last drain into the interval's, and gives them
 * to the metrics and the heatmap: reports and metrics each see every call
 * once. 0 or -errno (message printed).
 */
int tally_drain(struct tally *t);

/* The run starts now: intervals' own CPU time counts from here (the total's from t_exec). */
void tally_begin(struct tally *t);

/*
 * Drains, then prints the report of the interval that ends at m; with
 * final, the run's total too. note: why the run ended, or NULL. 0 or
 * -errno (message printed).
 */
int tally_report(struct tally *t, bool final, const struct tally_moment *m, const char *note);

/* The processes whose figures the slots hold, refreshed from the tracer; NULL on error. */
const struct traced_proc *tally_procs(struct tally *t, size_t *nr);

#endif /* FNPROF_TALLY_H */
