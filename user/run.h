/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One run, from the set-up to the last report: the steps in their order,
 * the loop that waits for reports, signals and the target's exit, and the
 * clean-up that leaves no probe behind. struct run is grouped by owner:
 * each step fills in and reads its own part; only the set-up steps read
 * the options (each hands its layer a configuration of its own).
 * Return values are exit codes (base/log.h), with the message printed.
 */
#ifndef FNPROF_RUN_H
#define FNPROF_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "follow.h"
#include "opts.h"
#include "target/probe.h"
#include "trace/burst.h"
#include "trace/calib.h"
#include "trace/events.h"

struct tracer;
struct slow;
struct tally;
struct upgrades;
struct sampler;
struct profiles;
struct heatmap;
struct export;

/* -f: the probes, the tracer, and what measures, corrects and counts their figures. */
struct run_trace {
	struct probe_list pl;
	struct tracer *tracer;
	struct events evs;          /* -e counters, when have_events */
	bool have_events;
	struct probe self[CAL_NR];  /* the calibration's probes on fnprof's own functions */
	struct calibration cal;
	bool calibrated;
	bool subtract_bias;         /* the figures lose the calibration's bias: calibrated, no --raw */
	/* --max-overhead: probes attached in bursts, when bursts; one account per process of a -p list */
	struct burst burst[MAX_PIDS];
	size_t nr_bursts;
	bool bursts;
	struct upgrades *upgrades;  /* system-wide: the objects' files, to follow their upgrades */
	struct slow *slow;          /* --slow: the slow calls' records */
	struct tally *tally;        /* the figures of the intervals and of the run */
};

/* The stack profiles. */
struct run_stacks {
	/* The cpu profile (--sample, or no -f): one per process of -p P1,P2,..., each reported on its own. */
	struct sampler *sampler[MAX_PIDS];
	size_t nr_samplers;
	struct profiles *profiles[MAX_PIDS];  /* --profile offcpu, mutex, heap: one per process, as sampler */
	size_t nr_profiles;
};

/* Where the results go besides the files claimed at the start. */
struct run_outputs {
	FILE *out;                  /* the report's stream: -o FILE, stdout or stderr */
	/* --svg with -f: the latency heatmaps' columns, of each process of a -p list (slot order) */
	struct heatmap *heat[MAX_PIDS];
	size_t nr_heat;
	struct export *export;      /* --listen */
};

/* The loop's clock: when things are due (monotonic_s), and why it ended. */
struct run_loop {
	double t_exec;              /* when fnprof started */
	double t_start, t_last;     /* the run's start, the last report */
	double end;                 /* -d: when the run ends (far away without) */
	double next_report;         /* -i: the next interval's report (far away without) */
	double interval_s;
	double next_drain;          /* --listen: when the metrics take the figures next */
	double next_calib;          /* when the calibration takes its next round (calib_sample) */
	const char *note;           /* why the run ended, for the final report */
};

struct run {
	const struct opts *o;       /* read by the set-up steps only */
	struct run_target target;
	struct run_trace trace;
	struct run_stacks stacks;
	struct run_outputs outputs;
	struct run_loop loop;
};

/*
 * An empty run for o, started at t_exec (monotonic_s); records the signal
 * dispositions fnprof started with (the command gets them back), then
 * catches SIGINT, SIGTERM and SIGHUP for the loop and ignores SIGPIPE.
 */
void run_init(struct run *r, const struct opts *o, double t_exec);

/*
 * Sets up, runs the loop to the end (-d, Ctrl-C, the target's exit) and
 * writes the files; --list stops after resolving. The exit code: the
 * command's own in launch mode.
 */
int run_all(struct run *r);

/* Stops every thread, detaches every probe and frees the run, whatever step it reached. */
void run_cleanup(struct run *r);

#endif /* FNPROF_RUN_H */
