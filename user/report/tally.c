// SPDX-License-Identifier: GPL-2.0
/*
 * The traced functions' figures between reports. Three sets of nr_slots
 * blocks of pl->nr: delta (since the last drain), interval (since the last
 * report) and total (the run). System-wide the reports sum every process
 * into the first block; the metrics get each process's own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/burst.h"
#include "trace/calib.h"
#include "base/clock.h"
#include "report/export.h"
#include "report/heatmap.h"
#include "base/log.h"
#include "base/proc.h"
#include "report/report.h"
#include "profile/slow.h"
#include "trace/stats.h"
#include "report/tally.h"
#include "trace/tracer.h"

struct tally {
	struct tally_conf c;
	struct export *export;          /* sinks (tally_set_sinks) */
	struct heatmap *const *heat;    /* of slots 0..nr_heat-1 */
	size_t nr_heat;
	struct burst *burst;            /* of slots 0..nr_bursts-1 */
	size_t nr_bursts;
	struct burst_share shares[1 + TRACER_MORE_MAX];     /* each burst's share, at the report */
	double uncounted[1 + TRACER_MORE_MAX];              /* and the probe time of its calls not counted */
	struct report_share rshares[1 + TRACER_MORE_MAX];   /* as the report takes them */
	const struct calibration *cal;
	size_t nr_slots, nr;            /* slots, and figures in all of them */
	struct fn_stats *delta, *interval, *total;
	__u64 *open;                    /* calls open at the report, blocked as the figures are */
	bool open_known;                /* and whether the tracer could tell them */
	__u64 interval_drops[DROP_NR], total_drops[DROP_NR];
	struct traced_proc *procs;      /* whose each block is */
	double uncounted_ns;            /* burst mode: probe time of calls not counted, this interval */
	unsigned int nr_reports;
	__u64 self_cpu_last;            /* fnprof's own CPU time at the last report */
};

int tally_new(const struct tally_conf *conf, struct tally **out)
{
	struct tally *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->c = *conf;
	t->nr_slots = tracer_nr_slots(conf->tracer);
	t->nr = t->nr_slots * conf->pl->nr;
	t->delta = calloc(t->nr ? t->nr : 1, sizeof(*t->delta));
	t->interval = calloc(t->nr ? t->nr : 1, sizeof(*t->interval));
	t->total = calloc(t->nr ? t->nr : 1, sizeof(*t->total));
	t->procs = calloc(t->nr_slots ? t->nr_slots : 1, sizeof(*t->procs));
	t->open = calloc(t->nr ? t->nr : 1, sizeof(*t->open));
	if (!t->delta || !t->interval || !t->total || !t->procs || !t->open) {
		tally_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void tally_free(struct tally *t)
{
	if (!t)
		return;
	free(t->delta);
	free(t->interval);
	free(t->total);
	free(t->procs);
	free(t->open);
	free(t);
}

void tally_set_sinks(struct tally *t, struct export *e, struct heatmap *const *heat, size_t nr_heat,
		     struct burst *burst, size_t nr_bursts, const struct calibration *cal)
{
	t->export = e;
	t->heat = heat;
	t->nr_heat = nr_heat < t->nr_slots ? nr_heat : t->nr_slots;
	t->burst = burst;
	t->nr_bursts = burst ? (nr_bursts < t->nr_slots ? nr_bursts : t->nr_slots) : 0;
	t->cal = cal;
}

void tally_begin(struct tally *t)
{
	t->self_cpu_last = proc_self_cpu_ns();
}

const struct traced_proc *tally_procs(struct tally *t, size_t *nr)
{
	*nr = t->nr_slots;
	return tracer_procs(t->c.tracer, t->procs) ? NULL : t->procs;
}

/* The drain's figures to --listen's metrics, each process's apart. */
static void to_export(struct tally *t, const __u64 *drops)
{
	struct report rep = {
		.pid = t->c.pid, .pl = t->c.pl, .stats = t->delta, .nr_procs = t->nr_slots, .procs = t->procs,
		.cal = t->cal, .attached_fraction = 1,
	};

	memcpy(rep.drops, drops, sizeof(rep.drops));
	export_add(t->export, &rep);
}

int tally_drain(struct tally *t)
{
	__u64 drops[DROP_NR] = {};
	size_t i, nr_fn = t->c.pl->nr;

	tracer_note_exited(t->c.tracer);
	if (tracer_collect(t->c.tracer, t->delta, drops) || tracer_procs(t->c.tracer, t->procs))
		return -EIO;
	/* System-wide, the reports show every process together; the metrics keep them apart (--by). */
	for (i = 0; i < t->nr; i++)
		fn_stats_merge(&t->interval[t->c.system_wide ? i % nr_fn : i], &t->delta[i]);
	for (i = 0; i < DROP_NR; i++)
		t->interval_drops[i] += drops[i];
	if (t->export)
		to_export(t, drops);
	/* --svg: every drain is a heatmap column (each listed process's block), or part of one. */
	for (i = 0; i < t->nr_heat; i++) {
		if (heatmap_add(t->heat[i], monotonic_s(), t->delta + i * nr_fn, t->cal)) {
			log_err("cannot keep the heatmap's columns: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
	}
	tracer_release_exited(t->c.tracer);
	return 0;
}

/* One report: an interval's figures, or the total's (total). */
/* A -p list's bursts: each process's share (sh[k], uncounted[k]) as the report takes them. */
static void take_shares(struct tally *t, const struct burst_share *sh, const double *uncounted)
{
	for (size_t k = 0; k < t->nr_bursts; k++)
		t->rshares[k] = (struct report_share){
			.fraction = sh[k].fraction, .lo = sh[k].lo, .hi = sh[k].hi, .work_ns = sh[k].work_ns,
			.uncounted_ns = uncounted[k], .cpu_ns = sh[k].cpu_ns,
		};
}

static void print_report(struct tally *t, const struct fn_stats *stats, const __u64 *drops, double span,
			 bool cpu_known, __u64 cpu, bool total, const struct burst_share *attached, __u64 self_cpu,
			 double self_wall_s, const char *note)
{
	struct report rep = {
		.shares = t->nr_bursts > 1 ? t->rshares : NULL, .nr_shares = t->nr_bursts > 1 ? t->nr_bursts : 0,
		.attached_fraction = attached->fraction, .attached_lo = attached->lo, .attached_hi = attached->hi,
		.attached_work_ns = attached->work_ns,
		.max_overhead_pct = t->c.max_overhead_pct,
		.uncounted_probe_ns = total && t->burst ? t->burst->uncounted_ns : t->uncounted_ns,
		.pid = t->c.pid, .interval_s = span, .total = total, .proc_cpu_known = cpu_known,
		.proc_cpu_ns = cpu, .pl = t->c.pl, .stats = stats, .note = note,
		.nr_procs = t->c.system_wide ? 1 : t->nr_slots, .procs = t->procs,
		.evs = t->c.evs, .cal = t->cal, .self_cpu_ns = self_cpu, .self_wall_s = self_wall_s,
		.open_calls = t->open_known ? t->open : NULL,
	};
	struct slow_view slow;
	__u64 slow_drops[SLOWDROP_NR];
	struct sysexit_proc *exits;

	rep.self_rss_kib = proc_self_status("VmHWM", 10);
	memcpy(rep.drops, drops, sizeof(rep.drops));
	exits = tracer_exit_choices(t->c.tracer, &rep.nr_exit_procs);
	rep.exit_procs = exits;
	/* An interval's slow calls, or the run's kept ones for a total after interval reports. */
	if (t->c.slow && !tracer_slow_drops(t->c.tracer, slow_drops) &&
	    !slow_view(t->c.slow, slow_drops, total && t->nr_reports, total, &slow))
		rep.slow = &slow;
	report_prepare(&rep);
	if (t->c.json)
		report_print_json(&rep, t->c.out);
	else
		report_print_table(&rep, t->c.out, t->c.hist);
	if (rep.slow)
		slow_view_free(&slow);
	free(exits);
}

/*
 * The calls open on the target's threads as the report is taken: entered in
 * it and not returned, yet not lost (they count in the next report). System-
 * wide, folded as the figures are. Read before the drain and after, the
 * larger kept: a call that returns while the buffers are drained was open
 * at the first reading, one entered meanwhile is at the second.
 */
static void take_open(struct tally *t, bool again)
{
	__u64 *raw = calloc(t->nr ? t->nr : 1, sizeof(*raw)), *now = calloc(t->nr ? t->nr : 1, sizeof(*now));
	size_t i, nr_fn = t->c.pl->nr;
	bool ok = raw && now && !tracer_open_calls(t->c.tracer, raw);

	for (i = 0; ok && i < t->nr; i++)
		now[t->c.system_wide ? i % nr_fn : i] += raw[i];
	for (i = 0; ok && i < t->nr; i++)
		t->open[i] = again && t->open[i] > now[i] ? t->open[i] : now[i];
	t->open_known = ok && (!again || t->open_known);
	free(raw);
	free(now);
}

int tally_report(struct tally *t, bool final, const struct tally_moment *m, const char *note)
{
	struct burst_share attached = { 1, 1, 1, 0, 0 }, whole = { 1, 1, 1, 0, 0 };
	__u64 self_cpu = proc_self_cpu_ns();
	/* A run with a single report: that report is the total, start-up included. */
	bool only = final && !t->nr_reports;
	size_t i;
	int err;

	if (t->burst)
		burst_take_share(t->burst, t->c.tracer, m->now, m->cpu_now_ns, &t->uncounted_ns, &attached);
	/* A -p list: the others' own (their clocks are read by the bursts: no hint). */
	t->shares[0] = attached;
	t->uncounted[0] = t->uncounted_ns;
	for (i = 1; i < t->nr_bursts; i++)
		burst_take_share(&t->burst[i], t->c.tracer, m->now, 0, &t->uncounted[i], &t->shares[i]);
	take_shares(t, t->shares, t->uncounted);
	take_open(t, false);
	err = tally_drain(t);
	if (err)
		return err;
	take_open(t, true);
	for (i = 0; i < t->nr_bursts; i++)
		burst_rebase(&t->burst[i], t->c.tracer);
	for (i = 0; i < t->nr; i++)
		fn_stats_merge(&t->total[i], &t->interval[i]);
	for (i = 0; i < DROP_NR; i++)
		t->total_drops[i] += t->interval_drops[i];
	/* A total's own CPU time holds the start-up: its share is of fnprof's whole run. */
	print_report(t, t->interval, t->interval_drops, m->span_s, m->cpu_known, m->cpu_interval_ns, only, &attached,
		     only ? self_cpu : self_cpu - t->self_cpu_last, only ? m->now - t->c.t_exec : m->span_s, note);
	if (final && t->burst)
		burst_total_share(t->burst, &whole);
	for (i = 0; final && t->nr_reports && i < t->nr_bursts; i++) {
		burst_total_share(&t->burst[i], &t->shares[i]);
		t->uncounted[i] = t->burst[i].uncounted_ns;
	}
	if (final && t->nr_reports)
		take_shares(t, t->shares, t->uncounted);
	if (final && t->nr_reports)
		print_report(t, t->total, t->total_drops, m->total_s, m->cpu_known, m->cpu_total_ns, true, &whole,
			     self_cpu, m->now - t->c.t_exec, note);
	memset(t->interval, 0, t->nr * sizeof(*t->interval));
	memset(t->interval_drops, 0, sizeof(t->interval_drops));
	t->nr_reports++;
	t->self_cpu_last = self_cpu;
	return 0;
}
