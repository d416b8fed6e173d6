// SPDX-License-Identifier: GPL-2.0
/*
 * The offcpu, mutex and heap profiles: reads the weighted stacks their BPF
 * objects count and hands them to the stack pipeline (stackrows.h), around
 * whose table or JSON it prints each profile's header and drops; and their
 * pprof files. The kinds differ only in their prof_desc (what the values
 * mean) and in how they are loaded (prof_src).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/array.h"
#include "base/budget.h"
#include "stacks/dwstacks.h"
#include "base/json.h"
#include "base/log.h"
#include "base/percpu.h"
#include "profile/prof_src.h"
#include "profile/proctab.h"
#include "profile/profiles.h"
#include "stacks/stackrows.h"
#include "stacks/symbolize.h"

/* One running profile. */
struct prof {
	struct prof_src src;
	bool on;
	struct stackrows *rows;            /* its counts, stacks and rows */
	struct proctab *procs;             /* -a: the processes its object saw, their names and symbolizers */
	__u64 drops_prev[PDROP_NR];
	double run_s;
	unsigned int nr_reports;           /* after intervals (-i), the last report is followed by a total */
	bool dutied;                       /* src.duty said the probes saw a share: duty holds it */
	struct prof_duty duty;
	__u64 inuse_lost;                  /* heap: pointers in use at the last read whose stack is not known */
};

struct profiles {
	struct prof_conf c;
	pid_t pid;
	struct symbolizer *sym;
	struct prof p[PROF_KIND_NR];
	int nr_on;
};

typedef int (*start_fn)(const struct prof_conf *c, pid_t pid, struct prof_src *out);

static const start_fn starters[PROF_KIND_NR] = {
	[PROF_OFFCPU] = offcpu_start, [PROF_MUTEX] = mutex_start, [PROF_HEAP] = heap_start,
};

void profiles_stop(struct profiles *ps)
{
	int k;

	if (!ps)
		return;
	for (k = 0; k < PROF_KIND_NR; k++) {
		struct prof *p = &ps->p[k];

		if (p->on && p->src.stop)
			p->src.stop(&p->src);
		stackrows_free(p->rows);
		proctab_free(p->procs);   /* before ps->sym, their parent */
	}
	symbolizer_free(ps->sym);
	free(ps);
}

/* -a: a process's symbolizer and name, from the profile's table of processes. */
static struct symbolizer *proc_sym(void *ctx, __u32 pid)
{
	return proctab_symbolizer(ctx, pid);
}

static const char *proc_comm(void *ctx, __u32 pid)
{
	return proctab_comm(ctx, pid);
}

/* Kind k's objects, and its stack pipeline over their maps. 0 or -errno. */
static int start_one(struct profiles *ps, struct prof *p, int k)
{
	struct stackrows_conf rc = {
		.pid = ps->pid, .sym = ps->sym, .per_thread = ps->c.per_thread, .top = ps->c.top,
		.name_process = ps->c.share > 1,
	};
	int err = starters[k](&ps->c, ps->pid, &p->src);

	if (err)
		return err;
	p->on = true;
	rc.desc = p->src.desc;
	rc.stacks_fd = p->src.stacks_fd;
	rc.kstacks_fd = p->src.kstacks_fd;
	rc.dw = p->src.dw;
	if (p->src.procs_fd >= 0) {
		if (!(p->procs = proctab_new(ps->sym)))
			return -ENOMEM;
		rc.sym_of = proc_sym;
		rc.comm_of = proc_comm;
		rc.ctx = p->procs;
	}
	return stackrows_new(&rc, &p->rows);
}

int profiles_start(const struct prof_conf *c, pid_t pid, struct profiles **out)
{
	struct profiles *ps = calloc(1, sizeof(*ps));
	int k, err = 0;

	if (!ps)
		return -ENOMEM;
	ps->c = *c;
	ps->pid = pid;
	ps->sym = symbolizer_new(pid, c->max_memory);
	if (!ps->sym)
		err = -ENOMEM;
	for (k = 0; !err && k < PROF_KIND_NR; k++) {
		if (!(c->kinds & 1U << k) || !starters[k])
			continue;
		err = start_one(ps, &ps->p[k], k);
		ps->nr_on += ps->p[k].on;
	}
	if (err) {
		profiles_stop(ps);
		return err;
	}
	*out = ps;
	return 0;
}

void profiles_arm(struct profiles *ps)
{
	int k;

	for (k = 0; ps && k < PROF_KIND_NR; k++)
		if (ps->p[k].on && ps->p[k].src.arm)
			ps->p[k].src.arm(&ps->p[k].src);
}

void profiles_refresh(struct profiles *ps)
{
	int k;

	if (!ps)
		return;
	symbolizer_refresh(ps->sym);
	for (k = 0; k < PROF_KIND_NR; k++) {
		if (ps->p[k].procs)
			proctab_scan(ps->p[k].procs, ps->p[k].src.procs_fd);
		else if (ps->p[k].on)
			stackrows_refresh(ps->p[k].rows);
	}
}

/* --- reading ---------------------------------------------------------------- */

/* Adds nr values of a stack's, from value from on, in their units (counts: fixed point). */
static void add_values(const struct prof_desc *d, struct stack_count *e, const __u64 *v, int from, int nr)
{
	int i;

	for (i = from; i < from + nr; i++)
		e->total[i] += d->fixed[i] ? (double)v[i - from] / PROF_FP_ONE : (double)v[i - from];
}

/* A new entry for key k at the end of *e; NULL when out of memory. */
static struct stack_count *add_entry(struct stack_count **e, size_t *nr, size_t *cap, const struct prof_key *k)
{
	if (ARRAY_RESERVE(*e, *nr + 1, *cap))
		return NULL;
	(*e)[*nr] = (struct stack_count){
		.key = { .pid = k->pid, .tid = k->tid, .label = k->label, .ustack = k->ustack, .kstack = k->kstack, .caller = k->caller },
	};
	return &(*e)[(*nr)++];
}

/* --call-graph dwarf: the unwound stacks' values (their ids apart from the stack map's), after the map's. */
static void add_dw_counts(struct prof *p, struct stack_count **e, size_t *nr, size_t *cap, bool final)
{
	struct dwstack_prof *c = NULL;
	struct stack_count *hit;
	size_t n, i;

	if (!p->src.dw)
		return;
	dwstacks_sync(p->src.dw, final);
	n = dwstacks_prof_counts(p->src.dw, &c);
	for (i = 0; c && i < n; i++)
		if ((hit = add_entry(e, nr, cap, &c[i].key)))
			add_values(p->src.desc, hit, c[i].val.v, 0, p->src.desc->nr_values);
	free(c);
}

/*
 * Every counted stack of the profile so far, unsorted; the heap's sampled
 * pointers not freed yet as entries of their own with values 2 and 3 (in
 * use), which the take sums into their stacks' entries.
 */
static struct stack_count *read_counts(struct prof *p, size_t *nr, bool final)
{
	const struct prof_desc *d = p->src.desc;
	struct prof_key key, next, *cur = NULL;
	struct stack_count *e = NULL, *hit;
	__u64 ptr, nptr, *pcur = NULL, v[2];
	struct prof_live *live = NULL;
	struct prof_val val;
	size_t cap = 0, nl = 0, lcap = 0, i;

	*nr = 0;
	if (p->procs)   /* the names of processes first seen since the last look */
		proctab_scan(p->procs, p->src.procs_fd);
	while (!bpf_map_get_next_key(p->src.counts_fd, cur, &next)) {
		key = next;
		cur = &key;
		if (!bpf_map_lookup_elem(p->src.counts_fd, &key, &val) && (hit = add_entry(&e, nr, &cap, &key)))
			add_values(d, hit, val.v, 0, d->nr_values);
	}
	while (p->src.live_fd >= 0 && !bpf_map_get_next_key(p->src.live_fd, pcur, &nptr)) {
		ptr = nptr;
		pcur = &ptr;
		if (ARRAY_RESERVE(live, nl + 1, lcap))
			break;
		if (!bpf_map_lookup_elem(p->src.live_fd, &ptr, &live[nl]))
			nl++;
	}
	/*
	 * After the live map is read: a pointer's stack was sent before the
	 * pointer went in, so this sync has every stack those ids name.
	 */
	add_dw_counts(p, &e, nr, &cap, final);
	p->inuse_lost = 0;
	for (i = 0; i < nl; i++) {
		if (p->src.dw && live[i].key.ustack == PROF_DW_ID)  /* the stack sent under dw_id (dwarf) */
			live[i].key.ustack = dwstacks_by_id(p->src.dw, live[i].dw_id);
		p->inuse_lost += live[i].key.ustack < 0;
		if (!(hit = add_entry(&e, nr, &cap, &live[i].key)))
			continue;
		v[0] = live[i].objects;
		v[1] = live[i].bytes;
		add_values(d, hit, v, 2, 2);
	}
	free(live);
	/* The map was just read through: the ids it no longer holds can go. */
	if (p->src.dw && p->src.live_fd >= 0)
		dwstacks_prune_soon(p->src.dw);
	return e;
}

/* The values unknown (bit v): states whose events were not all seen. */
static unsigned int unknown_values(const struct prof *p)
{
	unsigned int bits = 0;
	int v;

	for (v = 0; p->dutied && p->duty.snapshot_lost && v < p->src.desc->nr_values; v++)
		if (p->src.desc->snapshot[v])
			bits |= 1U << v;
	return bits;
}

/* --- reports ------------------------------------------------------------------ */

/* Value v of a total of the profile, or "-" where it is unknown. */
static const char *fmt_of(const struct prof *p, const struct stack_rows *t, int v, double x, char *buf,
			  size_t size)
{
	if (t->unknown & 1U << v)
		return "-";
	return stackrows_fmt(&p->src.desc->types[v], x, buf, size);
}

static void print_drops(FILE *out, const __u64 *d)
{
	if (d[PDROP_USTACK] || d[PDROP_KSTACK] || d[PDROP_COUNTS_FULL] || d[PDROP_STATE])
		fprintf(out, "dropped: %llu events not counted (map full), %llu without per-thread state or "
			     "not tracked (map full); stacks lost: %llu user, %llu kernel (stack map full or collision)\n",
			(unsigned long long)d[PDROP_COUNTS_FULL], (unsigned long long)d[PDROP_STATE],
			(unsigned long long)d[PDROP_USTACK], (unsigned long long)d[PDROP_KSTACK]);
	if (d[PDROP_NO_WAKER])
		fprintf(out, "waits whose waker was not seen: %llu (charged to [waker unknown])\n",
			(unsigned long long)d[PDROP_NO_WAKER]);
}

/* --call-graph dwarf: how the user stacks were walked, and what fell back to frame pointers. */
static void print_unwind(const struct prof *p, FILE *out, const __u64 *d)
{
	struct dwstack_stats st;

	if (!p->src.dw)
		return;
	dwstacks_stats(p->src.dw, &st);
	fprintf(out, "stacks: unwound with DWARF CFI: %llu, %llu cut short by the copy's end, %llu lost (table full), "
		     "%llu not found by id; %llu with frame pointers instead; ring buffer full %llu times; "
		     "unwinding used %.1f ms of CPU", (unsigned long long)st.samples, (unsigned long long)st.truncated,
		(unsigned long long)st.lost, (unsigned long long)st.ids_lost, (unsigned long long)d[PDROP_DW_FP],
		(unsigned long long)d[PDROP_RINGBUF], st.cpu_s * 1e3);
	dwstacks_print_frames(&st, out);
	if (p->src.live_fd >= 0 || st.ids_reused)
		fprintf(out, "stacks of blocks in use: %llu not known ([stack lost]); ids given twice: %llu (their stacks "
			     "forgotten); stacks kept by id: %llu\n", (unsigned long long)p->inuse_lost,
			(unsigned long long)st.ids_reused, (unsigned long long)st.ids_held);
}

/* The probes' cost, at their cost per event measured at start. */
static double cost_ns(const struct prof *p, const __u64 *d)
{
	return d[PDROP_SEEN] * p->src.event_cost_ns + d[PDROP_FREED] * p->src.free_cost_ns;
}

static void print_cost(const struct prof *p, FILE *out, const __u64 *d)
{
	if (!p->src.event_cost_ns)
		return;
	fprintf(out, "probe cost (estimate): ~%.1f ms added to the target, %llu %s at ~%.2f us each", cost_ns(p, d) / 1e6,
		(unsigned long long)d[PDROP_SEEN], p->src.desc->what, p->src.event_cost_ns / 1e3);
	if (p->src.free_cost_ns)
		fprintf(out, ", %llu frees at ~%.2f us", (unsigned long long)d[PDROP_FREED], p->src.free_cost_ns / 1e3);
	fprintf(out, " (measured at start on fnprof's own %s)", p->src.free_cost_ns ? "allocator" : "events");
	if (p->dutied)
		fprintf(out, "; ~%.1f%% of its own work over the run, budget %g%% (--max-overhead)", p->duty.cost_pct,
			p->duty.budget_pct);
	fputc('\n', out);
}

static void print_header(struct profiles *ps, struct prof *p, FILE *out, const struct stack_rows *t, double span,
			 const __u64 *d, bool total)
{
	const struct prof_desc *desc = p->src.desc;
	const struct pprof_type *r = &desc->types[desc->rank], *s = &desc->types[desc->second];
	char a[32], b[32], c[32], who[32];

	snprintf(who, sizeof(who), p->procs ? "all processes" : "pid %d", ps->pid);
	fprintf(out, "\n%s %s %s, %.2f s, %llu %s seen, %llu kept (%s): %s %s, %s %s", prof_kind_name(desc->kind),
		total ? "profiled:" : "profiling:", who, span, (unsigned long long)d[PDROP_SEEN], desc->what,
		(unsigned long long)d[PDROP_KEPT], p->src.note, r->type, stackrows_fmt(r, t->sum[desc->rank], a, sizeof(a)),
		s->type, fmt_of(p, t, desc->second, t->sum[desc->second], b, sizeof(b)));
	if (desc->label_key)
		fprintf(out, " (%s %s, %s %s)", desc->labels[0], stackrows_fmt(r, t->by_label[0][desc->rank], b, sizeof(b)),
			desc->labels[1], stackrows_fmt(r, t->by_label[1][desc->rank], c, sizeof(c)));
	fputc('\n', out);
	print_cost(p, out, d);
	if (!p->dutied)
		return;
	if (p->duty.work_unknown)
		fprintf(out, "~ the target's own work could not be told from the probes' cost (it did little but "
			     "allocate): counts and sizes are those seen, a lower bound (--max-overhead %g)\n",
			p->duty.budget_pct);
	else
		fprintf(out, "~ estimated: the probes saw %.1f%% of the target's work (--max-overhead %g, %u bursts); "
			     "counts and sizes extrapolated\n", 100 * p->duty.share, p->duty.budget_pct, p->duty.bursts);
	if (p->duty.snapshot_lost)
		fprintf(out, "in use: unknown (%s)\n", p->duty.snapshot_lost);
	else if (desc->kind == PROF_HEAP)
		fprintf(out, "in use: a lower bound (only blocks allocated during the bursts are tracked)\n");
	if (total && p->duty.cost_pct > p->duty.budget_pct)
		fprintf(out, "warning: the probes slowed the target by ~%.1f%%, over the budget: a burst and its "
			     "detach cost more than a run this short allows\n", p->duty.cost_pct);
}

static void print_table(struct profiles *ps, struct prof *p, FILE *out, const struct stack_rows *t, double span,
			const __u64 *d, bool total)
{
	print_header(ps, p, out, t, span, d, total);
	stackrows_table(p->rows, out, t);
	print_drops(out, d);
	print_unwind(p, out, d);
	if (p->procs)
		proctab_print_stats(p->procs, out);
	budget_print(symbolizer_budget(ps->sym), out);
	fflush(out);
}

/* --max-overhead: what the probes saw and cost; null without it. */
static void json_duty(struct json *j, const struct prof *p)
{
	json_bool(j, "estimated", p->dutied);
	if (!p->dutied) {
		json_null(j, "overhead");
		return;
	}
	if (p->duty.work_unknown)
		json_null(j, "attached_fraction");
	else
		json_f64(j, "attached_fraction", p->duty.share);
	json_obj_begin(j, "overhead");
	json_f64(j, "budget_pct", p->duty.budget_pct);
	json_f64(j, "pct_of_work", p->duty.cost_pct);
	if (p->duty.work_unknown)
		json_null(j, "run_fraction");
	else
		json_f64(j, "run_fraction", p->duty.run_share);
	json_u64(j, "bursts", p->duty.bursts);
	json_bool(j, "over_budget", p->duty.cost_pct > p->duty.budget_pct);
	json_obj_end(j);
	if (p->src.desc->kind == PROF_HEAP)
		json_str(j, "inuse_view", p->duty.snapshot_lost ? "unknown" : "lower_bound");
	if (p->duty.snapshot_lost)
		json_str(j, "unknown_why", p->duty.snapshot_lost);
}

static void json_drops(struct json *j, const __u64 *d)
{
	json_u64(j, "events", d[PDROP_SEEN]);
	json_u64(j, "kept", d[PDROP_KEPT]);
	json_u64(j, "lost", d[PDROP_COUNTS_FULL]);
	json_u64(j, "no_state", d[PDROP_STATE]);
	json_u64(j, "no_waker", d[PDROP_NO_WAKER]);
	json_obj_begin(j, "stacks_lost");
	json_u64(j, "user", d[PDROP_USTACK]);
	json_u64(j, "kernel", d[PDROP_KSTACK]);
	json_obj_end(j);
}

/* An event with no room in the ring buffer is counted with its frame-pointer stack (PDROP_DW_FP, PDROP_RINGBUF). */
static void json_unwind(struct json *j, const struct profiles *ps, const struct prof *p, const __u64 *d)
{
	struct dwstack_json x = { .stack_bytes = ps->c.stack_bytes, .fp_fallback = d[PDROP_DW_FP],
				  .ringbuf_full = d[PDROP_RINGBUF],
				  .inuse_lost = p->src.live_fd >= 0 ? &p->inuse_lost : NULL };

	json_str(j, "call_graph", p->src.dw ? "dwarf" : "fp");
	if (p->src.dw)
		dwstacks_json(p->src.dw, j, &x);
}

static void print_json(struct profiles *ps, struct prof *p, FILE *out, const struct stack_rows *t, double span,
		       const __u64 *d, bool total)
{
	const struct prof_desc *desc = p->src.desc;
	struct json j;

	json_report_begin(&j, out, prof_kind_name(desc->kind), ps->pid, span);
	json_bool(&j, "total", total);
	if (p->procs)
		json_bool(&j, "all_processes", true);   /* -a: pid is 0 */
	json_u64(&j, "rate", p->src.period);
	json_drops(&j, d);
	json_unwind(&j, ps, p, d);
	if (desc->kind == PROF_HEAP)
		json_u64(&j, "frees", d[PDROP_FREED]);
	if (p->src.event_cost_ns) {
		json_obj_begin(&j, "probe_cost");
		json_f64(&j, "per_event_ns", p->src.event_cost_ns);
		if (p->src.free_cost_ns)
			json_f64(&j, "per_free_ns", p->src.free_cost_ns);
		json_f64(&j, "estimate_ns", cost_ns(p, d));
		json_obj_end(&j);
	} else {
		json_null(&j, "probe_cost");
	}
	json_duty(&j, p);
	if (p->procs)
		proctab_json_stats(p->procs, &j);
	budget_json(symbolizer_budget(ps->sym), &j);
	stackrows_json_values(p->rows, &j, "totals", t->sum, t->unknown);
	if (desc->label_key) {
		json_obj_begin(&j, desc->label_key);
		stackrows_json_values(p->rows, &j, desc->labels[0], t->by_label[0], t->unknown);
		stackrows_json_values(p->rows, &j, desc->labels[1], t->by_label[1], t->unknown);
		json_obj_end(&j);
	}
	stackrows_json(p->rows, &j, t);
	json_obj_end(&j);
	json_finish(&j);
}

/*
 * One report: the interval's rows (since_start false) or the run's, over
 * span seconds with drops d; total says it is the run's (header, JSON).
 */
static int show(struct profiles *ps, struct prof *p, FILE *out, double span, const __u64 *d, bool total,
		bool since_start)
{
	struct stack_rows t = { .unknown = unknown_values(p) };
	int err = since_start ? stackrows_total_rows(p->rows, &t) : stackrows_rows(p->rows, &t);

	if (err)
		log_err("cannot aggregate the %s stacks: %s", prof_kind_name(p->src.desc->kind), strerror(-err));
	else if (ps->c.json)
		print_json(ps, p, out, &t, span, d, total);
	else
		print_table(ps, p, out, &t, span, d, total);
	free(t.v);
	return err;
}

/* After interval reports: the run's, headed by the share the probes saw of the run (--max-overhead). */
static int show_total(struct profiles *ps, struct prof *p, FILE *out, const __u64 *drops)
{
	struct prof_duty interval = p->duty;
	int err;

	p->duty.share = p->duty.run_share;
	err = show(ps, p, out, p->run_s, drops, true, true);
	p->duty = interval;
	return err;
}

static int report_one(struct profiles *ps, struct prof *p, FILE *out, double interval_s, bool final)
{
	__u64 drops[PDROP_NR], d[PDROP_NR];
	struct stack_count *e;
	size_t nr;
	int k, err;

	e = read_counts(p, &nr, final);
	percpu_sums(p->src.drops_fd, PDROP_NR, drops);
	p->dutied = p->src.duty && p->src.duty(&p->src, &p->duty);
	for (k = 0; k < PDROP_NR; k++)
		d[k] = drops[k] - p->drops_prev[k];
	stackrows_take(p->rows, e, nr, p->dutied ? p->duty.share : 1, p->dutied ? p->duty.run_share : 1);
	p->run_s += interval_s;
	/* A run with a single report: that report is the total. After intervals, the total follows the last. */
	err = show(ps, p, out, interval_s, d, final && !p->nr_reports, false);
	if (!err && final && p->nr_reports)
		err = show_total(ps, p, out, drops);
	memcpy(p->drops_prev, drops, sizeof(drops));
	p->nr_reports++;
	/* Their stacks were symbolized above: exited processes need their mappings no more. */
	if (p->procs)
		proctab_release_exited(p->procs);
	return err;
}

int profiles_report(struct profiles *ps, FILE *out, double interval_s, bool final)
{
	int k, err = 0;

	for (k = 0; ps && k < PROF_KIND_NR; k++)
		if (ps->p[k].on && report_one(ps, &ps->p[k], out, interval_s, final))
			err = -ENOMEM;
	return err;
}

/* --- pprof ------------------------------------------------------------------- */

/* Kind k of n profiles (a -p list's, or one) into one file: each process's samples labelled with it. */
static int write_pprof(struct profiles *const *ps, size_t n, int k, const char *path)
{
	const struct prof *p = &ps[0]->p[k];
	const struct prof_desc *d = p->src.desc;
	struct stackrows *rows[PROFILES_MANY_MAX];
	unsigned int unknown = 0;
	double run_s = 0;
	struct pprof *pp;
	size_t i;
	int nv;

	for (i = 0; i < n; i++) {
		rows[i] = ps[i]->p[k].rows;
		unknown |= unknown_values(&ps[i]->p[k]);
		run_s = ps[i]->p[k].run_s > run_s ? ps[i]->p[k].run_s : run_s;
	}
	/* The values the file has: all, or those before the unknown states (which come last). */
	for (nv = 0; nv < d->nr_values && !(unknown & 1U << nv); nv++)
		;
	pp = pprof_new_types(d->types, nv, d->period_type, p->src.period, (__u64)(run_s * 1e9));
	if (pp && d->default_type)
		pprof_default_type(pp, d->default_type);
	return stackrows_write_pprof_many(rows, n, pp, unknown, path);
}

int profiles_write_files(struct profiles *ps)
{
	return profiles_write_files_many(&ps, 1);
}

int profiles_write_files_many(struct profiles *const *ps, size_t n)
{
	const struct prof_conf *c = &ps[0]->c;
	bool several = __builtin_popcount(c->kinds) > 1;
	char path[PATH_MAX];
	int k, err = 0;

	if (n > PROFILES_MANY_MAX)
		return -E2BIG;
	for (k = 0; c->pprof_path && !err && k < PROF_KIND_NR; k++) {
		if (!ps[0]->p[k].on)
			continue;
		err = prof_file_name(c->pprof_path, k, several, path, sizeof(path));
		if (!err)
			err = write_pprof(ps, n, k, path);
		if (err)
			log_err("cannot write the %s pprof profile to %s: %s", prof_kind_name(k),
				err == -ENAMETOOLONG ? c->pprof_path : path, strerror(-err));
	}
	return err;
}
