// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target/arch.h"
#include "base/clock.h"
#include "trace/calib.h"
#include "base/hist.h"
#include "base/log.h"
#include "target/procmaps.h"
#include "trace/stats.h"
#include "trace/tracer.h"

_Static_assert(CAL_NR <= TRACER_SELF_MAX, "the tracer takes every calibration case");
_Static_assert((int)CAL_RET == (int)SITE_NR, "one calibration case per site kind, at its index");

static const struct {
	void (*fn)(void);
	enum site_kind kind;
	enum exit_mode exit;
	const char *name;    /* the exit modes' cases; an entry kind's is its site's name */
} cases[CAL_NR] = {
	[CAL_EMULATED] = { fnprof_calib_emulated, SITE_EMULATED, EXIT_URETPROBE },
	[CAL_STEPPED] = { fnprof_calib_stepped, SITE_STEPPED, EXIT_URETPROBE },
	[CAL_NOP5] = { fnprof_calib_nop5, SITE_NOP5, EXIT_URETPROBE },
	[CAL_PAIR] = { fnprof_calib_pair, SITE_PAIR, EXIT_URETPROBE },
	[CAL_PAIR_RET] = { fnprof_calib_pair_ret, SITE_PAIR_RET, EXIT_URETPROBE },
	[CAL_JCC] = { fnprof_calib_jcc, SITE_JCC, EXIT_URETPROBE },
	[CAL_JMP] = { fnprof_calib_jmp, SITE_JMP, EXIT_URETPROBE },
	[CAL_CALL] = { fnprof_calib_call, SITE_CALL, EXIT_URETPROBE },
	[CAL_NOP] = { fnprof_calib_nop, SITE_NOP, EXIT_URETPROBE },
	[CAL_RET] = { fnprof_calib_ret, SITE_EMULATED, EXIT_RET, "ret-exit" },
	[CAL_ENTRY_ONLY] = { fnprof_calib_entry_only, SITE_EMULATED, EXIT_NONE, "entry-only" },
	[CAL_TAIL_JMP] = { fnprof_calib_tail_jmp, SITE_EMULATED, EXIT_RET, "tail-jmp" },
};

#define CALIB_CALLS 1000
/*
 * The cases whose probes single-step (~10 us a call here) make half as
 * many calls: 10 ms of fnprof's CPU each, twice a run, was a third of a
 * one-function trace's start-up. Their rounds' range (the error bar)
 * matters more than the last digits of their median.
 */
#define CALIB_CALLS_STEPPED (CALIB_CALLS / 2)
/*
 * A pair's calls single-step twice (~27 us each here), but what is measured
 * is the difference of its two steps, steady to ~50 ns: fewer calls do.
 */
#define CALIB_CALLS_PAIR (CALIB_CALLS / 5)

/* Calls of case k per calibration. */
static unsigned int case_calls(int k)
{
	if (site_paired(k))
		return CALIB_CALLS_PAIR;
	return k == CAL_STEPPED || k == CAL_RET || k == CAL_TAIL_JMP ? CALIB_CALLS_STEPPED : CALIB_CALLS;
}
/*
 * Each case's calls are made in rounds, the cases in turn, so that they are
 * spread over the whole calibration (~30 ms): on a virtual machine the
 * probes' time changes from one moment to the next (a single step costs
 * ~9 us for a while, then ~13 us), and one case's calls made in one go
 * would all catch the same moment.
 */
#define CALIB_ROUNDS 10

#define CALIB_BATCH 50

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * ns per call of fn over n calls, in this thread's CPU time, which holds the
 * probes' kernel time but not the time the thread waited for a CPU (other
 * load would make the cost look larger than the target pays). The median of
 * batches: an interrupt inflates one batch, not the figure.
 */
static double time_calls(void (*fn)(void), unsigned int n)
{
	double per[CALIB_CALLS / CALIB_BATCH + 1], t0;
	unsigned int batch = n && n < CALIB_BATCH ? n : CALIB_BATCH, b, i, nb = n / batch ? n / batch : 1;

	if (nb > sizeof(per) / sizeof(per[0]))
		nb = sizeof(per) / sizeof(per[0]);
	for (b = 0; b < nb; b++) {
		t0 = thread_cpu_s();
		for (i = 0; i < batch; i++)
			fn();
		per[b] = (thread_cpu_s() - t0) * 1e9 / batch;
	}
	qsort(per, nb, sizeof(per[0]), cmp_double);
	return per[nb / 2];
}

/*
 * The ret-mode exits of case k's probe p: the ret of fnprof_calib_ret; or,
 * for the tail-jmp case, the sites fnprof gives a traced function that
 * tail-calls (resolve.c, find_ret_exits): its own jmp, followed, and the
 * callee's ret, which ends the call. 0 or -ENOMEM.
 */
static int calib_ret_exits(struct probe *p, int k)
{
	if (k != CAL_TAIL_JMP) {
		p->exits = malloc(sizeof(*p->exits));
		if (!p->exits)
			return -ENOMEM;
		p->exits[0] = p->offset + arch_calib_ret_offset;
		p->nr_exits = 1;
		return 0;
	}
	p->tails = calloc(2, sizeof(*p->tails));
	if (!p->tails)
		return -ENOMEM;
	p->tails[0] = (struct tail_site){ .offset = p->offset + arch_calib_jmp_offset, .jump = true };
	p->tails[1] = (struct tail_site){
		.offset = p->offset + ((uintptr_t)fnprof_calib_tail_callee - (uintptr_t)fnprof_calib_tail_jmp),
		.in_callee = true,
	};
	p->nr_tails = 2;
	p->follows_tails = true;
	return 0;
}

int calib_self_probes(struct probe probes[CAL_NR], __u32 first_id)
{
	const struct mapping *m;
	struct procmaps *pm;
	int k, err;

	memset(probes, 0, CAL_NR * sizeof(*probes));
	err = procmaps_load(getpid(), &pm);
	if (err)
		return err;
	for (k = 0; k < CAL_NR && !err; k++) {
		struct probe *p = &probes[k];

		m = procmaps_find(pm, (uintptr_t)cases[k].fn);
		if (!m) {
			err = -ENOENT;
			break;
		}
		*p = (struct probe){
			.name = (char *)"calibration", .object = strdup(m->path), .open_path = strdup(m->path),
			.main_exe = true, .offset = (uintptr_t)cases[k].fn - m->start + m->pgoff,
			.id = first_id + k, .kind = cases[k].kind, .exit = cases[k].exit,
		};
		/* The pair's twin: on the second instruction, after the 4-byte lea. */
		if (site_paired(p->kind))
			p->pair_off = 4;
		if (p->exit == EXIT_RET)
			err = calib_ret_exits(p, k);
		if (!p->object || !p->open_path)
			err = -ENOMEM;
	}
	procmaps_free(pm);
	return err;
}

void calib_free_probes(struct probe probes[CAL_NR])
{
	int k;

	for (k = 0; k < CAL_NR; k++) {
		free(probes[k].object);
		free(probes[k].open_path);
		free(probes[k].exits);
		free(probes[k].tails);
	}
}

void calib_figures(struct calibration *c)
{
	const struct fn_stats *st;
	int k;

	for (k = 0; k < CAL_NR; k++) {
		st = &c->pooled[k];
		if (!(c->cases & 1U << k)) {
			c->cost_ns[k] = c->bias_ns[k] = c->mean_ns[k] = c->min_ns[k] = NAN;
			continue;
		}
		/* c->calls counts CALIB_CALLS per calibration; this case made case_calls(k) of them. */
		c->cost_ns[k] = c->time_ns[k] / (c->calls ? (double)c->calls * case_calls(k) / CALIB_CALLS : 1);
		if (cases[k].exit == EXIT_NONE || !st->calls)
			continue;
		c->bias_ns[k] = hist_percentile(st->hist, st->wall_min, st->wall_max, 50, 0);
		c->mean_ns[k] = hist_trimmed_mean(st->hist, 99);
		c->min_ns[k] = st->wall_min;
	}
}

static void widen(double *lo, double *hi, double v)
{
	if (isnan(*lo) || v < *lo)
		*lo = v;
	if (isnan(*hi) || v > *hi)
		*hi = v;
}

/* One round of case k: its median widens the case's range, and its cost per call the cost's. */
static void note_round(struct calibration *c, int k, const struct fn_stats *st, double cost)
{
	double m = hist_percentile(st->hist, st->wall_min, st->wall_max, 50, 0);

	widen(&c->cost_lo[k], &c->cost_hi[k], cost);
	if (cases[k].exit == EXIT_NONE)
		return;
	widen(&c->round_lo[k], &c->round_hi[k], m);
}

/*
 * Each round runs on the next CPU fnprof may use, in turn: a single step's
 * price is the vCPU's, and two vCPUs here differ by up to 30% for a second
 * at a time (~28 us against ~36 for a stepped entry and ret), where the
 * traced threads run on either. Rounds on one CPU only priced the hits of
 * a thread on the other 20-35% wrong (test_tailcall's hits_caller: its
 * on-CPU time read 0 where the truth was 324 us). *saved: the affinity to
 * restore (calib_unpin); false when it stays as it was.
 */
static bool calib_pin_next(struct calibration *c, cpu_set_t *saved)
{
	cpu_set_t one;
	int i, n, cpu;

	if (c->pin_off || sched_getaffinity(0, sizeof(*saved), saved))
		return false;
	n = CPU_COUNT(saved);
	if (n < 2)
		return false;
	for (i = 0, cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, saved) && i++ == (int)(c->next_cpu % n))
			break;
	c->next_cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return !sched_setaffinity(0, sizeof(one), &one);
}

/*
 * Back to the CPUs fnprof had (a CPU of them may have gone offline since:
 * then every CPU its cpuset allows). Should even that fail, it would stay on
 * one CPU for the run: said, and no round moves it again.
 */
static void calib_unpin(struct calibration *c, bool pinned, const cpu_set_t *saved)
{
	cpu_set_t all;
	int err;

	if (!pinned || !sched_setaffinity(0, sizeof(*saved), saved))
		return;
	err = errno;
	c->pin_off = true;
	memset(&all, 0xff, sizeof(all));
	if (sched_setaffinity(0, sizeof(all), &all))
		log_warn("cannot restore fnprof's CPU affinity after a calibration round (%s): it stays on CPU %d",
			 strerror(err), sched_getcpu());
	else
		log_debug("fnprof's CPU affinity could not be restored (%s): all CPUs allowed instead", strerror(err));
}

#define CALIB_SETTLE_CALLS 5

/* One round: calls of each case measured (on the next CPU), pooled into c. */
static int calib_round(struct tracer *t, struct calibration *c, struct fn_stats *st)
{
	cpu_set_t saved;
	bool pinned = calib_pin_next(c, &saved);
	double per;
	int k, err = 0;

	for (k = 0; k < CAL_NR && !err; k++) {
		if (!(c->cases & 1U << k))
			continue;
		/*
		 * A few calls first, not measured: the first ones on a CPU fnprof
		 * has just moved to are dearer (a paired single-stepped 2 ns
		 * function read 140-740 ns after the move, 106-276 before it).
		 */
		if (pinned)
			time_calls(cases[k].fn, CALIB_SETTLE_CALLS);
		/*
		 * Untraced, a call takes ~1 ns (a few instructions and ret): what is
		 * measured, outside and inside the interval, is the probes' own time.
		 */
		err = tracer_calibration_stats(t, k, st);  /* clears what came before */
		per = time_calls(cases[k].fn, case_calls(k) / CALIB_ROUNDS);
		c->time_ns[k] += per * (case_calls(k) / CALIB_ROUNDS);
		if (!err)
			err = tracer_calibration_stats(t, k, st);
		if (!err && st->calls < case_calls(k) / CALIB_ROUNDS)
			err = -EIO;
		if (!err) {
			fn_stats_merge(&c->pooled[k], st);
			note_round(c, k, st, per);
		}
	}
	calib_unpin(c, pinned, &saved);
	return err;
}

/*
 * rounds rounds of every case (a whole calibration: CALIB_ROUNDS, after a
 * warm-up), pooled into c.
 */
static int calib_run(struct tracer *t, struct calibration *c, int rounds)
{
	struct fn_stats *st = calloc(1, sizeof(*st));
	int r, k, err = st ? 0 : -ENOMEM;

	for (k = 0; k < CAL_NR && !err && rounds == CALIB_ROUNDS; k++)
		if (c->cases & 1U << k)
			time_calls(cases[k].fn, case_calls(k) / 20);  /* warm up */
	for (r = 0; r < rounds && !err; r++)
		err = calib_round(t, c, st);
	free(st);
	if (!err) {
		c->calls += CALIB_CALLS / CALIB_ROUNDS * rounds;
		if (rounds == CALIB_ROUNDS)
			c->runs++;
		else
			c->samples += rounds;
		calib_figures(c);
		c->valid = true;
		tracer_set_session_ret_shift(t, calib_ret_exit_delta(c, false));
	}
	return err;
}

int calibrate(struct tracer *t, struct calibration *c, unsigned int mask)
{
	double t0 = monotonic_s();
	int err, k;

	memset(c, 0, sizeof(*c));
	/* Only the cases whose probes the tracer attached (the compat object has no tail jumps). */
	c->cases = mask & CALIB_ALL & tracer_self_mask(t);
	for (k = 0; k < CAL_NR; k++)
		c->round_lo[k] = c->round_hi[k] = c->cost_lo[k] = c->cost_hi[k] = NAN;
	err = calib_run(t, c, CALIB_ROUNDS);
	c->valid = !err;
	for (k = 0; k < CAL_NR; k++) {
		c->costs[k][0] = c->cost_ns[k];
		c->nr_costs[k] = 1;
	}
	c->took_ms = (monotonic_s() - t0) * 1e3;
	if (err)
		log_warn("probe calibration failed (%s): figures include the probes' own time",
			 strerror(-err));
	return err;
}

/* More rounds pooled into c; on failure c keeps what it had: a calibration that worked. */
static int calib_more(struct tracer *t, struct calibration *c, int rounds)
{
	struct calibration more;
	double t0 = monotonic_s();
	int err;

	if (!c->valid)
		return -EINVAL;
	more = *c;
	err = calib_run(t, &more, rounds);
	if (!err) {
		more.took_ms += (monotonic_s() - t0) * 1e3;
		*c = more;
	}
	return err;
}

int calibrate_again(struct tracer *t, struct calibration *c)
{
	return calib_more(t, c, CALIB_ROUNDS);
}

int calib_sample(struct tracer *t, struct calibration *c)
{
	return calib_more(t, c, 1);
}

/*
 * The cost per call again, for the cases in mask (bit k: case k), and the
 * median of all the measurements so far: on this kind of virtual machine it
 * drifts with the host's load (a single-step traps to the hypervisor), and
 * one measurement in a busy moment can be 50% off.
 */
#define CALIB_REFRESH_CALLS 200

static void add_cost(struct calibration *c, int k, double ns)
{
	double v[CALIB_MAX_COSTS];
	unsigned int i, n;

	/* Full: keep every other measurement, spread over the whole run. */
	if (c->nr_costs[k] == CALIB_MAX_COSTS) {
		for (i = 0; i < CALIB_MAX_COSTS / 2; i++)
			c->costs[k][i] = c->costs[k][2 * i];
		c->nr_costs[k] = CALIB_MAX_COSTS / 2;
	}
	c->costs[k][c->nr_costs[k]++] = ns;
	n = c->nr_costs[k];
	memcpy(v, c->costs[k], n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_double);
	c->cost_ns[k] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void calib_refresh_cost(struct calibration *c, unsigned int mask)
{
	cpu_set_t saved;
	bool pinned;
	int k;

	if (!c->valid)
		return;
	pinned = calib_pin_next(c, &saved);
	for (k = 0; k < CAL_NR; k++) {
		if (!(mask & c->cases & (1U << k)))
			continue;
		time_calls(cases[k].fn, 50);  /* warm up, as in calibrate() */
		add_cost(c, k, time_calls(cases[k].fn, CALIB_REFRESH_CALLS));
	}
	calib_unpin(c, pinned, &saved);
}

void calib_cost_spread(const struct calibration *c, unsigned int mask, double *lo, double *hi)
{
	unsigned int k;

	*lo = *hi = 1;
	for (k = 0; k < CAL_NR; k++) {
		if (!(mask & c->cases & (1U << k)) || !(c->cost_ns[k] > 0) || isnan(c->cost_lo[k]))
			continue;
		*lo = fmin(*lo, c->cost_lo[k] / c->cost_ns[k]);
		*hi = fmax(*hi, c->cost_hi[k] / c->cost_ns[k]);
	}
}

unsigned int calib_cases_of(const struct probe *p)
{
	unsigned int mask = 1U << p->kind;

	/* Following tail calls: the hits of its callees' exits (entry-only) and of its jmps (tail-jmp) are priced. */
	if (p->exit == EXIT_RET)
		mask |= 1U << CAL_RET | 1U << CAL_EMULATED |
			(p->follows_tails ? 1U << CAL_ENTRY_ONLY | 1U << CAL_TAIL_JMP : 0);
	else if (p->exit == EXIT_NONE)
		mask |= 1U << CAL_ENTRY_ONLY | 1U << CAL_EMULATED;
	/* A session's calls in processes that declined its return end at ret probes. */
	if (p->session)
		mask |= 1U << CAL_RET | 1U << CAL_EMULATED;
	return mask;
}

unsigned int calib_cases_of_list(const struct probe_list *pl)
{
	unsigned int mask = 0;
	size_t i;

	for (i = 0; i < pl->nr; i++)
		mask |= calib_cases_of(&pl->probes[i]);
	return mask;
}

/* Exit modes other than the uretprobe: their difference from it, measured on an emulated entry. */
static double exit_delta(const double *v, enum exit_mode m)
{
	if (m == EXIT_RET)
		return v[CAL_RET] - v[CAL_EMULATED];
	if (m == EXIT_NONE)
		return v[CAL_ENTRY_ONLY] - v[CAL_EMULATED];
	return 0;
}

static double bias_of(const double *v, const struct probe *p)
{
	double b = v[p->kind] + exit_delta(v, p->exit);

	return p->exit == EXIT_NONE || b < 0 ? 0 : b;
}

double calib_ret_exit_delta(const struct calibration *c, bool cost)
{
	const double *v = cost ? c->cost_ns : c->mean_ns;
	double d;

	if (!c->valid || !(c->cases & 1U << CAL_RET) || !(c->cases & 1U << CAL_EMULATED))
		return 0;
	d = exit_delta(v, EXIT_RET);
	return isnan(d) ? 0 : d;
}

double calib_bias(const struct calibration *c, const struct probe *p)
{
	double b;

	if (!site_paired(p->kind))
		return bias_of(c->mean_ns, p);
	/*
	 * A paired reading's noise goes both ways (a stall in the first step
	 * reads low, in the second high), where the trimmed mean cuts the high
	 * side only: the median is its centre.
	 */
	b = c->bias_ns[p->kind] + exit_delta(c->mean_ns, p->exit);
	return p->exit == EXIT_NONE || b < 0 ? 0 : b;
}

double calib_bias_median(const struct calibration *c, const struct probe *p)
{
	return bias_of(c->bias_ns, p);
}

void calib_bias_range(const struct calibration *c, const struct probe *p, double *lo, double *hi)
{
	double delta = exit_delta(c->bias_ns, p->exit);

	*lo = *hi = NAN;
	if (p->exit == EXIT_NONE || isnan(c->round_lo[p->kind]))
		return;
	*lo = c->round_lo[p->kind] + delta;
	*hi = c->round_hi[p->kind] + delta;
	*lo = *lo < 0 ? 0 : *lo;
	*hi = *hi < *lo ? *lo : *hi;
}

static double cost_of(const double *v, const struct probe *p)
{
	double ns = v[p->kind] + exit_delta(v, p->exit);

	return ns < 0 ? 0 : ns;
}

double calib_cost(const struct calibration *c, const struct probe *p)
{
	return cost_of(c->cost_ns, p);
}

void calib_cost_range(const struct calibration *c, const struct probe *p, double *lo, double *hi)
{
	*lo = *hi = calib_cost(c, p);
	if (isnan(c->cost_lo[p->kind]) || (p->exit != EXIT_URETPROBE && isnan(c->cost_lo[p->exit == EXIT_RET ? CAL_RET :
									 CAL_ENTRY_ONLY])))
		return;
	*lo = cost_of(c->cost_lo, p);
	*hi = cost_of(c->cost_hi, p);
	*hi = *hi < *lo ? *lo : *hi;
}

/* v[a] - v[b] of calibration cases a and b, at least 0; 0 when either was not measured. */
static double case_diff(const struct calibration *c, const double *v, int a, int b)
{
	double ns = v[a] - v[b];

	if (!(c->cases & 1U << a) || !(c->cases & 1U << b) || isnan(ns))
		return 0;
	return ns > 0 ? ns : 0;
}

double calib_exit_hit_cost(const struct calibration *c)
{
	return case_diff(c, c->cost_ns, CAL_RET, CAL_ENTRY_ONLY);
}

void calib_exit_hit_range(const struct calibration *c, double *lo, double *hi)
{
	double entry = c->cost_ns[CAL_ENTRY_ONLY];

	*lo = *hi = calib_exit_hit_cost(c);
	if (!*lo || isnan(c->cost_lo[CAL_RET]) || isnan(c->cost_hi[CAL_RET]))
		return;
	*lo = c->cost_lo[CAL_RET] > entry ? c->cost_lo[CAL_RET] - entry : 0;
	*hi = c->cost_hi[CAL_RET] > entry ? c->cost_hi[CAL_RET] - entry : 0;
	*hi = *hi < *lo ? *lo : *hi;
}

/*
 * A jmp probe's hit lies inside the call that jumps: the tail-jmp case's
 * interval is the ret-exit case's (the same entry, a ret probe closing it)
 * plus that hit, so the difference of their means (what sums and averages
 * lose, as calib_bias) is its price; the range, of the rounds' medians. The
 * entry-only case it was priced as before runs the whole entry program,
 * where tail_jump() only marks a frame: 250-400 ns too much a hit here
 * (~0.5-0.7 us against 0.7-0.9). The callee's ret closes the call through
 * fn_exit_tail rather than fn_exit_ret, as a traced tail caller's does: that
 * difference is in the price too, and belongs there. Measured for every
 * function that follows tail calls (calib_cases_of).
 */
double calib_jmp_hit_cost(const struct calibration *c)
{
	return case_diff(c, c->mean_ns, CAL_TAIL_JMP, CAL_RET);
}

void calib_jmp_hit_range(const struct calibration *c, double *lo, double *hi)
{
	double ret = c->bias_ns[CAL_RET];

	*lo = *hi = calib_jmp_hit_cost(c);
	if (!(c->cases & 1U << CAL_TAIL_JMP) || !(c->cases & 1U << CAL_RET) || isnan(ret) ||
	    isnan(c->round_lo[CAL_TAIL_JMP]) || isnan(c->round_hi[CAL_TAIL_JMP]))
		return;
	/* The rounds' medians, and the price itself (a difference of means, which may lie beyond them). */
	*lo = fmin(*lo, c->round_lo[CAL_TAIL_JMP] > ret ? c->round_lo[CAL_TAIL_JMP] - ret : 0);
	*hi = fmax(*hi, c->round_hi[CAL_TAIL_JMP] > ret ? c->round_hi[CAL_TAIL_JMP] - ret : 0);
}

double calib_cost_seen(const struct calibration *c, const struct probe *p, const struct fn_stats *s)
{
	double cost = calib_cost(c, p), first[CAL_NR], outside, cap;
	int k;

	if (!s->calls || !s->wall_sum)
		return cost;
	/* The part outside the interval, from the first calibration, whose bias was measured with it. */
	for (k = 0; k < CAL_NR; k++)
		first[k] = c->costs[k][0];
	outside = cost_of(first, p) - calib_bias(c, p);
	cap = (double)s->wall_sum / s->calls + (outside > 0 ? outside : 0);
	return cap < cost ? cap : cost;
}

const char *calib_case_name(enum calib_case k)
{
	return (int)k < (int)SITE_NR ? site_kind_name((enum site_kind)k) : k < CAL_NR ? cases[k].name : "?";
}

void calibration_print(const struct calibration *c, FILE *f)
{
	char b[4][16];
	int k;

	fprintf(f, "probe calibration (%u calls per case, %u where a probe single-steps, in %u rounds on each CPU in turn, "
		"%.0f ms):\n", c->calls, c->calls * CALIB_CALLS_STEPPED / CALIB_CALLS,
		c->runs * CALIB_ROUNDS + c->samples, c->took_ms);
	fprintf(f, "  %-16s %-10s %10s %10s %10s %12s\n", "ENTRY", "EXIT", "BIAS", "MEAN", "MIN", "COST/CALL");
	for (k = 0; k < CAL_NR; k++) {
		if (!(c->cases & 1U << k))
			continue;
		fprintf(f, "  %-16s %-10s %10s %10s %10s %12s\n", site_kind_name(cases[k].kind),
			k == CAL_TAIL_JMP ? cases[k].name : exit_mode_name(cases[k].exit), fmt_ns(cases[k].exit == EXIT_NONE ? -1 : c->bias_ns[k], b[0], 16),
			fmt_ns(cases[k].exit == EXIT_NONE ? -1 : c->mean_ns[k], b[3], 16),
			fmt_ns(cases[k].exit == EXIT_NONE ? -1 : c->min_ns[k], b[1], 16),
			fmt_ns(c->cost_ns[k], b[2], 16));
	}
	fprintf(f, "  BIAS: time the probes add inside the measured interval, median (subtracted from percentiles);\n"
		   "  MEAN: its mean over the fastest 99%% (subtracted from sums and averages);\n"
		   "  COST/CALL: time they add to the traced program per call (the overhead).\n");
	if (c->cases & 1U << CAL_TAIL_JMP && c->cases & 1U << CAL_RET)
		fprintf(f, "  tail-jmp: a ret exit reached through a followed tail jmp; its MEAN less ret's (%s) is\n"
			   "  what the probe on the jmp adds inside the call, taken out once per jump.\n",
			fmt_ns(calib_jmp_hit_cost(c), b[0], 16));
}
