/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe bias: what the probes add inside the interval they measure, per kind
 * of probe site, measured on this machine by tracing fnprof's own empty
 * functions. The report subtracts it.
 */
#ifndef FNPROF_CALIB_H
#define FNPROF_CALIB_H

#include <stdbool.h>
#include <stdio.h>

#include "resolve.h"

struct calibration {
	bool valid;
	double bias_ns[SITE_NR];  /* inside the measured interval, per call: the entry trap after
				     the timestamp plus the return path before it (median) */
	double min_ns[SITE_NR];   /* the fastest call: the spread shows how noisy the machine is */
	double cost_ns[SITE_NR];  /* whole cost per call added to the traced program */
	unsigned int calls;       /* calls per kind */
	double took_ms;
};

struct tracer;

/* Probes at fnprof's own calibration functions, one per site kind, ids from first_id. */
int calib_self_probes(struct probe probes[SITE_NR], __u32 first_id);

/*
 * Measures the bias of every kind of probe site, by calling fnprof's own
 * empty functions under t's probes (t started with calibration). 0, or
 * -errno (then no correction).
 */
int calibrate(struct tracer *t, struct calibration *c);

void calibration_print(const struct calibration *c, FILE *f);

#endif /* FNPROF_CALIB_H */
