// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fit.h"
#include "base/hist.h"
#include "base/json.h"
#include "base/log.h"
#include "report/report.h"
#include "base/sanitize.h"
#include "report/slow_report.h"
#include "report/sysexits.h"
#include "trace/stats.h"
#include "trace/steps.h"
#include "trace/tracer.h"

/*
 * A new field in struct fn_stats: compute its figure in fn_figures_compute()
 * and show it in both printers (or say here why not), then raise
 * FN_STATS_WORDS.
 */
_Static_assert(sizeof(struct fn_stats) == FN_STATS_WORDS * sizeof(__u64),
	       "struct fn_stats changed: see fn_figures_compute() and the printers, then FN_STATS_WORDS");

/* Each kind of event not measured: its JSON key, and what the table says of it. */
static const struct {
	const char *key, *text;
} drop_kinds[DROP_NR] = {
	[DROP_DEPTH] = { "returns_lost", "returns lost: calls nested deeper than " LOG_STR(FNPROF_MAX_DEPTH) " traced frames (not timed; "
					 "with uretprobes the kernel does not report their return)" },
	[DROP_NO_STATE] = { "no_thread_state", "calls not timed: their thread found no free thread state "
					     "(more threads calling traced functions than --max-threads)" },
	[DROP_ORPHAN_RET] = { "orphan_returns", "calls already running when the probes went in (at the start, "
						"or as a burst began): their returns were seen, their entries not, so they "
						"are not timed; no call was lost" },
	[DROP_ABANDONED] = { "abandoned_frames", "frames abandoned by longjmp or unwinding (not timed)" },
	[DROP_NO_STATS] = { "no_stats_slot", "calls lost: no statistics slot" },
	[DROP_CTR_READ] = { "counter_reads", "counter reads failed (those counts are incomplete)" },
	[DROP_FORK_LOST] = { "children_not_followed",
			     "fork children not followed: fnprof holds statistics for no more children" },
	[DROP_POOL_LOST] = { "thread_states_lost",
			     "thread states not given back when their thread exited (the kernel's queue "
			     "refused them): fewer threads can be traced" },
	[DROP_GO_NOT_G] = { "go_not_on_goroutine", "calls not timed: a traced Go function ran off any goroutine's "
					       "stack (cgo or assembly), where r14 does not hold the goroutine" },
	[DROP_GO_STACKS] = { "go_stacks_full", "calls not timed: more live goroutines with traced calls at "
					       "once than fnprof keeps (" LOG_STR(TRACER_GOROUTINES_MIN) ", or --max-threads if more)" },
	[DROP_DETACHED] = { "frames_detached", "calls open when the probes were taken out between bursts "
					       "(--max-overhead): their returns were not seen, so they are neither "
					       "timed nor counted" },
	[DROP_SWITCH_IN] = { "switches_in_unseen", "switches back onto a CPU inside a traced call that "
						   "sched_switch did not report, nor the thread's sched_info: the time off "
						   "the CPU before each read as on-CPU" },
	[DROP_NO_COOKIE] = { "calls_at_unknown_address", "calls lost: they entered at an address of the process "
							  "not yet read from its mappings (a kernel without attach "
							  "cookies, before Linux 5.15, needs it)" },
	[DROP_UNCHOSEN] = { "calls_before_exit_chosen", "calls not timed: made by a process before fnprof had "
							"chosen its exit (system-wide uprobe sessions: its first calls, "
							"or a process it could not read)" },
};

const char *report_drop_key(unsigned int i)
{
	return i < DROP_NR ? drop_kinds[i].key : NULL;
}

static double sub0(double a, double b)
{
	return a > b ? a - b : 0;
}

/*
 * The whole cost of the tail-call probes' hits while s's calls were open:
 * exit probes in tail-called functions (their other calls) and the probes
 * on followed tail jmps (the calls' own and their callees'); at the cost
 * each took (hit, jmp) in the calibrations.
 */
static double tail_probes_inside(const struct fn_stats *s, double hit, double jmp)
{
	return s->tail_hits_inside * hit + s->tail_jmps_inside * jmp;
}

/*
 * The probes' time inside this function's calls: its own entry/return bias
 * per call, plus the whole cost of every traced call made beneath it, and
 * of every tail-call probe's hit while its calls were open.
 */
static double probe_time_inside(const struct report *r, const struct fn_stats *s, const struct probe *p)
{
	if (!r->cal)
		return 0;
	return s->calls * calib_bias(r->cal, p) + s->desc_calls * r->cost_avg +
	       tail_probes_inside(s, r->hit_cost, r->jmp_cost);
}

/* The on-CPU time of a function's outermost calls, less their share of the probes' time inside. */
static double outer_oncpu(const struct report *r, const struct fn_stats *s, const struct probe *p)
{
	double n = s->calls ? (double)s->calls : 1;

	return sub0(s->outer_oncpu, probe_time_inside(r, s, p) * s->outer_calls / n);
}

/* outer_oncpu() with the bias at the top of its range (0 where the range is not known: no floor). */
static double outer_oncpu_least(const struct report *r, const struct fn_stats *s, const struct probe *p)
{
	double n = s->calls ? (double)s->calls : 1, lo, hi;

	if (!r->cal)
		return outer_oncpu(r, s, p);
	calib_bias_range(r->cal, p, &lo, &hi);
	if (isnan(hi))
		return 0;
	return sub0(outer_oncpu(r, s, p), s->calls * sub0(hi, calib_bias(r->cal, p)) * s->outer_calls / n);
}

/*
 * Burst mode: the bursts held at least the work that any traced function's
 * calls did on the CPU in them. The fraction is that work over the target's
 * work in the interval, less the probes' calibrated cost: where the cost the
 * target paid was less than calibrated, the work in bursts, and so the
 * fraction, came out too small and every extrapolated figure too large
 * (CPU% and %PROC past what the threads can do). A floor from the calls'
 * own on-CPU time raises it to what was measured; where even that exceeds
 * all the work (calls open across the interval's start), it is no floor.
 */
static void floor_fraction(struct report *r)
{
	double most = 0, most_lo = 0, v, f, f_lo;
	size_t i;

	if (!(r->attached_work_ns > 0) || !(r->attached_fraction < 1) || !r->pl)
		return;
	for (i = 0; i < r->pl->nr; i++) {
		v = outer_oncpu(r, &r->stats[i], &r->pl->probes[i]);
		most = v > most ? v : most;
		v = outer_oncpu_least(r, &r->stats[i], &r->pl->probes[i]);
		most_lo = v > most_lo ? v : most_lo;
	}
	f = most / r->attached_work_ns;
	if (f <= r->attached_fraction || f >= 1)
		return;
	r->attached_fraction = f;
	/*
	 * The range moves up with it (a NaN stays: unknown), but its low end only
	 * to the floor at the probes' highest bias: the floor is itself measured
	 * (at the median bias, a range once ended at the estimate, 399432 calls,
	 * where the truth was 400000).
	 */
	f_lo = most_lo / r->attached_work_ns;
	r->attached_lo = r->attached_lo < f_lo ? f_lo : r->attached_lo;
	r->attached_hi = r->attached_hi < f ? f : r->attached_hi;
}

/* The probes' costs over the report's calls (report_prepare), from the calibration. */
static void prepare_costs(struct report *r)
{
	double calls = 0, cost = 0, bias = 0, l, h;
	size_t i;

	r->cost_avg = r->bias_avg = r->cost_lo = r->cost_hi = 0;
	r->hit_cost = r->hit_lo = r->hit_hi = 0;
	r->jmp_cost = r->jmp_lo = r->jmp_hi = 0;
	if (!r->cal)
		return;
	r->hit_cost = calib_exit_hit_cost(r->cal);
	calib_exit_hit_range(r->cal, &r->hit_lo, &r->hit_hi);
	r->jmp_cost = calib_jmp_hit_cost(r->cal);
	calib_jmp_hit_range(r->cal, &r->jmp_lo, &r->jmp_hi);
	for (i = 0; i < r->pl->nr; i++) {
		calls += r->stats[i].calls;
		cost += r->stats[i].calls * calib_cost(r->cal, &r->pl->probes[i]);
		bias += r->stats[i].calls * calib_bias(r->cal, &r->pl->probes[i]);
		if (!r->stats[i].calls)
			continue;
		calib_cost_range(r->cal, &r->pl->probes[i], &l, &h);
		r->cost_lo = !r->cost_lo || l < r->cost_lo ? l : r->cost_lo;
		r->cost_hi = h > r->cost_hi ? h : r->cost_hi;
	}
	if (calls) {
		r->cost_avg = cost / calls;
		r->bias_avg = bias / calls;
	}
}

void report_prepare(struct report *r)
{
	prepare_costs(r);
	/* After the costs: the floor is the calls' on-CPU time less their probes'. */
	floor_fraction(r);
}

/* Burst mode: measured counts stand for 1/fraction as many. */
static double extrapolation(const struct report *r)
{
	return r->attached_fraction > 0 && r->attached_fraction < 1 ? 1 / r->attached_fraction : 1;
}

static bool estimated(const struct report *r)
{
	return extrapolation(r) > 1;
}

/* An estimated count c's range: measured / the fraction's highest and lowest (NaN: not known). */
static void calls_range(const struct report *r, double measured, double *lo, double *hi)
{
	*lo = *hi = measured;
	if (!estimated(r))
		return;
	*lo = *hi = NAN;
	if (r->attached_lo > 0 && r->attached_hi >= r->attached_lo) {
		*lo = measured / r->attached_hi;
		*hi = measured / r->attached_lo;
	}
}

void fn_figures_compute(const struct report *r, const struct fn_stats *s, struct fn_figures *fig)
{
	const struct probe *p = &r->pl->probes[s - r->stats];
	double n = s->calls ? (double)s->calls : 1, inside, oncpu, self, shift, est = extrapolation(r);

	memset(fig, 0, sizeof(*fig));
	fig->proc_pct = -1;
	fig->bias_lo = fig->bias_hi = fig->avg_lo = fig->avg_hi = fig->resolution_ns = NAN;
	if (r->cal)
		calib_bias_range(r->cal, p, &fig->bias_lo, &fig->bias_hi);
	fig->calls = s->calls * est;
	calls_range(r, s->calls, &fig->calls_lo, &fig->calls_hi);
	if (r->interval_s > 0)
		fig->calls_per_s = fig->calls / r->interval_s;
	fig->cpu_unknown = p->exit != EXIT_NONE ? p->cpu_unknown : NULL;
	fig->tail_untimed = s->tail_untimed * est;
	if (r->cal)
		fig->tail_probe_ns = s->tail_hits * r->hit_cost;
	if (!s->calls)
		return;
	fig->timed = p->exit != EXIT_NONE;
	inside = probe_time_inside(r, s, p);
	fig->bias_ns = inside / n;
	fig->offcpu_total = s->runq_sum + s->blocked_sum;
	if (fig->offcpu_total > s->wall_sum)
		fig->offcpu_total = s->wall_sum;
	oncpu = sub0(s->wall_sum - fig->offcpu_total, inside);
	fig->oncpu_total = oncpu;
	fig->wall_avg = sub0(s->wall_sum, inside) / n;
	if (!isnan(fig->bias_lo)) {
		/* The raw average less the descendants' probes at their dearest, and its own bias at its highest. */
		fig->avg_lo = sub0((double)s->wall_sum / n, fig->bias_hi + (s->desc_calls * r->cost_hi +
			tail_probes_inside(s, r->hit_hi, r->jmp_hi)) / n);
		fig->avg_hi = sub0((double)s->wall_sum / n, fig->bias_lo + (s->desc_calls * r->cost_lo +
			tail_probes_inside(s, r->hit_lo, r->jmp_lo)) / n);
		fig->avg_lo = fig->avg_lo < fig->wall_avg ? fig->avg_lo : fig->wall_avg;
		fig->avg_hi = fig->avg_hi > fig->wall_avg ? fig->avg_hi : fig->wall_avg;
	}
	fig->oncpu_avg = oncpu / n;
	fig->offcpu_avg = fig->offcpu_total / n;
	fig->runq_avg = s->runq_sum / n;
	fig->blocked_avg = s->blocked_sum / n;
	/* Self: callees' walls are out already; what stays is their probes' time outside those walls. */
	self = s->self_sum;
	if (r->cal)
		self = sub0(self, s->calls * calib_bias(r->cal, p) + s->child_calls * sub0(r->cost_avg, r->bias_avg) +
			    s->tail_hits_self * r->hit_cost + s->tail_jmps_self * r->jmp_cost);
	fig->self_avg = self / n;
	/* Percentiles, min and max move by the typical (median) bias; the descendants' and hits' share is a mean. */
	shift = r->cal ? calib_bias_median(r->cal, p) : 0;
	shift += (s->desc_calls * r->cost_avg + tail_probes_inside(s, r->hit_cost, r->jmp_cost)) / n;
	fig->shift_ns = shift;
	if (!isnan(fig->bias_lo))
		fig->resolution_ns = fig->bias_hi - fig->bias_lo + (s->desc_calls * (r->cost_hi - r->cost_lo) +
			tail_probes_inside(s, r->hit_hi - r->hit_lo, r->jmp_hi - r->jmp_lo)) / n;
	fig->wall_min = sub0(s->wall_min, shift);
	fig->wall_max = sub0(s->wall_max, shift);
	fig->p50 = hist_percentile(s->hist, s->wall_min, s->wall_max, 50, shift);
	fig->p90 = hist_percentile(s->hist, s->wall_min, s->wall_max, 90, shift);
	fig->p99 = hist_percentile(s->hist, s->wall_min, s->wall_max, 99, shift);
	/* CPU%: outermost activations, less their share of the probes' time. */
	oncpu = outer_oncpu(r, s, p);
	if (r->interval_s > 0)
		fig->cpu_pct = est * oncpu / (r->interval_s * 1e7);
	if (r->proc_cpu_known && r->proc_cpu_ns)
		fig->proc_pct = 100.0 * est * oncpu / r->proc_cpu_ns;
}

/* Report order: most wall time (outermost calls) first, uncalled functions last. */
static int cmp_by_time(const void *a, const void *b, void *arg)
{
	const struct report *r = arg;
	const struct fn_stats *x = &r->stats[*(const size_t *)a];
	const struct fn_stats *y = &r->stats[*(const size_t *)b];

	if (x->outer_wall != y->outer_wall)
		return x->outer_wall > y->outer_wall ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	if (x->entered != y->entered)
		return x->entered > y->entered ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static size_t *sorted_order(const struct report *r)
{
	size_t i, *order = calloc(r->pl->nr ? r->pl->nr : 1, sizeof(*order));

	if (!order)
		return NULL;
	for (i = 0; i < r->pl->nr; i++)
		order[i] = i;
	qsort_r(order, r->pl->nr, sizeof(*order), cmp_by_time, (void *)r);
	return order;
}

static bool any_nesting(const struct report *r)
{
	size_t i;

	for (i = 0; i < r->pl->nr; i++)
		if (r->stats[i].self_sum != r->stats[i].wall_sum)
			return true;
	return false;
}

/*
 * Burst mode: how the counts were made, and how far off they may be (the
 * bursts' call rates moved: the machine's speed drifts, the probes' cost too).
 */
static void print_estimated(const struct report *r, FILE *f)
{
	double lo, hi;

	fprintf(f, "~ estimated: probes attached %.1f%% of the time (--max-overhead); "
		   "counts, rates and CPU%% extrapolated", 100 * r->attached_fraction);
	calls_range(r, 1, &lo, &hi);
	if (isnan(lo))
		fprintf(f, ", their error unknown (too few bursts to compare)\n");
	else
		fprintf(f, ", within %+.0f%% to %+.0f%% (the bursts' call rates)\n",
			100 * (lo * r->attached_fraction - 1), 100 * (hi * r->attached_fraction - 1));
}

static void print_header(const struct report *r, FILE *f, bool self, const struct traced_proc *child, size_t w)
{
	char b[16];

	if (child && !child->ppid)   /* -p P1,P2,...: one of the processes given */
		fprintf(f, "\n%s pid %d, %.2f s\n", r->total ? "total:" : "fnprof:", r->pid, r->interval_s);
	else if (child && child->delay_ns)
		fprintf(f, "\n%s fork child pid %d (of %d): probes in place %s after its fork; calls before not seen\n",
			r->total ? "total:" : "fnprof:", r->pid, child->ppid, fmt_ns(child->delay_ns, b, sizeof(b)));
	else if (child)
		fprintf(f, "\n%s fork child pid %d (of %d): its probes are not in place yet\n",
			r->total ? "total:" : "fnprof:", r->pid, child->ppid);
	else if (!r->pid)
		fprintf(f, "\n%s system-wide, %.2f s%s%s\n", r->total ? "total:" : "fnprof:", r->interval_s,
			r->note ? ", " : "", r->note ? r->note : "");
	else
		fprintf(f, "\n%s pid %d, %.2f s%s%s\n", r->total ? "total:" : "fnprof:", r->pid, r->interval_s,
			r->note ? ", " : "", r->note ? r->note : "");
	if (estimated(r))
		print_estimated(r, f);
	fprintf(f, "%-*s %9s %9s %8s %8s %8s %8s %8s %8s %8s%s %6s %6s\n", (int)w, "FUNCTION", "CALLS",
		"CALLS/s", "AVG", "P50", "P99", "MAX", "MIN", "ONCPU", "OFFCPU", self ? "     SELF" : "",
		"CPU%", "%PROC");
}

/*
 * Fewer calls returned than entered: calls still running, or returns the
 * kernel never reported (longjmp out of 64 uretprobe frames). The table
 * marks the count and says how many entered, so that a function called
 * 1000 times never reads 0 without a word.
 */
static bool returns_missing(const struct fn_stats *s)
{
	return s->entered > s->calls;
}

/*
 * A figure v the probes' bias was taken from (a percentile, min, max, an
 * average), where it is below how far off that bias may be (res): not a
 * figure but a bound, "<" v + res (malloc's P50 read 0 ns).
 */
static void fmt_below_resolution(double v, double res, char *buf, size_t size)
{
	char b[16];

	if (!(res > 0) || v >= res)
		return;
	snprintf(buf, size, "<%s", fmt_ns(v + res, b, sizeof(b)));
}

static void print_row(const struct report *r, FILE *f, size_t i, bool self, size_t w)
{
	const struct fn_stats *s = &r->stats[i];
	char name[256], b[8][16], pp[16];
	struct fn_figures g;
	double v[8];
	int k;

	fn_figures_compute(r, s, &g);
	probe_display_name(&r->pl->probes[i], name, sizeof(name));
	v[0] = g.wall_avg, v[1] = g.p50, v[2] = g.p99, v[3] = g.wall_max;
	v[4] = g.wall_min, v[5] = g.oncpu_avg, v[6] = g.offcpu_avg, v[7] = g.self_avg;
	for (k = 0; k < 8; k++)
		fmt_ns(s->calls && g.timed && !(g.cpu_unknown && (k == 5 || k == 6)) ? v[k] : -1.0, b[k], sizeof(b[k]));
	/* Every figure the bias is taken from: not OFFCPU (k 6), which it is not; nor '-' cells. */
	for (k = 0; k < 8 && s->calls && g.timed; k++)
		if (k != 6 && !(g.cpu_unknown && k == 5))
			fmt_below_resolution(v[k], g.resolution_ns, b[k], sizeof(b[k]));
	if (g.proc_pct >= 0 && !g.cpu_unknown)
		snprintf(pp, sizeof(pp), "%.1f", g.proc_pct);
	else
		snprintf(pp, sizeof(pp), "-");
	fit_cell(f, name, w);
	fprintf(f, " %s%*.0f%s %9.1f %8s %8s %8s %8s %8s %8s %8s", estimated(r) ? "~" : "",
		(estimated(r) ? 8 : 9) - returns_missing(s), g.calls, returns_missing(s) ? "*" : "",
		g.calls_per_s, b[0], b[1], b[2], b[3], b[4], b[5], b[6]);
	if (self)
		fprintf(f, " %8s", b[7]);
	if (g.cpu_unknown)
		fprintf(f, " %6s %6s\n", "-", pp);
	else
		fprintf(f, " %6.1f %6s\n", g.cpu_pct, pp);
}

/* What the probes cost the target in the interval: calls x measured cost per call. */
static double probe_overhead_ns(const struct report *r)
{
	double ns = r->uncounted_probe_ns;  /* burst mode: calls while attaching or detaching */
	size_t i;

	for (i = 0; r->cal && i < r->pl->nr; i++) {
		ns += r->stats[i].calls * calib_cost_seen(r->cal, &r->pl->probes[i], &r->stats[i]);
		/* Exit probes in tail-called functions: each of their other calls steps there too. */
		ns += r->stats[i].tail_hits * r->hit_cost;
		/* And the probes on their followed tail jmps, once a call that jumps. */
		ns += r->stats[i].tail_jmp_calls * r->jmp_cost;
		/* A session's calls that ret probes closed: the uretprobe's cost is in calib_cost, not the step. */
		ns += r->stats[i].ret_exit_calls * fmax(calib_ret_exit_delta(r->cal, true), 0);
	}
	return ns;
}

/* --max-overhead, over the whole run: did the probes slow the target's own work more? */
static bool over_budget(const struct report *r, double ns, double *slowdown)
{
	double work = r->proc_cpu_known ? r->proc_cpu_ns - ns : 0;

	*slowdown = work > 0 ? 100 * ns / work : 0;
	return r->max_overhead_pct && r->total && *slowdown > r->max_overhead_pct;
}

/* Probes the kernel single-steps: an entry it does not emulate, or ret-probe exits. */
static bool probe_steps(const struct probe *p)
{
	return p->kind == SITE_STEPPED || site_paired(p->kind) || p->exit == EXIT_RET;
}

/*
 * " (~X a step here)": what this run's calibration measured a single step to
 * add (a stepped entry's bias, less an emulated one's where that was measured
 * too: 4 us on one host, 15 on another), or "" where it measured no step.
 */
static const char *step_cost_said(const struct calibration *cal, char *buf, size_t size)
{
	double step = cal->bias_ns[CAL_STEPPED] - (cal->cases & 1U << CAL_EMULATED ? cal->bias_ns[CAL_EMULATED] : 0);
	char b[16];

	buf[0] = '\0';
	if (cal->cases & 1U << CAL_STEPPED && step > 0)
		snprintf(buf, size, " (~%s a step here)", fmt_ns(step, b, sizeof(b)));
	return buf;
}

/*
 * Where single-stepped probes make most of the overhead (ns in all), the
 * functions that cost most, and what the choices that the user has change:
 * --stepped=single (one step a call instead of two for a paired entry).
 */
static void print_stepped_share(const struct report *r, FILE *f, double ns)
{
	size_t i, k, top[3] = { 0 }, nr_top = 0;
	double cost[3] = { 0 }, c, stepped = 0;
	bool paired = false, rets = false;
	char name[3][256], step[48];

	for (i = 0; ns > 0 && i < r->pl->nr; i++) {
		const struct probe *p = &r->pl->probes[i];

		if (!probe_steps(p) || !r->stats[i].calls)
			continue;
		c = r->stats[i].calls * calib_cost_seen(r->cal, p, &r->stats[i]);
		stepped += c;
		paired |= site_paired(p->kind);
		rets |= p->exit == EXIT_RET;
		for (k = nr_top < 3 ? nr_top++ : 3; k > 0 && cost[k - 1] < c; k--) {
			if (k < 3)
				top[k] = top[k - 1], cost[k] = cost[k - 1];
		}
		if (k < 3)
			top[k] = i, cost[k] = c;
	}
	if (ns <= 0 || stepped < 0.5 * ns)
		return;
	fprintf(f, "  %.0f%% of it single-stepped%s:", 100 * stepped / ns, step_cost_said(r->cal, step, sizeof(step)));
	for (k = 0; k < nr_top; k++)
		fprintf(f, "%s %s %.0f%%", k ? "," : "", probe_display_name(&r->pl->probes[top[k]], name[k], sizeof(name[k])),
			100 * cost[k] / ns);
	fprintf(f, "\n");
	if (paired)
		fprintf(f, "  a paired entry steps twice a call for its exact time: --stepped=single steps once, "
			   "with the step's drift left in each call\n");
	if (rets)
		fprintf(f, "  ret-probe exits step at each return (--exit=auto chose them where a uretprobe is unsafe)\n");
}

static void print_overhead(const struct report *r, FILE *f)
{
	double ns = probe_overhead_ns(r), pct, slowdown;
	char b[16];

	if (!r->cal)
		return;
	pct = r->proc_cpu_known && r->proc_cpu_ns ? 100.0 * ns / r->proc_cpu_ns : -1;
	fprintf(f, "probe overhead: %s added to the target", fmt_ns(ns, b, sizeof(b)));
	if (pct >= 0)
		fprintf(f, " (%.1f%% of its CPU time)", pct);
	if (r->max_overhead_pct)
		fprintf(f, ", budget %g%% of its own work (--max-overhead)", r->max_overhead_pct);
	fprintf(f, "; probe bias subtracted from every call\n");
	print_stepped_share(r, f, ns);
	if (over_budget(r, ns, &slowdown))
		fprintf(f, "warning: the probes slowed the target by %.1f%%, over the budget: at this call rate, "
			   "one burst and its detach cost more than a run this short allows\n", slowdown);
	else if (pct > 5 && !r->max_overhead_pct)
		fprintf(f, "warning: tracing costs the target more than 5%% of its CPU time; "
			   "trace fewer or less frequently called functions\n");
}

/*
 * Where the probes' time moved by more than UNCERTAIN_NS between the
 * calibrations' rounds (a single-stepped entry on a virtual machine; or
 * thousands of traced calls beneath each call, each of whose probes' cost
 * moved a little), a function's average is only known within the range
 * that moves it by: say so rather than print a confident figure.
 */
#define UNCERTAIN_NS 300.0
/*
 * Each on its own line only where the range is more than this share of the
 * average (its error matters to the figure): 300-400 ns on a 100 us
 * function does not; those are summed in one line.
 */
#define UNCERTAIN_SHARE 0.05

static void print_uncertain(const struct report *r, FILE *f)
{
	struct fn_figures g;
	char name[256], b[5][16];
	double desc, hits, jmps;
	size_t i, minor = 0;

	for (i = 0; r->cal && i < r->pl->nr; i++) {
		const struct fn_stats *s = &r->stats[i];
		const struct probe *p = &r->pl->probes[i];

		fn_figures_compute(r, s, &g);
		if (!g.timed || isnan(g.avg_lo) || g.avg_hi - g.avg_lo <= UNCERTAIN_NS)
			continue;
		if (g.avg_hi - g.avg_lo <= UNCERTAIN_SHARE * g.wall_avg) {
			minor++;
			continue;
		}
		fprintf(f, "uncertain: %s AVG %s, between %s and %s: ", probe_display_name(p, name, sizeof(name)),
			fmt_ns(g.wall_avg, b[0], 16), fmt_ns(g.avg_lo, b[1], 16), fmt_ns(g.avg_hi, b[2], 16));
		desc = s->desc_calls * (r->cost_hi - r->cost_lo) / s->calls;
		hits = s->tail_hits_inside * (r->hit_hi - r->hit_lo) / s->calls;
		jmps = s->tail_jmps_inside * (r->jmp_hi - r->jmp_lo) / s->calls;
		if (jmps > hits && jmps > desc && jmps > g.bias_hi - g.bias_lo)
			fprintf(f, "%.1f hits inside each of its calls of the probes on followed tail jumps, which "
				   "cost %s to %s each (during the calibrations)\n",
				(double)s->tail_jmps_inside / s->calls, fmt_ns(r->jmp_lo, b[3], 16),
				fmt_ns(r->jmp_hi, b[4], 16));
		else if (hits > desc && hits > g.bias_hi - g.bias_lo)
			fprintf(f, "%.1f hits inside each of its calls of exit probes in tail-called functions (their "
				   "other calls), which cost %s to %s each (during the calibrations)\n",
				(double)s->tail_hits_inside / s->calls, fmt_ns(r->hit_lo, b[3], 16),
				fmt_ns(r->hit_hi, b[4], 16));
		else if (g.bias_hi - g.bias_lo >= desc)
			fprintf(f, "its probes' own time (%s entry) moved by %s during the calibrations\n",
				site_kind_name(p->kind), fmt_ns(g.bias_hi - g.bias_lo, b[3], 16));
		else
			fprintf(f, "%.1f traced calls beneath each of its calls, whose probes cost %s to %s each "
				   "(by kind, during the calibrations)\n", (double)s->desc_calls / s->calls,
				fmt_ns(r->cost_lo, b[3], 16), fmt_ns(r->cost_hi, b[4], 16));
	}
	if (minor)
		fprintf(f, "uncertain: %zu more %s AVG by over %.0fns, but by %.0f%% of it or less (JSON "
			   "avg_range_ns)\n", minor, minor > 1 ? "functions'" : "function's", UNCERTAIN_NS,
			100 * UNCERTAIN_SHARE);
}

/*
 * Why some functions show '-' for ONCPU, OFFCPU, CPU% and %PROC (Go, or a
 * kernel the full trace object does not run on): once, for the first of them.
 */
static void print_cpu_unknown(const struct report *r, FILE *f)
{
	const struct probe *p;
	size_t i;

	for (i = 0; i < r->pl->nr; i++) {
		p = &r->pl->probes[i];
		if (p->cpu_unknown && p->exit != EXIT_NONE) {
			fprintf(f, "ONCPU, OFFCPU, CPU%%, %%PROC unknown ('-')%s: %s; wall and self time are %s\n",
				p->go ? " for Go functions" : "", p->cpu_unknown, p->go ? "per goroutine" : "measured");
			return;
		}
	}
}

static void print_footer(const struct report *r, FILE *f)
{
	char b[16];
	int i;

	if (r->proc_cpu_known)
		fprintf(f, "process CPU time: %s (%.1f%% of one core)\n", fmt_ns(r->proc_cpu_ns, b, sizeof(b)),
			r->interval_s > 0 ? r->proc_cpu_ns / (r->interval_s * 1e7) : 0.0);
	for (i = 0; i < DROP_NR; i++)
		if (r->drops[i])
			fprintf(f, "%s: %llu %s\n", i == DROP_ORPHAN_RET || i == DROP_DETACHED ? "not timed" : "dropped",
				(unsigned long long)r->drops[i], drop_kinds[i].text);
	print_cpu_unknown(r, f);
	print_overhead(r, f);
	sysexits_print_table(r->exit_procs, r->nr_exit_procs, f);
	print_uncertain(r, f);
	fprintf(f, "fnprof itself: %s CPU (%.2f%% of one core), peak RSS %.1f MiB\n",
		fmt_ns(r->self_cpu_ns, b, sizeof(b)), r->self_wall_s > 0 ? r->self_cpu_ns / (r->self_wall_s * 1e7) : 0.0,
		r->self_rss_kib / 1024.0);
	if (r->evs)
		fprintf(f, "counters: per-thread, callees included; '~' = scaled (counter was multiplexed)\n");
}

/* Per-call count of event e for one function: total (callees included), self, scaled. */
static __u64 counter_total(const struct report *r, const struct fn_stats *s, const struct event *e,
			   __u64 *self, bool *scaled)
{
	struct fn_figures g;

	*scaled = false;
	switch (e->src) {
	case SRC_COUNTER:
		*self = s->ctr_self[e->slot];
		*scaled = s->ctr_scaled[e->slot] > 0;
		return s->ctr[e->slot];
	case SRC_CSW:
		return *self = s->vcsw + s->ivcsw;
	case SRC_MIGRATIONS:
		return *self = s->migrations;
	case SRC_ONCPU:
		fn_figures_compute(r, s, &g);
		return *self = g.oncpu_total;
	}
	return *self = 0;
}

static double per_call(const struct report *r, const struct fn_stats *s, const char *name)
{
	const struct event *e = events_find(r->evs, name);
	__u64 self;
	bool scaled;

	if (!e || !e->available || !s->calls)
		return -1;
	return (double)counter_total(r, s, e, &self, &scaled) / s->calls;
}

/* One counted event of one function, as every printer needs it. */
struct counter_value {
	const struct event *e;
	__u64 total, self;
	bool scaled;
	double per_call;
};

typedef void (*counter_fn)(void *ctx, const struct counter_value *v);

/* Calls fn for each event that could be counted, in -e order. */
static void for_each_counter(const struct report *r, const struct fn_stats *s, counter_fn fn, void *ctx)
{
	struct counter_value v;
	size_t i;

	for (i = 0; i < r->evs->nr; i++) {
		v.e = &r->evs->ev[i];
		if (!v.e->available)
			continue;
		v.total = counter_total(r, s, v.e, &v.self, &v.scaled);
		v.per_call = s->calls ? (double)v.total / s->calls : 0;
		fn(ctx, &v);
	}
}

static void counter_cell(void *f, const struct counter_value *v)
{
	fprintf(f, " %*.2f%c", (int)(strlen(v->e->name) > 11 ? strlen(v->e->name) : 11), v->per_call,
		v->scaled ? '~' : ' ');
}

static void counter_word(void *f, const struct counter_value *v)
{
	fprintf(f, " %s %.2f%s", v->e->name, v->per_call, v->scaled ? " (scaled)" : "");
}

static void counter_json(void *j, const struct counter_value *v)
{
	json_obj_begin(j, v->e->name);
	json_u64(j, "total", v->total);
	json_f64(j, "per_call", v->per_call);
	json_bool(j, "scaled", v->scaled);
	json_u64(j, "self_total", v->self);
	json_obj_end(j);
}

static void print_counter_cells(const struct report *r, FILE *f, const struct fn_stats *s)
{
	double cyc = per_call(r, s, "cycles"), ins = per_call(r, s, "instructions");
	double bm = per_call(r, s, "branch-misses"), bi = per_call(r, s, "branch-instructions");

	for_each_counter(r, s, counter_cell, f);
	if (cyc > 0 && ins >= 0)
		fprintf(f, " %6.2f", ins / cyc);
	if (bi > 0 && bm >= 0)
		fprintf(f, " %8.2f", 100 * bm / bi);
}

/* The counters section: per-call user/system time, switches and -e events. */
static void print_counters(const struct report *r, FILE *f, const size_t *order, size_t w)
{
	const struct fn_stats *s;
	char name[256], u[16], y[16];
	size_t i, k;

	fprintf(f, "%-*s %8s %8s %6s %6s %6s", (int)w, "PER CALL", "USER", "SYS", "VCSW", "IVCSW", "MIGR");
	for (i = 0; i < r->evs->nr; i++)
		if (r->evs->ev[i].available)
			fprintf(f, " %*s ", (int)(strlen(r->evs->ev[i].name) > 11 ? strlen(r->evs->ev[i].name) : 11),
				r->evs->ev[i].name);
	if (events_find(r->evs, "cycles") && events_find(r->evs, "instructions"))
		fprintf(f, " %6s", "IPC");
	if (events_find(r->evs, "branch-misses") && events_find(r->evs, "branch-instructions"))
		fprintf(f, " %8s", "BR-MISS%");
	fputc('\n', f);
	for (k = 0; k < r->pl->nr; k++) {
		struct fn_figures g;
		double n;

		s = &r->stats[order[k]];
		if (!s->calls)
			continue;
		n = s->calls;
		fn_figures_compute(r, s, &g);
		fit_cell(f, probe_display_name(&r->pl->probes[order[k]], name, sizeof(name)), w);
		fprintf(f, " %8s %8s %6.2f %6.2f %6.2f",
			fmt_ns(g.oncpu_avg - s->sys_sum / n, u, sizeof(u)), fmt_ns(s->sys_sum / n, y, sizeof(y)),
			s->vcsw / n, s->ivcsw / n, s->migrations / n);
		print_counter_cells(r, f, s);
		fputc('\n', f);
	}
}

static void print_counter_line(const struct report *r, FILE *f, const struct fn_stats *s)
{
	fprintf(f, "%24s :", "per call");
	for_each_counter(r, s, counter_word, f);
	fputc('\n', f);
}

static void print_hists(const struct report *r, FILE *f, const size_t *order)
{
	struct fn_figures g;
	char name[256];
	size_t k;

	for (k = 0; k < r->pl->nr; k++) {
		const struct fn_stats *s = &r->stats[order[k]];

		if (!s->calls)
			continue;
		fprintf(f, "\n%s: wall time per call\n",
			probe_display_name(&r->pl->probes[order[k]], name, sizeof(name)));
		fn_figures_compute(r, s, &g);
		hist_print_log2(f, s->hist, (__u64)(g.bias_ns + 0.5));
		if (r->evs)
			print_counter_line(r, f, s);
	}
}

/* --max-overhead with a -p list: a listed process's report, its own bursts' figures and CPU time. */
static void take_share(struct report *c, const struct report_share *s)
{
	c->attached_fraction = s->fraction;
	c->attached_lo = s->lo;
	c->attached_hi = s->hi;
	c->attached_work_ns = s->work_ns;
	c->uncounted_probe_ns = s->uncounted_ns;
	c->proc_cpu_known = true;
	c->proc_cpu_ns = s->cpu_ns;
}

/*
 * --follow-forks: the report of the fork child in block k, sharing all but
 * the figures. False when that slot holds no process.
 */
static bool child_report(const struct report *r, size_t k, struct report *c)
{
	if (k >= r->nr_procs || !r->procs[k].pid)
		return false;
	*c = *r;
	c->pid = r->procs[k].pid;
	c->stats = r->stats + k * r->pl->nr;
	c->open_calls = r->open_calls ? r->open_calls + k * r->pl->nr : NULL;
	c->nr_procs = 0;
	c->proc_cpu_known = false;
	c->note = NULL;
	c->nr_shares = 0;
	if (k < r->nr_shares)
		take_share(c, &r->shares[k]);
	report_prepare(c);
	return true;
}

/*
 * The calls of function i entered and not returned in the report that are
 * still open on their threads: running, not lost. Go's are on goroutines,
 * which the tracer does not count: 0 there, as where it cannot tell.
 */
static __u64 still_running(const struct report *r, size_t i, __u64 missing)
{
	__u64 open = r->open_calls && !r->pl->probes[i].go ? r->open_calls[i] : 0;

	return open < missing ? open : missing;
}

/* What the '*' on a CALLS figure means, function by function. */
static void print_missing_returns(const struct report *r, FILE *f, const size_t *order)
{
	__u64 missing, running;
	char name[256];
	size_t k;

	for (k = 0; k < r->pl->nr; k++) {
		const struct fn_stats *s = &r->stats[order[k]];
		const struct probe *p = &r->pl->probes[order[k]];

		if (!returns_missing(s))
			continue;
		missing = s->entered - s->calls;
		running = still_running(r, order[k], missing);
		fprintf(f, "* %s: %llu calls entered, %llu returned", probe_display_name(p, name, sizeof(name)),
			(unsigned long long)s->entered, (unsigned long long)s->calls);
		if (running)
			fprintf(f, "; %llu still running as the report was taken%s", (unsigned long long)running,
				r->total ? "" : " (their returns count in the next one)");
		if (missing > running && !r->open_calls)
			fprintf(f, ": the others were still running, or their returns were not seen (see dropped)");
		else if (missing > running)
			fprintf(f, "; %llu not seen to return (see dropped)", (unsigned long long)(missing - running));
		/* The kernel's limit applies only to uretprobes, and only to returns not seen. */
		if (missing > running && p->session && r->drops[DROP_UNCHOSEN])
			fprintf(f, "; made while fnprof chose their process's exit");
		else if (missing > running && p->exit == EXIT_URETPROBE)
			fprintf(f, "; the kernel reports no more uretprobes to a thread that longjmp'd out of 64 "
				   "pending ones (--exit=ret sees every return)");
		fputc('\n', f);
	}
}

/* Calls whose time ends at a tail jump to a function fnprof could not follow, function by function. */
static void print_untimed_tails(const struct report *r, FILE *f, const size_t *order)
{
	char name[256];
	size_t k;

	for (k = 0; k < r->pl->nr; k++) {
		const struct fn_stats *s = &r->stats[order[k]];

		if (!s->tail_untimed)
			continue;
		probe_display_name(&r->pl->probes[order[k]], name, sizeof(name));
		fprintf(f, "%s: %llu of %llu calls left by a tail call to an unknown function (indirect, or through "
			   "the PLT); their time ends at the jump\n", name, (unsigned long long)s->tail_untimed,
			(unsigned long long)s->calls);
	}
}

/* The table's first columns: FUNCTION's least width, and the cells the rest of a row takes. */
#define NAME_WIDTH 28
#define ROW_REST 106

/* The FUNCTION column's width (fit.h): NAME_WIDTH, or more on a terminal or where names look alike. */
static size_t name_width(const struct report *r, FILE *f)
{
	char (*names)[256] = calloc(r->pl->nr ? r->pl->nr : 1, sizeof(*names));
	const char **p = calloc(r->pl->nr ? r->pl->nr : 1, sizeof(*p));
	size_t i, w = 0;

	for (i = 0; names && p && i < r->pl->nr; i++)
		p[i] = probe_display_name(&r->pl->probes[i], names[i], sizeof(names[i]));
	if (names && p)
		w = fit_column(f, p, r->pl->nr, NAME_WIDTH, ROW_REST);
	free(names);
	free(p);
	return w ? w : NAME_WIDTH;
}

/* One process's table; a fork child's has its overhead line only as footer. */
static void print_table(const struct report *r, FILE *f, bool hist, const struct traced_proc *child)
{
	size_t k, uncalled = 0, *order = sorted_order(r), w = name_width(r, f);
	bool self = any_nesting(r);

	if (!order)
		return;
	print_header(r, f, self, child, w);
	for (k = 0; k < r->pl->nr; k++) {
		/* Long glob lists: only what was called; short lists show their zeros too. */
		if (!r->stats[order[k]].calls && !r->stats[order[k]].entered && r->pl->nr > 20) {
			uncalled++;
			continue;
		}
		print_row(r, f, order[k], self, w);
	}
	if (uncalled)
		fprintf(f, "(%zu more traced functions were not called)\n", uncalled);
	print_missing_returns(r, f, order);
	print_untimed_tails(r, f, order);
	if (child)
		print_overhead(r, f);
	else
		print_footer(r, f);
	if (r->evs) {
		fputc('\n', f);
		print_counters(r, f, order, w);
	}
	if (hist)
		print_hists(r, f, order);
	fflush(f);
	free(order);
}

/* Most processes of a -p list: the tracer's. */
#define MAX_LISTED (1 + TRACER_MORE_MAX)

/* -p P1,P2,...: the processes given, the report's own first, into pids; how many (1 without a list). */
static size_t listed_pids(const struct report *r, pid_t *pids)
{
	size_t k, n = 1;

	pids[0] = r->pid;
	for (k = 1; k < r->nr_procs && n < MAX_LISTED; k++)
		if (r->procs[k].pid && !r->procs[k].ppid)
			pids[n++] = r->procs[k].pid;
	return n;
}

void report_print_table(const struct report *r, FILE *f, bool hist)
{
	pid_t pids[MAX_LISTED];
	struct report c;
	size_t k;

	print_table(r, f, hist, NULL);
	for (k = 1; k < r->nr_procs; k++)
		if (child_report(r, k, &c))
			print_table(&c, f, hist, &r->procs[k]);
	if (r->slow)
		slow_print_table(r->slow, r->pl, pids, listed_pids(r, pids), f);
}

static void json_avg_total(struct json *j, const char *key, double avg, __u64 total)
{
	json_obj_begin(j, key);
	json_f64(j, "avg", avg);
	json_u64(j, "total", total);
	json_obj_end(j);
}

static void json_counters(struct json *j, const struct report *r, const struct fn_stats *s,
			  const struct fn_figures *g)
{
	double n = s->calls ? (double)s->calls : 1;
	__u64 user = g->oncpu_total > s->sys_sum ? g->oncpu_total - s->sys_sum : 0;

	json_avg_total(j, "user_ns", user / n, user);
	json_avg_total(j, "sys_ns", s->sys_sum / n, s->sys_sum);
	json_obj_begin(j, "counters");
	for_each_counter(r, s, counter_json, j);
	json_obj_end(j);
}

/* Go: no on/off-CPU split; the keys say unknown rather than show a wrong figure. */
static void json_cpu_unknown(struct json *j)
{
	static const char *const keys[] = { "oncpu_ns", "offcpu_ns", "runq_ns", "blocked_ns" };
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		json_null(j, keys[i]);
}

static void json_latency(struct json *j, const struct fn_stats *s, const struct fn_figures *g)
{
	json_obj_begin(j, "wall_ns");
	json_f64(j, "avg", g->wall_avg);
	json_u64(j, "min", (__u64)(g->wall_min + 0.5));
	json_u64(j, "max", (__u64)(g->wall_max + 0.5));
	json_u64(j, "p50", (__u64)(g->p50 + 0.5));
	json_u64(j, "p90", (__u64)(g->p90 + 0.5));
	json_u64(j, "p99", (__u64)(g->p99 + 0.5));
	json_u64(j, "total", (__u64)(g->wall_avg * g->calls + 0.5));
	json_obj_end(j);
	if (g->cpu_unknown) {
		json_cpu_unknown(j);
	} else {
		json_avg_total(j, "oncpu_ns", g->oncpu_avg, g->oncpu_total);
		json_avg_total(j, "offcpu_ns", g->offcpu_avg, g->offcpu_total);
		json_avg_total(j, "runq_ns", g->runq_avg, s->runq_sum);
		json_avg_total(j, "blocked_ns", g->blocked_avg, s->blocked_sum);
	}
	json_avg_total(j, "self_ns", g->self_avg, (__u64)(g->self_avg * s->calls + 0.5));
}

/* --entry-only: no latency was measured, and the keys say so rather than show zeros. */
static void json_untimed(struct json *j)
{
	static const char *const keys[] = { "wall_ns", "oncpu_ns", "offcpu_ns", "runq_ns", "blocked_ns", "self_ns" };
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		json_null(j, keys[i]);
}

static void json_function(struct json *j, const struct report *r, size_t i)
{
	const struct fn_stats *s = &r->stats[i];
	const struct probe *p = &r->pl->probes[i];
	struct fn_figures g;

	fn_figures_compute(r, s, &g);
	json_obj_begin(j, NULL);
	json_str(j, "name", p->name);
	json_str(j, "object", p->object);
	json_u64(j, "calls", (__u64)(g.calls + 0.5));
	json_u64(j, "calls_measured", s->calls);
	json_obj_begin(j, "calls_range");
	json_f64(j, "min", g.calls_lo);
	json_f64(j, "max", g.calls_hi);
	json_obj_end(j);
	json_u64(j, "entered", s->entered);
	json_u64(j, "tail_hits_inside", s->tail_hits_inside);
	json_u64(j, "tail_jmp_calls", s->tail_jmp_calls);
	json_u64(j, "tail_jmps_inside", s->tail_jmps_inside);
	if (p->exit == EXIT_RET) {
		json_u64(j, "tail_exits_untimed", (__u64)(g.tail_untimed + 0.5));
		json_f64(j, "tail_probe_ns", g.tail_probe_ns);
	}
	json_f64(j, "calls_per_s", g.calls_per_s);
	if (g.timed)
		json_latency(j, s, &g);
	else
		json_untimed(j);
	if (g.cpu_unknown)
		json_null(j, "cpu_pct");
	else
		json_f64(j, "cpu_pct", g.cpu_pct);
	if (g.proc_pct >= 0 && !g.cpu_unknown)
		json_f64(j, "proc_pct", g.proc_pct);
	else
		json_null(j, "proc_pct");
	if (g.cpu_unknown)
		json_str(j, "cpu_unknown", g.cpu_unknown);
	json_str(j, "site", site_kind_name(p->kind));
	json_u64(j, "entry_skip_bytes", p->entry_skip);
	json_u64(j, "pair_offset_bytes", p->pair_off);
	json_str(j, "exit", exit_mode_name(p->exit));
	/* A session's: the uretprobe where each process allows it, ret probes elsewhere (exits_per_process). */
	json_bool(j, "exit_per_process", p->session);
	if (p->session)
		json_u64(j, "ret_exit_calls", s->ret_exit_calls);
	if (p->exit_why)
		json_str(j, "exit_why", p->exit_why);
	else
		json_null(j, "exit_why");
	json_f64(j, "bias_ns", g.bias_ns);
	json_obj_begin(j, "bias_range_ns");
	json_f64(j, "min", g.bias_lo);
	json_f64(j, "max", g.bias_hi);
	json_obj_end(j);
	json_obj_begin(j, "avg_range_ns");
	json_f64(j, "min", g.avg_lo);
	json_f64(j, "max", g.avg_hi);
	json_obj_end(j);
	json_obj_begin(j, "raw_wall_ns");
	json_f64(j, "avg", s->calls ? (double)s->wall_sum / s->calls : 0);
	json_u64(j, "min", s->wall_min);
	json_u64(j, "max", s->wall_max);
	json_u64(j, "p50", (__u64)(hist_percentile(s->hist, s->wall_min, s->wall_max, 50, 0) + 0.5));
	json_u64(j, "p99", (__u64)(hist_percentile(s->hist, s->wall_min, s->wall_max, 99, 0) + 0.5));
	json_u64(j, "total", s->wall_sum);
	json_obj_end(j);
	json_u64(j, "preempted", s->preempted);
	json_u64(j, "migrated", s->migrated);
	json_obj_begin(j, "context_switches");
	json_u64(j, "voluntary", s->vcsw);
	json_u64(j, "involuntary", s->ivcsw);
	json_obj_end(j);
	json_u64(j, "migrations", s->migrations);
	if (r->evs)
		json_counters(j, r, s, &g);
	json_u64(j, "address", p->addr);
	json_obj_end(j);
}

/* "overhead": what the probes cost the process, and with --max-overhead its budget. */
static void json_probe_cost(struct json *j, const struct report *r)
{
	double ns = probe_overhead_ns(r);

	json_obj_begin(j, "overhead");
	json_u64(j, "probe_ns", (__u64)ns);
	if (r->proc_cpu_known && r->proc_cpu_ns)
		json_f64(j, "pct_of_process_cpu", 100.0 * ns / r->proc_cpu_ns);
	if (r->max_overhead_pct) {
		double slowdown;

		json_f64(j, "budget_pct", r->max_overhead_pct);
		json_u64(j, "uncounted_probe_ns", (__u64)r->uncounted_probe_ns);
		json_bool(j, "over_budget", over_budget(r, ns, &slowdown));
	}
	json_obj_end(j);
}

static void json_overhead(struct json *j, const struct report *r)
{
	int k;

	if (!r->cal)
		return;
	json_probe_cost(j, r);
	json_obj_begin(j, "calibration");
	for (k = 0; k < CAL_NR; k++) {
		json_obj_begin(j, calib_case_name(k));
		json_f64(j, "bias_ns", r->cal->bias_ns[k]);
		json_f64(j, "mean_ns", r->cal->mean_ns[k]);
		json_f64(j, "min_ns", r->cal->min_ns[k]);
		json_f64(j, "cost_ns", r->cal->cost_ns[k]);
		json_obj_end(j);
	}
	json_obj_end(j);
}

/* fnprof's start-up steps (steps.h), in order: where its first milliseconds and CPU went. */
static void json_steps(struct json *j)
{
	const char *name;
	double wall, cpu;
	int i;

	json_arr_begin(j, "steps");
	for (i = 0; i < steps_count(); i++) {
		steps_get(i, &name, &wall, &cpu);
		json_obj_begin(j, NULL);
		json_str(j, "step", name);
		json_f64(j, "wall_ms", wall);
		json_f64(j, "cpu_ms", cpu);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void json_functions(struct json *j, const struct report *r)
{
	size_t i;

	json_arr_begin(j, "functions");
	for (i = 0; i < r->pl->nr; i++)
		json_function(j, r, i);
	json_arr_end(j);
}

/* --max-overhead with a -p list: a listed process's own share of its work the counts stand for. */
static void json_share(struct json *j, const struct report *c)
{
	json_bool(j, "estimated", estimated(c));
	json_f64(j, "attached_fraction", estimated(c) ? c->attached_fraction : 1.0);
	json_obj_begin(j, "attached_fraction_range");
	json_f64(j, "min", estimated(c) ? c->attached_lo : 1.0);
	json_f64(j, "max", estimated(c) ? c->attached_hi : 1.0);
	json_obj_end(j);
	json_u64(j, "proc_cpu_ns", c->proc_cpu_ns);
}

/*
 * --follow-forks: "children": [{pid, ppid, traced_after_ns, functions,
 * probe_ns}], in fork order; -p P1,P2,...: "processes": [{pid, functions,
 * probe_ns}], the processes after the first (whose figures are the report's).
 */
static void json_children(struct json *j, const struct report *r, bool listed)
{
	struct report c;
	size_t k;

	json_arr_begin(j, listed ? "processes" : "children");
	for (k = 1; k < r->nr_procs; k++) {
		if (!child_report(r, k, &c) || !r->procs[k].ppid != listed)
			continue;
		json_obj_begin(j, NULL);
		json_i64(j, "pid", c.pid);
		if (!listed)
			json_i64(j, "ppid", r->procs[k].ppid);
		if (!listed && r->procs[k].delay_ns)
			json_u64(j, "traced_after_ns", r->procs[k].delay_ns);
		else if (!listed)
			json_null(j, "traced_after_ns");
		if (listed && k < r->nr_shares)
			json_share(j, &c);
		json_functions(j, &c);
		if (c.cal)
			json_u64(j, "probe_ns", (__u64)probe_overhead_ns(&c));
		if (listed && k < r->nr_shares && c.cal)
			json_probe_cost(j, &c);
		if (listed && r->slow)
			slow_print_json_calls(r->slow, r->pl, &(struct slow_pick){ .pid = c.pid }, j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

void report_print_json(const struct report *r, FILE *f)
{
	struct json j;
	size_t i;

	json_report_begin(&j, f, "trace", r->pid, r->interval_s);
	if (!r->pid)
		json_bool(&j, "system_wide", true);   /* every process that maps the objects; pid 0 */
	json_bool(&j, "total", r->total);
	json_bool(&j, "estimated", estimated(r));
	json_f64(&j, "attached_fraction", estimated(r) ? r->attached_fraction : 1.0);
	json_obj_begin(&j, "attached_fraction_range");
	json_f64(&j, "min", estimated(r) ? r->attached_lo : 1.0);
	json_f64(&j, "max", estimated(r) ? r->attached_hi : 1.0);
	json_obj_end(&j);
	if (r->proc_cpu_known)
		json_u64(&j, "proc_cpu_ns", r->proc_cpu_ns);
	if (r->note)
		json_str(&j, "note", r->note);
	json_functions(&j, r);
	if (r->nr_procs > 1) {
		json_children(&j, r, false);
		json_children(&j, r, true);
	}
	if (r->slow) {
		pid_t pids[MAX_LISTED];
		size_t n = listed_pids(r, pids);

		/* A -p list: its first process's calls here (and its fork children's), the others' under processes. */
		slow_print_json(r->slow, r->pl,
				n > 1 ? &(struct slow_pick){ .skip = pids + 1, .nr_skip = n - 1, .head = pids[0] } : NULL, &j);
	}
	json_obj_begin(&j, "dropped");
	for (i = 0; i < DROP_NR; i++)
		json_u64(&j, drop_kinds[i].key, r->drops[i]);
	json_obj_end(&j);
	json_overhead(&j, r);
	sysexits_print_json(r->exit_procs, r->nr_exit_procs, &j);
	json_obj_begin(&j, "fnprof");
	json_u64(&j, "cpu_ns", r->self_cpu_ns);
	json_u64(&j, "peak_rss_kib", r->self_rss_kib);
	if (r->total)
		json_steps(&j);
	json_obj_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}
