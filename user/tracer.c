// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "trace.skel.h"
#include "tracer.h"

struct tracer {
	struct trace_bpf *skel;
	struct bpf_link **links;   /* two per probe: [2i] return, [2i+1] entry */
	size_t nr_probes;
	int nr_cpus;
	struct fn_stats *percpu;   /* one lookup's worth: nr_cpus values */
	__u64 *drops_percpu;
	__u64 drops_seen[DROP_NR];
	__u32 epoch;
	double attach_s;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Hands the per-CPU counters to the BPF side: [slot * nr_cpus + cpu]. */
static int fill_counters(struct tracer *t, const struct events *evs)
{
	int fd = bpf_map__fd(t->skel->maps.counters), i;

	for (i = 0; i < evs->nr_slots * evs->nr_cpus; i++) {
		__u32 key = i;

		if (evs->fds[i] >= 0 && bpf_map_update_elem(fd, &key, &evs->fds[i], BPF_ANY))
			return -errno;
	}
	return 0;
}

static int load(struct tracer *t, pid_t pid, const struct events *evs)
{
	struct trace_bpf *skel;
	int err, slots = evs ? evs->nr_slots : 0;

	skel = trace_bpf__open();
	if (!skel) {
		log_err("failed to open the BPF object: %s", strerror(errno));
		return -errno;
	}
	t->skel = skel;
	skel->rodata->target_tgid = pid;
	skel->rodata->nr_funcs = t->nr_probes;
	skel->rodata->nr_events = slots;
	skel->rodata->nr_cpus = t->nr_cpus;
	err = bpf_map__set_max_entries(skel->maps.stats, 2 * t->nr_probes);
	if (!err && slots)
		err = bpf_map__set_max_entries(skel->maps.counters, slots * t->nr_cpus);
	if (!err)
		err = trace_bpf__load(skel);
	if (!err && slots)
		err = fill_counters(t, evs);
	if (err) {
		log_err("failed to load the BPF programs: %s%s", strerror(-err),
			log_verbose ? "" : " (run with -v to see the verifier's log)");
		return err;
	}
	return 0;
}

static int attach_one(struct tracer *t, const struct probe *p, pid_t pid, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = p->id, .retprobe = ret);
	struct bpf_program *prog = ret ? t->skel->progs.fn_exit : t->skel->progs.fn_entry;
	struct bpf_link *l;

	l = bpf_program__attach_uprobe_opts(prog, pid, p->open_path, p->offset, &uo);
	if (!l) {
		int err = -errno;

		log_err("failed to attach %s to '%s' in %s (offset 0x%llx): %s", ret ? "uretprobe" : "uprobe",
			p->name, p->object, (unsigned long long)p->offset, strerror(-err));
		return err;
	}
	t->links[2 * p->id + !ret] = l;
	return 0;
}

static int attach_tp(struct bpf_program *prog, struct bpf_link **link, const char *what)
{
	*link = bpf_program__attach(prog);
	if (!*link) {
		int err = -errno;

		log_err("failed to attach to the %s tracepoint: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

static int attach(struct tracer *t, const struct probe_list *pl, pid_t pid, bool syscalls)
{
	struct trace_bpf *skel = t->skel;
	double t0 = now_s();
	size_t i;
	int err;

	err = attach_tp(skel->progs.on_switch, &skel->links.on_switch, "sched_switch");
	if (!err && syscalls)
		err = attach_tp(skel->progs.on_sys_enter, &skel->links.on_sys_enter, "sys_enter");
	if (!err && syscalls)
		err = attach_tp(skel->progs.on_sys_exit, &skel->links.on_sys_exit, "sys_exit");
	if (err)
		return err;
	/*
	 * Return probe first: a call entered between the two attachments then
	 * has no frame, rather than a frame whose return is never seen.
	 */
	for (i = 0; i < pl->nr; i++) {
		err = attach_one(t, &pl->probes[i], pid, true);
		if (!err)
			err = attach_one(t, &pl->probes[i], pid, false);
		if (err)
			return err;
	}
	t->attach_s = now_s() - t0;
	log_debug("attached %zu probes in %.1f ms", pl->nr, t->attach_s * 1e3);
	return 0;
}

int tracer_start(const struct probe_list *pl, pid_t pid, const struct events *evs,
		 struct tracer **out)
{
	struct tracer *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return EXIT_FAIL;
	t->nr_probes = pl->nr;
	t->nr_cpus = libbpf_num_possible_cpus();
	t->links = calloc(2 * pl->nr, sizeof(*t->links));
	t->percpu = calloc(t->nr_cpus > 0 ? t->nr_cpus : 1, sizeof(*t->percpu));
	t->drops_percpu = calloc(t->nr_cpus > 0 ? t->nr_cpus : 1, sizeof(__u64));
	if (t->nr_cpus <= 0 || !t->links || !t->percpu || !t->drops_percpu) {
		log_err("out of memory");
		tracer_stop(t);
		return EXIT_FAIL;
	}
	err = load(t, pid, evs);
	if (!err)
		err = attach(t, pl, pid, evs != NULL);
	if (err) {
		tracer_stop(t);
		return EXIT_FAIL;
	}
	*out = t;
	return 0;
}

void fn_stats_merge(struct fn_stats *a, const struct fn_stats *b)
{
	unsigned int i;

	if (!b->calls)
		return;
	if (!a->calls || b->wall_min < a->wall_min)
		a->wall_min = b->wall_min;
	if (b->wall_max > a->wall_max)
		a->wall_max = b->wall_max;
	a->calls += b->calls;
	a->wall_sum += b->wall_sum;
	a->runq_sum += b->runq_sum;
	a->blocked_sum += b->blocked_sum;
	a->self_sum += b->self_sum;
	a->outer_wall += b->outer_wall;
	a->outer_oncpu += b->outer_oncpu;
	a->preempted += b->preempted;
	a->migrated += b->migrated;
	a->vcsw += b->vcsw;
	a->ivcsw += b->ivcsw;
	a->migrations += b->migrations;
	a->sys_sum += b->sys_sum;
	for (i = 0; i < FNPROF_MAX_EVENTS; i++) {
		a->ctr[i] += b->ctr[i];
		a->ctr_self[i] += b->ctr_self[i];
		a->ctr_scaled[i] += b->ctr_scaled[i];
	}
	for (i = 0; i < FNPROF_HIST_BUCKETS; i++)
		a->hist[i] += b->hist[i];
}

/* Sums one half of the stats map over CPUs into out, then zeroes it. */
static int drain_half(struct tracer *t, __u32 half, struct fn_stats *out)
{
	int fd = bpf_map__fd(t->skel->maps.stats), c;
	__u32 i, key;

	for (i = 0; i < t->nr_probes; i++) {
		key = half * t->nr_probes + i;
		if (bpf_map_lookup_elem(fd, &key, t->percpu))
			return -errno;
		for (c = 0; c < t->nr_cpus; c++)
			fn_stats_merge(&out[i], &t->percpu[c]);
		memset(t->percpu, 0, t->nr_cpus * sizeof(*t->percpu));
		if (bpf_map_update_elem(fd, &key, t->percpu, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int read_drops(struct tracer *t, __u64 drops[DROP_NR])
{
	int fd = bpf_map__fd(t->skel->maps.drops), c;
	__u32 r;

	for (r = 0; r < DROP_NR; r++) {
		__u64 sum = 0;

		if (bpf_map_lookup_elem(fd, &r, t->drops_percpu))
			return -errno;
		for (c = 0; c < t->nr_cpus; c++)
			sum += t->drops_percpu[c];
		drops[r] = sum - t->drops_seen[r];
		t->drops_seen[r] = sum;
	}
	return 0;
}

int tracer_collect(struct tracer *t, struct fn_stats *out, __u64 drops[DROP_NR])
{
	__u32 old = t->epoch;
	int err;

	memset(out, 0, t->nr_probes * sizeof(*out));
	/*
	 * Flip the buffer the handlers write to, give handlers that read the old
	 * epoch a moment to finish, then drain the old half.
	 */
	t->epoch ^= 1;
	t->skel->bss->epoch = t->epoch;
	__sync_synchronize();
	usleep(2000);
	err = drain_half(t, old, out);
	if (!err)
		err = read_drops(t, drops);
	if (err)
		log_err("failed to read the BPF maps: %s", strerror(-err));
	return err;
}

double tracer_attach_seconds(const struct tracer *t)
{
	return t->attach_s;
}

void tracer_stop(struct tracer *t)
{
	size_t i;

	if (!t)
		return;
	/* Entry probes go first, so no new frame is pushed whose return is not seen. */
	for (i = 0; t->links && i < 2 * t->nr_probes; i += 2) {
		bpf_link__destroy(t->links[i + 1]);
		bpf_link__destroy(t->links[i]);
	}
	trace_bpf__destroy(t->skel);
	free(t->links);
	free(t->percpu);
	free(t->drops_percpu);
	free(t);
}
