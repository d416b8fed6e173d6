// SPDX-License-Identifier: GPL-2.0
/* Probes in bursts under a cost budget (duty.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "profile/duty.h"
#include "base/log.h"
#include "base/proc.h"

/* As burst.c: aim this far under the budget, the cost per event being an estimate. */
#define MARGIN 0.7
/* A burst and the pause after it, at the budget's duty; detaching takes tens of ms. */
#define PERIOD_S 0.5
#define FIRST_ON_S 0.05
#define MIN_ON_S 0.02
/* A burst may run the account into debt by what this much of the target's work earns. */
#define DEBT_WORK_NS 2e8
#define POLL_S 0.01
/* Past this much probe time per ns of the target's work in bursts, the work is not known. */
#define MAX_PROBE_PER_WORK 4
/* Off this long, with the watch probes costing more than the budget meanwhile: they go too. */
#define WATCH_JUDGE_S 0.05

struct duty {
	struct duty_conf c;
	pthread_t thread;
	pthread_mutex_t lock;     /* guards the figures and stop */
	pthread_cond_t wake;
	bool stop, on, watch_in, broken;
	double phase_start, phase_end, next_len;
	__u64 cpu0, ev0[DUTY_NR];
	/* the whole run */
	double probe_all, work_all, work_on, probe_on;
	/* the current burst, or the pause after it */
	double burst_probe, burst_watch, burst_work, burst_rate, off_watch, off_work;
	/* at the last take */
	double taken_work, taken_on;
	struct duty_figures fig;
};

static double budget(const struct duty *d)
{
	return MARGIN * d->c.budget_pct / 100;
}

/* Adds what the target did since the last look to the accounts. Under the lock. */
static void settle(struct duty *d)
{
	__u64 cpu = d->cpu0, ev[DUTY_NR];
	double probe[DUTY_NR], work;
	int g;

	if (proc_cpu_precise_ns(d->c.pid, &cpu) || cpu < d->cpu0)
		cpu = d->cpu0;   /* gone: its CPU time stands still */
	d->c.ops->events(d->c.ctx, ev);
	for (g = 0; g < DUTY_NR; g++) {
		probe[g] = (ev[g] > d->ev0[g] ? ev[g] - d->ev0[g] : 0) * d->c.cost_ns[g];
		d->ev0[g] = ev[g];
	}
	work = (double)(cpu - d->cpu0) - probe[DUTY_MAIN] - probe[DUTY_WATCH];
	work = work > 0 ? work : 0;
	d->cpu0 = cpu;
	d->probe_all += probe[DUTY_MAIN] + probe[DUTY_WATCH];
	d->work_all += work;
	if (d->on) {
		d->work_on += work;
		d->probe_on += probe[DUTY_MAIN] + probe[DUTY_WATCH];
		d->burst_probe += probe[DUTY_MAIN] + probe[DUTY_WATCH];
		d->burst_watch += probe[DUTY_WATCH];
		d->burst_work += work;
	} else {
		d->off_watch += probe[DUTY_WATCH];
		d->off_work += work;
	}
}

static double account(const struct duty *d)
{
	return budget(d) * d->work_all - d->probe_all;
}

static void locked_settle(struct duty *d)
{
	pthread_mutex_lock(&d->lock);
	settle(d);
	pthread_mutex_unlock(&d->lock);
}

static void set_on(struct duty *d, bool on)
{
	pthread_mutex_lock(&d->lock);
	settle(d);
	d->on = on;
	if (on)
		d->fig.bursts++;
	pthread_mutex_unlock(&d->lock);
}

static void start_burst(struct duty *d, double now)
{
	int err = 0;

	if (!d->watch_in)
		err = d->c.ops->attach(d->c.ctx, DUTY_WATCH);
	d->watch_in = !err;
	if (!err)
		err = d->c.ops->attach(d->c.ctx, DUTY_MAIN);
	if (err) {
		/* The kernel refuses (or the target is gone: nothing to say): stay out, and say so once. */
		if (proc_alive(d->c.pid))
			log_err("--max-overhead: cannot attach the probes again (%s): no more bursts", strerror(-err));
		d->broken = true;
		return;
	}
	set_on(d, true);
	d->c.ops->sampling(d->c.ctx, true);
	d->burst_probe = d->burst_watch = d->burst_work = 0;
	d->phase_start = now;
	d->phase_end = now + d->next_len;
}

/* The watch probes alone over the budget (watch ns of probes in work ns)? Then they go in bursts too. */
static void judge_watch(struct duty *d, double watch, double work)
{
	if (d->fig.watch_lost || watch <= budget(d) * work)
		return;
	log_debug("duty: free's probe alone costs %.1f%% of the target's work: it goes in bursts too",
		  work > 0 ? 100 * watch / work : 100.0);
	pthread_mutex_lock(&d->lock);
	d->fig.watch_lost = true;
	pthread_mutex_unlock(&d->lock);
}

static void end_burst(struct duty *d, double now)
{
	double len = now - d->phase_start, slowdown;

	judge_watch(d, d->burst_watch, d->burst_work);
	/* Nothing is sampled from here on: the work while the kernel takes the probes out is not seen. */
	d->c.ops->sampling(d->c.ctx, false);
	set_on(d, false);
	d->c.ops->detach(d->c.ctx, DUTY_MAIN);
	if (d->fig.watch_lost) {
		d->c.ops->detach(d->c.ctx, DUTY_WATCH);
		d->watch_in = false;
	}
	slowdown = d->burst_work > 0 ? d->burst_probe / d->burst_work : 1e9;
	d->burst_rate = len > 0 ? d->burst_probe / len : 0;
	d->next_len = PERIOD_S * budget(d) / (slowdown > 0 ? slowdown : 1e-9);
	d->next_len = d->next_len < MIN_ON_S ? MIN_ON_S : d->next_len > PERIOD_S ? PERIOD_S : d->next_len;
	d->off_watch = d->off_work = 0;
	d->phase_start = monotonic_s();
	log_debug("duty: burst %.1f ms, probes slow the target by %.1f%%; next %.1f ms", len * 1e3,
		  100 * slowdown, d->next_len * 1e3);
}

static void step(struct duty *d, double now)
{
	locked_settle(d);
	if (d->on) {
		if (now < d->phase_end && account(d) > -budget(d) * DEBT_WORK_NS)
			return;
		/* Within budget over the burst and the run: stay in, look again later. */
		if (d->burst_work > 0 && d->burst_probe <= budget(d) * d->burst_work && account(d) >= 0) {
			d->burst_probe = d->burst_watch = d->burst_work = 0;
			d->phase_start = now;
			d->phase_end = now + PERIOD_S;
			return;
		}
		end_burst(d, now);
		return;
	}
	if (d->watch_in && now - d->phase_start >= WATCH_JUDGE_S) {
		judge_watch(d, d->off_watch, d->off_work);
		if (d->fig.watch_lost) {
			d->c.ops->detach(d->c.ctx, DUTY_WATCH);
			d->watch_in = false;
			locked_settle(d);
		}
	}
	if (!d->broken && account(d) >= d->burst_rate * d->next_len)
		start_burst(d, now);
}

static void *duty_thread(void *arg)
{
	struct duty *d = arg;
	struct timespec ts;
	bool stop = false;

	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)(POLL_S * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&d->lock);
		while (!d->stop && pthread_cond_timedwait(&d->wake, &d->lock, &ts) != ETIMEDOUT)
			;
		stop = d->stop;
		pthread_mutex_unlock(&d->lock);
		if (!stop)
			step(d, monotonic_s());
	}
	return NULL;
}

int duty_start(const struct duty_conf *c, struct duty **out)
{
	struct duty *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;
	int err;

	if (!d)
		return -ENOMEM;
	d->c = *c;
	d->on = d->watch_in = true;
	d->fig.bursts = 1;
	d->phase_start = monotonic_s();
	d->phase_end = d->phase_start + FIRST_ON_S;
	d->next_len = MIN_ON_S;
	proc_cpu_precise_ns(c->pid, &d->cpu0);
	c->ops->events(c->ctx, d->ev0);
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&d->thread, NULL, duty_thread, d);
	if (err) {
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return -err;
	}
	*out = d;
	return 0;
}

void duty_take(struct duty *d, struct duty_figures *out)
{
	double work, on;

	pthread_mutex_lock(&d->lock);
	settle(d);
	work = d->work_all - d->taken_work;
	on = d->work_on - d->taken_on;
	/* Without a measurable amount of work (10 us), all of it counts as seen. */
	d->fig.share = work > 1e4 ? on / work : 1;
	d->fig.run_share = d->work_all > 1e4 ? d->work_on / d->work_all : 1;
	/*
	 * The work is CPU time less the probes' estimated cost: when the probes
	 * took most of the time, an error of a few % in their cost per event is
	 * all of the work. Past 4 times the work during the bursts, say so.
	 */
	d->fig.work_unknown = (d->work_all <= 1e4 && d->probe_all > 0) || d->probe_on > MAX_PROBE_PER_WORK * d->work_on;
	if (d->fig.work_unknown)
		d->fig.share = d->fig.run_share = 1;
	d->fig.probe_ns = d->probe_all;
	d->fig.work_ns = d->work_all;
	d->taken_work = d->work_all;
	d->taken_on = d->work_on;
	*out = d->fig;
	pthread_mutex_unlock(&d->lock);
	out->share = out->share < 0.001 ? 0.001 : out->share > 1 ? 1 : out->share;
	out->run_share = out->run_share < 0.001 ? 0.001 : out->run_share > 1 ? 1 : out->run_share;
}

void duty_stop(struct duty *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
