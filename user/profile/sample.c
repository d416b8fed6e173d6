// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling profiler: loads profile.bpf.c, opens one sampling perf event
 * per CPU, and hands the per-stack counts (the kernel's, and dwstacks' with
 * --call-graph dwarf) to the stack pipeline (stackrows.h) as the CPU
 * profile: the top-functions table, JSON, folded stacks, pprof, flame graph.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/array.h"
#include "base/budget.h"
#include "stacks/dwstacks.h"
#include "format/flame.h"
#include "fnprof.h"
#include "base/json.h"
#include "base/log.h"
#include "base/percpu.h"
#include "format/pprof.h"
#include "profile/prof_dw.h"
#include "profile/proctab.h"
#include "profile.skel.h"
#include "base/rbreader.h"
#include "profile/sample.h"
#include "stacks/stackrows.h"
#include "stacks/symbolize.h"
#include "target/mapsnap.h"


/*
 * The CPU profile as data for the stack pipeline: samples, and the CPU time
 * they stand for (pprof's two sample types), ranked by self samples, kernel
 * frames in the table, inlined calls as frames of their own.
 */
static const struct prof_desc cpu_desc = {
	.kind = PROF_CPU, .what = "samples", .nr_values = 2,
	.types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
	.rank = 0, .second = 1,
	.period_type = { "cpu", "nanoseconds" },
	.inlines = true, .kstack_at_event = true, .rank_self = true, .kernel_rows = true, .json_samples = true,
	.cols = { { "SAMPLES", 8, 0, COL_COUNT }, { "CORES", 6, 0, COL_CORES } },
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
	struct stackrows *rows;      /* the counts, their stacks and rows */
	struct proctab *procs;       /* -a: every process's name and symbolizer (s->sym: their parent, the kernel's) */
	struct mapsnap *snap;        /* -a: every process's mappings, read when it is first sampled */
	__u64 drops_prev[SDROP_NR + 1];
	double run_s;                /* seconds sampled so far */
	unsigned int nr_reports;     /* reports so far: after intervals (-i), the last is followed by a total */
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
 * quarter second of samples on every CPU (at least FNPROF_SAMPLES_RB_MIN),
 * a power of two.
 */
static int configure_dwarf(struct sampler *s)
{
	int cpus = libbpf_num_possible_cpus();
	double want = 0.25 * s->o.freq_hz * (cpus > 0 ? cpus : 1) *
		      (s->o.stack_bytes + sizeof(struct dwarf_sample) + 8);

	if (!s->o.dwarf)
		return 0;
	s->skel->rodata->dwarf = true;
	s->skel->rodata->stack_bytes = s->o.stack_bytes;
	return rb_reader_size(s->skel->maps.samples, s->skel->maps.bufs, want, FNPROF_SAMPLES_RB_MIN);
}

/* -a: a process's symbolizer and name, from the table of processes. */
static struct symbolizer *proc_sym(void *ctx, __u32 pid)
{
	return proctab_symbolizer(ctx, pid);
}

static const char *proc_comm(void *ctx, __u32 pid)
{
	return proctab_comm(ctx, pid);
}

static int new_rows(struct sampler *s)
{
	struct stackrows_conf c = {
		.desc = &cpu_desc, .pid = s->pid, .sym = s->sym, .stacks_fd = bpf_map__fd(s->skel->maps.stacks),
		.kstacks_fd = -1, .dw = s->dw, .per_thread = s->o.per_thread, .top = s->o.top,
		.name_process = s->o.share > 1,
	};

	if (s->procs) {
		c.sym_of = proc_sym;
		c.comm_of = proc_comm;
		c.ctx = s->procs;
	}

	return stackrows_new(&c, &s->rows);
}

/*
 * -a: a process's mappings read the moment it is first sampled, and after
 * each exec: a process of 30 ms is gone before the next look (250 ms), and
 * its unwinder and symbolizer would find nothing. Before the events start.
 */
static int start_snapshots(struct sampler *s)
{
	int err;

	s->snap = mapsnap_new();
	if (!s->snap)
		return -ENOMEM;
	err = mapsnap_start(s->snap, bpf_map__fd(s->skel->maps.proc_events));
	if (err) {
		log_err("cannot start reading new processes' mappings: %s", strerror(-err));
		return err;
	}
	proctab_set_snapshots(s->procs, s->snap);
	if (s->dw)
		dwstacks_set_snapshots(s->dw, s->snap);
	return 0;
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
		err = prof_share_maps(s->o.share, s->skel->obj);
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
	s->sym = symbolizer_new(pid, o->max_memory);
	s->procs = o->all && s->sym ? proctab_new(s->sym) : NULL;
	err = s->sym && (s->procs || !o->all) ? 0 : -ENOMEM;
	if (!err && s->procs)
		err = start_snapshots(s);
	if (!err)
		err = new_rows(s);
	if (!err)
		err = attach_events(s);
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
	mapsnap_free(s->snap);    /* its reader stopped before the ring buffer goes; unwinders done with it */
	profile_bpf__destroy(s->skel);
	stackrows_free(s->rows);
	proctab_free(s->procs);   /* its symbolizers first: s->sym is their parent */
	symbolizer_free(s->sym);
	free(s);
}

void sampler_refresh(struct sampler *s)
{
	if (!s)
		return;
	if (s->procs) {
		proctab_scan(s->procs, bpf_map__fd(s->skel->maps.procs));
		return;
	}
	symbolizer_refresh(s->sym);
	stackrows_refresh(s->rows);
}

/* --- reading ---------------------------------------------------------------- */

/* One (thread, stacks) count: the samples, and the CPU time they stand for. */
static int add_count(struct sampler *s, struct stack_count **e, size_t *nr, size_t *cap,
		     const struct sample_key *k, __u64 count)
{
	if (ARRAY_RESERVE(*e, *nr + 1, *cap))
		return -ENOMEM;
	(*e)[(*nr)++] = (struct stack_count){
		.key = { .pid = k->pid, .tid = k->tid, .ustack = k->ustack, .kstack = k->kstack },
		.total = { count, (double)count * (1000000000ULL / s->o.freq_hz) },
	};
	return 0;
}

/* --call-graph dwarf: the counts of the stacks unwound in user space, after those read. */
static void add_unwound(struct sampler *s, struct stack_count **e, size_t *nr, size_t *cap, bool final)
{
	struct dwstack_count *c;
	size_t i, n;

	dwstacks_sync(s->dw, final);
	n = dwstacks_counts(s->dw, &c);
	for (i = 0; c && i < n && !add_count(s, e, nr, cap, &c[i].key, c[i].count); i++)
		;
	free(c);
}

/* Every (thread, stacks) count so far. */
static struct stack_count *read_counts(struct sampler *s, size_t *nr, bool final)
{
	int fd = bpf_map__fd(s->skel->maps.counts);
	struct sample_key key, next, *cur = NULL;
	struct stack_count *e = NULL;
	size_t cap = 0;
	__u64 count;

	*nr = 0;
	if (s->procs)   /* the names of processes first sampled since the last look */
		proctab_scan(s->procs, bpf_map__fd(s->skel->maps.procs));
	while (!bpf_map_get_next_key(fd, cur, &next)) {
		key = next;
		cur = &key;
		if (!bpf_map_lookup_elem(fd, &key, &count) && add_count(s, &e, nr, &cap, &key, count))
			break;
	}
	if (s->dw)
		add_unwound(s, &e, nr, &cap, final);
	return e;
}

/* --- reports ------------------------------------------------------------------ */

/* How the user stacks were walked, since the start: what was cut short, and what it cost. */
static void print_unwind_stats(struct sampler *s, FILE *out)
{
	struct dwstack_stats st;

	dwstacks_stats(s->dw, &st);
	fprintf(out, "stacks: unwound with DWARF CFI from %u-byte stack copies: %llu samples, %llu cut short by the "
		     "copy's end%s, %llu lost (table full); unwinding used %.1f ms of CPU", s->o.stack_bytes,
		(unsigned long long)st.samples, (unsigned long long)st.truncated,
		st.truncated ? " (--call-graph dwarf,SIZE copies more)" : "", (unsigned long long)st.lost, st.cpu_s * 1e3);
	dwstacks_print_frames(&st, out);
	if (s->procs)
		fprintf(out, "unwinders: %llu processes hold one (at most %d), %llu given up for the cap; "
			     "%llu samples of processes gone before they could be unwound kept frame-pointer stacks\n",
			(unsigned long long)st.unwinders, DWSTACK_MAX_UNWINDERS, (unsigned long long)st.unwinders_evicted,
			(unsigned long long)st.fp_fallback);
	if (st.sync_timeouts)
		fprintf(out, "unwinding fell behind: %llu reports did not wait over %.0f s for it; the samples it had "
			     "not unwound then are in later reports, or after the last one in none\n",
			(unsigned long long)st.sync_timeouts, RB_SYNC_MAX_S);
}

static void print_table(struct sampler *s, FILE *out, const struct stack_rows *t, double span,
			const __u64 *drops, bool total)
{
	double samples = t->sum[0];
	char who[32];

	snprintf(who, sizeof(who), s->procs ? "all processes" : "pid %d", s->pid);
	fprintf(out, "\n%s %s, %.2f s, %llu samples at %u Hz (%s), %.2f cores\n",
		total ? "sampled:" : "sampling:", who, span, (unsigned long long)samples, s->o.freq_hz,
		s->event, samples / t->per_core);
	stackrows_table(s->rows, out, t);
	if (s->dw)
		print_unwind_stats(s, out);
	if (s->procs)
		proctab_print_stats(s->procs, out);
	if (drops[SDROP_PROC_EVENTS])
		fprintf(out, "new processes not told at once (buffer full): %llu, their mappings read at the next look "
			     "(250 ms), if they still ran\n", (unsigned long long)drops[SDROP_PROC_EVENTS]);
	budget_print(symbolizer_budget(s->sym), out);
	if (drops[SDROP_USTACK] || drops[SDROP_KSTACK] || drops[SDROP_COUNTS_FULL] || drops[SDROP_RINGBUF])
		fprintf(out, "dropped: %llu samples not counted (map or ring buffer full), stacks lost: %llu user, "
			     "%llu kernel (stack map full or collision)\n",
			(unsigned long long)(drops[SDROP_COUNTS_FULL] + drops[SDROP_RINGBUF]),
			(unsigned long long)drops[SDROP_USTACK], (unsigned long long)drops[SDROP_KSTACK]);
	fflush(out);
}

/* A sample with no room in the ring buffer is not counted (SDROP_RINGBUF): none falls back to frame pointers. */
static void json_unwind(struct sampler *s, struct json *j, const __u64 *drops)
{
	struct dwstack_json x = { .stack_bytes = s->o.stack_bytes, .ringbuf_full = drops[SDROP_RINGBUF] };

	dwstacks_json(s->dw, j, &x);
}

static void print_json(struct sampler *s, FILE *out, const struct stack_rows *t, double span,
		       const __u64 *drops, bool total)
{
	struct json j;

	json_report_begin(&j, out, "sample", s->pid, span);
	json_bool(&j, "total", total);
	if (s->procs)
		json_bool(&j, "all_processes", true);   /* -a: pid is 0 */
	json_u64(&j, "freq_hz", s->o.freq_hz);
	json_str(&j, "event", s->event);
	json_u64(&j, "samples", (__u64)t->sum[0]);
	json_u64(&j, "lost", drops[SDROP_COUNTS_FULL] + drops[SDROP_RINGBUF]);
	json_obj_begin(&j, "stacks_lost");
	json_u64(&j, "user", drops[SDROP_USTACK]);
	json_u64(&j, "kernel", drops[SDROP_KSTACK]);
	json_obj_end(&j);
	json_str(&j, "call_graph", s->dw ? "dwarf" : "fp");
	if (s->dw)
		json_unwind(s, &j, drops);
	if (s->procs) {
		proctab_json_stats(s->procs, &j);
		json_u64(&j, "proc_events_lost", drops[SDROP_PROC_EVENTS]);
	}
	budget_json(symbolizer_budget(s->sym), &j);
	stackrows_json(s->rows, &j, t);
	json_obj_end(&j);
	json_finish(&j);
}

/*
 * One report: the interval's rows (since_start false) or the run's, over
 * span seconds with drops d; total says it is the run's (header, JSON).
 */
static int show(struct sampler *s, FILE *out, double span, const __u64 *d, bool total, bool since_start)
{
	struct stack_rows t = { .per_core = s->o.freq_hz * (span > 0 ? span : 1) };
	int err = since_start ? stackrows_total_rows(s->rows, &t) : stackrows_rows(s->rows, &t);

	if (err)
		log_err("cannot aggregate the sampled stacks: %s", strerror(-err));
	else if (s->o.json)
		print_json(s, out, &t, span, d, total);
	else
		print_table(s, out, &t, span, d, total);
	free(t.v);
	return err;
}

int sampler_report(struct sampler *s, FILE *out, double interval_s, bool final)
{
	__u64 drops[SDROP_NR + 1], d[SDROP_NR + 1];
	struct stack_count *e;
	size_t nr;
	int k, err;

	e = read_counts(s, &nr, final);
	percpu_sums(bpf_map__fd(s->skel->maps.sdrops), SDROP_NR + 1, drops);
	for (k = 0; k <= SDROP_NR; k++)
		d[k] = drops[k] - s->drops_prev[k];
	stackrows_take(s->rows, e, nr, 1, 1);
	s->run_s += interval_s;
	/* A run with a single report: that report is the total. After intervals, the total follows the last. */
	err = show(s, out, interval_s, d, final && !s->nr_reports, false);
	if (!err && final && s->nr_reports)
		err = show(s, out, s->run_s, drops, true, true);
	memcpy(s->drops_prev, drops, sizeof(drops));
	s->nr_reports++;
	/* Their stacks were symbolized above: exited processes need their mappings no more. */
	if (s->procs)
		proctab_release_exited(s->procs);
	return err;
}

/* --- files -------------------------------------------------------------------- */

int sampler_pprof_add(struct sampler *s, struct pprof *p)
{
	size_t nr;
	struct stack_count *e = read_counts(s, &nr, false);

	if (!e && nr)
		return -ENOMEM;
	stackrows_take(s->rows, e, nr, 1, 1);
	return stackrows_add_pprof(s->rows, p, 0);
}

int sampler_write_files(struct sampler *s)
{
	return sampler_write_files_many(&s, 1);
}

/* The run's span: the longest of the samplers' (a -p list's all sample the same run). */
static double run_span(struct sampler *const *s, size_t n)
{
	double span = 0;

	for (size_t i = 0; i < n; i++)
		span = s[i]->run_s > span ? s[i]->run_s : span;
	return span;
}

int sampler_write_files_many(struct sampler *const *s, size_t n)
{
	struct stackrows *rows[SAMPLER_MANY_MAX];
	const struct sampler_conf *o = &s[0]->o;
	int err = 0;

	if (n > SAMPLER_MANY_MAX)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		rows[i] = s[i]->rows;
	if (o->folded_path && (err = stackrows_write_folded_many(rows, n, o->folded_path)))
		log_err("cannot write folded stacks to %s: %s", o->folded_path, strerror(-err));
	if (err || !o->pprof_path)
		return err;
	err = stackrows_write_pprof_many(rows, n, pprof_new(1000000000ULL / o->freq_hz, (__u64)(run_span(s, n) * 1e9)),
					 0, o->pprof_path);
	if (err)
		log_err("cannot write the pprof profile to %s: %s", o->pprof_path, strerror(-err));
	return err;
}

/* The graph's root: the process, or "N processes" of a -p list (each then a frame under it). */
static void flame_root(struct sampler *const *s, size_t n, char *buf, size_t size)
{
	if (n == 1)
		snprintf(buf, size, "%s (pid %d)", stackrows_comm(s[0]->rows), s[0]->pid);
	else
		snprintf(buf, size, "%zu processes", n);
}

struct flame *sampler_flame(struct sampler *const *s, size_t n, char *heading, size_t size)
{
	const struct stack_count *e;
	char root[128];
	struct flame *fl;
	__u64 samples = 0;
	size_t i, k, nr;

	flame_root(s, n, root, sizeof(root));
	fl = flame_new(root);
	for (k = 0; fl && k < n; k++) {
		if (stackrows_add_flame(s[k]->rows, fl)) {
			flame_free(fl);
			return NULL;
		}
		e = stackrows_counts(s[k]->rows, &nr);
		for (i = 0; i < nr; i++)
			samples += (__u64)e[i].total[0];
	}
	snprintf(heading, size, "CPU flame graph: %s, %.2f s, %llu samples at %u Hz (%s)", root, run_span(s, n),
		 (unsigned long long)samples, s[0]->o.freq_hz, s[0]->event);
	return fl;
}
