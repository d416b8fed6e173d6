// SPDX-License-Identifier: GPL-2.0
/*
 * The stack profiles' one pipeline: counts -> values since the last report
 * -> symbolized frames -> rows per function -> table, JSON, folded, pprof,
 * flame graph. Each profile kind's differences come in as its prof_desc.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/array.h"
#include "stacks/dwstacks.h"
#include "base/fit.h"
#include "format/flame.h"
#include "base/json.h"
#include "format/outfile.h"
#include "base/proc.h"
#include "base/sanitize.h"
#include "stacks/stackrows.h"
#include "stacks/symbolize.h"

#define MAX_FRAMES (2 * FNPROF_STACK_DEPTH + 1)

/* A stack symbolized once, by (process, id, kernel or user); allocated alone, so that it stays put. */
struct stack_ent {
	__u32 pid;
	__s32 id;
	bool kernel;
	struct sym_stack st;
};

/* A return address kept apart (stack_key.caller), symbolized once. */
struct caller {
	__u32 pid;
	__u64 ip;
	struct frame_info f;
};

struct thread_name {
	__u32 tid;
	char comm[FNPROF_COMM_LEN];
};

struct stackrows {
	struct stackrows_conf c;
	struct stack_ent **stacks;         /* open addressing, at most half full */
	size_t nr_stacks, cap_stacks;
	struct caller *callers;
	size_t nr_callers, cap_callers;
	struct thread_name *threads;       /* per_thread: names seen while the threads ran */
	size_t nr_threads, cap_threads;
	char comm[64];                     /* the process's name, read while it runs */
	struct stack_count *prev;          /* at the last take, sorted by key */
	size_t nr_prev;
	unsigned int names_gen;            /* of the names the cached frames point to (symbolize.h) */
};

int stackrows_new(const struct stackrows_conf *c, struct stackrows **out)
{
	struct stackrows *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->c = *c;
	r->names_gen = c->sym ? symbolizer_names_gen(c->sym) : 0;
	*out = r;
	return 0;
}

/* The symbolized stacks and callers go (symbolized again when needed). */
static void drop_stacks(struct stackrows *r)
{
	size_t i;

	for (i = 0; i < r->cap_stacks; i++) {
		if (!r->stacks[i])
			continue;
		free(r->stacks[i]->st.f);
		free(r->stacks[i]->st.ips);
		free(r->stacks[i]);
	}
	free(r->stacks);
	r->stacks = NULL;
	r->nr_stacks = r->cap_stacks = 0;
	r->nr_callers = 0;
}

/* The names cached frames point to were renewed (to stay in their budget): the frames go with them. */
static void check_names(struct stackrows *r)
{
	if (!r->c.sym || symbolizer_names_gen(r->c.sym) == r->names_gen)
		return;
	drop_stacks(r);
	r->names_gen = symbolizer_names_gen(r->c.sym);
}

void stackrows_free(struct stackrows *r)
{
	if (!r)
		return;
	drop_stacks(r);
	free(r->callers);
	free(r->threads);
	free(r->prev);
	free(r);
}

const char *stackrows_comm(const struct stackrows *r)
{
	return r->comm[0] ? r->comm : "[process]";
}

/* --- thread names ------------------------------------------------------------ */

static void remember_thread(struct stackrows *r, __u32 tid)
{
	struct thread_name *t;
	size_t i;

	for (i = 0; i < r->nr_threads; i++)
		if (r->threads[i].tid == tid)
			return;
	if (ARRAY_RESERVE(r->threads, r->nr_threads + 1, r->cap_threads))
		return;
	t = &r->threads[r->nr_threads];
	proc_thread_name(r->c.pid, tid, "[exited]", t->comm, sizeof(t->comm));
	if (strcmp(t->comm, "[exited]")) {
		t->tid = tid;
		r->nr_threads++;
	}
}

/* Threads' names, read while they run: the report at the end comes after they exit. */
static void remember_threads(struct stackrows *r)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", r->c.pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			remember_thread(r, strtoul(d->d_name, NULL, 10));
	closedir(dir);
}

void stackrows_refresh(struct stackrows *r)
{
	char comm[64];

	if (r->c.per_thread)
		remember_threads(r);
	proc_thread_name(r->c.pid, 0, "[process]", comm, sizeof(comm));
	if (strcmp(comm, "[process]"))
		snprintf(r->comm, sizeof(r->comm), "%s", comm);
}

/* A thread's name: now, or as it was while it ran, or "[exited]". pid 0: the process profiled. */
static void thread_name(const struct stackrows *r, __u32 pid, __u32 tid, char *buf, size_t size)
{
	size_t i;

	proc_thread_name(pid ? (pid_t)pid : r->c.pid, tid, "[exited]", buf, size);
	if (pid || strcmp(buf, "[exited]"))
		return;
	for (i = 0; i < r->nr_threads; i++)
		if (r->threads[i].tid == tid)
			snprintf(buf, size, "%s", r->threads[i].comm);
}

/* --- counts ------------------------------------------------------------------- */

static int cmp_key(const void *a, const void *b)
{
	return memcmp(&((const struct stack_count *)a)->key, &((const struct stack_count *)b)->key,
		      sizeof(struct stack_key));
}

/* Sorts e by key, the values of a key given twice summed into one entry: how many entries are left. */
static size_t sort_counts(struct stack_count *e, size_t nr, int nv)
{
	size_t i, k;
	int v;

	if (!nr)
		return 0;
	qsort(e, nr, sizeof(*e), cmp_key);
	for (i = 1, k = 0; i < nr; i++) {
		if (!cmp_key(&e[k], &e[i])) {
			for (v = 0; v < nv; v++)
				e[k].total[v] += e[i].total[v];
		} else {
			e[++k] = e[i];
		}
	}
	return k + 1;
}

/*
 * Values since the last take: the current ones less those seen then; states
 * as they are now. Under a duty cycle (--max-overhead), an interval's values
 * over the share of it the probes saw, and the run's (the pprof file's) over
 * the run's share: an interval's own share may be a sliver of a burst, whose
 * few samples it blows up, so the run's figures are not the intervals' sum.
 * States are not scaled: what is in use now was allocated at moments a share
 * does not describe; what the probes saw of it is a lower bound.
 */
void stackrows_take(struct stackrows *r, struct stack_count *e, size_t nr, double share, double run_share)
{
	const struct prof_desc *d = r->c.desc;
	size_t i;
	int v;

	/* Before the report symbolizes: names over their budget start again, and so do the frames cached. */
	if (r->c.sym)
		symbolizer_renew_names(r->c.sym);
	check_names(r);
	nr = sort_counts(e, nr, d->nr_values);
	for (i = 0; i < nr; i++) {
		const struct stack_count *o = r->nr_prev ? bsearch(&e[i], r->prev, r->nr_prev, sizeof(*e), cmp_key) : NULL;

		for (v = 0; v < d->nr_values; v++) {
			if (d->snapshot[v]) {
				e[i].delta[v] = e[i].out[v] = e[i].total[v];
				continue;
			}
			e[i].delta[v] = (e[i].total[v] - (o ? o->total[v] : 0)) / share;
			e[i].out[v] = e[i].total[v] / run_share;
		}
	}
	free(r->prev);
	r->prev = e;
	r->nr_prev = nr;
}

const struct stack_count *stackrows_counts(const struct stackrows *r, size_t *nr)
{
	*nr = r->nr_prev;
	return r->prev;
}

/* --- stacks ------------------------------------------------------------------- */

static struct symbolizer *sym_for(const struct stackrows *r, __u32 pid)
{
	struct symbolizer *s = pid && r->c.sym_of ? r->c.sym_of(r->c.ctx, pid) : NULL;

	return s ? s : r->c.sym;
}

static size_t stack_hash(size_t cap, __u32 pid, __s32 id, bool kernel)
{
	return (((size_t)pid * 0x9e3779b1u) ^ ((size_t)(__u32)id * 2654435761u) ^ kernel) & (cap - 1);
}

/* Doubles the cache: it stays at most half full, so that probing stays short. */
static int stacks_grow(struct stackrows *r)
{
	size_t i, h, cap = r->cap_stacks ? 2 * r->cap_stacks : 1024;
	struct stack_ent **n = calloc(cap, sizeof(*n)), *o;

	if (!n)
		return -ENOMEM;
	for (i = 0; i < r->cap_stacks; i++) {
		o = r->stacks[i];
		if (!o)
			continue;
		for (h = stack_hash(cap, o->pid, o->id, o->kernel); n[h]; h = (h + 1) & (cap - 1))
			;
		n[h] = o;
	}
	free(r->stacks);
	r->stacks = n;
	r->cap_stacks = cap;
	return 0;
}

/* The cache entry of a stack, empty (st.f NULL) when not symbolized yet; NULL when out of memory. */
static struct stack_ent *stack_slot(struct stackrows *r, __u32 pid, __s32 id, bool kernel)
{
	struct stack_ent *t;
	size_t h;

	if (2 * (r->nr_stacks + 1) > r->cap_stacks && stacks_grow(r))
		return NULL;
	for (h = stack_hash(r->cap_stacks, pid, id, kernel); (t = r->stacks[h]); h = (h + 1) & (r->cap_stacks - 1))
		if (t->pid == pid && t->id == id && t->kernel == kernel)
			return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	*t = (struct stack_ent){ .pid = pid, .id = id, .kernel = kernel };
	r->stacks[h] = t;
	r->nr_stacks++;
	return t;
}

/* The raw addresses of stack id, leaf first: how many, or -errno. */
static int stack_ips(const struct stackrows *r, __s32 id, bool kernel, __u64 *ips)
{
	int n;

	if (id >= DWSTACK_BASE && !kernel)
		return r->c.dw ? dwstacks_stack(r->c.dw, id, ips, FNPROF_STACK_DEPTH) : -ENOENT;
	if (kernel && r->c.kstacks_fd >= 0) {
		if (bpf_map_lookup_elem(r->c.kstacks_fd, &id, ips))
			return -errno;
	} else if (id >= FNPROF_STACK_MAP_ENTRIES || bpf_map_lookup_elem(r->c.stacks_fd, &id, ips)) {
		return -ENOENT;
	}
	for (n = 0; n < FNPROF_STACK_DEPTH && ips[n]; n++)
		;
	return n;
}

/* Stack id of process pid symbolized (once), or NULL: none, gone, or no memory. */
static const struct sym_stack *get_stack(struct stackrows *r, __u32 pid, __s32 id, bool kernel)
{
	bool inl = r->c.desc->inlines;
	__u64 ips[FNPROF_STACK_DEPTH] = {};
	struct stack_ent *t;
	int n;

	if (id < 0)
		return NULL;
	check_names(r);
	t = stack_slot(r, kernel ? 0 : pid, id, kernel);
	if (!t || t->st.f)
		return t ? &t->st : NULL;
	n = stack_ips(r, id, kernel, ips);
	/* Kernel stacks with the profiled process's (-a: the parent's) symbolizer: one copy of the kernel's symbols. */
	if (n < 0 || symbolize_stack(sym_for(r, kernel ? 0 : pid), ips, n, kernel, inl, inl ? FNPROF_STACK_DEPTH : n,
				     &t->st)) {
		free(t->st.f);
		free(t->st.ips);
		t->st = (struct sym_stack){};
		return NULL;
	}
	return &t->st;
}

/* The frame of a return address kept apart (stack_key.caller), symbolized once per address. */
static const struct frame_info *caller_frame(struct stackrows *r, __u32 pid, __u64 ret)
{
	static const struct frame_info none = { .func = "[unknown]", .object = "[unknown]" };
	struct caller *c;
	size_t i;

	check_names(r);
	for (i = 0; i < r->nr_callers; i++)
		if (r->callers[i].ip == ret && r->callers[i].pid == pid)
			return &r->callers[i].f;
	if (ARRAY_RESERVE(r->callers, r->nr_callers + 1, r->cap_callers))
		return &none;
	c = &r->callers[r->nr_callers++];
	c->pid = pid;
	c->ip = ret;
	symbolize_user(sym_for(r, pid), ret - 1, &c->f);
	return &c->f;
}

/*
 * The frames of one counted stack, leaf first, kernel frames first (less
 * the probe's own atop a stack taken in a probe), at most MAX_FRAMES; the
 * heap's caller put back above the leaf where the walk skipped it.
 */
static int stack_frames(struct stackrows *r, const struct stack_key *k, const struct frame_info **out, __u64 *ips)
{
	static const struct frame_info lost = { .func = "[stack lost]", .object = "[unknown]" };
	static const struct frame_info no_waker = { .func = "[waker unknown]", .object = "[unknown]" };
	const struct sym_stack *ks = get_stack(r, k->pid, k->kstack, true), *us = get_stack(r, k->pid, k->ustack, false);
	int n = 0, i = 0;

	while (!r->c.desc->kstack_at_event && ks && i < ks->nr && symbolize_probe_frame(&ks->f[i]))
		i++;
	for (; ks && i < ks->nr && n < MAX_FRAMES; i++, n++)
		out[n] = &ks->f[i], ips[n] = ks->ips[i];
	for (i = 0; us && i < us->nr && n < MAX_FRAMES; i++, n++) {
		out[n] = &us->f[i], ips[n] = us->ips[i];
		if (!i && k->caller && (us->nr < 2 || us->ips[1] != k->caller) && n + 1 < MAX_FRAMES) {
			n++;
			out[n] = caller_frame(r, k->pid, k->caller), ips[n] = k->caller;
		}
	}
	if (!us && n < MAX_FRAMES)  /* never drop a stack: show that its user part is missing */
		out[n] = k->ustack == PROF_STACK_NO_WAKER ? &no_waker : &lost, ips[n++] = 0;
	return n;
}

/* --- rows ------------------------------------------------------------------- */

static size_t row_hash(size_t cap, const struct stack_row *f)
{
	return ((uintptr_t)f->func * 31 + (uintptr_t)f->object * 7 + f->pid * 131u + f->tid) & (cap - 1);
}

/* Doubles the table: it stays at most half full, so that probing stays short. */
static int rows_grow(struct stack_rows *t)
{
	size_t i, h, cap = t->cap ? 2 * t->cap : 256;
	struct stack_row *n = calloc(cap, sizeof(*n)), *o;

	if (!n)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		o = &t->v[i];
		if (!o->func)
			continue;
		for (h = row_hash(cap, o); n[h].func; h = (h + 1) & (cap - 1))
			;
		n[h] = *o;
	}
	free(t->v);
	t->v = n;
	t->cap = cap;
	return 0;
}

/* The function's row; names compare as pointers (the symbolizer hands out one string each). */
static struct stack_row *row_of(struct stack_rows *t, const struct frame_info *f, __u32 pid, __u32 tid)
{
	struct stack_row want = { .func = f->func, .object = f->object, .pid = pid, .tid = tid };
	size_t h;

	if (2 * (t->nr + 1) > t->cap && rows_grow(t))
		return NULL;
	for (h = row_hash(t->cap, &want); t->v[h].func; h = (h + 1) & (t->cap - 1))
		if (t->v[h].func == f->func && t->v[h].object == f->object && t->v[h].pid == pid && t->v[h].tid == tid)
			return &t->v[h];
	t->v[h] = want;
	t->nr++;
	return &t->v[h];
}

/*
 * Self values go to the leaf, total ones once to every function on the
 * stack. Inlined frames are left to the stacks (folded, pprof): in the table
 * a sample counts for the function its code was compiled into, as perf's.
 */
static int agg_stack(struct stack_rows *t, const struct frame_info **fr, int n, const struct stack_count *e,
		     const double *val, int nv)
{
	struct stack_row *row;
	bool leaf = true;
	int i, j, v;

	for (v = 0; v < nv; v++) {
		t->sum[v] += val[v];
		t->by_label[e->key.label & 1][v] += val[v];
	}
	for (i = 0; i < n; i++) {
		if (fr[i]->inlined)
			continue;
		for (j = 0; j < i; j++)
			if (fr[j]->func == fr[i]->func && fr[j]->object == fr[i]->object)
				break;
		if (j < i)
			continue;  /* recursion: counted once */
		row = row_of(t, fr[i], e->key.pid, e->key.tid);
		if (!row)
			return -ENOMEM;
		for (v = 0; v < nv; v++) {
			row->total[v] += val[v];
			if (leaf)
				row->self[v] += val[v];
		}
		leaf = false;
	}
	return 0;
}

/* By process, thread, then the ranked value: self first (CPU), or total first (the caller's view). */
static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct stackrows *r = arg;
	const struct prof_desc *d = r->c.desc;
	const struct stack_row *x = a, *y = b;
	const double *x1 = d->rank_self ? x->self : x->total, *y1 = d->rank_self ? y->self : y->total;
	const double *x2 = d->rank_self ? x->total : x->self, *y2 = d->rank_self ? y->total : y->self;
	int k = d->rank;

	/* -a (comm_of): every process's rows ranked together, PID and COMM in columns. */
	if (!r->c.comm_of && x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x1[k] != y1[k])
		return x1[k] > y1[k] ? -1 : 1;
	return x2[k] > y2[k] ? -1 : x2[k] < y2[k];
}

/* The rows of the interval's values (delta), or with total of the run's (out). */
static int rows_of(struct stackrows *r, struct stack_rows *t, bool total)
{
	const struct frame_info *fr[MAX_FRAMES];
	int n, v, nv = r->c.desc->nr_values;
	__u64 ips[MAX_FRAMES];
	const double *val;
	size_t i, k;

	if (rows_grow(t))
		return -ENOMEM;
	for (i = 0; i < r->nr_prev; i++) {
		val = total ? r->prev[i].out : r->prev[i].delta;
		for (v = 0; v < nv && !val[v]; v++)
			;
		if (v == nv)
			continue;
		n = stack_frames(r, &r->prev[i].key, fr, ips);
		if (agg_stack(t, fr, n, &r->prev[i], val, nv))
			return -ENOMEM;
	}
	for (i = 0, k = 0; i < t->cap; i++)
		if (t->v[i].func)
			t->v[k++] = t->v[i];
	qsort_r(t->v, k, sizeof(*t->v), cmp_rows, r);
	return 0;
}

int stackrows_rows(struct stackrows *r, struct stack_rows *t)
{
	return rows_of(r, t, false);
}

int stackrows_total_rows(struct stackrows *r, struct stack_rows *t)
{
	return rows_of(r, t, true);
}

/* --- the table ---------------------------------------------------------------- */

const char *stackrows_fmt(const struct pprof_type *t, double v, char *buf, size_t size)
{
	if (!strcmp(t->unit, "nanoseconds"))
		snprintf(buf, size, v >= 1e9 ? "%.2fs" : "%.2fms", v >= 1e9 ? v / 1e9 : v / 1e6);
	else if (!strcmp(t->unit, "bytes"))
		snprintf(buf, size, v >= 1 << 20 ? "%.1fMiB" : "%.1fKiB", v / (v >= 1 << 20 ? 1 << 20 : 1 << 10));
	else
		snprintf(buf, size, "%.0f", v);
	return buf;
}

/* Column i of the table: the desc's, or the ranked and second values' totals. */
static struct row_col column(const struct prof_desc *d, int i)
{
	struct row_col c = d->cols[i];

	if (!c.head && !c.width)
		c = (struct row_col){ .width = 12, .value = i ? d->second : d->rank, .kind = COL_UNIT };
	if (!c.head)
		c.head = d->types[c.value].type;
	return c;
}

static const char *cell(const struct prof_desc *d, const struct stack_rows *t, const struct stack_row *f, int i,
			char *buf, size_t size)
{
	struct row_col c = column(d, i);

	if (c.kind == COL_COUNT)
		snprintf(buf, size, "%.0f", f->self[c.value]);
	else if (c.kind == COL_CORES)
		snprintf(buf, size, "%.2f", f->self[c.value] / t->per_core);
	else if (t->unknown & 1U << c.value)
		snprintf(buf, size, "-");
	else
		stackrows_fmt(&d->types[c.value], f->total[c.value], buf, size);
	return buf;
}

/* Whether row i starts a heading's group: a thread, or a process (but with -a, whose rows are one list). */
static bool new_group(const struct stackrows *r, const struct stack_rows *t, size_t i)
{
	const struct stack_row *f = &t->v[i];

	return !i || f->tid != t->v[i - 1].tid || (!r->c.comm_of && f->pid != t->v[i - 1].pid);
}

/*
 * Whether row i is shown: among the first top of its thread (rows come
 * sorted by thread; *shown counts those so far), with a self value when
 * rows rank by self, else with a value and not the kernel's (the table is
 * the program's view; kernel frames are in the JSON and pprof).
 */
static bool row_shown(const struct stackrows *r, const struct stack_rows *t, size_t i, unsigned int top,
		      unsigned int *shown)
{
	const struct prof_desc *d = r->c.desc;
	const struct stack_row *f = &t->v[i];
	bool valued = d->rank_self ? f->self[d->rank] : f->total[d->rank] || f->total[d->second];

	if (new_group(r, t, i))
		*shown = 0;
	return valued && (d->kernel_rows || strcmp(f->object, "[kernel.kallsyms]")) && (*shown)++ < top;
}

/* The FUNCTION column's width for the rows shown (fit.h). */
static size_t func_width(const struct stackrows *r, const struct stack_rows *t, FILE *out)
{
	const char **names = calloc(t->nr ? t->nr : 1, sizeof(*names));
	/* FIT_SAMPLE_REST is the rest of a row with the CPU profile's columns, 8 and 6 cells wide. */
	size_t rest = FIT_SAMPLE_REST - 14 + column(r->c.desc, 0).width + column(r->c.desc, 1).width +
		      (r->c.comm_of ? 24 : 0);
	unsigned int shown = 0;
	size_t i, n = 0, w;

	for (i = 0; names && i < t->nr; i++)
		if (row_shown(r, t, i, r->c.top, &shown))
			names[n++] = t->v[i].func;
	w = names ? fit_column(out, names, n, FIT_FUNC_WIDTH, rest) : 0;
	free(names);
	return w ? w : FIT_FUNC_WIDTH;
}

/* A thread's heading with per_thread, and the columns' heading. */
static void table_heading(struct stackrows *r, FILE *out, const struct stack_row *f, size_t w)
{
	const struct prof_desc *d = r->c.desc;
	struct row_col c0 = column(d, 0), c1 = column(d, 1);
	char comm[64], clean[256];

	if (r->c.per_thread) {
		thread_name(r, f->pid, f->tid, comm, sizeof(comm));
		fprintf(out, "\nthread %u (%s):\n", f->tid, sanitize_term(comm, clean, sizeof(clean)));
	}
	if (r->c.comm_of)
		fprintf(out, "%7s %-15s ", "PID", "COMM");
	fprintf(out, "%-*s %-*s %7s %7s %*s %*s\n", (int)w, "FUNCTION", FIT_OBJECT_WIDTH, "OBJECT", "SELF%", "TOTAL%",
		c0.width, c0.head, c1.width, c1.head);
}

void stackrows_table(struct stackrows *r, FILE *out, const struct stack_rows *t)
{
	const struct prof_desc *d = r->c.desc;
	double pct = t->sum[d->rank] ? 100.0 / t->sum[d->rank] : 0;
	int w0 = column(d, 0).width, w1 = column(d, 1).width;
	size_t i, w = func_width(r, t, out);
	unsigned int shown = 0;
	char a[32], b[32];

	for (i = 0; i < t->nr; i++) {
		const struct stack_row *f = &t->v[i];

		if (new_group(r, t, i))
			table_heading(r, out, f, w);
		if (!row_shown(r, t, i, r->c.top, &shown))
			continue;
		if (r->c.comm_of)
			fprintf(out, "%7u %-15s ", f->pid, r->c.comm_of(r->c.ctx, f->pid));
		fit_name_cells(out, f->func, w, f->object);
		fprintf(out, "%7.2f %7.2f %*s %*s\n", f->self[d->rank] * pct, f->total[d->rank] * pct, w0,
			cell(d, t, f, 0, a, sizeof(a)), w1, cell(d, t, f, 1, b, sizeof(b)));
	}
}

/* --- JSON ------------------------------------------------------------------- */

void stackrows_json_values(struct stackrows *r, struct json *j, const char *key, const double *v,
			   unsigned int unknown)
{
	const struct prof_desc *d = r->c.desc;
	int i;

	json_obj_begin(j, key);
	for (i = 0; i < d->nr_values; i++) {
		if (unknown & 1U << i)
			json_null(j, d->types[i].type);
		else
			json_f64(j, d->types[i].type, v[i]);
	}
	json_obj_end(j);
}

/* The CPU profile's row: percentages, samples and cores of its one value. */
static void json_samples(struct json *j, const struct prof_desc *d, const struct stack_rows *t,
			 const struct stack_row *f)
{
	double pct = t->sum[d->rank] ? 100.0 / t->sum[d->rank] : 0;

	json_f64(j, "self_pct", f->self[d->rank] * pct);
	json_f64(j, "total_pct", f->total[d->rank] * pct);
	json_u64(j, "self_samples", (__u64)f->self[d->rank]);
	json_u64(j, "total_samples", (__u64)f->total[d->rank]);
	json_f64(j, "cpu_cores", f->self[d->rank] / t->per_core);
}

void stackrows_json(struct stackrows *r, struct json *j, const struct stack_rows *t)
{
	size_t i;

	json_arr_begin(j, "functions");
	for (i = 0; i < t->nr; i++) {
		const struct stack_row *f = &t->v[i];

		json_obj_begin(j, NULL);
		json_str(j, "name", f->func);
		json_str(j, "object", f->object);
		if (f->pid)
			json_u64(j, "pid", f->pid);
		if (r->c.comm_of)
			json_str(j, "comm", r->c.comm_of(r->c.ctx, f->pid));
		if (r->c.per_thread)
			json_u64(j, "tid", f->tid);
		if (r->c.desc->json_samples) {
			json_samples(j, r->c.desc, t, f);
		} else {
			stackrows_json_values(r, j, "self", f->self, t->unknown);
			stackrows_json_values(r, j, "total", f->total, t->unknown);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* --- folded stacks -------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/*
 * A frame's name in folded stacks, pprof and the flame graph: its function,
 * or for an address without a symbol the object's name in brackets
 * ("[libc.so.6]"), as perf's stackcollapse does, so that unknown frames of
 * different objects stay apart.
 */
static const char *frame_name(const struct frame_info *f, char *buf, size_t size)
{
	if (f->known || !strcmp(f->object, "[unknown]") || !strcmp(f->object, "[kernel.kallsyms]"))
		return f->func;
	snprintf(buf, size, "[%s]", base_name(f->object));
	return buf;
}

struct folded_line {
	char *frames;
	__u64 count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->frames, ((const struct folded_line *)b)->frames);
}

/* A name as a folded frame, into buf: flamegraph.pl splits frames on ';' and the count off at the last space. */
static const char *folded_comm(const char *name, char *buf, size_t size)
{
	if (buf != name)
		snprintf(buf, size, "%s", name);
	buf[strcspn(buf, "; ")] = 0;
	return buf[0] ? buf : "[process]";
}

/*
 * "comm;root;...;leaf" of one counted stack, root first, kernel frames
 * marked _[k]; a -p list's "comm-PID;" first. NULL: no memory.
 */
static char *folded_frames(struct stackrows *r, const struct stack_count *e)
{
	const struct frame_info *fr[MAX_FRAMES];
	__u64 ips[MAX_FRAMES];
	char comm[64], name[PATH_MAX + 2], clean[PATH_MAX + 2], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n;

	if (!f)
		return NULL;
	if (r->c.name_process)
		fprintf(f, "%s-%d;", folded_comm(stackrows_comm(r), comm, sizeof(comm)), (int)r->c.pid);
	if (e->key.tid)
		thread_name(r, e->key.pid, e->key.tid, comm, sizeof(comm));
	else if (r->c.comm_of)
		snprintf(comm, sizeof(comm), "%s", r->c.comm_of(r->c.ctx, e->key.pid));
	else if (!r->c.name_process)
		snprintf(comm, sizeof(comm), "%s", stackrows_comm(r));
	if (e->key.tid || !r->c.name_process)
		fputs(folded_comm(comm, comm, sizeof(comm)), f);
	n = stack_frames(r, &e->key, fr, ips);
	while (n--)
		fprintf(f, ";%s%s", sanitize_folded(frame_name(fr[n], name, sizeof(name)), clean, sizeof(clean)),
			!strcmp(fr[n]->object, "[kernel.kallsyms]") ? "_[k]" : "");
	fclose(f);
	return buf;
}

/* Sorted lines into one file, stacks that read the same (other addresses, same functions) summed. */
static int write_lines(const char *path, const struct folded_line *l, size_t nr)
{
	size_t i, len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		__u64 count = l[i].count;

		while (i + 1 < nr && !strcmp(l[i].frames, l[i + 1].frames))
			count += l[++i].count;
		fprintf(f, "%s %llu\n", l[i].frames, (unsigned long long)count);
	}
	fclose(f);
	err = buf ? write_file_atomic(path, buf, len) : -ENOMEM;
	free(buf);
	return err;
}

int stackrows_write_folded(struct stackrows *r, const char *path)
{
	return stackrows_write_folded_many(&r, 1, path);
}

/* The lines of r's counts into l from *nr on. -ENOMEM, or 0. */
static int folded_lines(struct stackrows *r, struct folded_line *l, size_t *nr)
{
	size_t i;

	for (i = 0; i < r->nr_prev; i++, (*nr)++) {
		l[*nr].count = (__u64)llround(r->prev[i].out[r->c.desc->rank]);
		l[*nr].frames = folded_frames(r, &r->prev[i]);
		if (!l[*nr].frames)
			return -ENOMEM;
	}
	return 0;
}

int stackrows_write_folded_many(struct stackrows *const *r, size_t n, const char *path)
{
	struct folded_line *l;
	size_t i, nr = 0, all = 0;
	int err = 0;

	for (i = 0; i < n; i++)
		all += r[i]->nr_prev;
	l = calloc(all ? all : 1, sizeof(*l));
	for (i = 0; l && !err && i < n; i++)
		err = folded_lines(r[i], l, &nr);
	if (!l || err)
		goto cleanup;
	qsort(l, nr, sizeof(*l), cmp_folded);
	err = write_lines(path, l, nr);
cleanup:
	err = l ? err : -ENOMEM;
	for (i = 0; l && i < nr; i++)
		free(l[i].frames);
	free(l);
	return err;
}

/* --- pprof ------------------------------------------------------------------- */

/*
 * One pprof location for the frames of one address: its inlined calls (named
 * without the " (inlined)" mark: pprof marks them itself) and the function
 * they are in. *used: how many frames it took.
 */
static __u64 pprof_frames(struct pprof *p, const struct frame_info **fr, __u64 ip, int n, int *used)
{
	static const char mark[] = " (inlined)";
	char names[SYM_MAX_INLINED][256], buf[PATH_MAX + 2];
	const char *funcs[SYM_MAX_INLINED + 1];
	size_t len;
	int k;

	for (k = 0; k < n && k < SYM_MAX_INLINED && fr[k]->inlined; k++) {
		len = strlen(fr[k]->func);
		len -= len >= strlen(mark) && !strcmp(fr[k]->func + len - strlen(mark), mark) ? strlen(mark) : 0;
		snprintf(names[k], sizeof(names[k]), "%.*s", (int)len, fr[k]->func);
		funcs[k] = names[k];
	}
	if (k < n && !fr[k]->inlined) {
		funcs[k] = frame_name(fr[k], buf, sizeof(buf));
		k++;
	}
	*used = k;
	return pprof_location_inlined(p, ip, funcs, k, fr[k - 1]->object, fr[k - 1]->map_start, fr[k - 1]->map_limit,
				      fr[k - 1]->map_pgoff);
}

static int pprof_count(struct stackrows *r, struct pprof *p, const struct stack_count *e, int nv)
{
	const struct prof_desc *d = r->c.desc;
	const struct frame_info *fr[MAX_FRAMES];
	__u64 ips[MAX_FRAMES], locs[MAX_FRAMES], v[PROF_NR_VALUES];
	const char *label;
	int n, k, g, nl, i;

	n = stack_frames(r, &e->key, fr, ips);
	for (k = 0, nl = 0; k < n; k += g, nl++)
		locs[nl] = pprof_frames(p, &fr[k], ips[k], n - k, &g);
	for (i = 0; i < nv; i++)
		v[i] = (__u64)llround(e->out[i]);
	label = d->label_key ? d->labels[e->key.label & 1] : NULL;
	/* -a, -p list: whose each sample is, as pprof labels (go tool pprof -tags, Parca, Pyroscope). */
	if (r->c.comm_of)
		return pprof_sample_process(p, locs, nl, v, e->key.pid, r->c.comm_of(r->c.ctx, e->key.pid),
					    d->label_key, label);
	if (r->c.name_process)
		return pprof_sample_process(p, locs, nl, v, r->c.pid, stackrows_comm(r), d->label_key, label);
	return pprof_sample_values(p, locs, nl, v, d->label_key, label);
}

int stackrows_add_pprof(struct stackrows *r, struct pprof *p, unsigned int unknown)
{
	struct frame_info exe;
	int nv, err = 0;
	size_t i;

	/* The values the file has: all, or those before the unknown states (which come last). */
	for (nv = 0; nv < r->c.desc->nr_values && !(unknown & 1U << nv); nv++)
		;
	if (symbolize_main_object(r->c.sym, &exe))
		pprof_mapping(p, exe.object, exe.map_start, exe.map_limit, exe.map_pgoff);
	for (i = 0; !err && i < r->nr_prev; i++)
		err = pprof_count(r, p, &r->prev[i], nv);
	return err;
}

int stackrows_write_pprof(struct stackrows *r, struct pprof *p, unsigned int unknown, const char *path)
{
	return stackrows_write_pprof_many(&r, 1, p, unknown, path);
}

int stackrows_write_pprof_many(struct stackrows *const *r, size_t n, struct pprof *p, unsigned int unknown,
			       const char *path)
{
	unsigned char *data = NULL;
	size_t len, i;
	int err = p ? 0 : -ENOMEM;

	for (i = 0; !err && i < n; i++)
		err = stackrows_add_pprof(r[i], p, unknown);

	if (!err)
		err = pprof_encode(p, &data, &len);
	if (!err)
		err = write_file_atomic(path, data, len);
	free(data);
	pprof_free(p);
	return err;
}

/* --- flame graph ------------------------------------------------------------------ */

static enum flame_kind frame_kind(const struct frame_info *f, const char *exe)
{
	if (!strcmp(f->object, "[kernel.kallsyms]"))
		return FLAME_KERNEL;
	if (!strcmp(f->object, "[unknown]"))
		return FLAME_UNKNOWN;
	return exe && !strcmp(f->object, exe) ? FLAME_USER : FLAME_LIB;
}

/* One counted stack into the graph: root first, below the thread with --per-thread, the process with a -p list. */
static int flame_stack(struct stackrows *r, struct flame *fl, const struct stack_count *e, const char *exe)
{
	const struct frame_info *fr[MAX_FRAMES];
	struct flame_frame out[MAX_FRAMES + 2];
	__u64 ips[MAX_FRAMES];
	char names[MAX_FRAMES][64], comm[64], thread[96], proc[96];
	int n, k = 0, i;

	if (r->c.name_process) {
		snprintf(proc, sizeof(proc), "%s (pid %d)", stackrows_comm(r), (int)r->c.pid);
		out[k++] = (struct flame_frame){ .name = proc, .object = "", .kind = FLAME_ROOT };
	}
	if (e->key.tid) {
		thread_name(r, e->key.pid, e->key.tid, comm, sizeof(comm));
		snprintf(thread, sizeof(thread), "%s (thread %u)", comm, e->key.tid);
		out[k++] = (struct flame_frame){ .name = thread, .object = "", .kind = FLAME_ROOT };
	}
	n = stack_frames(r, &e->key, fr, ips);
	for (i = n - 1; i >= 0; i--)
		out[k++] = (struct flame_frame){
			.name = frame_name(fr[i], names[i], sizeof(names[i])), .object = fr[i]->object,
			.kind = frame_kind(fr[i], exe),
		};
	return flame_add(fl, out, k, (__u64)llround(e->out[r->c.desc->rank]));
}

int stackrows_add_flame(struct stackrows *r, struct flame *fl)
{
	struct frame_info exe;
	const char *exe_path = symbolize_main_object(r->c.sym, &exe) ? exe.object : NULL;
	size_t i;

	for (i = 0; i < r->nr_prev; i++)
		if (flame_stack(r, fl, &r->prev[i], exe_path))
			return -ENOMEM;
	return 0;
}
