// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "clock.h"
#include "burst.h"
#include "log.h"
#include "proc.h"

/* An on-phase long enough to see a call rate, and the cycle it belongs to. */
#define MIN_ON_S 0.05
#define FIRST_ON_S 0.05
#define PERIOD_S 2.0

static __u64 target_cpu(const struct burst *b, __u64 last)
{
	__u64 ns;

	/* Once the target is gone, its CPU time stands still. */
	return proc_cpu_precise_ns(b->pid, &ns) || ns < last ? last : ns;
}

void burst_init(struct burst *b, double budget_pct, const struct calibration *cal, pid_t pid,
		struct tracer *t, double now)
{
	*b = (struct burst){
		.budget = budget_pct / 100, .duty = 1, .on = true, .phase_start = now,
		.phase_len = FIRST_ON_S, .pid = pid, .cal = cal, .taken_at = now,
	};
	b->cpu0 = b->cpu_taken = b->cpu_start = target_cpu(b, 0);
	b->probe0 = tracer_peek_probe_ns(t, cal);
}

/* Adds what the target did since the last boundary to the accumulators. */
static void settle(struct burst *b, struct tracer *t)
{
	__u64 cpu = target_cpu(b, b->cpu0);
	double probe = b->on ? tracer_peek_probe_ns(t, b->cal) - b->probe0 : 0;

	if (b->on) {
		b->phase_cpu += cpu - b->cpu0;
		b->phase_probe += probe;
		b->work_on += cpu - b->cpu0 > probe ? cpu - b->cpu0 - probe : 0;
		b->probe_all += probe;
	}
	b->cpu0 = cpu;
	b->probe0 = tracer_peek_probe_ns(t, b->cal);
}

/* At the end of an on-phase: how much did the probes slow the target's own work? */
static void update_duty(struct burst *b)
{
	double work = b->phase_cpu - b->phase_probe, slowdown;

	slowdown = work > 0 ? b->phase_probe / work : 0;
	/* 0.8: stay clearly below the budget, whatever the noise in the estimate. */
	b->duty = slowdown > b->budget ? 0.8 * b->budget / slowdown : 1;
	if (b->duty < 0.005)
		b->duty = 0.005;
	if (getenv("FNPROF_BURST_DUTY"))  /* for measuring the cost of the cycling itself */
		b->duty = atof(getenv("FNPROF_BURST_DUTY"));
	log_debug("burst: attached, probes slow the target by %.1f%%; duty %.3f", 100 * slowdown, b->duty);
	b->phase_cpu = b->phase_probe = 0;
}

static double on_len(const struct burst *b)
{
	return b->duty * PERIOD_S < MIN_ON_S ? MIN_ON_S : b->duty * PERIOD_S;
}

static void switch_phase(struct burst *b, struct tracer *t, double now)
{
	settle(b, t);
	if (!b->on) {
		tracer_resume(t);
		b->on = true;
		/* Attaching takes a moment: the phase starts when the probes are in. */
		b->phase_start = monotonic_s();
		b->phase_len = on_len(b);
		settle(b, t);
		return;
	}
	b->on_s += now - b->phase_start;
	update_duty(b);
	b->phase_start = now;
	if (b->duty >= 1) {  /* within budget: stay attached, look again later */
		b->phase_len = PERIOD_S;
		return;
	}
	/* The breakpoints go at once; the wait for the grace period is already off-time. */
	b->on = false;
	b->phase_len = on_len(b) * (1 - b->duty) / b->duty;
	tracer_pause(t);
}

double burst_tick(struct burst *b, struct tracer *t, double now)
{
	if (now >= b->phase_start + b->phase_len)
		switch_phase(b, t, now);
	return b->phase_start + b->phase_len;
}

double burst_take_fraction(struct burst *b, struct tracer *t, double now, __u64 cpu_hint)
{
	double work_all, work_on, on_s, f;

	settle(b, t);
	if (cpu_hint > b->cpu0 && !proc_alive(b->pid)) {
		/* Gone in an off-phase: its last stretch of work was not traced. */
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
	log_debug("burst: report: target work %.1f ms, %.1f ms of it traced; probes %.1f ms; %.2f s attached",
		  work_all / 1e6, work_on / 1e6, (b->probe_all - b->probe_taken) / 1e6, on_s - b->on_taken);
	b->work_on_taken = b->work_on;
	b->probe_taken = b->probe_all;
	b->on_taken = on_s;
	b->cpu_taken = b->cpu0;
	b->taken_at = now;
	return f > 1 ? 1 : f < 0.001 ? 0.001 : f;
}

void burst_rebase(struct burst *b, struct tracer *t)
{
	b->probe0 = tracer_peek_probe_ns(t, b->cal);
}

double burst_total_fraction(const struct burst *b)
{
	double work_all = (double)(b->cpu0 - b->cpu_start) - b->probe_all;

	return work_all > 1e4 && b->work_on < work_all ? b->work_on / work_all : 1;
}
