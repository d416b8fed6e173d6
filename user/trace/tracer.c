// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/percpu.h"
#include "base/proc.h"
#include "target/kneeds.h"
#include "target/tpbtf.h"
#include "trace/stats.h"
#include "trace/tcompat.h"
#include "trace.bpf.h"
#include "trace.skel.h"
#include "target/kfeatures.h"
#include "trace/steps.h"
#include "trace/sysexit.h"
#include "trace/trace_load.h"
#include "trace/tracer.h"
#include "trace/uprobe_warm.h"
#include "trace/uprobes.h"

/* --slow's ring buffer: room for a burst of slow calls, ~160 records of 25 KiB (struct slow_call). */
#define SLOW_RB_BYTES (4 << 20)
_Static_assert(FNPROF_RB_SIZE_OK(SLOW_RB_BYTES), "a ring buffer's size: a power of two, at least a page");

struct tracer {
	struct trace_bpf *skel;    /* the uprobe programs, and the maps */
	struct trace_bpf *sched;   /* the tracepoint programs, on the same maps (NULL: in skel) */
	struct uprobe_set links;   /* the target's probes */
	struct uprobe_set calib_links;
	size_t nr_probes;          /* the target's; calibration probes follow them */
	size_t nr_total;
	const struct probe *self;  /* the caller's */
	struct trace_pending *pending;  /* the tracepoint programs, still loading */
	unsigned int self_mask;    /* those attached (bit k: self[k]) */
	int nr_cpus;
	struct fn_stats *percpu;   /* one lookup's worth: nr_cpus values */
	__u64 drops_seen[DROP_NR];
	__u32 epoch;
	double attach_s;
	const struct probe_list *pl;  /* the target's probes, to attach again after a pause */
	pid_t pid;
	bool paused;
	bool start_paused;         /* tracer_conf.start_paused */
	struct uprobe_warm *warm;
	__u32 nr_slots;            /* processes with statistics: the target, then fork children */
	__u32 nr_threads;          /* thread states in the pool */
	size_t thread_bytes;       /* kernel memory per thread state (and its counter frames) */
	struct uprobe_set *child_links;  /* --follow-forks, -p list: per slot, the process's probes */
	bool follows;              /* --follow-forks: fork children take the free slots */
	const pid_t *more;         /* -p P1,P2,...: the processes in slots 1..nr_more */
	size_t nr_more;
	struct traced_proc *procs; /* per slot: whose, and when its probes were in place */
	struct ring_buffer *forks; /* wakes fnprof at each fork */
	struct uprobe_set *extra;  /* system-wide: probes on upgraded objects (tracer_attach_more) */
	size_t nr_extra;
	bool per_process;          /* system-wide: slots taken by processes at their first call */
	__u32 *exited;             /* per_process: tgids whose slots go back after the next collect */
	__u32 *exited_slots;
	size_t nr_exited;
	__u64 slow_ns;             /* --slow, 0 without */
	__u32 slow_rate;           /* slow calls sent per second, at most */
	/*
	 * -p P1,P2,...: each probe's object held open, its path /proc/self/fd/N
	 * (NULL: not held): the resolver's open_path goes through the first
	 * process (/proc/PID/map_files), gone once it exits, while the others'
	 * probes are attached again after each pause.
	 */
	char **held_paths;
	int *held_fds;
	size_t nr_held;
	bool compat;               /* the compat trace object (bpf/compat.bpf.h): its cookies from a map */
	struct sysexit *sysexit;   /* system-wide sessions: each process's exit (NULL without) */
};

/* The stats map key of function id of the process in slot, in buffer half. */
static __u32 stats_key(const struct tracer *t, __u32 half, __u32 slot, __u32 id)
{
	return fnprof_stats_key(half, t->nr_slots, slot, t->nr_total, id);
}

/* The statistics of one process: two buffers of every function's, on every CPU. */
static double slot_bytes(const struct tracer *t)
{
	return 2.0 * t->nr_total * t->nr_cpus * sizeof(struct fn_stats);
}

/*
 * The most memory the statistics map may take: 1 GiB, or
 * FNPROF_STATS_BUDGET_MB. It is kernel memory that cannot be swapped, and
 * it grows with functions x CPUs: `-f 'libc:*'` on 64 CPUs would take 3 GB.
 */
static double stats_budget(void)
{
	const char *env = getenv("FNPROF_STATS_BUDGET_MB");
	char *end;
	double mb = env ? strtod(env, &end) : 0;

	return (env && end != env && !*end && mb > 0 ? mb : 1024) * 1048576.0;
}

/*
 * --follow-forks: how many processes get statistics of their own, the
 * target and at least one child: up to 64 children within a quarter of
 * the budget.
 */
static __u32 slots_for(const struct tracer *t)
{
	enum { MAX_CHILDREN = 64 };
	_Static_assert(MAX_CHILDREN + 1 <= FNPROF_COOKIE_SLOT_MASK + 1, "slots must fit the attach cookie");
	double n = stats_budget() / 4 / slot_bytes(t);

	return n > MAX_CHILDREN + 1 ? MAX_CHILDREN + 1 : n < 2 ? 2 : (__u32)n;
}

/* Whether fnprof's own calibration probes are in: its thread then takes a state too. */
static bool calibrates(const struct tracer *t)
{
	return t->nr_total > t->nr_probes;
}

/* Whether the statistics of nr_slots processes fit the budget; if not, says what to reduce. */
static bool stats_fit(const struct tracer *t)
{
	double need = t->nr_slots * slot_bytes(t), budget = stats_budget();

	if (need <= budget)
		return true;
	log_err("the statistics of %zu functions%s on %d CPUs%s would take %.1f MiB (2 buffers x %.1f KiB per "
		"function per CPU%s), more than the budget of %.1f MiB: trace fewer functions (narrow the -f "
		"patterns)%s, or raise the budget with FNPROF_STATS_BUDGET_MB",
		t->nr_probes, calibrates(t) ? " (and fnprof's calibration probes)" : "", t->nr_cpus,
		t->nr_slots > 1 ? " for the target and a fork child" : "", need / 1048576,
		sizeof(struct fn_stats) / 1024.0, t->nr_slots > 1 ? " per process" : "", budget / 1048576,
		t->nr_slots > 1 ? ", drop --follow-forks" : "");
	return false;
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

/* Pushes first..end-1 onto a BPF queue map, in order: the indexes the BPF side hands out. */
static int fill_queue(const struct bpf_map *queue, __u32 first, __u32 end)
{
	int fd = bpf_map__fd(queue);
	__u32 i;

	for (i = first; i < end; i++)
		if (bpf_map_update_elem(fd, NULL, &i, BPF_ANY))
			return -errno;
	return 0;
}

/* The pool's size when --max-threads does not set it. */
static __u32 default_threads(pid_t pid)
{
	int n = pid ? proc_nr_threads(pid) : 0;

	if (!pid)
		return TRACER_THREADS_SYSTEM;
	if (n > TRACER_THREADS_MAX / 2)
		return TRACER_THREADS_MAX;
	return n > TRACER_THREADS_DEFAULT / 2 ? 2 * (__u32)n : TRACER_THREADS_DEFAULT;
}

/* Whether a probe to attach, the target's or a calibration probe attached, is one that pred takes. */
static bool any_probe(const struct tracer *t, bool (*pred)(const struct probe *p))
{
	size_t i;

	for (i = 0; i < t->pl->nr; i++)
		if (pred(&t->pl->probes[i]))
			return true;
	for (i = 0; i < t->nr_total - t->nr_probes; i++)
		if (t->self_mask & 1U << i && pred(&t->self[i]))
			return true;
	return false;
}

/* A function entered at fn_entry (Go's at go_entry). */
static bool plain_entry(const struct probe *p)
{
	return !p->go;
}

/* A function whose return a uretprobe sees (fn_exit). */
static bool uret_exit(const struct probe *p)
{
	return p->exit == EXIT_URETPROBE;
}

/* A function with its exit on ret instructions (fn_exit_ret; Go's go_exit_ret), or with ret probes
 * in the processes that decline its session's return. */
static bool ret_exit(const struct probe *p)
{
	return (p->exit == EXIT_RET || p->session) && !p->go;
}

/* A function entered by a uprobe session (fn_session): system-wide, exits per process. */
static bool session_entry(const struct probe *p)
{
	return p->session;
}

static bool probes_session(const struct tracer *t)
{
	return any_probe(t, session_entry);
}

/* A function with exit probes past its rets (fn_exit_tail): tail calls, the calibration's tail-jmp case too. */
static bool tail_exits(const struct probe *p)
{
	return p->exit == EXIT_RET && p->nr_tails;
}

/* A function with a paired entry (fn_mid). */
static bool paired(const struct probe *p)
{
	return site_paired(p->kind);
}

static bool probes_tails(const struct tracer *t)
{
	return any_probe(t, tail_exits);
}

static bool traces_go(const struct probe_list *pl)
{
	size_t i;

	for (i = 0; i < pl->nr; i++)
		if (pl->probes[i].go)
			return true;
	return false;
}

/* --slow on Go functions: their parks are followed (runtime.gopark to runtime.execute), where both are found. */
static bool go_parks(const struct tracer *t)
{
	return t->slow_ns && traces_go(t->pl) && t->pl->go_exit_path && t->pl->go_park_offset && t->pl->go_run_offset;
}

/* The self probes of t->self_mask, copied into out (room for TRACER_SELF_MAX): how many. */
static size_t self_attached(const struct tracer *t, struct probe *out)
{
	size_t i, n = 0;

	for (i = 0; i < t->nr_total - t->nr_probes; i++)
		if (t->self_mask & 1U << i)
			out[n++] = t->self[i];
	return n;
}

struct setup_args {
	struct tracer *t;
	const struct events *evs;
};

#ifdef FNPROF_TEST_HOOKS
/*
 * Hooks for the tests, in the test build fnprof-test only (tests/tests.mk):
 * FNPROF_TEST_HIDE_SWITCH_IN=N has every Nth switch back in inside a call go
 * as if sched_switch had not reported it. fnprof itself reads no such variable.
 */
static void test_hooks(struct trace_bpf *skel)
{
	const char *env = getenv("FNPROF_TEST_HIDE_SWITCH_IN");

	skel->rodata->hide_switch_in = env ? (__u32)atoi(env) : 0;
}
#else
static void test_hooks(struct trace_bpf *skel)
{
}
#endif

/* A uprobe program loaded only where the run uses it (autoload), attached as this kernel allows. */
static void uprobe_prog(struct bpf_program *p, bool used, const struct tracer *t)
{
	bpf_program__set_autoload(p, used);
	uprobes_prepare(p, t->links.multi);
}

/* Which programs are loaded: only those the run uses are verified. */
static void choose_programs(struct trace_bpf *skel, const struct tracer *t, bool events)
{
	bpf_program__set_autoload(skel->progs.on_fork, t->follows);
	/* System-wide, a replaced object's functions come later (tracer_attach_more): the common pair stays. */
	uprobe_prog(skel->progs.fn_entry, !t->pid || any_probe(t, plain_entry), t);
	uprobe_prog(skel->progs.fn_exit, !t->pid || any_probe(t, uret_exit), t);
	uprobe_prog(skel->progs.fn_exit_ret, any_probe(t, ret_exit), t);
	uprobe_prog(skel->progs.fn_exit_tail, probes_tails(t), t);
	uprobe_prog(skel->progs.fn_mid, any_probe(t, paired), t);
	bpf_program__set_autoload(skel->progs.fn_session, probes_session(t));
	uprobes_prepare_session(skel->progs.fn_session);
	/* The goroutine programs are verified only for Go functions. */
	uprobe_prog(skel->progs.go_entry, traces_go(t->pl), t);
	uprobe_prog(skel->progs.go_exit_ret, traces_go(t->pl), t);
	uprobe_prog(skel->progs.go_gone, traces_go(t->pl), t);
	/* --slow on Go functions: a goroutine's parks, from runtime.gopark to runtime.execute. */
	uprobe_prog(skel->progs.go_park, go_parks(t), t);
	uprobe_prog(skel->progs.go_run, go_parks(t), t);
	/* System calls are timed for -e only: without it, their programs are not even verified. */
	bpf_program__set_autoload(skel->progs.on_sys_enter, events);
	bpf_program__set_autoload(skel->progs.on_sys_exit, events);
}

/* Sessions: where fn_session reads task_struct (kfeatures_uprobe_sessions() found them, or resolve chose none). */
static void set_task_offsets(struct trace_bpf *skel, const struct tracer *t)
{
	struct task_offsets o;

	if (!probes_session(t) || kfeatures_task_offsets(&o))
		return;
	skel->rodata->task_exec_id_off = o.exec_id_off;
	skel->rodata->task_exec_id_size = o.exec_id_size;
	skel->rodata->task_parent_off = o.parent_off;
	skel->rodata->task_tgid_off = o.tgid_off;
}

static void set_globals(struct trace_bpf *skel, const struct tracer *t, int slots)
{
	skel->rodata->target_tgid = t->pid;
	/*
	 * In each half's initial image: the tracepoint half, loading on a
	 * thread of its own onto the shared .bss, may write its image there
	 * after the uprobe half's attach (once a write after load was lost).
	 */
	skel->bss->paused = t->start_paused;
	skel->rodata->self_tgid = calibrates(t) ? getpid() : 0;
	skel->rodata->fnprof_tgid = getpid();
	skel->rodata->nr_funcs = t->nr_total;
	skel->rodata->stack_switching = t->pl->switches_stacks;
	skel->rodata->nr_slots = t->nr_slots;
	skel->rodata->links_per_process = t->links.multi;
	skel->rodata->dynamic_slots = t->per_process;
	skel->rodata->tail_sites = probes_tails(t);
	skel->rodata->go_calls = traces_go(t->pl);
	skel->rodata->nr_events = slots;
	skel->rodata->nr_cpus = t->nr_cpus;
	skel->rodata->slow_ns = t->slow_ns;
	skel->rodata->slow_rate = t->slow_rate;
	skel->rodata->slow_nr_ids = t->nr_probes;
	set_task_offsets(skel, t);
}

/* The maps' sizes, which only the run knows. */
static int size_maps(struct trace_bpf *skel, const struct tracer *t, int slots)
{
	int err = bpf_map__set_max_entries(skel->maps.stats, 2 * t->nr_slots * t->nr_total);

	if (!err)
		err = bpf_map__set_max_entries(skel->maps.entry_branch, t->nr_total);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.tstates, t->nr_threads);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.free_tstates, t->nr_threads);
	/* Goroutines inside traced calls at once (Go): memory only as used, ~8.3 KiB each. */
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.gstacks, t->nr_threads > TRACER_GOROUTINES_MIN ?
							       t->nr_threads : TRACER_GOROUTINES_MIN);
	if (!err && slots)
		err = bpf_map__set_max_entries(skel->maps.tctrs, t->nr_threads);
	if (!err && t->slow_ns)
		err = bpf_map__set_max_entries(skel->maps.tslow, t->nr_threads);
	/* A goroutine's parks (--slow, Go): ~2.2 KiB each, only for those parked inside traced calls. */
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.gslow, bpf_map__max_entries(skel->maps.gstacks));
	if (!err && t->slow_ns)
		err = bpf_map__set_max_entries(skel->maps.slow_calls, SLOW_RB_BYTES);
	/* Children beyond the slots are kept too: their calls are counted as not timed. */
	if (!err && t->nr_slots > 1)
		err = bpf_map__set_max_entries(skel->maps.procs, t->nr_slots);
	if (!err && t->nr_slots > 1)
		err = bpf_map__set_max_entries(skel->maps.free_slots, t->nr_slots - 1);
	if (!err && (t->nr_slots > 1 || probes_session(t)))
		err = bpf_map__set_max_entries(skel->maps.forks, 64 * 1024);
	/* Processes calling session-entered functions at once; beyond, their calls are not timed (counted). */
	if (!err && probes_session(t))
		err = bpf_map__set_max_entries(skel->maps.exit_choices, 16384);
	if (!err && slots)
		err = bpf_map__set_max_entries(skel->maps.counters, slots * t->nr_cpus);
	return err;
}

/*
 * The compat object's cookie entries: one per entry-side probe (entries,
 * twins, ret probes) in each process with statistics, each object mapped
 * once or twice.
 */
static __u32 compat_cookies(const struct tracer *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->pl->nr; i++)
		n += 2 + (t->pl->probes[i].exit == EXIT_RET ? t->pl->probes[i].nr_exits : 0);
	return 2 * (n * t->nr_slots + 2 * TRACER_SELF_MAX * 4);
}

/* Between open and load, for each instance trace_load() makes. */
static int setup(struct trace_bpf *skel, void *arg)
{
	const struct setup_args *a = arg;
	struct tracer *t = a->t;
	int slots = a->evs ? a->evs->nr_slots : 0, err;

	set_globals(skel, t, slots);
	choose_programs(skel, t, a->evs != NULL);
	test_hooks(skel);
	if (t->compat && (err = tcompat_setup(skel, t->nr_threads, compat_cookies(t))))
		return err;
	t->thread_bytes = bpf_map__value_size(skel->maps.tstates) + (a->evs ? bpf_map__value_size(skel->maps.tctrs) : 0) +
			  (t->slow_ns ? bpf_map__value_size(skel->maps.tslow) : 0);
	return size_maps(skel, t, slots);
}

/* Where each function's entry probe branch lands (entry_branch): the target's functions only. */
static int fill_branches(struct tracer *t)
{
	int fd = bpf_map__fd(t->skel->maps.entry_branch);
	__u32 i;

	for (i = 0; i < t->nr_probes; i++)
		if (t->pl->probes[i].branch_delta &&
		    bpf_map_update_elem(fd, &i, &t->pl->probes[i].branch_delta, BPF_ANY))
			return -errno;
	return 0;
}

static int load(struct tracer *t, const struct events *evs)
{
	struct setup_args a = { .t = t, .evs = evs };
	int err;

	t->links.multi = t->calib_links.multi = uprobes_multi_supported();
	/*
	 * Without -e, --follow-forks or --slow, the target's probes need not
	 * wait for the tracepoint programs (see attach()).
	 */
	if (evs || t->nr_slots > 1 || t->per_process || t->slow_ns)
		err = trace_load(setup, &a, &t->skel, &t->sched);
	else
		err = trace_load_early(setup, &a, &t->skel, &t->sched, &t->pending);
	steps_mark(t->pending ? "load+verify (uprobe programs)" : "load+verify");
	/* Every thread state free; fork children take slots 1.. in fork order. */
	if (!err)
		err = fill_queue(t->skel->maps.free_tstates, 0, t->nr_threads);
	if (!err && evs)
		err = fill_counters(t, evs);
	if (!err)
		err = fill_queue(t->skel->maps.free_slots, 1 + t->nr_more, t->nr_slots);
	if (!err)
		err = fill_branches(t);
	if (err) {
		char hint[256] = "";

		/* Both big maps, and what sets their size: either may be the one refused. */
		if (err == -ENOMEM)
			snprintf(hint, sizeof(hint), " (the statistics of %zu functions on %d CPUs take %.0f MiB: "
				 "fewer functions need less; thread states for %u threads take %.0f MiB: "
				 "a lower --max-threads needs less)", t->nr_probes, t->nr_cpus,
				 t->nr_slots * slot_bytes(t) / 1048576, t->nr_threads,
				 t->nr_threads * (double)t->thread_bytes / 1048576.0);
		else if (!log_verbose)
			snprintf(hint, sizeof(hint), " (run with -v to see the verifier's log)");
		log_err("failed to load the BPF programs: %s%s", strerror(-err), hint);
		return err;
	}
	return 0;
}

/* A probe of function p in process pid: program prog at offset, with cookie. */
static struct uprobe_site site_of(struct tracer *t, const struct probe *p, pid_t pid, struct bpf_program *prog,
				  __u64 offset, __u64 cookie)
{
	const char *path = p->open_path;

	if (t->held_paths && p >= t->pl->probes && p < t->pl->probes + t->pl->nr && t->held_paths[p - t->pl->probes])
		path = t->held_paths[p - t->pl->probes];
	return (struct uprobe_site){
		.prog = prog, .path = path, .offset = offset, .cookie = cookie,
		.pid = pid, .what = p->name, .object = p->object,
	};
}

/*
 * -p P1,P2,...: the probes' objects held open (one fd per object), for
 * attaching again once the first process has exited. A file that cannot
 * be opened keeps its open_path. 0 or -ENOMEM.
 */
static int hold_objects(struct tracer *t)
{
	size_t i, k, n = t->pl->nr;
	int fd;

	t->held_paths = calloc(n ? n : 1, sizeof(*t->held_paths));
	t->held_fds = calloc(n ? n : 1, sizeof(*t->held_fds));
	if (!t->held_paths || !t->held_fds)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *op = t->pl->probes[i].open_path;

		for (k = 0; k < i && strcmp(t->pl->probes[k].open_path, op); k++)
			;
		if (k < i) {   /* the same object as probe k */
			t->held_paths[i] = t->held_paths[k] ? strdup(t->held_paths[k]) : NULL;
			continue;
		}
		fd = open(op, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		t->held_fds[t->nr_held++] = fd;
		if (asprintf(&t->held_paths[i], "/proc/self/fd/%d", fd) < 0)
			t->held_paths[i] = NULL;
	}
	return 0;
}

static void release_objects(struct tracer *t)
{
	for (size_t i = 0; t->held_paths && i < t->pl->nr; i++)
		free(t->held_paths[i]);
	for (size_t i = 0; i < t->nr_held; i++)
		close(t->held_fds[i]);
	free(t->held_paths);
	free(t->held_fds);
}

/*
 * The exit probes of p into out: a uretprobe, or one uprobe per ret
 * instruction and one per site past them (tail calls: fn_exit_tail, which
 * reads the cookie's flags); cookie: the slot and flags. Returns how many.
 */
static size_t exit_sites(struct tracer *t, const struct probe *p, pid_t pid, __u32 cookie, struct uprobe_site *out)
{
	const struct tail_site *ts;
	size_t n = 0;
	__u64 flags;
	int i;

	cookie |= p->id;
	/* The session's return, or ret probes where a process declines it (attach_rets). */
	if (p->session)
		return 0;
	if (p->exit == EXIT_URETPROBE) {
		out[0] = site_of(t, p, pid, t->skel->progs.fn_exit, p->offset + p->entry_skip, cookie);
		out[0].retprobe = true;
		return 1;
	}
	for (i = 0; p->exit == EXIT_RET && i < p->nr_exits; i++)
		out[n++] = site_of(t, p, pid, p->go ? t->skel->progs.go_exit_ret : t->skel->progs.fn_exit_ret,
				 p->exits[i], cookie | FNPROF_COOKIE_AT_RET);
	for (i = 0; p->exit == EXIT_RET && i < p->nr_tails; i++) {
		ts = &p->tails[i];
		/* The entry probe marks the frame there itself (entry_flags). */
		if (ts->jump && ts->offset == p->offset + p->entry_skip)
			continue;
		flags = (ts->in_callee ? FNPROF_COOKIE_TAIL : 0) | (ts->untimed ? FNPROF_COOKIE_UNTIMED : 0) |
			(ts->jump ? FNPROF_COOKIE_JMP : 0);
		out[n++] = site_of(t, p, pid, t->skel->progs.fn_exit_tail, ts->offset, cookie | FNPROF_COOKIE_AT_RET | flags);
	}
	return n;
}

/* Go: where a goroutine ends (runtime.goexit1), its open calls are let go. */
static struct uprobe_site go_exit_site(struct tracer *t, pid_t pid)
{
	return (struct uprobe_site){
		.prog = t->skel->progs.go_gone, .path = t->pl->go_exit_path, .offset = t->pl->go_exit_offset,
		.pid = pid, .what = "runtime.goexit1", .object = t->pl->go_exit_path,
	};
}

/* A probe at the start of a Go runtime function (--slow's parks). */
static struct uprobe_site go_runtime_site(struct tracer *t, pid_t pid, struct bpf_program *prog, __u64 offset,
					  const char *what)
{
	return (struct uprobe_site){
		.prog = prog, .path = t->pl->go_exit_path, .offset = offset, .pid = pid, .what = what,
		.object = t->pl->go_exit_path,
	};
}

/* What an entry probe's program must know of the function's exit probes. */
static __u64 entry_flags(const struct probe *p)
{
	if (p->exit == EXIT_RET && p->follows_tails)
		return FNPROF_COOKIE_TAILS | (probe_jmp_at_entry(p) ? FNPROF_COOKIE_ENTRY_JMP : 0);
	/* A session's program chooses per process. */
	if (p->session)
		return 0;
	return p->exit == EXIT_NONE ? FNPROF_COOKIE_ENTRY_ONLY : p->exit == EXIT_URETPROBE ? FNPROF_COOKIE_URET : 0;
}

/*
 * The probes of probes[0..nr) in process pid into one set: every exit first,
 * then every twin of a paired entry, then every entry, so that a call
 * entered while attaching has no frame rather than one whose return is
 * never seen (or whose first step is not timed). cookie: the process's
 * statistics slot and flags, for every probe.
 */
static int attach_functions(struct tracer *t, struct uprobe_set *set, const struct probe *probes, size_t nr,
			    pid_t pid, __u32 cookie)
{
	struct uprobe_site *sites;
	size_t i, n = 0, cap = 0;
	int err;

	for (i = 0; i < nr; i++)
		cap += 5 + (probes[i].exit == EXIT_RET ? probes[i].nr_exits + probes[i].nr_tails : 0);
	sites = calloc(cap + 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	/* System-wide (pid 0): every process that maps the object, now or later; libbpf says -1. */
	if (!pid)
		pid = -1;
	for (i = 0; i < nr; i++)
		n += exit_sites(t, &probes[i], pid, cookie, &sites[n]);
	if (t->pl->go_exit_path && traces_go(t->pl) && !(cookie & FNPROF_COOKIE_SELF))
		sites[n++] = go_exit_site(t, pid);
	if (go_parks(t) && !(cookie & FNPROF_COOKIE_SELF)) {
		sites[n++] = go_runtime_site(t, pid, t->skel->progs.go_run, t->pl->go_run_offset, "runtime.execute");
		sites[n++] = go_runtime_site(t, pid, t->skel->progs.go_park, t->pl->go_park_offset, "runtime.gopark");
	}
	/* The paired entries' twins before the entries: no call's entry is in without its twin. */
	for (i = 0; i < nr; i++)
		if (site_paired(probes[i].kind))
			sites[n++] = site_of(t, &probes[i], pid, t->skel->progs.fn_mid, probes[i].offset + probes[i].pair_off,
					     cookie | probes[i].id | (probes[i].kind == SITE_PAIR_RET ? FNPROF_COOKIE_AT_RET : 0));
	for (i = 0; i < nr; i++) {
		sites[n] = site_of(t, &probes[i], pid, probes[i].go ? t->skel->progs.go_entry :
				   probes[i].session ? t->skel->progs.fn_session : t->skel->progs.fn_entry,
				   probes[i].offset + probes[i].entry_skip, cookie | probes[i].id | entry_flags(&probes[i]));
		sites[n++].session = probes[i].session;
	}
	/* Before the probes: a call entered in between would find no cookie. */
	err = t->compat ? tcompat_fill(bpf_map__fd(t->skel->maps.probe_cookies),
				       bpf_map__fd(t->skel->maps.probe_files), sites, n) : 0;
	if (!err)
		err = uprobes_attach(set, sites, n);
	free(sites);
	return err;
}

static int attach_tp(struct bpf_program *prog, struct bpf_link **link, const char *what)
{
	int err = tpbtf_attach(prog, link);

	if (err) {
		log_err("failed to attach to the %s tracepoint: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

static int attach_tracepoints(struct tracer *t, bool syscalls)
{
	struct trace_bpf *skel = t->sched ? t->sched : t->skel;
	int err;

	/* The compat object has no sched_switch program (bpf/compat.bpf.h). */
	err = t->compat ? 0 : attach_tp(skel->progs.on_switch, &skel->links.on_switch, "sched_switch");
	if (!err)
		err = attach_tp(skel->progs.on_exit, &skel->links.on_exit, "sched_process_exit");
	if (!err && t->follows)
		err = attach_tp(skel->progs.on_fork, &skel->links.on_fork, "sched_process_fork");
	if (!err && syscalls)
		err = attach_tp(skel->progs.on_sys_enter, &skel->links.on_sys_enter, "sys_enter");
	if (!err && syscalls)
		err = attach_tp(skel->progs.on_sys_exit, &skel->links.on_sys_exit, "sys_exit");
	steps_mark("attach tracepoints");
	return err;
}

/* The tracepoint programs still loading: waits for them. */
static int finish_load(struct tracer *t)
{
	int err;

	if (!t->pending)
		return 0;
	err = trace_load_finish(t->pending, &t->sched);
	t->pending = NULL;
	steps_mark("load+verify (tracepoint programs)");
	if (err)
		log_err("failed to load the BPF programs: %s%s", strerror(-err),
			log_verbose ? "" : " (run with -v to see the verifier's log)");
	return err;
}

/*
 * -p P1,P2,...: each process besides the first in its slot (1..), known to
 * the BPF side as a fork child is, with its own probes. 0 or -errno.
 */
static int attach_more(struct tracer *t)
{
	int fd = t->nr_more ? bpf_map__fd(t->skel->maps.procs) : -1, err;
	__u32 slot;

	for (slot = 1; slot <= t->nr_more; slot++) {
		struct proc_info pi = { .slot = slot };
		__u32 key = t->more[slot - 1];

		if (bpf_map_update_elem(fd, &key, &pi, BPF_NOEXIST)) {
			err = -errno;
			log_err("cannot trace process %u: %s", key, strerror(-err));
			return err;
		}
		t->procs[slot].pid = key;
		err = attach_functions(t, &t->child_links[slot], t->pl->probes, t->pl->nr, key,
				       slot << FNPROF_COOKIE_SLOT_SHIFT);
		if (err)
			return err;
	}
	return 0;
}

/* -v: the programs loaded (and verified): those the run's probes and options use. */
static void log_programs(const struct tracer *t)
{
	const struct trace_bpf *skels[] = { t->skel, t->sched };
	char names[512] = "";
	struct bpf_program *p;
	size_t k, n = 0;

	for (k = 0; log_verbose && k < sizeof(skels) / sizeof(skels[0]); k++) {
		if (!skels[k])
			continue;
		bpf_object__for_each_program(p, skels[k]->obj)
			if (bpf_program__fd(p) >= 0 && n < sizeof(names))
				n += snprintf(names + n, sizeof(names) - n, " %s", bpf_program__name(p));
	}
	log_debug("BPF programs loaded:%s", names);
}

/*
 * The tracepoint programs, then the target's probes, then the calibration's.
 * While the tracepoint programs still load (t->pending), the target's
 * probes go in first: its calls are counted and timed from then on, and only
 * the on/off-CPU split of a call switched out before sched_switch's program
 * is attached (~10 ms later) counts that time as on-CPU. Fork children,
 * system calls and slow calls (--follow-forks, -e, --slow: each slow
 * call's split and blocked stack are the point) need their tracepoints first.
 */
static int attach(struct tracer *t, const struct probe_list *pl, bool syscalls)
{
	double t0 = monotonic_s();
	bool early = t->pending != NULL;
	int err = 0;

	if (!early)
		err = attach_tracepoints(t, syscalls);
	if (!err)
		err = attach_functions(t, &t->links, pl->probes, pl->nr, t->pid, 0);
	if (!err)
		err = attach_more(t);
	uprobe_warm_stop(t->warm);
	steps_mark("attach probes");
	if (early)
		err = finish_load(t) ? : err ? : attach_tracepoints(t, syscalls);
	/* Calibration probes are in fnprof's own process. */
	if (!err) {
		struct probe self[TRACER_SELF_MAX];

		err = attach_functions(t, &t->calib_links, self, self_attached(t, self), getpid(),
				       FNPROF_COOKIE_SELF);
	}
	steps_mark("attach calibration probes");
	if (err)
		return err;
	t->attach_s = monotonic_s() - t0;
	log_debug("attached %zu probes in %.1f ms", pl->nr, t->attach_s * 1e3);
	log_programs(t);
	return 0;
}

static int on_fork_event(void *ctx, void *data, size_t size)
{
	(void)ctx, (void)data, (void)size;
	return 0;  /* a wake-up only: the children are read from the procs map */
}

static int follow_setup(struct tracer *t)
{
	t->child_links = calloc(t->nr_slots, sizeof(*t->child_links));
	t->procs = calloc(t->nr_slots, sizeof(*t->procs));
	if (t->follows)
		t->forks = ring_buffer__new(bpf_map__fd(t->skel->maps.forks), on_fork_event, NULL, NULL);
	if (!t->child_links || !t->procs || (t->follows && !t->forks)) {
		log_err("cannot set up --follow-forks: %s", strerror(errno));
		return -ENOMEM;
	}
	for (__u32 s = 0; s < t->nr_slots; s++) {
		t->child_links[s].multi = t->links.multi;
		t->child_links[s].quiet = true;
	}
	return 0;
}

static int per_process_setup(struct tracer *t)
{
	t->procs = calloc(t->nr_slots, sizeof(*t->procs));
	t->exited = calloc(t->nr_slots, sizeof(*t->exited));
	t->exited_slots = calloc(t->nr_slots, sizeof(*t->exited_slots));
	if (!t->procs || !t->exited || !t->exited_slots) {
		log_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

void tracer_note_exited(struct tracer *t)
{
	int fd;
	__u32 key, *prev = NULL;
	struct proc_info pi;

	if (!t->per_process)
		return;
	fd = bpf_map__fd(t->skel->maps.procs);
	t->nr_exited = 0;
	while (!bpf_map_get_next_key(fd, prev, &key) && t->nr_exited < t->nr_slots) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &pi) || !kill(key, 0) || errno != ESRCH)
			continue;
		t->exited[t->nr_exited] = key;
		t->exited_slots[t->nr_exited++] = pi.slot;
	}
}

void tracer_release_exited(struct tracer *t)
{
	int fd;
	size_t i;

	if (!t->per_process)
		return;
	fd = bpf_map__fd(t->skel->maps.procs);
	for (i = 0; i < t->nr_exited; i++) {
		bpf_map_delete_elem(fd, &t->exited[i]);
		if (t->exited_slots[i] < t->nr_slots)
			memset(&t->procs[t->exited_slots[i]], 0, sizeof(*t->procs));
		if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.free_slots), NULL, &t->exited_slots[i], BPF_ANY))
			log_debug("slot %u not given back: %s", t->exited_slots[i], strerror(errno));
	}
	t->nr_exited = 0;
}

int tracer_fork_fd(struct tracer *t)
{
	return t && t->forks ? ring_buffer__epoll_fd(t->forks) : -1;
}

/*
 * The probes of a new fork child, in the child: the same sites, its pid. A
 * child that has gone already, or exec'd another program, just gets none.
 */
static void follow_child(struct tracer *t, __u32 slot, __u64 fork_ns)
{
	struct traced_proc *p = &t->procs[slot];
	int err;

	err = attach_functions(t, &t->child_links[slot], t->pl->probes, t->pl->nr, p->pid,
			       slot << FNPROF_COOKIE_SLOT_SHIFT);
	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC too. */
	p->delay_ns = monotonic_s() * 1e9 - fork_ns;
	if (!p->delay_ns)
		p->delay_ns = 1;
	if (err)
		log_debug("fork child %d: no probes (%s); it exited or exec'd first", p->pid, strerror(-err));
	else
		log_debug("fork child %d traced %.0f us after its fork", p->pid, p->delay_ns / 1e3);
}

/* The fork children in the procs map into t->procs; the new ones get their probes. */
static void refresh_procs(struct tracer *t, bool attach)
{
	int fd = bpf_map__fd(t->skel->maps.procs);
	__u32 key, *prev = NULL;
	struct proc_info pi;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &pi) || pi.slot >= t->nr_slots)
			continue;
		t->procs[pi.slot].pid = key;
		t->procs[pi.slot].ppid = pi.ppid;
		t->procs[pi.slot].cgroup_id = pi.cgroup_id;
		memcpy(t->procs[pi.slot].comm, pi.comm, sizeof(t->procs[pi.slot].comm));
		t->procs[pi.slot].comm[sizeof(t->procs[pi.slot].comm) - 1] = 0;
		if (attach && !t->procs[pi.slot].delay_ns && pi.slot > t->nr_more)
			follow_child(t, pi.slot, pi.fork_ns);
	}
}

int tracer_follow_forks(struct tracer *t)
{
	if (!t->forks)
		return 0;
	ring_buffer__consume(t->forks);
	refresh_procs(t, true);
	return 0;
}

/*
 * On a kernel that lacks what the full trace object needs, the compat one
 * (bpf/compat.bpf.h), if the run asks nothing of it that it cannot do:
 * else -ENOTSUP, after one line saying what the kernel lacks. Calibration
 * cases it cannot run (tail jumps) are left out.
 */
static int compat_check(struct tracer *t, bool events)
{
	struct tcompat_run run = { .system_wide = !t->pid && t->nr_probes, .events = events, .slow = t->slow_ns };
	size_t i;

	t->compat = kneeds_trace_compat(NULL);
	trace_load_use_compat(t->compat);
	if (!t->compat)
		return 0;
	for (i = 0; i < t->pl->nr; i++) {
		if (t->pl->probes[i].go && !run.go)
			run.go = t->pl->probes[i].name;
		if (t->pl->probes[i].exit == EXIT_RET && t->pl->probes[i].nr_tails && !run.tails)
			run.tails = t->pl->probes[i].name;
	}
	for (i = 0; i < t->nr_total - t->nr_probes; i++)
		if (t->self[i].exit == EXIT_RET && t->self[i].nr_tails)
			t->self_mask &= ~(1U << i);
	return tcompat_refusal(&run);
}

void tracer_set_session_ret_shift(struct tracer *t, double ns)
{
	t->skel->bss->session_ret_shift_ns = (__s64)(ns < 0 ? ns - 0.5 : ns + 0.5);
}

struct sysexit_proc *tracer_exit_choices(struct tracer *t, size_t *nr)
{
	return sysexit_procs(t ? t->sysexit : NULL, nr);
}

/* sysexit's attach: the ret probes of every session-entered function, in process pid alone. */
static int attach_session_rets(void *ctx, pid_t pid, struct uprobe_set *set)
{
	struct tracer *t = ctx;
	struct uprobe_site *sites;
	size_t i, n = 0, cap = 0;
	int k, err;

	for (i = 0; i < t->pl->nr; i++)
		cap += t->pl->probes[i].session ? t->pl->probes[i].nr_exits : 0;
	sites = calloc(cap + 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	for (i = 0; i < t->pl->nr; i++) {
		const struct probe *p = &t->pl->probes[i];

		for (k = 0; p->session && k < p->nr_exits; k++)
			sites[n++] = site_of(t, p, pid, t->skel->progs.fn_exit_ret, p->exits[k],
					     p->id | FNPROF_COOKIE_AT_RET | FNPROF_COOKIE_SESSION_RET);
	}
	err = uprobes_attach(set, sites, n);
	free(sites);
	return err;
}

/* System-wide sessions: the processes' questions (the forks ring buffer) are answered on a thread. */
static int sysexit_setup(struct tracer *t)
{
	int err = sysexit_new(bpf_map__fd(t->skel->maps.exit_choices), bpf_map__fd(t->skel->maps.forks),
			      attach_session_rets, t, &t->sysexit);

	if (err)
		log_err("cannot answer the processes' exit choices: %s", strerror(-err));
	return err;
}

int tracer_start(const struct probe_list *pl, pid_t pid, const struct events *evs,
		 const struct tracer_conf *conf, struct tracer **out)
{
	struct tracer *t;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (pl->nr + TRACER_SELF_MAX > FNPROF_MAX_FUNCS || conf->nr_self > TRACER_SELF_MAX) {
		log_err("%zu functions: fnprof traces at most %u at once", pl->nr, FNPROF_MAX_FUNCS - TRACER_SELF_MAX);
		free(t);
		return -E2BIG;
	}
	t->nr_probes = t->nr_total = pl->nr;
	t->pl = pl;
	t->pid = pid;
	t->self = conf->self;
	t->self_mask = conf->self_mask ? conf->self_mask : (1U << conf->nr_self) - 1;
	t->nr_total += conf->nr_self;
	t->nr_cpus = libbpf_num_possible_cpus();

	t->percpu = calloc(t->nr_cpus > 0 ? t->nr_cpus : 1, sizeof(*t->percpu));
	if (t->nr_cpus <= 0 || !t->percpu) {
		log_err("out of memory");
		tracer_stop(t);
		return -ENOMEM;
	}
	/* For the target's probes; --calibrate alone has time to wait (and none to close probes). */
	t->warm = pl->nr ? uprobe_warm_start() : NULL;
	t->per_process = conf->per_process && !pid;
	t->follows = conf->follow_forks && !t->per_process;
	t->more = conf->more_pids;
	t->nr_more = conf->nr_more < TRACER_MORE_MAX ? conf->nr_more : TRACER_MORE_MAX;
	t->nr_slots = conf->follow_forks || t->per_process ? slots_for(t) : 1;
	/* -p P1,P2,...: a slot each, and with --follow-forks at least one for a fork child. */
	if (t->nr_more)
		t->nr_slots = t->nr_slots + t->nr_more;
	if (t->nr_more && hold_objects(t)) {
		log_err("out of memory");
		tracer_stop(t);
		return -ENOMEM;
	}
	t->nr_threads = conf->max_threads ? conf->max_threads : default_threads(pid);
	/* fnprof's own thread, when it calibrates, takes one too. */
	t->nr_threads += calibrates(t);
	t->slow_ns = conf->slow_ns;
	t->slow_rate = conf->slow_rate;
	t->start_paused = conf->start_paused;
	steps_mark("tracer set-up");
	err = compat_check(t, evs != NULL);
	if (!err)
		err = stats_fit(t) ? load(t, evs) : -E2BIG;
	if (!err && (conf->follow_forks || t->nr_more))
		err = follow_setup(t);
	if (!err && t->per_process)
		err = per_process_setup(t);
	if (!err && probes_session(t))
		err = sysexit_setup(t);
	if (!err)
		err = attach(t, pl, evs != NULL);
	if (err) {
		tracer_stop(t);
		return err;
	}
	*out = t;
	return 0;
}

/* Sums entry key of the stats map over CPUs into out; clears it when asked. */
static int read_stats(struct tracer *t, __u32 key, struct fn_stats *out, bool clear)
{
	int fd = bpf_map__fd(t->skel->maps.stats), c;

	if (bpf_map_lookup_elem(fd, &key, t->percpu))
		return -errno;
	for (c = 0; c < t->nr_cpus; c++)
		fn_stats_merge(out, &t->percpu[c]);
	if (!clear)
		return 0;
	memset(t->percpu, 0, t->nr_cpus * sizeof(*t->percpu));
	return bpf_map_update_elem(fd, &key, t->percpu, BPF_ANY) ? -errno : 0;
}

unsigned int tracer_self_mask(const struct tracer *t)
{
	return t->self_mask;
}

int tracer_calibration_stats(struct tracer *t, int k, struct fn_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (t->nr_total == t->nr_probes)
		return -ENOENT;
	return read_stats(t, stats_key(t, t->epoch, 0, t->nr_probes + k), out, true);
}

/* Sums one half of the stats map over CPUs into out[slot][probe], then zeroes it. */
static int drain_half(struct tracer *t, __u32 half, struct fn_stats *out)
{
	__u32 i, s;
	int err;

	for (s = 0; s < t->nr_slots; s++) {
		/* per_process: a slot no process holds has nothing (see tracer_collect). */
		if (t->per_process && s && !t->procs[s].pid)
			continue;
		for (i = 0; i < t->nr_probes; i++) {
			err = read_stats(t, stats_key(t, half, s, i), &out[s * t->nr_probes + i], true);
			if (err)
				return err;
		}
	}
	return 0;
}

size_t tracer_nr_slots(const struct tracer *t)
{
	return t->nr_slots;
}

int tracer_procs(struct tracer *t, struct traced_proc *procs)
{
	memset(procs, 0, t->nr_slots * sizeof(*procs));
	if (t->procs) {
		refresh_procs(t, false);
		memcpy(procs, t->procs, t->nr_slots * sizeof(*procs));
	}
	procs[0].pid = t->pid;
	return 0;
}

static int read_drops(struct tracer *t, __u64 drops[DROP_NR])
{
	__u64 sums[DROP_NR];
	int err = percpu_sums(bpf_map__fd(t->skel->maps.drops), DROP_NR, sums);
	__u32 r;

	for (r = 0; !err && r < DROP_NR; r++) {
		drops[r] = sums[r] - t->drops_seen[r];
		t->drops_seen[r] = sums[r];
	}
	return err;
}

int tracer_slow_fd(struct tracer *t)
{
	return t->slow_ns ? bpf_map__fd(t->skel->maps.slow_calls) : -1;
}

int tracer_slow_drops(struct tracer *t, __u64 drops[SLOWDROP_NR])
{
	return percpu_sums(bpf_map__fd(t->skel->maps.slow_drops), SLOWDROP_NR, drops);
}

int tracer_collect(struct tracer *t, struct fn_stats *out, __u64 drops[DROP_NR])
{
	__u32 old = t->epoch;
	int err;

	memset(out, 0, t->nr_slots * t->nr_probes * sizeof(*out));
	/*
	 * Flip the buffer the handlers write to, give handlers that read the old
	 * epoch a moment to finish, then drain the old half.
	 */
	t->epoch ^= 1;
	t->skel->bss->epoch = t->epoch;
	__sync_synchronize();
	usleep(2000);
	/*
	 * per_process: a process takes its slot (in procs) before its first
	 * count, so the slots in procs now are all the old half can hold: the
	 * others are not read (65 slots of every function on every CPU).
	 */
	if (t->per_process)
		refresh_procs(t, false);
	err = drain_half(t, old, out);
	if (!err)
		err = read_drops(t, drops);
	if (err)
		log_err("failed to read the BPF maps: %s", strerror(-err));
	return err;
}

/* Adds the open frames of one thread state to open[] (see tracer_open_calls). */
static void count_open(const struct tracer *t, const struct thread_state *ts, __u64 *open)
{
	__u32 d, gen = t->skel->bss->generation;

	if (ts->gen != gen || ts->depth > FNPROF_MAX_DEPTH)
		return;
	for (d = 0; d < ts->depth; d++) {
		const struct fn_frame *f = &ts->frames[d];

		if (f->id < t->nr_probes && f->slot < t->nr_slots)
			open[f->slot * t->nr_probes + f->id]++;
	}
}

int tracer_open_calls(struct tracer *t, __u64 *open)
{
	int fd = bpf_map__fd(t->skel->maps.tstates), err = 0;
	size_t size = bpf_map__value_size(t->skel->maps.tstates);
	struct thread_state *ts;
	__u32 i;

	if (size < sizeof(*ts))
		return -EINVAL;
	ts = malloc(size);
	if (!ts)
		return -ENOMEM;
	for (i = 0; i < t->nr_threads && !err; i++) {
		if (bpf_map_lookup_elem(fd, &i, ts))
			err = -errno;
		else
			count_open(t, ts, open);
	}
	free(ts);
	return err;
}

int tracer_pause(struct tracer *t)
{
	if (t->paused)
		return 0;
	t->skel->bss->paused = 1;
	/*
	 * A new generation before the probes go: once the kernel has taken a
	 * return probe's handler out, a frame's return may go unseen, so the
	 * frames open now cannot be told abandoned (a thread exiting mid-call)
	 * from returned. Frames of the last generation still take their returns
	 * while the handlers last; those left are counted as detached.
	 */
	t->skel->bss->generation++;
	uprobes_detach(&t->links);
	/* -p P1,P2,...: the other processes' probes go with the first's. */
	for (size_t slot = 1; slot <= t->nr_more; slot++)
		uprobes_detach(&t->child_links[slot]);
	t->paused = true;
	return 0;
}

int tracer_resume(struct tracer *t)
{
	int err;

	if (!t->paused)
		return 0;
	/*
	 * And another before they come back: the frames still open from the
	 * last burst returned unseen while the probes were out, or are still
	 * running; a return now would close one with the whole pause in its
	 * time (a call of 7 us read 0.9 s). While paused (attaching) those
	 * frames are the generation before this one, which returns may close
	 * only while the probes are being taken out.
	 */
	t->skel->bss->generation++;
	err = attach_functions(t, &t->links, t->pl->probes, t->pl->nr, t->pid, 0);
	/* -p P1,P2,...: one that has exited takes no probes, the first as the others; the rest go on. */
	if (err && t->nr_more)
		log_debug("burst: process %d takes no probes; it has exited", t->pid);
	for (size_t slot = 1; slot <= t->nr_more; slot++) {
		if (attach_functions(t, &t->child_links[slot], t->pl->probes, t->pl->nr, t->more[slot - 1],
				     slot << FNPROF_COOKIE_SLOT_SHIFT))
			log_debug("burst: process %d takes no probes; it has exited", t->more[slot - 1]);
	}
	t->paused = false;
	return t->nr_more ? 0 : err;
}

void tracer_count_calls(struct tracer *t, bool on)
{
	t->skel->bss->paused = !on;
}

__u64 tracer_paused_calls(struct tracer *t)
{
	return t->skel->bss->paused_calls;
}

__u64 tracer_paused_calls_of(struct tracer *t, __u32 slot)
{
	return slot < FNPROF_PAUSED_SLOTS ? t->skel->bss->paused_calls_slot[slot] : 0;
}

void tracer_peek(struct tracer *t, tracer_peek_fn fn, void *ctx)
{
	tracer_peek_slot(t, 0, fn, ctx);
}

void tracer_peek_slot(struct tracer *t, __u32 slot, tracer_peek_fn fn, void *ctx)
{
	struct fn_stats s;
	__u32 i;

	for (i = 0; slot < t->nr_slots && i < t->nr_probes; i++) {
		memset(&s, 0, sizeof(s));
		if (!read_stats(t, stats_key(t, t->epoch, slot, i), &s, false))
			fn(ctx, &t->pl->probes[i], &s);
	}
}

int tracer_attach_more(struct tracer *t, const struct probe *probes, size_t nr)
{
	struct uprobe_set *v = realloc(t->extra, (t->nr_extra + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	int fd = bpf_map__fd(t->skel->maps.entry_branch);
	__s32 delta, none = 0;
	size_t i;

	t->extra = v;
	v = &t->extra[t->nr_extra++];
	memset(v, 0, sizeof(*v));
	v->multi = t->links.multi;
	/*
	 * The new code under an old id: one entry serves both (processes on the
	 * old file may run on). Where their branches differ, neither is kept.
	 */
	for (i = 0; i < nr; i++)
		if (!bpf_map_lookup_elem(fd, &probes[i].id, &delta) && delta != probes[i].branch_delta)
			bpf_map_update_elem(fd, &probes[i].id, &none, BPF_ANY);
	return attach_functions(t, v, probes, nr, t->pid, 0);
}

/* Every set of probes at once: one wait for the kernel's grace periods, not one per set. */
static void free_probes(struct tracer *t)
{
	size_t nr_child = t->child_links ? t->nr_slots : 0, n = 2 + t->nr_extra + nr_child, k = 0, i;
	struct uprobe_set **sets = calloc(n, sizeof(*sets));

	for (i = 0; i < t->nr_extra && sets; i++)
		sets[k++] = &t->extra[i];
	for (i = 0; i < nr_child && sets; i++)
		sets[k++] = &t->child_links[i];
	if (sets) {
		sets[k++] = &t->links;
		sets[k++] = &t->calib_links;
		uprobes_free_all(sets, k);
		free(sets);
		return;
	}
	/* Out of memory: one set after the other. */
	for (i = 0; i < t->nr_extra; i++)
		uprobes_free(&t->extra[i]);
	for (i = 0; i < nr_child; i++)
		uprobes_free(&t->child_links[i]);
	uprobes_free(&t->links);
	uprobes_free(&t->calib_links);
}

void tracer_stop(struct tracer *t)
{
	if (!t)
		return;
	/* No more ret probes attached beside the closing of the others. */
	sysexit_stop(t->sysexit);
	free_probes(t);
	/* After the entries: a call entered meanwhile still finds its process's ret probes. */
	sysexit_free(t->sysexit);
	/* After the tracer's own: the warm-up's probes, if still closing, close alongside. */
	uprobe_warm_free(t->warm);
	free(t->extra);
	free(t->child_links);
	free(t->procs);
	free(t->exited);
	free(t->exited_slots);
	ring_buffer__free(t->forks);
	finish_load(t);
	trace_bpf__destroy(t->sched);
	trace_bpf__destroy(t->skel);
	free(t->percpu);
	release_objects(t);
	free(t);
}
