// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling profiler: loads profile.bpf.c, opens one sampling perf event
 * per CPU, and turns the kernel's per-stack counts into the top-functions
 * table, JSON, folded stacks and pprof.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "dwstacks.h"
#include "fit.h"
#include "flame.h"
#include "fnprof.h"
#include "json.h"
#include "log.h"
#include "outfile.h"
#include "pprof.h"
#include "proc.h"
#include "proctab.h"
#include "profile.skel.h"
#include "sample.h"
#include "sanitize.h"
#include "symbolize.h"


/* A stack's frames, symbolized once: leaf first, kernel frames before user ones. */
struct entry {
	struct sample_key key;
	__u64 count;        /* since the start */
	__u64 delta;        /* in the interval being reported */
};

struct sampler {
	struct sampler_conf o;  /* a copy: the caller's may go */
	pid_t pid;
	struct profile_bpf *skel;
	struct bpf_link **links;
	int nr_links;
	const char *event;           /* "cycles" or "cpu-clock" */
	struct symbolizer *sym;
	struct dwstacks *dw;         /* --call-graph dwarf: user stacks unwound here */
	struct sym_stack *ustacks, *kstacks;   /* by stack id, filled on first use (user: DWSTACK_BASE + DWSTACK_MAX) */
	struct entry *prev;          /* counts at the last report, sorted by key */
	size_t nr_prev;
	__u64 drops_prev[SDROP_NR + 1];
	double run_s;                /* seconds sampled so far */
	char comm[64];               /* the process's name, read while it runs */
	struct thread_name *threads; /* --per-thread: names seen while the threads ran */
	size_t nr_threads, cap_threads;
	struct proctab *procs;       /* -a: every process's name, symbolizer and stacks (s->sym: the kernel's) */
};

struct thread_name {
	__u32 tid;
	char comm[16];  /* TASK_COMM_LEN */
};

/* --- perf events ----------------------------------------------------------- */

static int open_sampling_event(__u32 type, __u64 config, unsigned int hz, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = type, .config = config, .freq = 1, .sample_freq = hz,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* cycles where a PMU exists, else cpu-clock, on every online CPU. */
static int attach_events(struct sampler *s)
{
	int cpu, fd, nr = libbpf_num_possible_cpus();
	bool hw = true;

	s->links = calloc(nr > 0 ? nr : 1, sizeof(*s->links));
	if (!s->links)
		return -ENOMEM;
	/* Without a PMU (most VMs) cycles fails with ENOENT; cpu-clock is a timer and always works. */
	fd = open_sampling_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, s->o.freq_hz, 0);
	if (fd < 0) {
		hw = false;
		log_debug("no cycles event (%s): sampling cpu-clock instead", strerror(errno));
	} else {
		close(fd);
	}
	s->event = hw ? "cycles" : "cpu-clock";
	log_debug("sampling %s at %u Hz on %d CPUs", s->event, s->o.freq_hz, nr);
	for (cpu = 0; cpu < nr; cpu++) {
		fd = hw ? open_sampling_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, s->o.freq_hz, cpu)
			: open_sampling_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, s->o.freq_hz, cpu);
		if (fd < 0) {
			if (errno == ENODEV)  /* offline CPU */
				continue;
			log_err("failed to open a %s sampling event on CPU %d: %s", s->event, cpu, strerror(errno));
			return -errno;
		}
		s->links[s->nr_links] = bpf_program__attach_perf_event(s->skel->progs.on_sample, fd);
		if (!s->links[s->nr_links]) {
			log_err("failed to attach the sampling program on CPU %d: %s", cpu, strerror(errno));
			close(fd);
			return -errno;
		}
		s->nr_links++;
	}
	return 0;
}

/*
 * --call-graph dwarf/auto: a stack buffer per CPU, and a ring buffer for a
 * quarter second of samples on every CPU (at least 4 MiB), a power of two.
 */
static int configure_dwarf(struct sampler *s)
{
	int cpus = libbpf_num_possible_cpus();
	double want = 0.25 * s->o.freq_hz * (cpus > 0 ? cpus : 1) *
		      (s->o.stack_bytes + sizeof(struct dwarf_sample) + 8);
	__u32 size = 4 << 20;

	if (!s->o.dwarf)
		return 0;
	while (size < want && size < (1u << 30))
		size <<= 1;
	s->skel->rodata->dwarf = true;
	s->skel->rodata->stack_bytes = s->o.stack_bytes;
	return bpf_map__set_max_entries(s->skel->maps.bufs, cpus > 0 ? cpus : 1) ?:
	       bpf_map__set_max_entries(s->skel->maps.samples, size);
}

int sampler_start(const struct sampler_conf *o, pid_t pid, struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->pid = pid;
	s->skel = profile_bpf__open();
	if (!s->skel) {
		err = -errno;
		log_err("failed to open the sampling BPF object: %s", strerror(-err));
		goto fail;
	}
	s->skel->rodata->target_tgid = pid;
	s->skel->rodata->all_procs = o->all;
	s->skel->rodata->self_tgid = getpid();
	s->skel->rodata->per_thread = o->per_thread;
	err = configure_dwarf(s);
	if (!err)
		err = profile_bpf__load(s->skel);
	if (err) {
		log_err("failed to load the sampling BPF program: %s", strerror(-err));
		goto fail;
	}
	if (s->skel->rodata->dwarf) {
		err = dwstacks_start(bpf_map__fd(s->skel->maps.samples), pid, o->per_thread, &s->dw);
		if (err) {
			log_err("cannot start unwinding sampled stacks: %s", strerror(-err));
			goto fail;
		}
	}
	s->sym = symbolizer_new(pid);
	s->procs = o->all && s->sym ? proctab_new(s->sym) : NULL;
	s->ustacks = calloc(DWSTACK_BASE + DWSTACK_MAX, sizeof(*s->ustacks));
	s->kstacks = calloc(16384, sizeof(*s->kstacks));
	err = s->sym && s->ustacks && s->kstacks && (s->procs || !o->all) ? attach_events(s) : -ENOMEM;
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	sampler_stop(s);
	return err;
}

void sampler_stop(struct sampler *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nr_links; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	dwstacks_stop(s->dw);
	profile_bpf__destroy(s->skel);
	sym_stacks_free(s->ustacks, DWSTACK_BASE + DWSTACK_MAX);
	sym_stacks_free(s->kstacks, 16384);
	proctab_free(s->procs);   /* its symbolizers first: s->sym is their parent */
	symbolizer_free(s->sym);
	free(s->threads);
	free(s->prev);
	free(s);
}

static void remember_thread(struct sampler *s, __u32 tid)
{
	struct thread_name *t;
	size_t i;

	for (i = 0; i < s->nr_threads; i++)
		if (s->threads[i].tid == tid)
			return;
	if (ARRAY_RESERVE(s->threads, s->nr_threads + 1, s->cap_threads))
		return;
	t = &s->threads[s->nr_threads];
	proc_thread_name(s->pid, tid, "[exited]", t->comm, sizeof(t->comm));
	if (strcmp(t->comm, "[exited]")) {
		t->tid = tid;
		s->nr_threads++;
	}
}

/* Threads' names, read while they run: the report at the end comes after they exit. */
static void remember_threads(struct sampler *s)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			remember_thread(s, strtoul(d->d_name, NULL, 10));
	closedir(dir);
}

/* A thread's name (of process pid with -a): now, or as it was while it ran, or "[exited]". */
static void thread_name(const struct sampler *s, pid_t pid, __u32 tid, char *buf, size_t size)
{
	size_t i;

	proc_thread_name(s->procs ? pid : s->pid, tid, "[exited]", buf, size);
	if (strcmp(buf, "[exited]"))
		return;
	for (i = 0; i < s->nr_threads; i++)
		if (s->threads[i].tid == tid)
			snprintf(buf, size, "%s", s->threads[i].comm);
}

void sampler_refresh(struct sampler *s)
{
	char comm[64];

	if (!s)
		return;
	if (s->procs) {
		proctab_scan(s->procs, bpf_map__fd(s->skel->maps.procs));
		return;
	}
	symbolizer_refresh(s->sym);
	if (s->o.per_thread)
		remember_threads(s);
	proc_thread_name(s->pid, 0, "[process]", comm, sizeof(comm));
	if (strcmp(comm, "[process]"))
		snprintf(s->comm, sizeof(s->comm), "%s", comm);
}

/* --- reading and symbolizing ----------------------------------------------- */

static int cmp_key(const void *a, const void *b)
{
	return memcmp(&((const struct entry *)a)->key, &((const struct entry *)b)->key, sizeof(struct sample_key));
}

/* --call-graph dwarf: the counts of the stacks unwound in user space, after those read. */
static void add_unwound(struct sampler *s, struct entry **e, size_t *nr, size_t *cap)
{
	struct dwstack_count *c;
	size_t i, n;

	dwstacks_sync(s->dw);
	n = dwstacks_counts(s->dw, &c);
	for (i = 0; c && i < n && !ARRAY_RESERVE(*e, *nr + 1, *cap); i++, (*nr)++) {
		(*e)[*nr] = (struct entry){ .key = c[i].key, .count = c[i].count };
	}
	free(c);
}

/* Every (thread, stacks) count so far, sorted by key. */
static struct entry *read_counts(struct sampler *s, size_t *nr)
{
	int fd = bpf_map__fd(s->skel->maps.counts);
	struct sample_key key, next, *cur = NULL;
	struct entry *e = NULL;
	size_t cap = 0;

	*nr = 0;
	if (s->procs)   /* the names of processes first sampled since the last look */
		proctab_scan(s->procs, bpf_map__fd(s->skel->maps.procs));
	while (!bpf_map_get_next_key(fd, cur, &next)) {
		key = next;
		cur = &key;
		if (ARRAY_RESERVE(e, *nr + 1, cap))
			break;
		e[*nr].key = key;
		if (!bpf_map_lookup_elem(fd, &key, &e[*nr].count))
			(*nr)++;
	}
	if (s->dw)
		add_unwound(s, &e, nr, &cap);
	if (*nr)
		qsort(e, *nr, sizeof(*e), cmp_key);
	return e;
}

/* -a: a user stack's symbolizer and cache slot are its process's. */
static struct sym_stack *stack_slot(struct sampler *s, pid_t pid, __s32 id, bool kernel, struct symbolizer **sym)
{
	*sym = s->sym;
	if (kernel || !s->procs)
		return kernel ? &s->kstacks[id] : &s->ustacks[id];
	*sym = proctab_symbolizer(s->procs, pid);
	return *sym ? proctab_ustack(s->procs, pid, id) : NULL;
}

static const struct sym_stack *get_stack(struct sampler *s, pid_t pid, __s32 id, bool kernel)
{
	struct symbolizer *sym;
	struct sym_stack *t;
	__u64 ips[FNPROF_STACK_DEPTH] = {};
	int n;

	if (id < 0 || id >= (kernel ? 16384 : DWSTACK_BASE + DWSTACK_MAX))
		return NULL;
	t = stack_slot(s, pid, id, kernel, &sym);
	if (!t)
		return NULL;
	if (t->f)
		return t;
	if (id >= DWSTACK_BASE) {
		n = s->dw ? dwstacks_stack(s->dw, id, ips, FNPROF_STACK_DEPTH) : -ENOENT;
		if (n < 0)
			return NULL;
	} else {
		if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stacks), &id, ips))
			return NULL;
		for (n = 0; n < FNPROF_STACK_DEPTH && ips[n]; n++)
			;
	}
	if (symbolize_stack(sym, ips, n, kernel, true, FNPROF_STACK_DEPTH, t))
		return NULL;
	return t;
}

/* The frames of one sample, leaf first (kernel frames first): up to max. */
static int sample_frames(struct sampler *s, const struct sample_key *k, const struct frame_info **out,
			 __u64 *ips, int max)
{
	static const struct frame_info lost = { .func = "[stack lost]", .object = "[unknown]" };
	const struct sym_stack *ks = get_stack(s, k->pid, k->kstack, true), *us = get_stack(s, k->pid, k->ustack, false);
	int n = 0, i;

	for (i = 0; ks && i < ks->nr && n < max; i++, n++)
		out[n] = &ks->f[i], ips[n] = ks->ips[i];
	for (i = 0; us && i < us->nr && n < max; i++, n++)
		out[n] = &us->f[i], ips[n] = us->ips[i];
	if (!us && n < max)  /* never drop a sample: show that its user stack is missing */
		out[n] = &lost, ips[n++] = 0;
	return n;
}

/* --- per-function aggregation ---------------------------------------------- */

struct fn_agg {
	const char *func, *object;
	__u32 tid;
	__u32 pid;          /* -a: its process (rows are per process); 0 otherwise */
	__u64 self, total;
};

struct agg_table {
	struct fn_agg *v;
	size_t cap, nr;
	__u64 samples;
};

static size_t agg_hash(const struct agg_table *t, const char *func, const char *object, __u32 tid, __u32 pid)
{
	return ((uintptr_t)func * 31 + (uintptr_t)object * 7 + tid + pid * 131ULL) & (t->cap - 1);
}

/* Doubles the table: it stays at most half full, so that probing stays short. */
static int agg_grow(struct agg_table *t)
{
	size_t i, h, cap = t->cap ? 2 * t->cap : 256;
	struct agg_table n = { .cap = cap, .nr = t->nr, .samples = t->samples };

	n.v = calloc(cap, sizeof(*n.v));
	if (!n.v)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (!t->v[i].func)
			continue;
		for (h = agg_hash(&n, t->v[i].func, t->v[i].object, t->v[i].tid, t->v[i].pid); n.v[h].func;
		     h = (h + 1) & (cap - 1))
			;
		n.v[h] = t->v[i];
	}
	free(t->v);
	*t = n;
	return 0;
}

/*
 * The function's row; names are compared as pointers, the symbolizer hands
 * out one string per function. NULL when out of memory.
 */
static struct fn_agg *agg_slot(struct agg_table *t, const struct frame_info *f, __u32 tid, __u32 pid)
{
	size_t h;

	if (2 * (t->nr + 1) > t->cap && agg_grow(t))
		return NULL;
	for (h = agg_hash(t, f->func, f->object, tid, pid); t->v[h].func; h = (h + 1) & (t->cap - 1))
		if (t->v[h].func == f->func && t->v[h].object == f->object && t->v[h].tid == tid && t->v[h].pid == pid)
			return &t->v[h];
	t->v[h] = (struct fn_agg){ .func = f->func, .object = f->object, .tid = tid, .pid = pid };
	t->nr++;
	return &t->v[h];
}

/*
 * Self samples go to the leaf, total samples once to every function on the
 * stack. Inlined frames are left to the stacks (folded, pprof): in the table
 * a sample counts for the function its code was compiled into, as perf's.
 */
static int agg_stack(struct agg_table *t, const struct frame_info **fr, int n, const struct sample_key *k,
		     __u64 cnt)
{
	struct fn_agg *a;
	bool leaf = true;
	int i, j;

	t->samples += cnt;
	for (i = 0; i < n; i++) {
		if (fr[i]->inlined)
			continue;
		for (j = 0; j < i; j++)
			if (fr[j]->func == fr[i]->func && fr[j]->object == fr[i]->object)
				break;
		if (j < i)
			continue;  /* recursion: counted once */
		a = agg_slot(t, fr[i], k->tid, k->pid);
		if (!a)
			return -ENOMEM;
		a->total += cnt;
		if (leaf)
			a->self += cnt;
		leaf = false;
	}
	return 0;
}

static int cmp_self(const void *a, const void *b)
{
	const struct fn_agg *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return x->total > y->total ? -1 : x->total < y->total;
}

/* The interval's functions, sorted by thread, then self samples. */
static int aggregate(struct sampler *s, const struct entry *e, size_t nr, struct agg_table *t)
{
	const struct frame_info *fr[2 * FNPROF_STACK_DEPTH + 1];
	__u64 ips[2 * FNPROF_STACK_DEPTH + 1];
	size_t i, k;
	int n;

	if (agg_grow(t))
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		if (!e[i].delta)
			continue;
		n = sample_frames(s, &e[i].key, fr, ips, 2 * FNPROF_STACK_DEPTH + 1);
		if (agg_stack(t, fr, n, &e[i].key, e[i].delta))
			return -ENOMEM;
	}
	for (i = 0, k = 0; i < t->cap; i++)
		if (t->v[i].func)
			t->v[k++] = t->v[i];
	qsort(t->v, k, sizeof(*t->v), cmp_self);
	return 0;
}

/* --- reports ------------------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* How the user stacks were walked, since the start: what was cut short, and what it cost. */
static void print_unwind_stats(struct sampler *s, FILE *out)
{
	struct dwstack_stats st;

	dwstacks_stats(s->dw, &st);
	fprintf(out, "stacks: unwound with DWARF CFI from %u-byte stack copies: %llu samples, %llu cut short by the "
		     "copy's end%s, %llu lost (table full); unwinding used %.1f ms of CPU\n", s->o.stack_bytes,
		(unsigned long long)st.samples, (unsigned long long)st.truncated,
		st.truncated ? " (--call-graph dwarf,SIZE copies more)" : "", (unsigned long long)st.lost, st.cpu_s * 1e3);
	if (s->procs)
		fprintf(out, "unwinders: %llu processes hold one (at most %d), %llu given up for the cap\n",
			(unsigned long long)st.unwinders, DWSTACK_MAX_UNWINDERS, (unsigned long long)st.unwinders_evicted);
}

/*
 * Whether row i is shown: the first top rows of its thread with self
 * samples (rows come sorted by thread); *shown counts its thread's so far.
 */
static bool row_shown(const struct agg_table *t, size_t i, unsigned int top, unsigned int *shown)
{
	if (i && t->v[i].tid != t->v[i - 1].tid)
		*shown = 0;
	return t->v[i].self && (*shown)++ < top;
}

/* The FUNCTION column's width for the rows shown (fit.h). */
static size_t func_width(const struct agg_table *t, unsigned int top, FILE *out, bool s_all)
{
	const char **names = calloc(t->nr ? t->nr : 1, sizeof(*names));
	unsigned int shown = 0;
	size_t i, n = 0, w;

	for (i = 0; names && i < t->nr; i++)
		if (row_shown(t, i, top, &shown))
			names[n++] = t->v[i].func;
	w = names ? fit_column(out, names, n, FIT_FUNC_WIDTH, FIT_SAMPLE_REST + (s_all ? 24 : 0)) : 0;
	free(names);
	return w ? w : FIT_FUNC_WIDTH;
}

static void print_table(struct sampler *s, FILE *out, const struct agg_table *t, double span,
			const __u64 *drops, bool final)
{
	double per_core = s->o.freq_hz * (span > 0 ? span : 1), pct = t->samples ? 100.0 / t->samples : 0;
	__u32 tid = (__u32)-1;
	unsigned int shown = 0;
	size_t i, w = func_width(t, s->o.top, out, s->procs);
	char comm[64], who[32];

	snprintf(who, sizeof(who), s->procs ? "all processes" : "pid %d", s->pid);
	fprintf(out, "\n%s %s, %.2f s, %llu samples at %u Hz (%s), %.2f cores\n",
		final ? "sampled:" : "sampling:", who, span, (unsigned long long)t->samples, s->o.freq_hz,
		s->event, t->samples / per_core);
	for (i = 0; i < t->nr; i++) {
		const struct fn_agg *a = &t->v[i];

		if (a->tid != tid) {
			tid = a->tid;
			if (s->o.per_thread) {
				thread_name(s, a->pid, tid, comm, sizeof(comm));
				fprintf(out, "\nthread %u (%s):\n", tid, comm);
			}
			if (s->procs)
				fprintf(out, "%7s %-15s ", "PID", "COMM");
			fprintf(out, "%-*s %-*s %7s %7s %8s %6s\n", (int)w, "FUNCTION", FIT_OBJECT_WIDTH, "OBJECT", "SELF%",
				"TOTAL%", "SAMPLES", "CORES");
		}
		if (!row_shown(t, i, s->o.top, &shown))
			continue;
		if (s->procs)
			fprintf(out, "%7u %-15s ", a->pid, proctab_comm(s->procs, a->pid));
		fit_name_cells(out, a->func, w, a->object);
		fprintf(out, "%7.2f %7.2f %8llu %6.2f\n", a->self * pct, a->total * pct, (unsigned long long)a->self,
			a->self / per_core);
	}
	if (s->dw)
		print_unwind_stats(s, out);
	if (s->procs)
		proctab_print_stats(s->procs, out);
	if (drops[SDROP_USTACK] || drops[SDROP_KSTACK] || drops[SDROP_COUNTS_FULL] || drops[SDROP_RINGBUF])
		fprintf(out, "dropped: %llu samples not counted (map or ring buffer full), stacks lost: %llu user, "
			     "%llu kernel (stack map full or collision)\n",
			(unsigned long long)(drops[SDROP_COUNTS_FULL] + drops[SDROP_RINGBUF]),
			(unsigned long long)drops[SDROP_USTACK], (unsigned long long)drops[SDROP_KSTACK]);
	fflush(out);
}

static void print_json(struct sampler *s, FILE *out, const struct agg_table *t, double span,
		       const __u64 *drops)
{
	double per_core = s->o.freq_hz * (span > 0 ? span : 1), pct = t->samples ? 100.0 / t->samples : 0;
	struct json j;
	size_t i;

	json_report_begin(&j, out, "sample", s->pid, span);
	if (s->procs)
		json_bool(&j, "all_processes", true);   /* -a: pid is 0 */
	json_u64(&j, "freq_hz", s->o.freq_hz);
	json_str(&j, "event", s->event);
	json_u64(&j, "samples", t->samples);
	json_u64(&j, "lost", drops[SDROP_COUNTS_FULL] + drops[SDROP_RINGBUF]);
	json_obj_begin(&j, "stacks_lost");
	json_u64(&j, "user", drops[SDROP_USTACK]);
	json_u64(&j, "kernel", drops[SDROP_KSTACK]);
	json_obj_end(&j);
	json_str(&j, "call_graph", s->dw ? "dwarf" : "fp");
	if (s->dw) {
		struct dwstack_stats st;

		dwstacks_stats(s->dw, &st);
		json_obj_begin(&j, "unwind");
		json_u64(&j, "stack_bytes", s->o.stack_bytes);
		json_u64(&j, "samples", st.samples);
		json_u64(&j, "truncated", st.truncated);
		json_u64(&j, "lost", st.lost);
		json_u64(&j, "cpu_ns", (__u64)(st.cpu_s * 1e9));
		json_u64(&j, "unwinders", st.unwinders);
		json_u64(&j, "unwinders_evicted", st.unwinders_evicted);
		json_obj_end(&j);
	}
	if (s->procs)
		proctab_json_stats(s->procs, &j);
	json_arr_begin(&j, "functions");
	for (i = 0; i < t->nr; i++) {
		const struct fn_agg *a = &t->v[i];

		json_obj_begin(&j, NULL);
		json_str(&j, "name", a->func);
		json_str(&j, "object", a->object);
		if (s->procs) {
			json_u64(&j, "pid", a->pid);
			json_str(&j, "comm", proctab_comm(s->procs, a->pid));
		}
		if (s->o.per_thread)
			json_u64(&j, "tid", a->tid);
		json_f64(&j, "self_pct", a->self * pct);
		json_f64(&j, "total_pct", a->total * pct);
		json_u64(&j, "self_samples", a->self);
		json_u64(&j, "total_samples", a->total);
		json_f64(&j, "cpu_cores", a->self / per_core);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}

/* Counts since the last report: the current ones less those seen then. */
static void compute_deltas(struct sampler *s, struct entry *e, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		const struct entry *p = s->nr_prev ? bsearch(&e[i], s->prev, s->nr_prev, sizeof(*e), cmp_key) : NULL;

		e[i].delta = e[i].count - (p ? p->count : 0);
	}
}

static void read_drops(struct sampler *s, __u64 *now)
{
	int fd = bpf_map__fd(s->skel->maps.sdrops), c, nr = libbpf_num_possible_cpus();
	__u64 *v = calloc(nr > 0 ? nr : 1, sizeof(*v));
	__u32 k;

	for (k = 0; v && k <= SDROP_NR; k++) {
		now[k] = 0;
		if (!bpf_map_lookup_elem(fd, &k, v))
			for (c = 0; c < nr; c++)
				now[k] += v[c];
	}
	free(v);
}

int sampler_report(struct sampler *s, FILE *out, double interval_s, bool final)
{
	__u64 drops[SDROP_NR + 1], d[SDROP_NR + 1];
	struct agg_table t = {};
	struct entry *e;
	size_t nr;
	int k;

	e = read_counts(s, &nr);
	read_drops(s, drops);
	for (k = 0; k <= SDROP_NR; k++)
		d[k] = drops[k] - s->drops_prev[k];
	compute_deltas(s, e, nr);
	if (aggregate(s, e, nr, &t)) {
		log_err("cannot aggregate %zu sampled stacks: %s", nr, strerror(ENOMEM));
		free(t.v);
		free(e);
		return -ENOMEM;
	}
	if (s->o.json)
		print_json(s, out, &t, interval_s, d);
	else
		print_table(s, out, &t, interval_s, d, final);
	free(t.v);
	free(s->prev);
	s->prev = e;
	s->nr_prev = nr;
	memcpy(s->drops_prev, drops, sizeof(drops));
	s->run_s += interval_s;
	/* Their stacks were symbolized above: exited processes need their mappings no more. */
	if (s->procs)
		proctab_release_exited(s->procs);
	return 0;
}

/* --- files -------------------------------------------------------------------- */

/*
 * A frame's name in folded stacks and pprof: its function, or for an address
 * without a symbol the object's name in brackets ("[libc.so.6]"), as perf's
 * stackcollapse does, so that unknown frames of different objects stay apart.
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

/* "comm;root;...;leaf" of one counted stack, root first, kernel frames marked _[k]. NULL: no memory. */
static char *folded_frames(struct sampler *s, const struct entry *e)
{
	const struct frame_info *fr[2 * FNPROF_STACK_DEPTH + 1];
	__u64 ips[2 * FNPROF_STACK_DEPTH + 1];
	char comm[64], name[PATH_MAX + 2], clean[PATH_MAX + 2], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n;

	if (!f)
		return NULL;
	if (e->key.tid)
		thread_name(s, e->key.pid, e->key.tid, comm, sizeof(comm));
	else if (s->procs)
		snprintf(comm, sizeof(comm), "%s", proctab_comm(s->procs, e->key.pid));
	else
		snprintf(comm, sizeof(comm), "%s", s->comm[0] ? s->comm : "[process]");
	/* flamegraph.pl splits frames on ';' and the count off at the last space. */
	comm[strcspn(comm, "; ")] = 0;
	fputs(comm[0] ? comm : "[process]", f);
	n = sample_frames(s, &e->key, fr, ips, 2 * FNPROF_STACK_DEPTH + 1);
	while (n--)
		fprintf(f, ";%s%s", sanitize_folded(frame_name(fr[n], name, sizeof(name)), clean, sizeof(clean)),
			!strcmp(fr[n]->object, "[kernel.kallsyms]") ? "_[k]" : "");
	fclose(f);
	return buf;
}

/*
 * folded: "comm;root;...;leaf count". Stacks that differ only in addresses
 * inside the same functions read the same: one line each, counts summed.
 */
static int write_folded(struct sampler *s, const char *path)
{
	struct folded_line *l = calloc(s->nr_prev ? s->nr_prev : 1, sizeof(*l));
	size_t i, nr = 0, len = 0;
	char *buf = NULL;
	FILE *f = NULL;
	int err = -ENOMEM;

	for (i = 0; l && i < s->nr_prev; i++, nr++) {
		l[nr].count = s->prev[i].count;
		l[nr].frames = folded_frames(s, &s->prev[i]);
		if (!l[nr].frames)
			goto cleanup;
	}
	qsort(l, nr, sizeof(*l), cmp_folded);
	f = l ? open_memstream(&buf, &len) : NULL;
	if (!f)
		goto cleanup;
	for (i = 0; i < nr; i++) {
		__u64 count = l[i].count;

		while (i + 1 < nr && !strcmp(l[i].frames, l[i + 1].frames))
			count += l[++i].count;
		fprintf(f, "%s %llu\n", l[i].frames, (unsigned long long)count);
	}
	fclose(f);
	err = buf ? write_file_atomic(path, buf, len) : -ENOMEM;
cleanup:
	for (i = 0; l && i < nr; i++)
		free(l[i].frames);
	free(l);
	free(buf);
	return err;
}

/*
 * One pprof location for the frames of one address: its inlined calls (named
 * without the " (inlined)" mark: pprof marks them itself) and the function
 * they are in. *used: how many frames it took.
 */
static __u64 pprof_frames(struct pprof *p, const struct frame_info **fr, __u64 ip, int n, int *used)
{
	static const char mark[] = " (inlined)";
	char names[16][256], buf[PATH_MAX + 2];
	const char *funcs[17];
	size_t len;
	int k;

	for (k = 0; k < n && k < 16 && fr[k]->inlined; k++) {
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

/* Every sample of s->prev into p, the program's mapping first. 0 or -errno. */
static int add_to_pprof(struct sampler *s, struct pprof *p)
{
	const struct frame_info *fr[2 * FNPROF_STACK_DEPTH + 1];
	__u64 ips[2 * FNPROF_STACK_DEPTH + 1], locs[2 * FNPROF_STACK_DEPTH + 1];
	size_t i;
	struct frame_info exe;
	int n, k, g, nl, err = 0;

	if (!s->procs && symbolize_main_object(s->sym, &exe))
		pprof_mapping(p, exe.object, exe.map_start, exe.map_limit, exe.map_pgoff);
	for (i = 0; !err && i < s->nr_prev; i++) {
		const struct sample_key *key = &s->prev[i].key;

		n = sample_frames(s, key, fr, ips, 2 * FNPROF_STACK_DEPTH + 1);
		for (k = 0, nl = 0; k < n; k += g, nl++)
			locs[nl] = pprof_frames(p, &fr[k], ips[k], n - k, &g);
		/* -a: whose each sample is, as pprof labels (go tool pprof -tags, Parca, Pyroscope). */
		err = s->procs ? pprof_sample_process(p, locs, nl, s->prev[i].count, key->pid,
						      proctab_comm(s->procs, key->pid)) :
				 pprof_sample(p, locs, nl, s->prev[i].count);
	}
	return err;
}

/* The profile of every sample so far (s->prev), gzip'd profile.proto, malloc'd into *out. */
static int encode_pprof(struct sampler *s, unsigned char **out, size_t *len)
{
	struct pprof *p = pprof_new(1000000000ULL / s->o.freq_hz, (__u64)(s->run_s * 1e9));
	int err = p ? add_to_pprof(s, p) : -ENOMEM;

	if (!err)
		err = pprof_encode(p, out, len);
	pprof_free(p);
	return err;
}

static int write_pprof(struct sampler *s, const char *path)
{
	unsigned char *data = NULL;
	size_t len;
	int err = encode_pprof(s, &data, &len);

	if (!err)
		err = write_file_atomic(path, data, len);
	free(data);
	return err;
}

/* Instead of reports: every count so far into s->prev. 0 or -ENOMEM. */
static int take_counts(struct sampler *s)
{
	size_t nr;
	struct entry *e = read_counts(s, &nr);

	if (!e && nr)
		return -ENOMEM;
	free(s->prev);
	s->prev = e;
	s->nr_prev = nr;
	return 0;
}

int sampler_pprof(struct sampler *s, double span_s, unsigned char **out, size_t *len)
{
	int err = take_counts(s);

	s->run_s = span_s;
	return err ? err : encode_pprof(s, out, len);
}

int sampler_pprof_add(struct sampler *s, struct pprof *p)
{
	int err = take_counts(s);

	return err ? err : add_to_pprof(s, p);
}

int sampler_write_files(struct sampler *s)
{
	int err = 0;

	if (s->o.folded_path && (err = write_folded(s, s->o.folded_path)))
		log_err("cannot write folded stacks to %s: %s", s->o.folded_path, strerror(-err));
	if (!err && s->o.pprof_path && (err = write_pprof(s, s->o.pprof_path)))
		log_err("cannot write the pprof profile to %s: %s", s->o.pprof_path, strerror(-err));
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

/* One counted stack into the graph: root first, below the thread with --per-thread. */
static int flame_stack(struct sampler *s, struct flame *fl, const struct entry *e, const char *exe)
{
	const struct frame_info *fr[2 * FNPROF_STACK_DEPTH + 1];
	struct flame_frame out[2 * FNPROF_STACK_DEPTH + 2];
	__u64 ips[2 * FNPROF_STACK_DEPTH + 1];
	char names[2 * FNPROF_STACK_DEPTH + 1][64], comm[64], thread[96];
	int n, k = 0, i;

	if (e->key.tid) {
		thread_name(s, e->key.pid, e->key.tid, comm, sizeof(comm));
		snprintf(thread, sizeof(thread), "%s (thread %u)", comm, e->key.tid);
		out[k++] = (struct flame_frame){ .name = thread, .object = "", .kind = FLAME_ROOT };
	}
	n = sample_frames(s, &e->key, fr, ips, 2 * FNPROF_STACK_DEPTH + 1);
	for (i = n - 1; i >= 0; i--)
		out[k++] = (struct flame_frame){
			.name = frame_name(fr[i], names[i], sizeof(names[i])), .object = fr[i]->object,
			.kind = frame_kind(fr[i], exe),
		};
	return flame_add(fl, out, k, e->count);
}

struct flame *sampler_flame(struct sampler *s, char *heading, size_t size)
{
	char root[128];
	struct frame_info exe;
	const char *exe_path = symbolize_main_object(s->sym, &exe) ? exe.object : NULL;
	struct flame *fl;
	__u64 samples = 0;
	size_t i;

	snprintf(root, sizeof(root), "%s (pid %d)", s->comm[0] ? s->comm : "[process]", s->pid);
	fl = flame_new(root);
	for (i = 0; fl && i < s->nr_prev; i++) {
		samples += s->prev[i].count;
		if (flame_stack(s, fl, &s->prev[i], exe_path)) {
			flame_free(fl);
			return NULL;
		}
	}
	snprintf(heading, size, "CPU flame graph: %s, %.2f s, %llu samples at %u Hz (%s)", root, s->run_s,
		 (unsigned long long)samples, s->o.freq_hz, s->event);
	return fl;
}
