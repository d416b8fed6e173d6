/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe bias: what the probes add inside the interval they measure, per kind
 * of probe site and exit mode, measured on this machine by tracing fnprof's
 * own empty functions with the same probes. The report subtracts it.
 */
#ifndef FNPROF_CALIB_H
#define FNPROF_CALIB_H

#include <stdbool.h>
#include <stdio.h>

#include <linux/types.h>

#include "fnprof.h"
#include "target/probe.h"

/* The cases measured: each entry kind with a uretprobe, then the other exit modes. */
enum calib_case {
	CAL_EMULATED = SITE_EMULATED,
	CAL_STEPPED = SITE_STEPPED,
	CAL_NOP5 = SITE_NOP5,
	CAL_PAIR = SITE_PAIR,
	CAL_PAIR_RET = SITE_PAIR_RET,
	CAL_JCC = SITE_JCC,
	CAL_JMP = SITE_JMP,
	CAL_CALL = SITE_CALL,
	CAL_NOP = SITE_NOP,
	CAL_RET,          /* emulated entry, exit probed on the ret instruction */
	CAL_ENTRY_ONLY,   /* emulated entry, no exit probe */
	/*
	 * Emulated entry, then a followed tail jmp (its probe: FNPROF_COOKIE_JMP)
	 * to a callee whose ret closes the call (FNPROF_COOKIE_TAIL): CAL_RET's
	 * interval plus the jmp probe's hit, which is what prices that hit.
	 */
	CAL_TAIL_JMP,
	CAL_NR,
};

#define CALIB_MAX_COSTS 64

struct calibration {
	bool valid;
	unsigned int cases;      /* the cases measured (bit k: case k); the others' figures are NaN */
	double bias_ns[CAL_NR];  /* inside the measured interval, per call (median): the entry trap
				    after the timestamp plus the exit path before it */
	double mean_ns[CAL_NR];  /* mean of the fastest 99%: what sums and averages lose per call */
	double min_ns[CAL_NR];   /* the fastest call: the spread shows how noisy the machine is */
	double cost_ns[CAL_NR];  /* whole cost per call added to the traced program */
	unsigned int calls;      /* calls per case */
	double costs[CAL_NR][CALIB_MAX_COSTS];  /* cost_ns measurements: cost_ns is their median */
	unsigned int nr_costs[CAL_NR];
	double took_ms;
	unsigned int runs;       /* calibrations pooled (the start of the run, then its end) */
	unsigned int samples;    /* rounds pooled in between (calib_sample) */
	unsigned int next_cpu;   /* the CPU of the next round, in turn over those fnprof may use */
	bool pin_off;            /* its affinity could not be restored once: rounds no longer move it */
	double time_ns[CAL_NR];  /* the calls' whole time, per case */
	struct fn_stats pooled[CAL_NR];  /* every calibration call measured, per case */
	/*
	 * The lowest and the highest median of one round (100 calls) per case,
	 * over every calibration: how far the probes' own time moved while
	 * fnprof measured it (a single step here: ~9 us for a while, ~13 for
	 * another). NaN before a round. The error bar of the bias.
	 */
	double round_lo[CAL_NR], round_hi[CAL_NR];
	/* The same for the whole cost per call (one round's time over its calls). */
	double cost_lo[CAL_NR], cost_hi[CAL_NR];
};

struct tracer;
struct fn_stats;

/* Probes at fnprof's own calibration functions, one per case, ids from first_id. */
int calib_self_probes(struct probe probes[CAL_NR], __u32 first_id);
void calib_free_probes(struct probe probes[CAL_NR]);

/*
 * Measures the cases in mask (bit k: case k; CALIB_ALL: every one) by
 * calling fnprof's own empty functions under t's probes (t started with
 * calibration): only those the traced functions need, since each costs
 * fnprof CPU time (a single-stepped case ~10 ms). 0, or -errno (then no
 * correction).
 */
#define CALIB_ALL ((1U << CAL_NR) - 1)
int calibrate(struct tracer *t, struct calibration *c, unsigned int mask);

/*
 * Calibrates again and pools the calls with those measured before, so that
 * the figures stand for the whole run rather than the moment it started
 * (the probes' time drifts on a busy or virtual machine). 0, or -errno (c
 * unchanged).
 */
int calibrate_again(struct tracer *t, struct calibration *c);

/*
 * One more round of every case measured, pooled into c, while the traced
 * program runs: a single step's price moves by 30% for a second at a time
 * on a vCPU here, so the start and end of a run alone can both catch one
 * moment. 0, or -errno (c unchanged).
 */
int calib_sample(struct tracer *t, struct calibration *c);

/*
 * The figures of every case from the calls pooled so far (pooled, time_ns,
 * calls): cost_ns is the whole time per call; bias_ns the median of the
 * measured intervals, mean_ns their mean without the slowest 1%, min_ns the
 * fastest (all left as they were for the entry-only case and a case with no
 * call).
 */
void calib_figures(struct calibration *c);

/*
 * Measures the cost per call again for the cases in mask (bit k: case k);
 * cost_ns becomes the median of all the measurements.
 */
void calib_refresh_cost(struct calibration *c, unsigned int mask);
/*
 * How far the cost per call of the cases in mask may be from cost_ns: the
 * calibration rounds' cheapest and dearest (cost_lo, cost_hi) over it, the
 * widest over the cases (1 and 1 with none).
 */
void calib_cost_spread(const struct calibration *c, unsigned int mask, double *lo, double *hi);
/* The cases whose costs make up the cost of p's probes (calib_cost). */
unsigned int calib_cases_of(const struct probe *p);
/* Those of every probe of pl. */
unsigned int calib_cases_of_list(const struct probe_list *pl);

/*
 * The bias of one traced function's probes, from its entry kind and exit
 * mode: the mean, for sums and averages; the median, for percentiles.
 */
double calib_bias(const struct calibration *c, const struct probe *p);
double calib_bias_median(const struct calibration *c, const struct probe *p);
/*
 * The range the median bias of p's probes took over the calibrations'
 * rounds (round_lo/hi plus its exit mode's difference): *lo, *hi, NaN when
 * not known.
 */
void calib_bias_range(const struct calibration *c, const struct probe *p, double *lo, double *hi);
/*
 * The ret exit's bias (cost) less the uretprobe's: what a call of a
 * session's function closed by ret probes differs by. 0 when not measured.
 */
double calib_ret_exit_delta(const struct calibration *c, bool cost);
/* The cost per call of its probes to the traced program. */
double calib_cost(const struct calibration *c, const struct probe *p);
/* The range that cost took over the calibrations' rounds: *lo, *hi (calib_cost's when not known). */
void calib_cost_range(const struct calibration *c, const struct probe *p, double *lo, double *hi);
/*
 * The cost of one hit of a ret-mode exit probe alone (a ret probe with an
 * emulated entry, less the entry alone): what a probe in a tail-called
 * function costs each of that one's other calls. 0 when not measured.
 */
double calib_exit_hit_cost(const struct calibration *c);
/*
 * The range it took over the calibrations' rounds (the ret case's cheapest
 * and dearest, less the entry alone): *lo, *hi (calib_exit_hit_cost's when
 * not known).
 */
void calib_exit_hit_range(const struct calibration *c, double *lo, double *hi);
/*
 * The cost of one hit of the probe on a followed tail jmp (ret mode), all of
 * it inside the call that jumps (the tail-jmp case's mean bias less the
 * ret-exit case's), and its range over the calibrations' rounds (*lo, *hi;
 * the cost's when not known). 0 when not measured.
 */
double calib_jmp_hit_cost(const struct calibration *c);
void calib_jmp_hit_range(const struct calibration *c, double *lo, double *hi);
/*
 * The same, bounded by what the traced calls s show: the probes cannot have
 * cost a call more than its whole measured interval (the function's own time
 * and the probes' part inside it) plus the part outside it (cost less bias,
 * both from the first calibration). A calibration caught in a slow moment of
 * fnprof's own CPU (single-steps trap to the hypervisor here: 10 us, at times
 * 15 or 30) would otherwise overprice every call.
 */
double calib_cost_seen(const struct calibration *c, const struct probe *p, const struct fn_stats *s);

void calibration_print(const struct calibration *c, FILE *f);
const char *calib_case_name(enum calib_case k);

#endif /* FNPROF_CALIB_H */
