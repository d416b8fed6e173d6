/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --max-overhead: when tracing every call would cost the target more than
 * the budget, the probes are attached only part of the time (bursts) and the
 * counts are extrapolated, marked as estimates.
 *
 * Extrapolation is by work, not by wall time: calls per CPU-second of the
 * target's own work (its CPU time less the probes') while attached, times its
 * work in the whole interval. Attached, a CPU-bound target runs slower, and a
 * wall-time ratio would undercount.
 */
#ifndef FNPROF_BURST_H
#define FNPROF_BURST_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "calib.h"
#include "tracer.h"

struct burst {
	double budget;        /* allowed probe time / target's own CPU time, e.g. 0.05 */
	double duty;          /* fraction of the time the probes are attached */
	bool on;
	double phase_start, phase_len;
	pid_t pid;
	const struct calibration *cal;
	/* Since the last boundary (phase switch or report): */
	__u64 cpu0;           /* target CPU time then */
	double probe0;        /* probe time in the current buffer then */
	/* Accumulated over the current on-phase, for the duty: */
	double phase_cpu, phase_probe;
	/* Accumulated over the run: */
	double work_on;       /* the target's own work while attached, ns */
	double probe_all;     /* probe time, ns */
	double on_s;          /* attached seconds */
	/* At the last report: */
	double work_on_taken, probe_taken, on_taken, taken_at;
	__u64 cpu_taken;
	__u64 cpu_start;      /* target CPU time when the run began */
};

void burst_init(struct burst *b, double budget_pct, const struct calibration *cal, pid_t pid,
		struct tracer *t, double now);

/* Attaches or detaches as the duty cycle says. Returns when the next switch is due (seconds). */
double burst_tick(struct burst *b, struct tracer *t, double now);

/*
 * At a report, before the tracer's buffers are drained: the fraction of the
 * target's work since the last report that was traced (the counts' sample).
 * cpu_hint: the target's CPU time as the caller knows it, for a target that
 * has exited (its own clock is gone then; a reaped child's rusage is not).
 */
double burst_take_fraction(struct burst *b, struct tracer *t, double now, __u64 cpu_hint);

/* The same fraction for the whole run, as of the last burst_take_fraction. */
double burst_total_fraction(const struct burst *b);

/* After the tracer's buffers were drained: the probe-time baseline starts again. */
void burst_rebase(struct burst *b, struct tracer *t);

#endif /* FNPROF_BURST_H */
