/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --max-overhead: when tracing every call would cost the target more than
 * the budget, the probes are attached only part of the time (bursts) and the
 * counts are extrapolated, marked as estimates.
 *
 * Extrapolation is by work, not by wall time: calls per CPU-second of the
 * target's own work (its CPU time less the probes') while counted, times its
 * work in the whole interval. Attached, a CPU-bound target runs slower, and a
 * wall-time ratio would undercount.
 *
 * The budget is an account: the target's work earns budget x work, the
 * probes spend their calibrated cost per call, including the calls that hit
 * them while they were being attached or detached (uncounted: the kernel
 * takes the breakpoints out only after an RCU grace period). A burst starts
 * when the account can pay for it, and ends early if it runs into debt.
 */
#ifndef FNPROF_BURST_H
#define FNPROF_BURST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "trace/calib.h"
#include "trace/tracer.h"

struct burst {
	double budget;        /* allowed probe time / target's own work, e.g. 0.05 */
	bool on;              /* probes attached and counting */
	bool first;           /* the first burst: how much do the probes cost? */
	double phase_start, phase_end;
	pid_t pid;
	__u32 slot;           /* the process's statistics slot (a -p list's: its place in the list) */
	bool gone;            /* a -p list's process that has exited: its account no longer holds the others */
	bool list;            /* one of a -p list's processes (no caller knows its CPU once it exited) */
	struct calibration *cal;     /* its cost per call is measured again between bursts */
	/* Readings at the last settle: */
	__u64 cpu0;           /* target CPU time */
	__u64 calls0;         /* calls counted in the tracer's current buffer */
	__u64 paused0;        /* calls that hit the probes while they did not count */
	/* The current (or last) burst: */
	double burst_cpu, burst_probe;
	__u64 burst_calls;    /* calls counted in it */
	double burst_len;     /* its length, s */
	double detach_cost;   /* probe time of the calls not counted since (detaching, attaching) */
	double attach_s, switch_s;  /* how long the last attach, and attach + detach, took */
	/* The last off-phase: target CPU time per second, to predict the next one's work. */
	double off_cpu, off_s;
	/* Accumulated over the run: */
	double work_on;       /* the target's own work while counted, ns */
	double probe_all;     /* probe time, ns, counted calls and uncounted ones */
	double probe_counted; /* the counted calls' part */
	double uncounted_ns;  /* the uncounted calls' part (attaching, detaching) */
	__u64 calls_all;      /* counted calls */
	double on_s;          /* counted seconds */
	int nr_bursts;
	double refreshed_at;  /* when the cost per call was last measured */
	unsigned int cases;   /* the calibration cases the probes' cost is made of */
	/* At the last report: */
	double work_on_taken, probe_taken, on_taken, taken_at, uncounted_taken;
	__u64 cpu_taken;
	__u64 cpu_start;      /* target CPU time when the run began */
	/*
	 * The bursts' call rates (calls per ns of the target's work), over the
	 * bursts long enough to rate: their sums weighted by work, for their
	 * mean and spread.
	 */
	double rated_work, rate_sum, rate_sq_sum;
	int nr_rated;
	double probe_on, probe_on_taken;  /* the counted calls' probe time, ns */
};

/*
 * The share of the target's work the counts stand for, and the range it may
 * lie in (NaN: not known, fewer than BURST_MIN_RATED bursts rated): the
 * estimated counts are the measured ones / fraction, so between measured /
 * hi and measured / lo. The range holds the error of the bursts' mean call
 * rate (the machine's speed drifts, and the bursts sample it) and that of
 * the probes' cost, at the quartiles of its measurements (the work a burst
 * did is its CPU time less their cost).
 */
struct burst_share {
	double fraction, lo, hi;
	double work_ns;       /* the target's own work the fraction is of (0: too little to measure) */
	__u64 cpu_ns;         /* the target's CPU time over the span, as the bursts read it */
};

/* A range needs the call rates of this many bursts: fewer say nothing of how the rate moves. */
#define BURST_MIN_RATED 3

void burst_init(struct burst *b, double budget_pct, struct calibration *cal, const struct probe_list *pl,
		pid_t pid, struct tracer *t, double now);

/* Attaches or detaches as the account says. Returns when to look again (seconds). */
double burst_tick(struct burst *b, struct tracer *t, double now);

/*
 * -p P1,P2,...: the bursts of n processes (pids, in slot order) under one
 * switch, each with its own account against its own work: a burst starts
 * when every account pays for it, lasts what the dearest process's budget
 * allows, and ends when any runs into debt. burst_take_share and the others
 * then take each process's b[k].
 */
void bursts_init(struct burst *b, size_t n, double budget_pct, struct calibration *cal, const struct probe_list *pl,
		 const pid_t *pids, struct tracer *t, double now);
double bursts_tick(struct burst *b, size_t n, struct tracer *t, double now);

/*
 * At a report, before the tracer's buffers are drained: the fraction of the
 * target's work since the last report that was traced (the counts' sample),
 * and its range.
 * cpu_hint: the target's CPU time as the caller knows it, for a target that
 * has exited (its own clock is gone then; a reaped child's rusage is not).
 * *uncounted_ns: the probe time of the calls not counted since the last report.
 */
void burst_take_share(struct burst *b, struct tracer *t, double now, __u64 cpu_hint, double *uncounted_ns,
		      struct burst_share *sh);

/* The same for the whole run, as of the last burst_take_share. */
void burst_total_share(const struct burst *b, struct burst_share *sh);

/* Rates the burst that ends (burst_tick does it; for tests): its calls over its work. */
void burst_rate(struct burst *b);

/*
 * The relative error of the bursts' mean call rate (a 99.73% interval: three
 * standard errors, by Student's t for the few bursts there are),
 * NaN with fewer than BURST_MIN_RATED rated bursts.
 */
double burst_rate_error(const struct burst *b);

/*
 * The account's step, for burst_tick() and the others (and for tests): adds
 * what the target did since the last settle. cpu: the target's CPU time, ns;
 * calls: the calls in the tracer's current buffer, whose probe time is probe
 * (ns, at the calibrated cost per call); paused: tracer_paused_calls().
 */
void burst_settle(struct burst *b, __u64 cpu, __u64 calls, double probe, __u64 paused);

/*
 * The balance, ns of probe time: what the budget allows on the target's work
 * so far (with the margin the account aims under), less what the probes
 * spent, counted calls and uncounted ones. Negative: in debt.
 */
double burst_account(const struct burst *b);

/* After the tracer's buffers were drained: the count of calls starts again. */
void burst_rebase(struct burst *b, struct tracer *t);

#endif /* FNPROF_BURST_H */
