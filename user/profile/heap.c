// SPDX-License-Identifier: GPL-2.0
/*
 * --profile heap: loads heap.bpf.c and attaches it to the C allocator of one
 * process (libc's malloc, calloc, realloc, free, posix_memalign, memalign
 * and aligned_alloc; C++'s operator new calls malloc).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "target/arch.h"
#include "base/clock.h"
#include "profile/duty.h"
#include "stacks/dwstacks.h"
#include "heap.skel.h"
#include "base/log.h"
#include "base/percpu.h"
#include "profile/prof_dw.h"
#include "profile/prof_src.h"
#include "target/resolve.h"
#include "base/safeopen.h"
#include "trace/uprobes.h"

/* As Go's heap profile; the in-use values come from the sampled pointers not freed yet. */
static const struct prof_desc heap_desc = {
	.kind = PROF_HEAP,
	.what = "allocations",
	.nr_values = 4,
	.types = { { "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" },
		   { "inuse_space", "bytes" } },
	.fixed = { true, false, true, false },
	.snapshot = { false, false, true, true },
	.rank = 1,
	.second = 3,
	.period_type = { "space", "bytes" },
};

/*
 * The probes in two groups: the allocations' (in bursts under --max-overhead)
 * and the watch group, free's and realloc's entry probes (in throughout).
 */
struct heap {
	struct heap_bpf *skel;
	struct uprobe_set links[DUTY_NR];
	struct uprobe_site *sites[DUTY_NR];
	size_t nr_sites[DUTY_NR];
	struct probe_list pl;
	struct duty *duty;           /* --max-overhead, else NULL */
	double budget_pct;
};

static const char *const specs[] = {
	/* glibc's aligned_alloc is memalign under a second name: one probe for both. */
	"libc:malloc", "libc:calloc", "libc:realloc", "libc:free", "libc:posix_memalign", "libc:memalign",
};

static struct bpf_program *entry_prog(struct heap_bpf *skel, const char *name)
{
	if (!strcmp(name, "malloc"))
		return skel->progs.malloc_enter;
	if (!strcmp(name, "calloc"))
		return skel->progs.calloc_enter;
	if (!strcmp(name, "realloc"))
		return skel->progs.realloc_enter;
	if (!strcmp(name, "free"))
		return skel->progs.free_enter;
	if (!strcmp(name, "posix_memalign"))
		return skel->progs.posix_memalign_enter;
	return skel->progs.aligned_alloc_enter;
}

static struct bpf_program *return_prog(struct heap_bpf *skel, const char *name)
{
	if (!strcmp(name, "free"))
		return NULL;
	return !strcmp(name, "posix_memalign") ? skel->progs.posix_memalign_return : skel->progs.alloc_return;
}

/*
 * The sites of allocator function p, into their groups: its return probe
 * first, so that no sampled call misses its return; free's and realloc's
 * entry probes watch the frees.
 */
static void sites_of(struct heap *h, const struct probe *p, pid_t pid)
{
	struct bpf_program *ret = return_prog(h->skel, p->name);
	bool watch = !strcmp(p->name, "free") || !strcmp(p->name, "realloc");
	struct uprobe_site *s;

	if (ret) {
		s = &h->sites[DUTY_MAIN][h->nr_sites[DUTY_MAIN]++];
		*s = (struct uprobe_site){ .prog = ret, .path = p->open_path, .pid = pid,
					   .offset = p->offset + p->entry_skip, .retprobe = true, .what = p->name,
					   .object = p->object };
	}
	s = &h->sites[watch ? DUTY_WATCH : DUTY_MAIN][h->nr_sites[watch ? DUTY_WATCH : DUTY_MAIN]++];
	*s = (struct uprobe_site){ .prog = entry_prog(h->skel, p->name), .path = p->open_path, .pid = pid,
				   .offset = p->offset + p->entry_skip,
				   .what = p->name, .object = p->object };
}

static int attach_group(void *ctx, enum duty_group g)
{
	struct heap *h = ctx;

	return uprobes_attach(&h->links[g], h->sites[g], h->nr_sites[g]);
}

static void detach_group(void *ctx, enum duty_group g)
{
	uprobes_detach(&((struct heap *)ctx)->links[g]);
}

/*
 * The allocator's functions in the target: its libc, found as -f libc:NAME
 * would find it. The allocations' probes go in first: realloc's entry may
 * sample a call, whose return probe must be there.
 */
static int attach_allocator(struct heap *h, const struct prof_conf *c, pid_t pid)
{
	const struct resolve_conf rc = {
		.funcs = specs, .nr_funcs = sizeof(specs) / sizeof(specs[0]), .cmd = c->cmd, .exit_mode = EXIT_NONE,
		.reads_args = true,   /* free's `test %rdi,%rdi; je`: the probe on the je, which sees %rdi */
	};
	size_t i;
	int g, err;

	if (resolve_probes(&rc, pid, &h->pl)) {
		log_err("the heap profile probes the target's C library (libc.so.6, malloc and free) and found none: "
			"a static executable, or libc not among its libraries");
		return -ENOENT;
	}
	for (g = 0; g < DUTY_NR; g++)
		if (!(h->sites[g] = calloc(2 * h->pl.nr, sizeof(*h->sites[g]))))
			return -ENOMEM;
	for (i = 0; i < h->pl.nr; i++)
		sites_of(h, &h->pl.probes[i], pid);
	err = attach_group(h, DUTY_MAIN);
	return err ? err : attach_group(h, DUTY_WATCH);
}

/* Takes the probes out and frees them; the BPF object stays. */
static void free_probes(struct heap *h)
{
	int g;

	duty_stop(h->duty);
	h->duty = NULL;
	for (g = 0; g < DUTY_NR; g++) {
		uprobes_free(&h->links[g]);
		free(h->sites[g]);
		h->sites[g] = NULL;
		h->nr_sites[g] = 0;
	}
	probe_list_free(&h->pl);
}

/* Random exponential intervals of mean rate, the weight table, and a first interval per CPU. */
static int fill_tables(struct heap *h, __u64 rate)
{
	int fd_e = bpf_map__fd(h->skel->maps.expo), fd_w = bpf_map__fd(h->skel->maps.wtab);
	int nr = libbpf_num_possible_cpus(), err = 0;
	unsigned short seed[3];
	__s64 *first;
	__u32 i, z = 0;

	if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
		seed[0] = time(NULL), seed[1] = getpid(), seed[2] = 0;
	for (i = 0; !err && i < PROF_HEAP_EXPO; i++) {
		/* -ln(U) with U in (0, 1]: never 0 bytes, so that a sample is never followed by one at once. */
		__u64 v = (__u64)(-log(1.0 - erand48(seed)) * rate) + 1;

		err = bpf_map_update_elem(fd_e, &i, &v, 0);
	}
	for (i = 0; !err && i < PROF_HEAP_WTAB; i++) {
		double x = (double)i / PROF_HEAP_WSTEPS;
		__u64 w = (__u64)llround((i ? x / -expm1(-x) : 1.0) * PROF_HEAP_WONE);

		err = bpf_map_update_elem(fd_w, &i, &w, 0);
	}
	first = calloc(nr > 0 ? nr : 1, sizeof(*first));
	for (i = 0; first && (int)i < nr; i++)
		first[i] = (__s64)(-log(1.0 - erand48(seed)) * rate) + 1;
	if (!err)
		err = first ? bpf_map_update_elem(bpf_map__fd(h->skel->maps.left), &z, first, 0) : -ENOMEM;
	free(first);
	return err ? (err < 0 ? err : -errno) : 0;
}

static void heap_stop(struct prof_src *s)
{
	struct heap *h = s->priv;

	dwstacks_stop(s->dw);  /* its thread reads the object's ring buffer */
	free_probes(h);
	heap_bpf__destroy(h->skel);
	free(h);
}

static int heap_load(struct heap *h, const struct prof_conf *c, pid_t pid)
{
	struct bpf_program *prog;
	int err;

	h->skel = heap_bpf__open();
	if (!h->skel) {
		log_err("failed to open the heap BPF object: %s", strerror(errno));
		return -errno;
	}
	h->skel->rodata->target_tgid = pid;
	h->skel->rodata->per_thread = c->per_thread;
	h->skel->rodata->rate = c->heap_rate;
	h->skel->rodata->dwarf = c->dwarf;
	h->skel->rodata->stack_bytes = c->stack_bytes;
	err = prof_dw_size(c, h->skel->maps.pdw_rb, h->skel->maps.pdw_bufs);
	if (!err)
		err = prof_share_maps(c->share, h->skel->obj);
	if (err) {
		log_err("cannot size the heap profile's stack buffers: %s", strerror(-err));
		return err;
	}
	h->links[DUTY_MAIN].multi = h->links[DUTY_WATCH].multi = uprobes_multi_supported();
	bpf_object__for_each_program(prog, h->skel->obj)
		uprobes_prepare(prog, h->links[DUTY_MAIN].multi);
	err = heap_bpf__load(h->skel);
	if (err) {
		log_err("failed to load the heap BPF programs: %s", strerror(-err));
		return err;
	}
	err = fill_tables(h, c->heap_rate);
	if (err)
		log_err("cannot fill the heap profile's tables: %s", strerror(-err));
	return err;
}

/*
 * libc's own malloc and free, which the probes are on: a sanitizer's build
 * of fnprof calls its own allocator under those names.
 */
struct libc_alloc {
	void *(*malloc)(size_t);
	void (*free)(void *);
};

static struct libc_alloc libc_alloc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct libc_alloc a = { malloc, free };

	if (libc && dlsym(libc, "malloc") && dlsym(libc, "free")) {
		a.malloc = (void *(*)(size_t))dlsym(libc, "malloc");
		a.free = (void (*)(void *))dlsym(libc, "free");
	}
	if (libc)
		dlclose(libc);
	return a;
}

/*
 * ns per malloc(64)+free pair, the fastest of three timings of n pairs, in
 * this thread's CPU time, which holds the probes' traps: by the wall clock,
 * loops switched out on a busy machine read an allocation's probes 1.6
 * times dearer in half the runs (2.1 us, not 1.3), and --max-overhead cut
 * its bursts, or kept free's probe out, for a cost the target never paid.
 */
static double time_pairs(int n)
{
	struct libc_alloc a = libc_alloc();
	double best = 1e300, t;
	int r, i;

	for (r = 0; r < 3; r++) {
		t = thread_cpu_s();
		for (i = 0; i < n; i++) {
			void *p = a.malloc(64);

			__asm__ volatile("" : : "r"(p) : "memory");  /* a real allocation, not optimized away */
			a.free(p);
		}
		t = (thread_cpu_s() - t) * 1e9 / n;
		best = t < best ? t : best;
	}
	return best;
}

/*
 * What the probes add to one allocation call (cost[DUTY_MAIN]) and to one
 * free (cost[DUTY_WATCH]), measured on fnprof's own allocator: the same
 * probes attached to this process (rate 4 GiB: nothing sampled), free's
 * alone and then all, timed against the same loop without them. Zeros if
 * the measure failed. Returns 0 or -errno.
 */
static int measure_cost(const struct prof_conf *c, double cost[DUTY_NR])
{
	struct prof_conf self = *c;
	struct heap h = {};
	double base, watch = 0, all = 0;
	int err;

	self.cmd = NULL;
	self.heap_rate = 1ULL << 32;
	self.dwarf = false;  /* nothing is sampled */
	base = time_pairs(5000);
	err = heap_load(&h, &self, getpid());
	if (!err)
		err = attach_allocator(&h, &self, getpid());
	if (!err) {
		detach_group(&h, DUTY_MAIN);
		watch = time_pairs(5000);
		err = attach_group(&h, DUTY_MAIN);
	}
	if (!err)
		all = time_pairs(5000);
	free_probes(&h);
	heap_bpf__destroy(h.skel);
	cost[DUTY_WATCH] = watch > base ? watch - base : 0;
	cost[DUTY_MAIN] = all > watch ? all - watch : 0;
	return err;
}

/* Each group's events so far, all CPUs: allocations, and frees. */
static void events_seen(void *ctx, __u64 ev[DUTY_NR])
{
	struct heap *h = ctx;
	__u32 k[DUTY_NR] = { [DUTY_MAIN] = PDROP_SEEN, [DUTY_WATCH] = PDROP_FREED };
	int g;

	for (g = 0; g < DUTY_NR; g++)
		percpu_sum(bpf_map__fd(h->skel->maps.pdrops), k[g], &ev[g]);
}

/* A new burst's samples are its own: one left pending by the last burst is dropped. */
static void set_sampling(void *ctx, bool on)
{
	struct heap *h = ctx;

	if (on)
		__atomic_add_fetch(&h->skel->bss->burst, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->skel->data->allocs_on, on, __ATOMIC_RELAXED);
}

static const struct duty_ops heap_duty_ops = {
	.attach = attach_group, .detach = detach_group, .events = events_seen, .sampling = set_sampling,
};

static bool heap_duty(struct prof_src *s, struct prof_duty *out)
{
	struct heap *h = s->priv;
	struct duty_figures f;

	if (!h->duty)
		return false;
	duty_take(h->duty, &f);
	*out = (struct prof_duty){
		.share = f.share, .run_share = f.run_share, .budget_pct = h->budget_pct, .bursts = f.bursts,
		.cost_pct = 100 * f.probe_ns / (f.work_ns > 1e4 ? f.work_ns : 1e4), .work_unknown = f.work_unknown,
		.snapshot_lost = f.watch_lost ? "free's probe alone cost more than the budget, so it was out "
						"between bursts: blocks freed then were not seen" : NULL,
	};
	return true;
}

/* --max-overhead: the allocation probes in bursts within the budget. 0 or -errno. */
static int start_duty(struct heap *h, const struct prof_conf *c, pid_t pid, const double cost[DUTY_NR])
{
	struct duty_conf dc = { .budget_pct = c->max_overhead_pct, .pid = pid, .ops = &heap_duty_ops, .ctx = h };
	int g;

	if (!c->max_overhead_pct)
		return 0;
	for (g = 0; g < DUTY_NR; g++) {
		if (cost[g] <= 0) {
			log_err("--max-overhead: the heap probes' cost could not be measured, so it cannot be bounded");
			return -EINVAL;
		}
		dc.cost_ns[g] = cost[g];
	}
	h->budget_pct = c->max_overhead_pct;
	/* From now on the duty thread reports an attach that fails (and keeps quiet when the target is gone). */
	for (g = 0; g < DUTY_NR; g++)
		h->links[g].quiet = true;
	return duty_start(&dc, &h->duty);
}

int heap_start(const struct prof_conf *c, pid_t pid, struct prof_src *out)
{
	struct heap *h = calloc(1, sizeof(*h));
	struct prof_src s = { .desc = &heap_desc, .priv = h, .stop = heap_stop, .duty = heap_duty };
	double cost[DUTY_NR] = {};
	int err;

	if (!h)
		return -ENOMEM;
	err = heap_load(h, c, pid);
	/* Measured before the target's probes go in: the duty cycle accounts for them from then on. */
	if (!err && (measure_cost(c, cost) || !cost[DUTY_MAIN]))
		log_debug("heap: the probes' cost could not be measured");
	if (!err)
		err = prof_dw_start(c, pid, h->skel->maps.pdw_rb, h->skel->maps.live,
				    offsetof(struct prof_live, dw_id), &s);
	if (!err)
		err = attach_allocator(h, c, pid);
	if (!err)
		err = start_duty(h, c, pid, cost);
	if (err) {
		heap_stop(&s);
		return err;
	}
	s.stacks_fd = bpf_map__fd(h->skel->maps.stacks);
	s.counts_fd = bpf_map__fd(h->skel->maps.counts);
	s.drops_fd = bpf_map__fd(h->skel->maps.pdrops);
	s.live_fd = bpf_map__fd(h->skel->maps.live);
	s.kstacks_fd = -1;
	s.procs_fd = -1;   /* one process: opts.c refuses the heap profile with -a */
	s.period = c->heap_rate;
	s.event_cost_ns = cost[DUTY_MAIN];
	s.free_cost_ns = cost[DUTY_WATCH];
	snprintf(s.note, sizeof(s.note), "one sample per %llu %s on average",
		 (unsigned long long)(c->heap_rate % 1024 ? c->heap_rate : c->heap_rate / 1024),
		 c->heap_rate % 1024 ? "bytes" : "KiB");
	*out = s;
	return 0;
}
