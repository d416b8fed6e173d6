// SPDX-License-Identifier: GPL-2.0
/*
 * The figures the report derives from one function's raw statistics
 * (fn_figures_compute), from constructed inputs: averages, the probe-bias
 * correction, burst-mode extrapolation, CPU shares. No root, no timing.
 */
#include <math.h>
#include <string.h>

#include "trace/calib.h"
#include "base/hist.h"
#include "report/report.h"
#include "unit.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (fabs((double)(b)) + 1))

static struct probe probe = { .name = (char *)"f", .object = (char *)"/bin/x", .kind = SITE_EMULATED,
			      .exit = EXIT_URETPROBE };
static struct probe_list pl = { .probes = &probe, .nr = 1 };
static struct fn_stats st;

/* 4 calls of 500, 800, 1200 and 1500 ns; 1000 ns of it off-CPU; 2000 ns self; all outermost. */
static struct report make_report(void)
{
	static const __u64 walls[] = { 500, 800, 1200, 1500 };
	size_t i;

	memset(&st, 0, sizeof(st));
	st.calls = 4;
	st.wall_sum = 4000;
	st.wall_min = 500;
	st.wall_max = 1500;
	st.runq_sum = 400;
	st.blocked_sum = 600;
	st.self_sum = 2000;
	st.outer_oncpu = 3000;
	st.outer_calls = 4;
	for (i = 0; i < 4; i++)
		st.hist[hist_bucket_of(walls[i])]++;
	probe.exit = EXIT_URETPROBE;
	probe.kind = SITE_EMULATED;
	return (struct report){
		.interval_s = 0.5, .pl = &pl, .stats = &st, .proc_cpu_known = true, .proc_cpu_ns = 6000,
	};
}

/* --raw: the measured figures, divided by the calls. */
static void raw_averages(void)
{
	struct report r = make_report();
	struct fn_figures f;

	report_prepare(&r);
	fn_figures_compute(&r, &st, &f);
	CHECK(f.timed);
	CHECK(f.calls == 4 && f.calls_per_s == 8);
	CHECK(f.bias_ns == 0);
	CHECK(f.offcpu_total == 1000 && f.oncpu_total == 3000);
	CHECK(f.wall_avg == 1000 && f.oncpu_avg == 750 && f.offcpu_avg == 250);
	CHECK(f.runq_avg == 100 && f.blocked_avg == 150 && f.self_avg == 500);
	CHECK(f.wall_min == 500 && f.wall_max == 1500);
	CHECK(f.wall_min <= f.p50 && f.p50 <= f.p90 && f.p90 <= f.p99 && f.p99 <= f.wall_max);
	CHECK(NEAR(f.cpu_pct, 3000 / (0.5 * 1e7)));   /* 100 = one core */
	CHECK(NEAR(f.proc_pct, 50));                  /* 3000 of the process's 6000 ns */
}

/* The emulated case's bias, median and mean alike, and the range it took over the calibration's rounds. */
static void emulated_bias(struct calibration *cal, double bias, double lo, double hi)
{
	cal->mean_ns[CAL_EMULATED] = cal->bias_ns[CAL_EMULATED] = bias;
	cal->round_lo[CAL_EMULATED] = lo;
	cal->round_hi[CAL_EMULATED] = hi;
}

/*
 * With a calibration: each call loses its own probes' mean bias (100 ns),
 * and the whole cost (300 ns) of each traced call beneath it (2 in all);
 * percentiles and extremes move by the median bias (90 ns) plus the
 * descendants' mean share.
 */
static void bias_subtracted(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	struct fn_figures f;

	cal.mean_ns[CAL_EMULATED] = 100;
	cal.bias_ns[CAL_EMULATED] = 90;
	cal.cost_ns[CAL_EMULATED] = 300;
	st.desc_calls = 2;
	st.child_calls = 1;
	r.cal = &cal;
	report_prepare(&r);
	CHECK(r.cost_avg == 300 && r.bias_avg == 100);
	fn_figures_compute(&r, &st, &f);
	/* inside = 4 x 100 + 2 x 300 = 1000 ns */
	CHECK(f.bias_ns == 250);
	CHECK(f.wall_avg == 750);
	CHECK(f.oncpu_avg == 500);                    /* 4000 - 1000 off-CPU - 1000 probes */
	CHECK(f.self_avg == 350);                     /* 2000 - 4 x 100 - 1 x (300 - 100) */
	CHECK(f.wall_min == 500 - 240 && f.wall_max == 1500 - 240);   /* 90 + 2 x 300 / 4 */
	CHECK(NEAR(f.cpu_pct, 2000 / (0.5 * 1e7)));
	CHECK(NEAR(f.proc_pct, 100.0 * 2000 / 6000));
}

/* The table r prints, into buf (size bytes, NUL-terminated). 0, or -1 if it could not be captured. */
static int table_of(struct report *r, char *buf, size_t size)
{
	FILE *out;

	memset(buf, 0, size);
	out = fmemopen(buf, size - 1, "w");
	if (!out)
		return -1;
	report_print_table(r, out, false);
	fclose(out);
	return 0;
}

/*
 * The probes' own time moved by 3 us between the calibration's rounds (a
 * single step here): the figures carry that range, and the table says that
 * the average lies somewhere in it; 200 ns of movement is below the bar.
 */
static void uncertain_bias_shown(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	struct fn_figures f;
	char buf[4096] = "";

	probe.kind = SITE_STEPPED;
	cal.mean_ns[CAL_STEPPED] = cal.bias_ns[CAL_STEPPED] = 500;
	cal.round_lo[CAL_STEPPED] = 300;
	cal.round_hi[CAL_STEPPED] = 3300;
	r.cal = &cal;
	report_prepare(&r);
	fn_figures_compute(&r, &st, &f);
	CHECK(f.bias_lo == 300 && f.bias_hi == 3300 && f.wall_avg == 500);
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	/* raw average 1000 ns: between 1000 - 3300 (0) and 1000 - 300 */
	CHECK(strstr(buf, "uncertain: x:f AVG 500ns, between 0ns and 700ns") != NULL);
	cal.round_hi[CAL_STEPPED] = 500;
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "uncertain") == NULL);
}

/*
 * Traced calls beneath each call, whose probes' cost moved between 200 ns and
 * 2 us over the calibrations (the kinds called are not told apart): the
 * average lies in the range that spread makes, and the table says so.
 */
static void uncertain_descendants_shown(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	struct fn_figures f;
	char buf[4096] = "";

	emulated_bias(&cal, 100, 90, 110);
	cal.cost_ns[CAL_EMULATED] = 300;
	cal.cost_lo[CAL_EMULATED] = 200;
	cal.cost_hi[CAL_EMULATED] = 2000;
	st.desc_calls = 8;
	r.cal = &cal;
	report_prepare(&r);
	CHECK(r.cost_lo == 200 && r.cost_hi == 2000);
	fn_figures_compute(&r, &st, &f);
	/* raw 1000 ns a call, 2 beneath it: between 1000 - 110 - 4000 (0) and 1000 - 90 - 400 */
	CHECK(f.avg_lo == 0 && f.avg_hi == 510);
	CHECK(f.avg_lo <= f.wall_avg && f.wall_avg <= f.avg_hi);
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "between 0ns and 510ns: 2.0 traced calls beneath each of its calls, whose probes cost "
			  "200ns to 2.00us each") != NULL);
}

/*
 * A followed tail jump's probe hit once in each call, whose price moved
 * between 200 ns and 2 us over the calibrations: the range it makes is
 * explained by those hits, not by the function's own probes.
 */
static void uncertain_jmps_shown(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	struct fn_figures f;
	char buf[4096] = "";

	emulated_bias(&cal, 100, 100, 100);
	cal.cases = 1U << CAL_TAIL_JMP | 1U << CAL_RET;
	cal.mean_ns[CAL_TAIL_JMP] = 600;
	cal.mean_ns[CAL_RET] = cal.bias_ns[CAL_RET] = 100;
	cal.round_lo[CAL_TAIL_JMP] = 300;
	cal.round_hi[CAL_TAIL_JMP] = 2100;
	st.tail_jmps_inside = 4;
	r.cal = &cal;
	report_prepare(&r);
	CHECK(r.jmp_cost == 500 && r.jmp_lo == 200 && r.jmp_hi == 2000);
	fn_figures_compute(&r, &st, &f);
	/* raw 1000 ns a call: between 1000 - 100 - 2000 (0) and 1000 - 100 - 200; 1000 - 100 - 500 */
	CHECK(f.avg_lo == 0 && f.avg_hi == 700 && f.wall_avg == 400);
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "between 0ns and 700ns: 1.0 hits inside each of its calls of the probes on followed "
			  "tail jumps, which cost 200ns to 2.00us each") != NULL);
}

/*
 * Issue 37: a range of 400 ns on a 100 us average is under 5% of it: no line
 * of its own, one line that sums such functions. Over 5%, its own line.
 */
static void uncertain_only_where_it_matters(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	char buf[4096] = "";

	st.wall_sum = 4 * 100000;
	st.wall_max = 150000;
	probe.kind = SITE_STEPPED;
	cal.mean_ns[CAL_STEPPED] = cal.bias_ns[CAL_STEPPED] = 500;
	cal.round_lo[CAL_STEPPED] = 300;
	cal.round_hi[CAL_STEPPED] = 700;
	r.cal = &cal;
	report_prepare(&r);
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "uncertain: x:f") == NULL);
	CHECK(strstr(buf, "uncertain: 1 more function's AVG by over 300ns, but by 5% of it or less") != NULL);
	cal.round_hi[CAL_STEPPED] = 5800;   /* 5.5 us: 5.5% of it */
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "uncertain: x:f AVG") != NULL && strstr(buf, "more function") == NULL);
}

/*
 * Issue 37: malloc's P50 read 0 ns, its probes' median bias subtracted from a
 * raw 1 us. Where the bias moved by more over the calibrations' rounds than
 * is left of a percentile, min, max or average, that figure is a bound
 * ("<"), not a number the subtraction made.
 */
static void percentile_below_resolution_is_a_bound(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	struct fn_figures f;
	char buf[4096] = "";

	emulated_bias(&cal, 1100, 900, 1300);
	r.cal = &cal;
	report_prepare(&r);
	fn_figures_compute(&r, &st, &f);
	CHECK(NEAR(f.resolution_ns, 400) && f.wall_min == 0 && f.p50 < 400);
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	/*
	 * AVG, P50, MIN, ONCPU, SELF: 0 + 400; P99 and MAX: 1500 - 1100 = 400,
	 * not below it; OFFCPU (250 ns) has no bias taken from it.
	 */
	CHECK(strstr(buf, "  <400ns   <400ns    400ns    400ns   <400ns   <400ns    250ns   <400ns ") != NULL);
	cal.round_lo[CAL_EMULATED] = cal.round_hi[CAL_EMULATED] = 1100;
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "<") == NULL);
}

/* The correction never makes a figure negative. */
static void bias_floors_at_zero(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	struct fn_figures f;

	cal.mean_ns[CAL_EMULATED] = cal.bias_ns[CAL_EMULATED] = cal.cost_ns[CAL_EMULATED] = 5000;
	r.cal = &cal;
	report_prepare(&r);
	fn_figures_compute(&r, &st, &f);
	CHECK(f.wall_avg == 0 && f.oncpu_avg == 0 && f.self_avg == 0);
	CHECK(f.wall_min == 0 && f.wall_max == 0 && f.p50 >= 0 && f.cpu_pct == 0);
}

/* Burst mode: counts and CPU shares stand for 1/fraction as many; averages do not move. */
static void burst_extrapolates(void)
{
	struct report r = make_report();
	struct fn_figures f;

	r.attached_fraction = 0.25;
	report_prepare(&r);
	fn_figures_compute(&r, &st, &f);
	CHECK(f.calls == 16 && f.calls_per_s == 32);
	CHECK(f.wall_avg == 1000);
	CHECK(NEAR(f.cpu_pct, 4 * 3000 / (0.5 * 1e7)));
	CHECK(NEAR(f.proc_pct, 200));
}

/*
 * Issue 37: the bursts held at least the work their traced calls did on the
 * CPU (3000 ns here). A fraction that says less (the probes' cost taken as
 * more than the target paid) is raised to it, with its range: the
 * function's CPU share can then not pass the target's own.
 */
static void burst_fraction_floored_by_calls(void)
{
	struct report r = make_report();
	struct fn_figures f;

	r.attached_fraction = 0.01;
	r.attached_lo = 0.005;
	r.attached_hi = 0.02;
	r.attached_work_ns = 100000;   /* 3000 ns of it on the CPU in the calls measured: 0.03 at least */
	r.proc_cpu_ns = 100000;
	report_prepare(&r);
	CHECK(NEAR(r.attached_fraction, 0.03) && NEAR(r.attached_lo, 0.03) && NEAR(r.attached_hi, 0.03));
	fn_figures_compute(&r, &st, &f);
	CHECK(NEAR(f.calls, 4 / 0.03));
	CHECK(NEAR(f.proc_pct, 100));    /* all the process's work, not 300% of it */
	r = make_report();
	r.attached_fraction = 0.5;     /* says more already: left as it is */
	r.attached_work_ns = 100000;
	report_prepare(&r);
	CHECK(r.attached_fraction == 0.5);
}

/* --entry-only functions have calls, no times; a function without calls has nothing; unknown stays unknown. */
static void untimed_and_unknown(void)
{
	struct report r = make_report();
	struct fn_figures f;

	probe.exit = EXIT_NONE;
	fn_figures_compute(&r, &st, &f);
	CHECK(!f.timed && f.calls == 4);
	probe.exit = EXIT_URETPROBE;
	r.proc_cpu_known = false;
	fn_figures_compute(&r, &st, &f);
	CHECK(f.proc_pct < 0);                       /* printed as unknown */
	memset(&st, 0, sizeof(st));
	fn_figures_compute(&r, &st, &f);
	CHECK(!f.timed && f.calls == 0 && f.wall_avg == 0 && f.proc_pct < 0);
}

/*
 * Issue 35: the overhead line said "~10 us a step here" whatever the host. It
 * gives what this run's calibration measured: a stepped entry's bias less an
 * emulated one's (4800 - 350 ns here).
 */
static void step_cost_as_calibrated(void)
{
	struct report r = make_report();
	struct calibration cal = { .valid = true };
	char buf[4096] = "";

	probe.kind = SITE_STEPPED;
	cal.cases = 1U << CAL_STEPPED | 1U << CAL_EMULATED;
	cal.mean_ns[CAL_STEPPED] = cal.bias_ns[CAL_STEPPED] = 4800;
	cal.cost_ns[CAL_STEPPED] = 5600;
	cal.mean_ns[CAL_EMULATED] = cal.bias_ns[CAL_EMULATED] = 350;
	cal.cost_ns[CAL_EMULATED] = 1000;
	r.cal = &cal;
	report_prepare(&r);
	CHECK(table_of(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "single-stepped (~4.45us a step here)") != NULL);
	CHECK(strstr(buf, "10 us") == NULL);
	probe.kind = SITE_EMULATED;
}

int main(void)
{
	RUN(raw_averages);
	RUN(bias_subtracted);
	RUN(uncertain_bias_shown);
	RUN(uncertain_descendants_shown);
	RUN(uncertain_jmps_shown);
	RUN(uncertain_only_where_it_matters);
	RUN(percentile_below_resolution_is_a_bound);
	RUN(bias_floors_at_zero);
	RUN(burst_extrapolates);
	RUN(burst_fraction_floored_by_calls);
	RUN(untimed_and_unknown);
	RUN(step_cost_as_calibrated);
	UNIT_EXIT();
}
