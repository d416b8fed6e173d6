/* SPDX-License-Identifier: GPL-2.0 */
/* The tracing report: one data model, printed as a table (with histograms) or as JSON. */
#ifndef FNPROF_REPORT_H
#define FNPROF_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#include "trace/calib.h"
#include "trace/events.h"
#include "fnprof.h"
#include "target/probe.h"
#include "profile/slow.h"
#include "trace/sysexit.h"
#include "trace/tracer.h"

/* --max-overhead with a -p list: what the bursts measured of one listed process. */
struct report_share {
	double fraction, lo, hi;    /* as attached_fraction, attached_lo, attached_hi */
	double work_ns;             /* as attached_work_ns */
	double uncounted_ns;        /* as uncounted_probe_ns */
	__u64 cpu_ns;               /* its CPU time in the report's span */
};

struct report {
	pid_t pid;
	double interval_s;          /* seconds covered */
	bool total;                 /* whole run, after per-interval reports */
	bool proc_cpu_known;
	__u64 proc_cpu_ns;          /* CPU time of the process in the interval (utime+stime) */
	const struct probe_list *pl;
	const struct fn_stats *stats;  /* pl->nr, indexed by probe id; then those of each fork child */
	size_t nr_procs;            /* --follow-forks: blocks of pl->nr in stats; 0 or 1 without */
	const struct traced_proc *procs; /* whose each block is ([0]: the target) */
	__u64 drops[DROP_NR];
	const char *note;           /* e.g. "target exited" */
	const struct events *evs;   /* -e counters, or NULL */
	const struct calibration *cal; /* probe bias to subtract, or NULL (--raw) */
	double cost_avg, bias_avg;  /* per traced call, over all functions (set by report_prepare) */
	/*
	 * What a traced call's probes cost, at the calibration rounds' cheapest
	 * of the kinds called, and their dearest: the descendants' calls are
	 * counted, not their kinds, so either may be all of them.
	 */
	double cost_lo, cost_hi;
	/*
	 * What one hit of an exit probe in a tail-called function costs (a ret
	 * probe alone), and its range over the rounds: the hits of the callees'
	 * other calls are inside the traced calls open at the time.
	 */
	double hit_cost, hit_lo, hit_hi;
	/* The same for one hit of the probe on a followed tail jmp (inside the call that jumps). */
	double jmp_cost, jmp_lo, jmp_hi;
	double attached_fraction;   /* < 1 in burst mode: counts are extrapolated estimates */
	double attached_lo, attached_hi; /* the range the fraction may lie in (NaN: not known) */
	/*
	 * Burst mode: the target's own work the fraction is of, ns (0: not
	 * known). report_prepare() raises the fraction to what the traced
	 * calls' on-CPU time says the bursts held at least.
	 */
	double attached_work_ns;
	__u64 self_cpu_ns;          /* fnprof's own CPU time in the interval (user + system) */
	double self_wall_s;         /* the time it was spent over (for a total: since fnprof started) */
	__u64 self_rss_kib;         /* fnprof's peak resident memory so far */
	double max_overhead_pct;    /* --max-overhead budget, 0 without */
	double uncounted_probe_ns;  /* burst mode: probe time of calls not counted (attaching, detaching) */
	const struct slow_view *slow;  /* --slow: the report's slow calls, or NULL */
	/*
	 * --max-overhead with a -p list: each listed process's own bursts'
	 * figures, in slot order (nr_shares; [0] is the report's own, set in
	 * the fields above too); each process's report takes its own.
	 */
	const struct report_share *shares;
	size_t nr_shares;
	/*
	 * Calls open on the target's threads as the report was taken, indexed
	 * as stats (NULL: not known): entered in it, returned after.
	 */
	const __u64 *open_calls;
	/* System-wide uprobe sessions: the processes whose exit was chosen, and which (NULL, 0: none). */
	const struct sysexit_proc *exit_procs;
	size_t nr_exit_procs;
};

/* The JSON key of drop reason i ("returns_lost"), NULL past DROP_NR. */
const char *report_drop_key(unsigned int i);

/* Derives the report-wide figures (average probe cost per call) once, before printing. */
void report_prepare(struct report *r);

/* Figures derived from one function's aggregate, shared by every printer. */
struct fn_figures {
	bool timed;                 /* false for --entry-only functions: calls only */
	double calls;               /* extrapolated in burst mode */
	double calls_lo, calls_hi;  /* the range the count lies in (NaN: not known; both calls when exact) */
	double bias_ns;             /* subtracted from each call: own probes + traced descendants' */
	double bias_lo, bias_hi;    /* the range its own probes' median bias took in the calibrations'
				       rounds (NaN: not known): the figures' error bar */
	double wall_min, wall_max;
	double calls_per_s;
	double wall_avg, p50, p90, p99;
	double oncpu_avg, offcpu_avg, runq_avg, blocked_avg, self_avg;
	__u64 oncpu_total, offcpu_total;
	double cpu_pct;             /* outermost on-CPU time / interval: 100 = one core */
	double proc_pct;            /* share of the process's CPU time; <0 when unknown */
	double shift_ns;            /* what the percentiles, min and max are lowered by (typical bias) */
	/*
	 * How far off that shift may be: the range of its parts over the
	 * calibrations' rounds (NaN: not known). A percentile, min or max
	 * below it cannot be told from 0: the table shows "<" that figure
	 * plus it, a bound, rather than a figure the subtraction made.
	 */
	double resolution_ns;
	double avg_lo, avg_hi;      /* the range the average lies in: its own probes' bias range and the
				       traced calls beneath, at their probes' cheapest and dearest (NaN:
				       not known) */
	const char *cpu_unknown;    /* why on/off-CPU time and CPU% are unknown (Go), or NULL */
	double tail_untimed;        /* calls that ended at a tail jump to a function not known (extrapolated) */
	double tail_probe_ns;       /* what its exit probes in tail-called functions cost their other calls */
};

void fn_figures_compute(const struct report *r, const struct fn_stats *s, struct fn_figures *fig);


void report_print_table(const struct report *r, FILE *f, bool hist);
void report_print_json(const struct report *r, FILE *f);


#endif /* FNPROF_REPORT_H */
