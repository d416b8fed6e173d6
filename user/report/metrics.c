// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/hist.h"
#include "report/metrics.h"
#include "base/sanitize.h"

/* One function's figures for one --by label value (or for all, without --by). */
struct series {
	char *label;                 /* --by value; "" without --by; "other" for the folded */
	__u64 calls;
	double sum_ns, oncpu_ns, runq_ns, blocked_ns;
	__u64 buckets[METRICS_BUCKETS + 1];  /* per bucket, not cumulative; last: +Inf */
};

struct fn_series {
	struct series *v;
	size_t nr, cap;
	struct series *other;        /* --max-series: where further label values are summed */
};

struct metrics {
	pthread_mutex_t lock;
	const struct probe_list *pl;
	enum metrics_by by;
	unsigned int max_series, nr_series;
	struct fn_series *fns;       /* pl->nr */
	bool calibrated;             /* the probes' cost is known */
	double probe_ns;
	__u64 folded_calls;          /* calls summed into "other" */
	__u64 drops[DROP_NR];
};

unsigned int metrics_bucket_of(double ns)
{
	int e;
	double frac;

	if (ns < (double)(1ULL << METRICS_MIN_POW))
		return 0;
	frac = frexp(ns, &e);        /* ns = frac * 2^e, frac in [0.5, 1) */
	e -= 1;
	if (e >= METRICS_MAX_POW)
		return METRICS_BUCKETS;
	return 1 + (e - METRICS_MIN_POW) * METRICS_PER_POW + (unsigned int)((frac * 2 - 1) * METRICS_PER_POW);
}

double metrics_bucket_le(unsigned int b)
{
	unsigned int e, j;

	if (b == 0)
		return (double)(1ULL << METRICS_MIN_POW);
	e = METRICS_MIN_POW + (b - 1) / METRICS_PER_POW;
	j = (b - 1) % METRICS_PER_POW;
	return ldexp(1 + (j + 1) / (double)METRICS_PER_POW, e);
}

const char *metrics_by_label(enum metrics_by by)
{
	static const char *const names[] = { [BY_PID] = "pid", [BY_COMM] = "comm", [BY_CGROUP] = "cgroup" };

	return by > BY_NONE && by <= BY_CGROUP ? names[by] : NULL;
}

struct metrics *metrics_new(const struct probe_list *pl, enum metrics_by by, unsigned int max_series)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->fns = calloc(pl->nr ? pl->nr : 1, sizeof(*m->fns));
	if (!m->fns) {
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->pl = pl;
	m->by = by;
	m->max_series = max_series;
	return m;
}

static void free_series(struct series *s)
{
	if (s)
		free(s->label);
}

void metrics_free(struct metrics *m)
{
	size_t i, k;

	if (!m)
		return;
	for (i = 0; i < m->pl->nr; i++) {
		for (k = 0; k < m->fns[i].nr; k++)
			free_series(&m->fns[i].v[k]);
		free(m->fns[i].v);
		free_series(m->fns[i].other);
		free(m->fns[i].other);
	}
	free(m->fns);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct series *new_series(struct fn_series *fs, const char *label)
{
	struct series *v;

	if (fs->nr == fs->cap) {
		size_t cap = fs->cap ? 2 * fs->cap : 4;

		v = realloc(fs->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		fs->v = v;
		fs->cap = cap;
	}
	v = &fs->v[fs->nr];
	memset(v, 0, sizeof(*v));
	v->label = strdup(label);
	if (!v->label)
		return NULL;
	fs->nr++;
	return v;
}

/* The series of function i for label, a new one while under --max-series, else the function's "other". */
static struct series *series_for(struct metrics *m, size_t i, const char *label, bool *folded)
{
	struct fn_series *fs = &m->fns[i];
	struct series *s;
	size_t k;

	/* System-wide, the processes beyond the kernel's slots come as "other" already. */
	*folded = !strcmp(label, "other");
	for (k = 0; !*folded && k < fs->nr; k++)
		if (!strcmp(fs->v[k].label, label))
			return &fs->v[k];
	if (!*folded && m->nr_series < m->max_series && (s = new_series(fs, label))) {
		m->nr_series++;
		return s;
	}
	*folded = true;
	if (!fs->other && (fs->other = calloc(1, sizeof(*fs->other))))
		fs->other->label = strdup("other");
	return fs->other && fs->other->label ? fs->other : NULL;
}

/* Each fine bucket's calls, lowered by the typical bias, into the coarser exported buckets. */
static void add_buckets(struct series *s, const struct fn_stats *st, double shift_ns)
{
	unsigned int b;
	double mid;

	for (b = 0; b < FNPROF_HIST_BUCKETS; b++) {
		if (!st->hist[b])
			continue;
		if (b + 1 == FNPROF_HIST_BUCKETS) {
			s->buckets[METRICS_BUCKETS] += st->hist[b];
			continue;
		}
		mid = b < FNPROF_HIST_SUB ? b : (hist_bucket_lo(b) + hist_bucket_hi(b)) / 2.0;
		s->buckets[metrics_bucket_of(mid > shift_ns ? mid - shift_ns : 0)] += st->hist[b];
	}
}

static void add_one(struct metrics *m, const struct report *r, size_t i, const char *label)
{
	const struct fn_stats *st = &r->stats[i];
	struct fn_figures g;
	struct series *s;
	bool folded;

	if (!st->calls)
		return;
	s = series_for(m, i, m->by == BY_NONE ? "" : label ? label : "unknown", &folded);
	if (folded)
		m->folded_calls += st->calls;
	if (r->cal)
		m->probe_ns += st->calls * calib_cost_seen(r->cal, &r->pl->probes[i], st);
	if (!s)
		return;
	fn_figures_compute(r, st, &g);
	s->calls += st->calls;
	if (!g.timed)
		return;
	s->sum_ns += g.wall_avg * st->calls;
	s->oncpu_ns += g.oncpu_total;
	s->runq_ns += st->runq_sum;
	s->blocked_ns += st->blocked_sum;
	add_buckets(s, st, g.shift_ns);
}

void metrics_add(struct metrics *m, const struct report *r, const char *const *labels)
{
	size_t k, i, nr_blocks = r->nr_procs ? r->nr_procs : 1;
	struct report block;

	pthread_mutex_lock(&m->lock);
	m->calibrated = r->cal != NULL;
	for (i = 0; i < DROP_NR; i++)
		m->drops[i] += r->drops[i];
	for (k = 0; k < nr_blocks; k++) {
		/* Each process's block is a report of its own: the probes' cost averages over its calls. */
		block = *r;
		block.stats = r->stats + k * r->pl->nr;
		report_prepare(&block);
		for (i = 0; i < r->pl->nr; i++)
			add_one(m, &block, i, labels ? labels[k] : NULL);
	}
	pthread_mutex_unlock(&m->lock);
}

/* --- writing ------------------------------------------------------------------- */

void metrics_family(FILE *f, bool openmetrics, const char *name, const char *type, const char *help)
{
	size_t n = strlen(name);

	/* OpenMetrics names a counter's family without the "_total" of its sample. */
	if (openmetrics && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	fprintf(f, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, help, (int)n, name, type);
}

void metrics_label_value(FILE *f, const char *v)
{
	size_t n;

	for (; *v; v += n ? n : 1) {
		n = utf8_char_len(v);
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else if (!n)   /* not UTF-8 (a process named "w\xff"): one bad byte would fail the whole scrape */
			fputs("\xef\xbf\xbd", f);
		else
			fwrite(v, 1, n, f);
	}
}

/* name{function="..",object="..",BY=".."  (the caller closes the braces, or adds labels). */
static void series_start(const struct metrics *m, FILE *f, const char *name, size_t i, const struct series *s)
{
	const struct probe *p = &m->pl->probes[i];

	fprintf(f, "%s{function=\"", name);
	metrics_label_value(f, p->name);
	fputs("\",object=\"", f);
	metrics_label_value(f, p->object);
	fputc('"', f);
	if (m->by != BY_NONE) {
		fprintf(f, ",%s=\"", metrics_by_label(m->by));
		metrics_label_value(f, s->label);
		fputc('"', f);
	}
}

typedef void (*series_fn)(const struct metrics *m, FILE *f, size_t i, const struct series *s);

static void each_series(const struct metrics *m, FILE *f, series_fn fn)
{
	size_t i, k;

	for (i = 0; i < m->pl->nr; i++) {
		for (k = 0; k < m->fns[i].nr; k++)
			fn(m, f, i, &m->fns[i].v[k]);
		if (m->fns[i].other)
			fn(m, f, i, m->fns[i].other);
	}
}

static void write_calls(const struct metrics *m, FILE *f, size_t i, const struct series *s)
{
	series_start(m, f, "fnprof_calls_total", i, s);
	fprintf(f, "} %llu\n", (unsigned long long)s->calls);
}

static bool timed(const struct metrics *m, size_t i)
{
	return m->pl->probes[i].exit != EXIT_NONE;
}

static void write_hist(const struct metrics *m, FILE *f, size_t i, const struct series *s)
{
	__u64 cum = 0;
	unsigned int b;

	if (!timed(m, i))
		return;
	for (b = 0; b <= METRICS_BUCKETS; b++) {
		cum += s->buckets[b];
		series_start(m, f, "fnprof_latency_seconds_bucket", i, s);
		if (b == METRICS_BUCKETS)
			fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
		else
			fprintf(f, ",le=\"%.6g\"} %llu\n", metrics_bucket_le(b) / 1e9, (unsigned long long)cum);
	}
	series_start(m, f, "fnprof_latency_seconds_sum", i, s);
	fprintf(f, "} %.9f\n", s->sum_ns / 1e9);
	series_start(m, f, "fnprof_latency_seconds_count", i, s);
	fprintf(f, "} %llu\n", (unsigned long long)cum);
}

#define WRITE_SECONDS(field, metric)                                                              \
	static void write_##field(const struct metrics *m, FILE *f, size_t i, const struct series *s) \
	{                                                                                        \
		if (!timed(m, i))                                                                \
			return;                                                                  \
		series_start(m, f, metric, i, s);                                                \
		fprintf(f, "} %.9f\n", s->field / 1e9);                                          \
	}
WRITE_SECONDS(oncpu_ns, "fnprof_oncpu_seconds_total")
WRITE_SECONDS(runq_ns, "fnprof_runqueue_seconds_total")
WRITE_SECONDS(blocked_ns, "fnprof_blocked_seconds_total")

static void write_globals(const struct metrics *m, FILE *f, bool om)
{
	unsigned int i;

	metrics_family(f, om, "fnprof_dropped_total", "counter", "Traced events not measured, by reason.");
	for (i = 0; i < DROP_NR; i++)
		fprintf(f, "fnprof_dropped_total{reason=\"%s\"} %llu\n", report_drop_key(i),
			(unsigned long long)m->drops[i]);
	/* Without the calibration (--raw) the probes' cost is unknown: no series rather than a wrong one. */
	if (m->calibrated) {
		metrics_family(f, om, "fnprof_probe_overhead_seconds_total", "counter",
			       "Time the probes added to the traced processes (calls x measured cost per call).");
		fprintf(f, "fnprof_probe_overhead_seconds_total %.9f\n", m->probe_ns / 1e9);
	}
	if (m->by != BY_NONE) {
		metrics_family(f, om, "fnprof_folded_calls_total", "counter",
			       "Calls counted under the label value other: beyond --max-series, or system-wide beyond the "
			       "processes with figures of their own.");
		fprintf(f, "fnprof_folded_calls_total %llu\n", (unsigned long long)m->folded_calls);
	}
}

void metrics_write(struct metrics *m, FILE *f, bool om)
{
	pthread_mutex_lock(&m->lock);
	metrics_family(f, om, "fnprof_calls_total", "counter", "Calls of the function that returned.");
	each_series(m, f, write_calls);
	metrics_family(f, om, "fnprof_latency_seconds", "histogram",
		       "Wall time per call, entry to return, probe bias subtracted.");
	each_series(m, f, write_hist);
	metrics_family(f, om, "fnprof_oncpu_seconds_total", "counter", "Time the calling thread ran inside calls.");
	each_series(m, f, write_oncpu_ns);
	metrics_family(f, om, "fnprof_runqueue_seconds_total", "counter",
		       "Time inside calls spent runnable but waiting for a CPU (preempted).");
	each_series(m, f, write_runq_ns);
	metrics_family(f, om, "fnprof_blocked_seconds_total", "counter",
		       "Time inside calls spent blocked (sleep, I/O, locks).");
	each_series(m, f, write_blocked_ns);
	write_globals(m, f, om);
	pthread_mutex_unlock(&m->lock);
}
