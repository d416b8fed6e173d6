// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <stdlib.h>

#include "base/clock.h"
#include "trace/burst.h"
#include "base/log.h"
#include "base/proc.h"
#include "trace/calib.h"

/*
 * Aim this far under the budget: the cost per call is a calibrated estimate,
 * and what a call really cost the target during bursts was up to 1.5 times
 * that here (measured: slowdowns of 1.04 x budget with 0.8).
 */
#define MARGIN 0.7
/*
 * A burst and the pause after it take about this long at the budget's duty,
 * and at least 5 times what attaching and detaching take (a grace period or
 * two each; 0.7 s to detach 1000 functions).
 */
#define PERIOD_S 1.0
#define PERIOD_SWITCHES 5
/* Bursts long enough to see a call rate; the first one only measures the cost. */
#define MIN_ON_S 0.02
#define FIRST_ON_S 0.05
/* A burst may run the account into debt by what this much of the target's work earns. */
#define DEBT_WORK_NS 5e8
/* Between two looks at the probes' cost in a burst: at least this, and 20 times what a look costs. */
#define POLL_S 0.005
#define IDLE_POLL_S 0.25
/* The cost per call is measured again before a burst, at most this often. */
#define REFRESH_S 0.5
/* A burst's call rate is part of the range when it has this much of the target's work (ns). */
#define RATED_WORK_NS 1e7

static __u64 target_cpu(const struct burst *b, __u64 last)
{
	__u64 ns;

	/* Once the target is gone, its CPU time stands still. */
	return proc_cpu_precise_ns(b->pid, &ns) || ns < last ? last : ns;
}

struct peek {
	const struct calibration *cal;
	double ns;
	__u64 calls;
};

static void price_calls(void *ctx, const struct probe *p, const struct fn_stats *s)
{
	struct peek *pk = ctx;

	pk->ns += s->calls * calib_cost_seen(pk->cal, p, s);
	pk->calls += s->calls;
}

/*
 * What the target's calls in the tracer's current buffer so far cost in
 * probe time, at the calibrated cost per call of each function's probes;
 * and how many calls that is.
 */
static double peek_probe_ns(struct tracer *t, __u32 slot, const struct calibration *cal, __u64 *calls)
{
	struct peek pk = { .cal = cal };

	tracer_peek_slot(t, slot, price_calls, &pk);
	*calls = pk.calls;
	return pk.ns;
}

void burst_init(struct burst *b, double budget_pct, struct calibration *cal, const struct probe_list *pl,
		pid_t pid, struct tracer *t, double now)
{
	bursts_init(b, 1, budget_pct, cal, pl, &pid, t, now);
}

void bursts_init(struct burst *b, size_t n, double budget_pct, struct calibration *cal, const struct probe_list *pl,
		 const pid_t *pids, struct tracer *t, double now)
{
	size_t i, k;

	for (k = 0; k < n; k++) {
		b[k] = (struct burst){
			.budget = budget_pct / 100, .on = true, .first = true, .phase_start = now,
			.phase_end = now + FIRST_ON_S, .pid = pids[k], .slot = k, .cal = cal, .taken_at = now,
			.refreshed_at = now, .list = n > 1,
		};
		for (i = 0; i < pl->nr; i++)
			b[k].cases |= calib_cases_of(&pl->probes[i]);
		b[k].cpu0 = b[k].cpu_taken = b[k].cpu_start = target_cpu(&b[k], 0);
		peek_probe_ns(t, k, cal, &b[k].calls0);
		b[k].paused0 = tracer_paused_calls_of(t, k);
	}
	/* The probes were put in paused (tracer_conf.start_paused): the first burst begins with the work read. */
	tracer_count_calls(t, true);
}

/* Probe time of a call that was not counted: the average of the counted ones. */
static double uncounted_cost(const struct burst *b)
{
	return b->calls_all ? b->probe_counted / b->calls_all : 0;
}

void burst_settle(struct burst *b, __u64 cpu, __u64 calls, double probe, __u64 paused)
{
	__u64 dcalls;
	double dprobe, dcpu = cpu - b->cpu0, unc;

	/*
	 * New calls at the buffer's price per call (which moves as the cost is
	 * measured again). Returns of calls entered before a pause are counted
	 * after it: always take them.
	 */
	dcalls = calls > b->calls0 ? calls - b->calls0 : 0;
	dprobe = calls ? dcalls * probe / calls : 0;
	b->probe_counted += dprobe;
	b->calls_all += dcalls;
	unc = (paused - b->paused0) * uncounted_cost(b);
	b->uncounted_ns += unc;
	b->probe_all += dprobe + unc;
	if (b->on) {
		b->burst_cpu += dcpu;
		b->burst_probe += dprobe;
		b->burst_calls += dcalls;
		b->probe_on += dprobe;
		b->work_on += dcpu > dprobe ? dcpu - dprobe : 0;
	} else {
		b->off_cpu += dcpu > unc ? dcpu - unc : 0;
		b->detach_cost += unc;
	}
	b->cpu0 = cpu;
	b->calls0 = calls;
	b->paused0 = paused;
}

/*
 * A -p list's process that exited (and was reaped) since the last settle:
 * its clock is gone, but not the calls it made meanwhile, counted in the
 * burst. Its last stretch of work, at the burst's CPU per call, else none:
 * counted calls without that work stood for more than they were (a
 * process whose last 250 ms were lost read 8594 calls of 8000, its range
 * 8364..8825).
 */
static __u64 exited_cpu(const struct burst *b, __u64 calls)
{
	/* This burst's CPU per call; before its first reading, the bursts' so far. */
	double per_call = b->burst_calls && b->burst_cpu > 0 ? b->burst_cpu / b->burst_calls :
			  b->calls_all && b->work_on > 0 ? (b->work_on + b->probe_on) / b->calls_all : 0;

	if (!b->list || !b->on || calls <= b->calls0 || !(per_call > 0) || proc_alive(b->pid))
		return b->cpu0;
	return b->cpu0 + (__u64)((calls - b->calls0) * per_call);
}

/* Adds what the target did since the last settle to the accounts. */
static void settle(struct burst *b, struct tracer *t)
{
	__u64 cpu, calls, paused = tracer_paused_calls_of(t, b->slot), ns;
	double probe = peek_probe_ns(t, b->slot, b->cal, &calls);

	if (proc_cpu_precise_ns(b->pid, &ns)) {
		cpu = exited_cpu(b, calls);
		if (cpu > b->cpu0)
			log_debug("burst: pid %d gone: its %llu calls since its last reading taken as %.1f ms of its CPU",
				  b->pid, (unsigned long long)(calls - b->calls0), (cpu - b->cpu0) / 1e6);
	}
	else
		cpu = ns < b->cpu0 ? b->cpu0 : ns;
	burst_settle(b, cpu, calls, probe, paused);
}

/* The target's work so far, and what the budget allows the probes to have spent on it. */
static double work_all(const struct burst *b)
{
	return (double)(b->cpu0 - b->cpu_start) - b->probe_all;
}

double burst_account(const struct burst *b)
{
	return MARGIN * b->budget * work_all(b) - b->probe_all;
}

/* How much the probes slowed the target's own work in the last burst. */
static double burst_slowdown(const struct burst *b)
{
	double work = b->burst_cpu - b->burst_probe;

	return work > 0 ? b->burst_probe / work : b->burst_probe > 0 ? 1e9 : 0;
}

static double period(const struct burst *b)
{
	return PERIOD_SWITCHES * b->switch_s > PERIOD_S ? PERIOD_SWITCHES * b->switch_s : PERIOD_S;
}

/* The next burst's length: about a period at the duty the budget allows. */
static double next_on_len(const struct burst *b)
{
	double s = burst_slowdown(b), len = s > 0 ? period(b) * MARGIN * b->budget / s : period(b);

	return len < MIN_ON_S ? MIN_ON_S : len > period(b) ? period(b) : len;
}

/* What the next burst will cost: its probe time at the last burst's rate, and the detach after it. */
static double next_cost(const struct burst *b)
{
	double rate = b->burst_len > 0 ? b->burst_probe / b->burst_len : 0;

	return rate * next_on_len(b) + b->detach_cost;
}

static void new_burst(struct burst *b)
{
	b->burst_cpu = b->burst_probe = 0;
	b->burst_calls = 0;
}

/*
 * One switch for n processes (a -p list's): a burst as long as the dearest
 * process's budget allows, so that each one's probes stay within its own.
 */
static void start_burst(struct burst *b, size_t n, struct tracer *t, double now)
{
	double t0 = now, len = 0, l;
	size_t k;

	tracer_resume(t);
	for (k = 0; k < n; k++) {
		/* The attach is off-time; the burst starts when the probes are in. */
		settle(&b[k], t);
		b[k].off_s = now - b[k].phase_start;
		b[k].attach_s = monotonic_s() - t0;
		log_debug("burst: pid %d off %.2f s, its CPU %.1f ms, detach cost %.2f ms; attach took %.1f ms",
			  b[k].pid, b[k].off_s, b[k].off_cpu / 1e6, b[k].detach_cost / 1e6, b[k].attach_s * 1e3);
		l = b[k].gone ? PERIOD_S : next_on_len(&b[k]);
		len = !k || l < len ? l : len;
	}
	for (k = 0; k < n; k++) {
		b[k].on = true;
		b[k].burst_len = len;
		new_burst(&b[k]);
	}
	tracer_count_calls(t, true);
	for (k = 0; k < n; k++) {
		b[k].phase_start = monotonic_s();
		b[k].phase_end = b[k].phase_start + len;
	}
}

static double rate_at(const struct burst *b, double scale)
{
	double work = b->burst_cpu - scale * b->burst_probe;

	return work > 0 ? b->burst_calls / work : NAN;
}

void burst_rate(struct burst *b)
{
	double work = b->burst_cpu - b->burst_probe, r = rate_at(b, 1);

	if (work < RATED_WORK_NS || isnan(r))
		return;
	b->rated_work += work;
	b->rate_sum += work * r;
	b->rate_sq_sum += work * r * r;
	b->nr_rated++;
}

/*
 * Student's t for a two-sided 99.73% interval (three standard errors of a
 * normal mean) with df degrees of freedom: a standard deviation estimated
 * from a few bursts is itself uncertain, and three of it fall short (with
 * 20 bursts a range missed the truth by 0.1%).
 */
static double t_9973(int df)
{
	static const double t[] = { 0, 235.8, 19.21, 9.22, 6.62, 5.51, 4.90, 4.53, 4.28, 4.09, 3.96,
				    3.85, 3.76, 3.69, 3.64, 3.59, 3.54, 3.51, 3.48, 3.45, 3.42 };

	if (df < 1)
		return NAN;
	if (df < (int)(sizeof(t) / sizeof(t[0])))
		return t[df];
	/* Beyond: 3.27 at 30, 3.13 at 60, 3.06 at 120 (linear between; an upper bound). */
	return df <= 30 ? 3.27 + (3.42 - 3.27) * (30 - df) / 10 : df <= 60 ? 3.13 + (3.27 - 3.13) * (60 - df) / 30 :
	       df <= 120 ? 3.06 + (3.13 - 3.06) * (120 - df) / 60 : 3.06;
}

double burst_rate_error(const struct burst *b)
{
	double mean, var;

	if (b->nr_rated < BURST_MIN_RATED || !(b->rate_sum > 0))
		return NAN;
	mean = b->rate_sum / b->rated_work;
	var = b->rate_sq_sum / b->rated_work - mean * mean;
	/* The weighted variance, with Bessel's correction for a sample of nr_rated. */
	var = var > 0 ? var * b->nr_rated / (b->nr_rated - 1) : 0;
	return t_9973(b->nr_rated - 1) * sqrt(var / b->nr_rated) / mean;
}

/* The burst of one process ends: its figures taken. Whether it may stay attached (within its budget). */
static bool burst_ended(struct burst *b, struct tracer *t, double now)
{
	double s;

	settle(b, t);
	burst_rate(b);
	b->burst_len = now - b->phase_start;
	b->on_s += b->burst_len;
	b->nr_bursts++;
	b->first = false;
	s = burst_slowdown(b);
	log_debug("burst: pid %d %.1f ms, %llu calls in %.2f ms of CPU (probes %.2f ms): %.2f a ms of work, "
		  "probes slow it by %.1f%%; account %.2f ms", b->pid, b->burst_len * 1e3,
		  (unsigned long long)b->burst_calls, b->burst_cpu / 1e6, b->burst_probe / 1e6, 1e6 * rate_at(b, 1),
		  100 * s, burst_account(b) / 1e6);
	return s <= MARGIN * b->budget && burst_account(b) >= 0;
}

/* The bursts end; attached on while every process is within its budget, else the probes go. */
static void end_burst(struct burst *b, size_t n, struct tracer *t, double now)
{
	bool stay = true;
	double t0;
	size_t k;

	tracer_count_calls(t, false);
	for (k = 0; k < n; k++)
		stay &= burst_ended(&b[k], t, now) || b[k].gone;
	if (stay) {
		/* Within budget: stay attached, look again later. */
		tracer_count_calls(t, true);
		for (k = 0; k < n; k++) {
			new_burst(&b[k]);
			b[k].phase_start = now;
			b[k].phase_end = now + period(&b[0]);
		}
		return;
	}
	for (k = 0; k < n; k++) {
		b[k].on = false;
		b[k].off_cpu = b[k].off_s = b[k].detach_cost = 0;
		b[k].phase_start = b[k].phase_end = now;
	}
	t0 = monotonic_s();
	tracer_pause(t);
	for (k = 0; k < n; k++) {
		/* The calls that hit the probes until the kernel took them out. */
		settle(&b[k], t);
		b[k].switch_s = b[k].attach_s + monotonic_s() - t0;
		log_debug("burst: pid %d: detach took %.1f ms, cost it %.2f ms", b[k].pid, (monotonic_s() - t0) * 1e3,
			  b[k].detach_cost / 1e6);
	}
}

/* Off: when will the account pay for the next burst, at the target's recent rate of work? */
static double next_start(const struct burst *b, double now)
{
	double off = now - b->phase_start, rate, need = next_cost(b) - burst_account(b);

	if (need <= 0)
		return now;
	/* Early in the pause, its rate is not known yet: the last burst's rate of work instead. */
	if (off > 0.05)
		rate = b->off_cpu / off;
	else
		rate = b->burst_len > 0 ? (b->burst_cpu - b->burst_probe) / b->burst_len : 0;
	if (rate <= 0)
		return now + IDLE_POLL_S;
	return now + need / (MARGIN * b->budget * rate);
}

/*
 * The cost per call drifts: measure it again now and then, between bursts (in
 * fnprof's own thread, on its own functions), and take the median.
 */
static void refresh_cost(struct burst *b, double now)
{
	if (b->on || now - b->refreshed_at < REFRESH_S)
		return;
	calib_refresh_cost(b->cal, b->cases);
	b->refreshed_at = now;
}

double burst_tick(struct burst *b, struct tracer *t, double now)
{
	return bursts_tick(b, 1, t, now);
}

/* Whether a process's account ran into more debt than a burst may. */
static bool in_debt(const struct burst *b)
{
	return burst_account(b) < -MARGIN * b->budget * DEBT_WORK_NS;
}

/* Off: when every process's account pays for the next burst. */
static double next_start_all(const struct burst *b, size_t n, double now)
{
	double next = now, at;

	for (size_t k = 0; k < n; k++) {
		at = b[k].gone ? now : next_start(&b[k], now);
		next = at > next ? at : next;
	}
	return next;
}

double bursts_tick(struct burst *b, size_t n, struct tracer *t, double now)
{
	double t0 = monotonic_s(), look, next;
	bool debt = false;
	size_t k;

	for (k = 0; k < n; k++) {
		settle(&b[k], t);
		/* One of a list that has exited earns nothing more: it must not keep the others' probes out. */
		b[k].gone = n > 1 && !proc_alive(b[k].pid);
		debt |= !b[k].gone && in_debt(&b[k]);
	}
	refresh_cost(b, now);
	look = monotonic_s() - t0;
	if (b->on && (now >= b->phase_end || debt))
		end_burst(b, n, t, now);
	else if (!b->on && next_start_all(b, n, now) <= now)
		start_burst(b, n, t, now);
	if (b->on) {
		/* Look often in the first burst, which has no idea yet of the cost, less later. */
		next = now + POLL_S + 20 * look + (b->first ? 0 : b->burst_len / 4);
		next = next < b->phase_end ? next : b->phase_end;
	} else
		next = next_start_all(b, n, now);
	now = monotonic_s();
	return next < now ? now : next > now + IDLE_POLL_S ? now + IDLE_POLL_S : next;
}

/*
 * The counts at the probes' cost x scale over the counts at their median:
 * the work in bursts (work_on, probe_on of it probe time at the median) and
 * in all (cpu, probe) moves with it.
 */
static double cost_shift(double scale, double work_on, double probe_on, double cpu, double probe)
{
	double on = work_on - (scale - 1) * probe_on, all = cpu - scale * probe;

	return on > 0 && all > 0 ? all / (cpu - probe) * work_on / on : NAN;
}

/* The range of sh->fraction: see struct burst_share. */
static void share_range(const struct burst *b, double work_on, double probe_on, double cpu, double probe,
			struct burst_share *sh)
{
	double err = burst_rate_error(b), lo, hi, at_lo, at_hi, up, down;

	sh->lo = sh->hi = NAN;
	lo = hi = 1;
	if (b->cal)
		calib_cost_spread(b->cal, b->cases, &lo, &hi);
	/*
	 * The counts at the cost's two ends may both lie above the counts at
	 * its median, or both below: the range takes the farthest of the two
	 * and of the median itself each way, and the bursts' rate error widens
	 * both sides. (Clamped at the median alone, a range once ended at the
	 * estimate, 399432 calls, where the truth was 400000.)
	 */
	at_lo = cost_shift(lo, work_on, probe_on, cpu, probe);
	at_hi = cost_shift(hi, work_on, probe_on, cpu, probe);
	up = fmax(1, fmax(at_lo, at_hi)) * (1 + err);
	down = fmin(1, fmin(at_lo, at_hi)) * (1 - err);
	log_debug("burst: %d bursts' call rates: mean %.2f a ms of work, error %.1f%%; the probes' cost x %.2f "
		  "to %.2f", b->nr_rated, b->rated_work > 0 ? 1e6 * b->rate_sum / b->rated_work : 0, 100 * err,
		  lo, hi);
	if (isnan(at_lo) || isnan(at_hi) || isnan(up) || isnan(down) || down <= 0 || sh->fraction >= 1)
		return;
	/* More calls than counted stand for a smaller share, and the other way round. */
	sh->lo = sh->fraction / up;
	sh->hi = sh->fraction / down;
	sh->hi = sh->hi > 1 ? 1 : sh->hi;
}

static double clamp_share(double f)
{
	return f > 1 ? 1 : f < 0.001 ? 0.001 : f;
}

void burst_take_share(struct burst *b, struct tracer *t, double now, __u64 cpu_hint, double *uncounted_ns,
		      struct burst_share *sh)
{
	double work_all, work_on, on_s, f;

	settle(b, t);
	if (cpu_hint > b->cpu0 && !proc_alive(b->pid)) {
		/* Its last stretch of work, after the last reading of its clock. */
		if (b->on)
			b->work_on += cpu_hint - b->cpu0;
		b->cpu0 = cpu_hint;
	}
	on_s = b->on_s + (b->on ? now - b->phase_start : 0);
	work_all = (double)(b->cpu0 - b->cpu_taken) - (b->probe_all - b->probe_taken);
	work_on = b->work_on - b->work_on_taken;
	/* Without a measurable amount of work (10 us), fall back to the attached time. */
	if (work_all > 1e4)
		f = work_on / work_all;
	else
		f = now > b->taken_at ? (on_s - b->on_taken) / (now - b->taken_at) : 1;
	log_debug("burst: report: target work %.1f ms, %.1f ms of it traced; probes %.1f ms "
		  "(%.1f ms uncounted); %.2f s attached, %d bursts", work_all / 1e6, work_on / 1e6, (b->probe_all - b->probe_taken) / 1e6,
		  (b->uncounted_ns - b->uncounted_taken) / 1e6, on_s - b->on_taken, b->nr_bursts);
	sh->fraction = clamp_share(f);
	sh->work_ns = work_all > 1e4 ? work_all : 0;
	sh->cpu_ns = b->cpu0 - b->cpu_taken;
	share_range(b, work_on, b->probe_on - b->probe_on_taken, b->cpu0 - b->cpu_taken, b->probe_all - b->probe_taken,
		    sh);
	*uncounted_ns = b->uncounted_ns - b->uncounted_taken;
	b->work_on_taken = b->work_on;
	b->probe_taken = b->probe_all;
	b->uncounted_taken = b->uncounted_ns;
	b->probe_on_taken = b->probe_on;
	b->on_taken = on_s;
	b->cpu_taken = b->cpu0;
	b->taken_at = now;
}

void burst_rebase(struct burst *b, struct tracer *t)
{
	peek_probe_ns(t, b->slot, b->cal, &b->calls0);
}

static double total_fraction(const struct burst *b, double work_all)
{
	return work_all > 1e4 && b->work_on < work_all ? b->work_on / work_all : 1;
}

void burst_total_share(const struct burst *b, struct burst_share *sh)
{
	double work_all = (double)(b->cpu0 - b->cpu_start) - b->probe_all;

	sh->fraction = total_fraction(b, work_all);
	sh->work_ns = work_all > 1e4 ? work_all : 0;
	sh->cpu_ns = b->cpu0 - b->cpu_start;
	share_range(b, b->work_on, b->probe_on, b->cpu0 - b->cpu_start, b->probe_all, sh);
}
