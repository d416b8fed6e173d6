// SPDX-License-Identifier: GPL-2.0
/*
 * The offcpu, mutex and heap profiles: reads the weighted stacks their BPF
 * objects count, symbolizes them, and prints one table or JSON line per
 * profile and report, and their pprof files. The kinds differ only in their
 * prof_desc (what the values mean) and in how they are loaded (prof_src).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "dwstacks.h"
#include "fit.h"
#include "json.h"
#include "log.h"
#include "outfile.h"
#include "proc.h"
#include "prof_src.h"
#include "profiles.h"
#include "sanitize.h"
#include "symbolize.h"

#define NR_STACKS 16384   /* the stack maps' size (prof.bpf.h) */
#define MAX_FRAMES (2 * FNPROF_STACK_DEPTH + 1)

/*
 * One counted stack: its values since the start as counted, in the interval
 * being reported, and since the start as reported (scaled to the whole run
 * when the probes saw only a share of it: --max-overhead).
 */
struct entry {
	struct prof_key key;
	double total[PROF_NR_VALUES], delta[PROF_NR_VALUES], out[PROF_NR_VALUES];
};

struct caller {
	__u64 ip;
	struct frame_info f;
};

/* Kernel stacks kept by hash id (prof_src.kstacks_fd), symbolized once. */
struct kstack_ent {
	__s32 id;
	struct sym_stack st;
};

/* One running profile. */
struct prof {
	struct kstack_ent *kst;
	size_t nr_kst, cap_kst;
	struct caller *callers;            /* prof_key.caller addresses, symbolized */
	size_t nr_callers, cap_callers;
	struct prof_src src;
	bool on;
	struct sym_stack *ustacks, *kstacks;   /* by stack id, filled on first use */
	struct entry *prev;                /* at the last report, sorted by key */
	size_t nr_prev;
	__u64 drops_prev[PDROP_NR];
	double run_s;
	bool dutied;                       /* src.duty said the probes saw a share: duty holds it */
	struct prof_duty duty;
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
		sym_stacks_free(p->ustacks, DWSTACK_BASE + DWSTACK_MAX);
		sym_stacks_free(p->kstacks, NR_STACKS);
		free(p->prev);
		free(p->callers);
		for (size_t i = 0; i < p->nr_kst; i++) {
			free(p->kst[i].st.f);
			free(p->kst[i].st.ips);
		}
		free(p->kst);
	}
	symbolizer_free(ps->sym);
	free(ps);
}

int profiles_start(const struct prof_conf *c, pid_t pid, struct profiles **out)
{
	struct profiles *ps = calloc(1, sizeof(*ps));
	int k, err = 0;

	if (!ps)
		return -ENOMEM;
	ps->c = *c;
	ps->pid = pid;
	ps->sym = symbolizer_new(pid);
	if (!ps->sym)
		err = -ENOMEM;
	for (k = 0; !err && k < PROF_KIND_NR; k++) {
		struct prof *p = &ps->p[k];

		if (!(c->kinds & 1U << k) || !starters[k])
			continue;
		p->ustacks = calloc(DWSTACK_BASE + DWSTACK_MAX, sizeof(*p->ustacks));  /* with dwarf's ids */
		p->kstacks = calloc(NR_STACKS, sizeof(*p->kstacks));
		err = p->ustacks && p->kstacks ? starters[k](c, pid, &p->src) : -ENOMEM;
		p->on = !err;
		ps->nr_on += p->on;
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
	if (ps)
		symbolizer_refresh(ps->sym);
}

/* --- reading ---------------------------------------------------------------- */

static int cmp_key(const void *a, const void *b)
{
	return memcmp(&((const struct entry *)a)->key, &((const struct entry *)b)->key, sizeof(struct prof_key));
}

static void add_values(const struct prof_desc *d, struct entry *e, const __u64 *v, int from, int nr)
{
	int i;

	for (i = from; i < from + nr; i++)
		e->total[i] += d->fixed[i] ? (double)v[i - from] / PROF_FP_ONE : (double)v[i - from];
}

/* --call-graph dwarf: the unwound stacks' values, after the counts map's (their stack ids apart from its). */
static struct entry *add_dw_counts(struct prof *p, struct entry *e, size_t *nr, size_t cap)
{
	struct dwstack_prof *c = NULL;
	size_t n, i;

	if (!p->src.dw)
		return e;
	dwstacks_sync(p->src.dw);
	n = dwstacks_prof_counts(p->src.dw, &c);
	for (i = 0; c && i < n; i++) {
		/* A lost stack's key may be in the map too: it is counted apart (DWSTACK_LOST). */
		if (c[i].key.ustack < 0)
			c[i].key.ustack = DWSTACK_LOST;
		if (ARRAY_RESERVE(e, *nr + 1, cap))
			break;
		memset(&e[*nr], 0, sizeof(*e));
		e[*nr].key = c[i].key;
		add_values(p->src.desc, &e[(*nr)++], c[i].val.v, 0, p->src.desc->nr_values);
	}
	free(c);
	return e;
}

/* Every counted stack of the profile so far, unsorted; the heap's live pointers added as in use. */
static struct entry *read_counts(struct prof *p, size_t *nr)
{
	const struct prof_desc *d = p->src.desc;
	struct prof_key key, next, *cur = NULL;
	struct prof_val val;
	struct entry *e = NULL;
	size_t cap = 0;

	*nr = 0;
	while (!bpf_map_get_next_key(p->src.counts_fd, cur, &next)) {
		key = next;
		cur = &key;
		if (bpf_map_lookup_elem(p->src.counts_fd, &key, &val) || ARRAY_RESERVE(e, *nr + 1, cap))
			continue;
		memset(&e[*nr], 0, sizeof(*e));
		e[*nr].key = key;
		add_values(d, &e[(*nr)++], val.v, 0, d->nr_values);
	}
	return add_dw_counts(p, e, nr, cap);
}

/* heap: the sampled pointers not freed yet, into values 2 and 3 of their stacks' entries. */
static struct entry *add_live(struct prof *p, struct entry *e, size_t *nr)
{
	__u64 ptr, next, *cur = NULL, v[2];
	struct prof_live l;
	size_t sorted = *nr, cap = *nr, i;

	if (*nr)
		qsort(e, *nr, sizeof(*e), cmp_key);
	while (p->src.live_fd >= 0 && !bpf_map_get_next_key(p->src.live_fd, cur, &next)) {
		struct entry probe = {}, *hit;

		ptr = next;
		cur = &ptr;
		if (bpf_map_lookup_elem(p->src.live_fd, &ptr, &l))
			continue;
		if (p->src.dw) {  /* the id of the stack sent, not a stack map id (dwarf) */
			__s32 us = dwstacks_by_id(p->src.dw, l.key.ustack);

			l.key.ustack = us < 0 ? DWSTACK_LOST : us;
		}
		probe.key = l.key;
		hit = sorted ? bsearch(&probe, e, sorted, sizeof(*e), cmp_key) : NULL;
		for (i = sorted; !hit && i < *nr; i++)  /* entries added below, after the sorted ones */
			if (!memcmp(&e[i].key, &l.key, sizeof(l.key)))
				hit = &e[i];
		if (!hit) {
			if (ARRAY_RESERVE(e, *nr + 1, cap))
				continue;
			hit = memset(&e[(*nr)++], 0, sizeof(*e));
			hit->key = l.key;
		}
		v[0] = l.objects;
		v[1] = l.bytes;
		add_values(p->src.desc, hit, v, 2, 2);
	}
	if (*nr)
		qsort(e, *nr, sizeof(*e), cmp_key);
	return e;
}

/*
 * Values since the last report: the current ones less those seen then;
 * states as they are now. Under a duty cycle, an interval's values over the
 * share of it the probes saw, and the run's (the pprof file's) over the
 * run's share: an interval's own share may be a sliver of a burst, whose few
 * samples it blows up, so the run's figures are not the intervals' sum.
 * States are not scaled: what is in use now was allocated at moments a
 * share does not describe (all at start, within the first burst, say); what
 * the probes saw of it is a lower bound.
 */
static void compute_deltas(struct prof *p, struct entry *e, size_t nr)
{
	const struct prof_desc *d = p->src.desc;
	double share = p->dutied ? p->duty.share : 1, run_share = p->dutied ? p->duty.run_share : 1;
	size_t i;
	int v;

	for (i = 0; i < nr; i++) {
		const struct entry *o = p->nr_prev ? bsearch(&e[i], p->prev, p->nr_prev, sizeof(*e), cmp_key) : NULL;

		for (v = 0; v < d->nr_values; v++) {
			if (d->snapshot[v]) {
				e[i].delta[v] = e[i].out[v] = e[i].total[v];
				continue;
			}
			e[i].delta[v] = (e[i].total[v] - (o ? o->total[v] : 0)) / share;
			e[i].out[v] = e[i].total[v] / run_share;
		}
	}
}

/* Whether value v is unknown: a state whose events were not all seen. */
static bool value_lost(const struct prof *p, int v)
{
	return p->dutied && p->duty.snapshot_lost && p->src.desc->snapshot[v];
}

static void read_drops(struct prof *p, __u64 *now)
{
	int c, nr = libbpf_num_possible_cpus();
	__u64 *v = calloc(nr > 0 ? nr : 1, sizeof(*v));
	__u32 k;

	for (k = 0; k < PDROP_NR; k++) {
		now[k] = 0;
		if (v && !bpf_map_lookup_elem(p->src.drops_fd, &k, v))
			for (c = 0; c < nr; c++)
				now[k] += v[c];
	}
	free(v);
}

/* --- stacks ------------------------------------------------------------------ */

/* The cache entry of kernel stack id kept by hash (kstacks_fd); NULL when out of memory. */
static struct sym_stack *kstack_slot(struct prof *p, __s32 id)
{
	size_t i;

	for (i = 0; i < p->nr_kst; i++)
		if (p->kst[i].id == id)
			return &p->kst[i].st;
	if (ARRAY_RESERVE(p->kst, p->nr_kst + 1, p->cap_kst))
		return NULL;
	p->kst[p->nr_kst] = (struct kstack_ent){ .id = id };
	return &p->kst[p->nr_kst++].st;
}

static const struct sym_stack *get_stack(struct profiles *ps, struct prof *p, __s32 id, bool kernel)
{
	bool by_hash = kernel && p->src.kstacks_fd >= 0;
	__u64 ips[FNPROF_STACK_DEPTH] = {};
	struct sym_stack *t;
	int n;

	if (id < 0 || (!by_hash && id >= (kernel ? NR_STACKS : DWSTACK_BASE + DWSTACK_MAX)))
		return NULL;
	t = by_hash ? kstack_slot(p, id) : kernel ? &p->kstacks[id] : &p->ustacks[id];
	if (!t || t->f)
		return t;
	if (!kernel && id >= DWSTACK_BASE) {  /* unwound with DWARF */
		n = p->src.dw ? dwstacks_stack(p->src.dw, id, ips, FNPROF_STACK_DEPTH) : -ENOENT;
		if (n < 0)
			return NULL;
	} else {
		if (bpf_map_lookup_elem(by_hash ? p->src.kstacks_fd : p->src.stacks_fd, &id, ips))
			return NULL;
		for (n = 0; n < FNPROF_STACK_DEPTH && ips[n]; n++)
			;
	}
	if (symbolize_stack(ps->sym, ips, n, kernel, false, n, t))
		return NULL;
	return t;
}

/* The frame of a return address kept apart (prof_key.caller), symbolized once per address. */
static const struct frame_info *caller_frame(struct profiles *ps, struct prof *p, __u64 ret)
{
	static const struct frame_info none = { .func = "[unknown]", .object = "[unknown]" };
	struct caller *c;
	size_t i;

	for (i = 0; i < p->nr_callers; i++)
		if (p->callers[i].ip == ret)
			return &p->callers[i].f;
	if (ARRAY_RESERVE(p->callers, p->nr_callers + 1, p->cap_callers))
		return &none;
	c = &p->callers[p->nr_callers++];
	c->ip = ret;
	symbolize_user(ps->sym, ret - 1, &c->f);
	return &c->f;
}

/* The frames of one stack, leaf first (kernel frames first), at most MAX_FRAMES. */
static int stack_frames(struct profiles *ps, struct prof *p, const struct prof_key *k,
			const struct frame_info **out, __u64 *ips)
{
	static const struct frame_info lost = { .func = "[stack lost]", .object = "[unknown]" };
	static const struct frame_info no_waker = { .func = "[waker unknown]", .object = "[unknown]" };
	const struct sym_stack *ks = get_stack(ps, p, k->kstack, true), *us = get_stack(ps, p, k->ustack, false);
	int n = 0, i;

	for (i = 0; ks && i < ks->nr && symbolize_probe_frame(&ks->f[i]); i++)
		;
	for (; ks && i < ks->nr && n < MAX_FRAMES; i++, n++)
		out[n] = &ks->f[i], ips[n] = ks->ips[i];
	for (i = 0; us && i < us->nr && n < MAX_FRAMES; i++, n++) {
		out[n] = &us->f[i], ips[n] = us->ips[i];
		if (!i && k->caller && (us->nr < 2 || us->ips[1] != k->caller) && n + 1 < MAX_FRAMES) {
			n++;
			out[n] = caller_frame(ps, p, k->caller), ips[n] = k->caller;
		}
	}
	if (!us && n < MAX_FRAMES)  /* never drop a stack: show that its user part is missing */
		out[n] = k->ustack == PROF_STACK_NO_WAKER ? &no_waker : &lost, ips[n++] = 0;
	return n;
}

/* --- per-function aggregation ---------------------------------------------- */

struct fn_row {
	const char *func, *object;
	__u32 tid;
	double self[PROF_NR_VALUES], total[PROF_NR_VALUES];
};

struct rows {
	struct fn_row *v;
	size_t nr, cap;
	double sum[PROF_NR_VALUES];
	double by_label[2][PROF_NR_VALUES];
};

/* The function's row; names compare as pointers (the symbolizer hands out one string each). */
static struct fn_row *row_of(struct rows *t, const struct frame_info *f, __u32 tid)
{
	size_t i;

	/* Linear from the end: a stack's frames are looked up together, and tables are a few hundred rows. */
	for (i = t->nr; i-- > 0;)
		if (t->v[i].func == f->func && t->v[i].object == f->object && t->v[i].tid == tid)
			return &t->v[i];
	if (ARRAY_RESERVE(t->v, t->nr + 1, t->cap))
		return NULL;
	t->v[t->nr] = (struct fn_row){ .func = f->func, .object = f->object, .tid = tid };
	return &t->v[t->nr++];
}

/* Self values go to the leaf, total ones once to every function on the stack. */
static int agg_stack(struct rows *t, const struct frame_info **fr, int n, const struct entry *e, int nv)
{
	struct fn_row *r;
	int i, j, v;

	for (v = 0; v < nv; v++) {
		t->sum[v] += e->delta[v];
		t->by_label[e->key.label & 1][v] += e->delta[v];
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++)
			if (fr[j]->func == fr[i]->func && fr[j]->object == fr[i]->object)
				break;
		if (j < i)
			continue;  /* recursion: counted once */
		r = row_of(t, fr[i], e->key.tid);
		if (!r)
			return -ENOMEM;
		for (v = 0; v < nv; v++) {
			r->total[v] += e->delta[v];
			if (!i)
				r->self[v] += e->delta[v];
		}
	}
	return 0;
}

static int rank_of;  /* the value cmp_rows ranks by: qsort has no context argument */

/* By thread, then total of the ranked value (the caller's view: who waits, who allocates), then self. */
static int cmp_rows(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->total[rank_of] != y->total[rank_of])
		return x->total[rank_of] > y->total[rank_of] ? -1 : 1;
	return x->self[rank_of] > y->self[rank_of] ? -1 : x->self[rank_of] < y->self[rank_of];
}

static int aggregate(struct profiles *ps, struct prof *p, const struct entry *e, size_t nr, struct rows *t)
{
	const struct frame_info *fr[MAX_FRAMES];
	__u64 ips[MAX_FRAMES];
	size_t i;
	int n, v;

	for (i = 0; i < nr; i++) {
		for (v = 0; v < p->src.desc->nr_values && !e[i].delta[v]; v++)
			;
		if (v == p->src.desc->nr_values)
			continue;
		n = stack_frames(ps, p, &e[i].key, fr, ips);
		if (agg_stack(t, fr, n, &e[i], p->src.desc->nr_values))
			return -ENOMEM;
	}
	rank_of = p->src.desc->rank;
	if (t->nr)
		qsort(t->v, t->nr, sizeof(*t->v), cmp_rows);
	return 0;
}

/* --- reports ------------------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* A value for the table, in its unit: "12.3ms", "8.0MiB", "1234". */
static const char *fmt_value(const struct pprof_type *t, double v, char *buf, size_t size)
{
	if (!strcmp(t->unit, "nanoseconds"))
		snprintf(buf, size, v >= 1e9 ? "%.2fs" : "%.2fms", v >= 1e9 ? v / 1e9 : v / 1e6);
	else if (!strcmp(t->unit, "bytes"))
		snprintf(buf, size, v >= 1 << 20 ? "%.1fMiB" : "%.1fKiB", v / (v >= 1 << 20 ? 1 << 20 : 1 << 10));
	else
		snprintf(buf, size, "%.0f", v);
	return buf;
}

/* Value v of profile p, or "-" where it is unknown. */
static const char *fmt_of(const struct prof *p, int v, double x, char *buf, size_t size)
{
	return value_lost(p, v) ? "-" : fmt_value(&p->src.desc->types[v], x, buf, size);
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
		     "unwinding used %.1f ms of CPU\n", (unsigned long long)st.samples, (unsigned long long)st.truncated,
		(unsigned long long)st.lost, (unsigned long long)st.ids_lost, (unsigned long long)d[PDROP_DW_FP],
		(unsigned long long)d[PDROP_RINGBUF], st.cpu_s * 1e3);
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

static void print_header(struct profiles *ps, struct prof *p, FILE *out, const struct rows *t, double span,
			 const __u64 *d, bool final)
{
	const struct prof_desc *desc = p->src.desc;
	const struct pprof_type *r = &desc->types[desc->rank], *s = &desc->types[desc->second];
	char a[32], b[32], c[32];

	fprintf(out, "\n%s %s pid %d, %.2f s, %llu %s seen, %llu kept (%s): %s %s, %s %s", prof_kind_name(desc->kind),
		final ? "profiled:" : "profiling:", ps->pid, span, (unsigned long long)d[PDROP_SEEN], desc->what,
		(unsigned long long)d[PDROP_KEPT], p->src.note, r->type, fmt_value(r, t->sum[desc->rank], a, sizeof(a)),
		s->type, fmt_of(p, desc->second, t->sum[desc->second], b, sizeof(b)));
	if (desc->label_key)
		fprintf(out, " (%s %s, %s %s)", desc->labels[0], fmt_value(r, t->by_label[0][desc->rank], b, sizeof(b)),
			desc->labels[1], fmt_value(r, t->by_label[1][desc->rank], c, sizeof(c)));
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
	if (final && p->duty.cost_pct > p->duty.budget_pct)
		fprintf(out, "warning: the probes slowed the target by ~%.1f%%, over the budget: a burst and its "
			     "detach cost more than a run this short allows\n", p->duty.cost_pct);
}

/*
 * Whether row i is shown: with a value, not the kernel's (the table is the
 * program's view; kernel frames are in the JSON and pprof), among the first
 * top of its thread (rows come sorted by thread); *shown counts those so far.
 */
static bool row_shown(const struct rows *t, size_t i, const struct prof_desc *desc, unsigned int top,
		      unsigned int *shown)
{
	const struct fn_row *f = &t->v[i];

	if (i && f->tid != t->v[i - 1].tid)
		*shown = 0;
	return (f->total[desc->rank] || f->total[desc->second]) && strcmp(f->object, "[kernel.kallsyms]") &&
	       (*shown)++ < top;
}

/* The FUNCTION column's width for the rows shown (fit.h). */
static size_t func_width(const struct rows *t, const struct prof_desc *desc, unsigned int top, FILE *out)
{
	const char **names = calloc(t->nr ? t->nr : 1, sizeof(*names));
	unsigned int shown = 0;
	size_t i, n = 0, w;

	for (i = 0; names && i < t->nr; i++)
		if (row_shown(t, i, desc, top, &shown))
			names[n++] = t->v[i].func;
	w = names ? fit_column(out, names, n, FIT_FUNC_WIDTH, FIT_SAMPLE_REST + 10) : 0;
	free(names);
	return w ? w : FIT_FUNC_WIDTH;
}

static void print_table(struct profiles *ps, struct prof *p, FILE *out, const struct rows *t, double span,
			const __u64 *d, bool final)
{
	const struct prof_desc *desc = p->src.desc;
	int rk = desc->rank, sc = desc->second;
	double pct = t->sum[rk] ? 100.0 / t->sum[rk] : 0;
	unsigned int shown = 0;
	__u32 tid = (__u32)-1;
	char a[32], b[32], comm[32];
	size_t i, w = func_width(t, desc, ps->c.top, out);

	print_header(ps, p, out, t, span, d, final);
	for (i = 0; i < t->nr; i++) {
		const struct fn_row *f = &t->v[i];

		if (f->tid != tid) {
			tid = f->tid;
			if (ps->c.per_thread) {
				proc_thread_name(ps->pid, tid, "exited", comm, sizeof(comm));
				fprintf(out, "\nthread %u (%s):\n", tid, comm);
			}
			fprintf(out, "%-*s %-*s %7s %7s %12s %12s\n", (int)w, "FUNCTION", FIT_OBJECT_WIDTH, "OBJECT",
				"SELF%", "TOTAL%", desc->types[rk].type, desc->types[sc].type);
		}
		if (!row_shown(t, i, desc, ps->c.top, &shown))
			continue;
		fit_name_cells(out, f->func, w, f->object);
		fprintf(out, "%7.2f %7.2f %12s %12s\n", f->self[rk] * pct, f->total[rk] * pct,
			fmt_value(&desc->types[rk], f->total[rk], a, sizeof(a)), fmt_of(p, sc, f->total[sc], b, sizeof(b)));
	}
	print_drops(out, d);
	print_unwind(p, out, d);
	fflush(out);
}

static void json_values(struct json *j, const char *key, const struct prof *p, const double *v)
{
	const struct prof_desc *d = p->src.desc;
	int i;

	json_obj_begin(j, key);
	for (i = 0; i < d->nr_values; i++) {
		if (value_lost(p, i))
			json_null(j, d->types[i].type);
		else
			json_f64(j, d->types[i].type, v[i]);
	}
	json_obj_end(j);
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

static void json_unwind(struct json *j, const struct prof *p, const __u64 *d)
{
	struct dwstack_stats st;

	json_str(j, "call_graph", p->src.dw ? "dwarf" : "fp");
	if (!p->src.dw)
		return;
	dwstacks_stats(p->src.dw, &st);
	json_obj_begin(j, "unwind");
	json_u64(j, "samples", st.samples);
	json_u64(j, "truncated", st.truncated);
	json_u64(j, "lost", st.lost);
	json_u64(j, "ids_lost", st.ids_lost);
	json_u64(j, "fp_fallback", d[PDROP_DW_FP]);
	json_u64(j, "ringbuf_full", d[PDROP_RINGBUF]);
	json_u64(j, "cpu_ns", (__u64)(st.cpu_s * 1e9));
	json_obj_end(j);
}

static void print_json(struct profiles *ps, struct prof *p, FILE *out, const struct rows *t, double span,
		       const __u64 *d)
{
	const struct prof_desc *desc = p->src.desc;
	struct json j;
	size_t i;

	json_report_begin(&j, out, prof_kind_name(desc->kind), ps->pid, span);
	json_u64(&j, "rate", p->src.period);
	json_drops(&j, d);
	json_unwind(&j, p, d);
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
	json_values(&j, "totals", p, t->sum);
	if (desc->label_key) {
		json_obj_begin(&j, desc->label_key);
		json_values(&j, desc->labels[0], p, t->by_label[0]);
		json_values(&j, desc->labels[1], p, t->by_label[1]);
		json_obj_end(&j);
	}
	json_arr_begin(&j, "functions");
	for (i = 0; i < t->nr; i++) {
		const struct fn_row *f = &t->v[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "name", f->func);
		json_str(&j, "object", f->object);
		if (ps->c.per_thread)
			json_u64(&j, "tid", f->tid);
		json_values(&j, "self", p, f->self);
		json_values(&j, "total", p, f->total);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}

static int report_one(struct profiles *ps, struct prof *p, FILE *out, double interval_s, bool final)
{
	__u64 drops[PDROP_NR], d[PDROP_NR];
	struct rows t = {};
	struct entry *e;
	size_t nr;
	int k, err;

	e = add_live(p, read_counts(p, &nr), &nr);
	read_drops(p, drops);
	p->dutied = p->src.duty && p->src.duty(&p->src, &p->duty);
	for (k = 0; k < PDROP_NR; k++)
		d[k] = drops[k] - p->drops_prev[k];
	compute_deltas(p, e, nr);
	err = aggregate(ps, p, e, nr, &t);
	if (err)
		log_err("cannot aggregate %zu %s stacks: %s", nr, prof_kind_name(p->src.desc->kind), strerror(-err));
	else if (ps->c.json)
		print_json(ps, p, out, &t, interval_s, d);
	else
		print_table(ps, p, out, &t, interval_s, d, final);
	free(t.v);
	free(p->prev);
	p->prev = e;
	p->nr_prev = nr;
	memcpy(p->drops_prev, drops, sizeof(drops));
	p->run_s += interval_s;
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

/* A frame's name in pprof: its function, or "[libc.so.6]" for an address without a symbol. */
static const char *frame_name(const struct frame_info *f, char *buf, size_t size)
{
	if (f->known || !strcmp(f->object, "[unknown]") || !strcmp(f->object, "[kernel.kallsyms]"))
		return f->func;
	snprintf(buf, size, "[%s]", base_name(f->object));
	return buf;
}

/* The values the pprof file has: all, or those before the unknown states (which come last). */
static int known_values(const struct prof *p)
{
	int v;

	for (v = 0; v < p->src.desc->nr_values && !value_lost(p, v); v++)
		;
	return v;
}

static int pprof_entry(struct profiles *ps, struct prof *p, struct pprof *pp, const struct entry *e)
{
	const struct frame_info *fr[MAX_FRAMES];
	__u64 ips[MAX_FRAMES], locs[MAX_FRAMES], v[PROF_NR_VALUES];
	char name[PATH_MAX + 2];
	int n, i;

	n = stack_frames(ps, p, &e->key, fr, ips);
	for (i = 0; i < n; i++)
		locs[i] = pprof_location(pp, ips[i], frame_name(fr[i], name, sizeof(name)), fr[i]->object,
					 fr[i]->map_start, fr[i]->map_limit, fr[i]->map_pgoff);
	for (i = 0; i < known_values(p); i++)
		v[i] = (__u64)llround(e->out[i]);
	return pprof_sample_values(pp, locs, n, v, p->src.desc->label_key,
				   p->src.desc->label_key ? p->src.desc->labels[e->key.label & 1] : NULL);
}

static int write_pprof(struct profiles *ps, struct prof *p, const char *path)
{
	const struct prof_desc *d = p->src.desc;
	struct pprof *pp = pprof_new_types(d->types, known_values(p), d->period_type, p->src.period,
					   (__u64)(p->run_s * 1e9));
	unsigned char *data = NULL;
	struct frame_info exe;
	size_t i, len;
	int err = pp ? 0 : -ENOMEM;

	if (pp && d->default_type)
		pprof_default_type(pp, d->default_type);
	if (pp && symbolize_main_object(ps->sym, &exe))
		pprof_mapping(pp, exe.object, exe.map_start, exe.map_limit, exe.map_pgoff);
	for (i = 0; !err && i < p->nr_prev; i++)
		err = pprof_entry(ps, p, pp, &p->prev[i]);
	if (!err)
		err = pprof_encode(pp, &data, &len);
	if (!err)
		err = write_file_atomic(path, data, len);
	free(data);
	pprof_free(pp);
	return err;
}

int profiles_write_files(struct profiles *ps)
{
	bool several = __builtin_popcount(ps->c.kinds) > 1;
	char path[PATH_MAX];
	int k, err = 0;

	for (k = 0; ps->c.pprof_path && !err && k < PROF_KIND_NR; k++) {
		if (!ps->p[k].on)
			continue;
		err = prof_file_name(ps->c.pprof_path, k, several, path, sizeof(path));
		if (!err)
			err = write_pprof(ps, &ps->p[k], path);
		if (err)
			log_err("cannot write the %s pprof profile to %s: %s", prof_kind_name(k),
				err == -ENAMETOOLONG ? ps->c.pprof_path : path, strerror(-err));
	}
	return err;
}
