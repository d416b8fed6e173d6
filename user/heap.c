// SPDX-License-Identifier: GPL-2.0
/*
 * --profile heap: loads heap.bpf.c and attaches it to the C allocator of one
 * process (libc's malloc, calloc, realloc, free, posix_memalign, memalign
 * and aligned_alloc; C++'s operator new calls malloc).
 */
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

#include "arch.h"
#include "clock.h"
#include "heap.skel.h"
#include "log.h"
#include "prof_src.h"
#include "resolve.h"
#include "uprobes.h"

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

struct heap {
	struct heap_bpf *skel;
	struct uprobe_set links;
	struct probe_list pl;
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

/* Where free's probe goes: the architecture may know a cheaper place than its first instruction. */
static __u64 free_offset(const struct probe *p)
{
	unsigned char b[16];
	int fd = open(p->open_path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, b, sizeof(b), p->offset) : -1;

	if (fd >= 0)
		close(fd);
	return p->offset + (n > 0 ? arch_free_probe_offset(b, n) : 0);
}

/* The sites of allocator function p: its return probe first, so that no sampled call misses its return. */
static size_t sites_of(struct heap *h, const struct probe *p, pid_t pid, struct uprobe_site *out)
{
	struct bpf_program *ret = return_prog(h->skel, p->name);
	size_t n = 0;

	if (ret)
		out[n++] = (struct uprobe_site){ .prog = ret, .path = p->open_path, .pid = pid, .offset = p->offset,
						 .retprobe = true, .what = p->name, .object = p->object };
	out[n++] = (struct uprobe_site){ .prog = entry_prog(h->skel, p->name), .path = p->open_path, .pid = pid,
					 .offset = strcmp(p->name, "free") ? p->offset : free_offset(p),
					 .what = p->name, .object = p->object };
	return n;
}

/* The allocator's functions in the target: its libc, found as -f libc:NAME would find it. */
static int attach_allocator(struct heap *h, const struct prof_conf *c, pid_t pid)
{
	const struct resolve_conf rc = {
		.funcs = specs, .nr_funcs = sizeof(specs) / sizeof(specs[0]), .cmd = c->cmd, .exit_mode = EXIT_NONE,
	};
	struct uprobe_site *sites;
	size_t i, n = 0;
	int err;

	if (resolve_probes(&rc, pid, &h->pl)) {
		log_err("the heap profile probes the target's C library (libc.so.6, malloc and free) and found none: "
			"a static executable, or libc not among its libraries");
		return -ENOENT;
	}
	sites = calloc(2 * h->pl.nr, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	for (i = 0; i < h->pl.nr; i++)
		n += sites_of(h, &h->pl.probes[i], pid, sites + n);
	err = uprobes_attach(&h->links, sites, n);
	free(sites);
	return err;
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
		__u64 w = (__u64)llround((i ? x / -expm1(-x) : 1.0) * 65536);

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

	uprobes_free(&h->links);
	heap_bpf__destroy(h->skel);
	probe_list_free(&h->pl);
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
	h->links.multi = uprobes_multi_supported();
	bpf_object__for_each_program(prog, h->skel->obj)
		uprobes_prepare(prog, h->links.multi);
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

/* ns per malloc(64)+free pair, the fastest of three timings of n pairs. */
static double time_pairs(int n)
{
	double best = 1e300, t;
	int r, i;

	for (r = 0; r < 3; r++) {
		t = monotonic_s();
		for (i = 0; i < n; i++) {
			void *p = malloc(64);

			__asm__ volatile("" : : "r"(p) : "memory");  /* a real allocation, not optimized away */
			free(p);
		}
		t = (monotonic_s() - t) * 1e9 / n;
		best = t < best ? t : best;
	}
	return best;
}

/*
 * What the probes add to one allocation call and its free, measured on
 * fnprof's own allocator: the same probes attached to this process (rate
 * 4 GiB: nothing sampled), timed against the same loop without them. 0 if
 * the measure failed (it is only shown, never needed).
 */
static double measure_cost(const struct prof_conf *c)
{
	struct prof_conf self = *c;
	struct heap h = {};
	double base, probed = 0;

	self.cmd = NULL;
	self.heap_rate = 1ULL << 32;
	base = time_pairs(5000);
	if (!heap_load(&h, &self, getpid()) && !attach_allocator(&h, &self, getpid()))
		probed = time_pairs(5000);
	uprobes_free(&h.links);
	heap_bpf__destroy(h.skel);
	probe_list_free(&h.pl);
	return probed > base ? probed - base : 0;
}

int heap_start(const struct prof_conf *c, pid_t pid, struct prof_src *out)
{
	struct heap *h = calloc(1, sizeof(*h));
	struct prof_src s = { .desc = &heap_desc, .priv = h, .stop = heap_stop };
	int err;

	if (!h)
		return -ENOMEM;
	err = heap_load(h, c, pid);
	if (!err)
		err = attach_allocator(h, c, pid);
	if (err) {
		heap_stop(&s);
		return err;
	}
	s.stacks_fd = bpf_map__fd(h->skel->maps.stacks);
	s.counts_fd = bpf_map__fd(h->skel->maps.counts);
	s.drops_fd = bpf_map__fd(h->skel->maps.pdrops);
	s.live_fd = bpf_map__fd(h->skel->maps.live);
	s.kstacks_fd = -1;
	s.period = c->heap_rate;
	s.event_cost_ns = measure_cost(c);
	snprintf(s.note, sizeof(s.note), "one sample per %llu %s on average",
		 (unsigned long long)(c->heap_rate % 1024 ? c->heap_rate : c->heap_rate / 1024),
		 c->heap_rate % 1024 ? "bytes" : "KiB");
	*out = s;
	return 0;
}
