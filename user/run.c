// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/proc.h"
#include "commands.h"
#include "elf/gobin.h"
#include "format/outfile.h"
#include "follow.h"
#include "profile/profiles.h"
#include "profile/sample.h"
#include "profile/slow.h"
#include "report/export.h"
#include "report/heatmap.h"
#include "report/pictures.h"
#include "report/tally.h"
#include "run.h"
#include "stacks/prof_kind.h"
#include "target/resolve.h"
#include "trace/steps.h"
#include "trace/tracer.h"
#include "trace/upgrade.h"

_Static_assert(MAX_PIDS <= SAMPLER_MANY_MAX && MAX_PIDS <= PROFILES_MANY_MAX && MAX_PIDS <= SLOW_PROCS_MAX &&
	       MAX_PIDS <= EXPORT_LIST_MAX, "a -p list's files, slow calls and profiles served hold every process");

/* --listen: how often the metrics take the figures (a scrape sees them this late at most). */
#define EXPORT_DRAIN_S 0.5

/* Far away: a deadline that never comes (no -d, no -i). */
#define NEVER 1e300

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

void run_init(struct run *r, const struct opts *o, double t_exec)
{
	struct sigaction sa = { .sa_handler = on_signal };

	*r = (struct run){
		.o = o,
		.target = { .cmd = o->cmd, .nr_pids = o->nr_pids, .pids = o->pids, .pidfd = -1 },
		.loop = { .t_exec = t_exec },
	};
	launch_save_signals(&r->target.sigs);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* ---- set-up: each step 0, or the exit code that ends the run (said) ---- */

/* The files written at the end (--pprof, each profile's, --folded, --svg): created new before tracing. */
static int claim_outputs(const struct opts *o)
{
	const char *const paths[] = { o->sample ? o->pprof_path : NULL, o->folded_path, o->svg_path };
	const char *const what[] = { "the pprof profile", "the folded stacks", "the pictures" };
	bool several = __builtin_popcount(o->profiles) > 1;
	char path[PATH_MAX];
	size_t i;
	int err;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (paths[i] && (err = outfile_claim(paths[i]))) {
			log_err("cannot write %s to %s: %s", what[i], paths[i], outfile_strerror(err));
			return EXIT_FAIL;
		}
	}
	for (i = 0; o->pprof_base && i < PROF_KIND_NR; i++) {
		/* The CPU profile's file is pprof_path, above; a name too long: profiles_write_files says so. */
		if (i == PROF_CPU || !(o->profiles & 1U << i) ||
		    prof_file_name(o->pprof_base, i, several, path, sizeof(path)))
			continue;
		if ((err = outfile_claim(path))) {
			log_err("cannot write the %s pprof profile to %s: %s", prof_kind_name(i), path,
				outfile_strerror(err));
			return EXIT_FAIL;
		}
	}
	return 0;
}

/* The report's stream: -o FILE (new), -o - (standard output), else stdout for --json (for a pipe), stderr. */
static int open_output(struct run *r)
{
	const struct opts *o = r->o;
	int fd;

	r->outputs.out = o->json ? stdout : stderr;
	if (claim_outputs(o))
		return EXIT_FAIL;
	if (!o->output)
		return 0;
	fd = outfile_create(o->output);
	r->outputs.out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!r->outputs.out) {
		log_err("cannot write the report to %s: %s", o->output, outfile_strerror(fd < 0 ? fd : -errno));
		return EXIT_FAIL;
	}
	return 0;
}

/* The target process: the one given with -p, or the launched command (still waiting). */
static int setup_target(struct run *r)
{
	const struct opts *o = r->o;
	struct run_target *t = &r->target;
	int err;

	if (o->system_wide || o->all)
		return 0;   /* every process (that maps the objects): no pid, nothing to watch */
	if (!t->cmd) {
		t->pid = o->pid;
		for (size_t i = 0; i < o->nr_pids; i++) {
			if (!proc_alive(o->pids[i])) {
				log_err("no such process: %d", o->pids[i]);
				return EXIT_FAIL;
			}
		}
	} else {
		err = launch_prepare(t->cmd, &t->sigs, &t->child);
		if (err) {
			/* A bad SUDO_UID or SUDO_GID was named already. */
			if (err != -EINVAL)
				log_err("cannot start '%s': %s", t->cmd[0], strerror(-err));
			return EXIT_FAIL;
		}
		t->pid = t->child.pid;
	}
	t->pidfd = syscall(SYS_pidfd_open, t->pid, 0);
	if (t->pidfd < 0) {
		log_err("cannot watch process %d: %s", t->pid, strerror(errno));
		return EXIT_FAIL;
	}
	return 0;
}

/* A script or wrapper as the command: followed through exec to the program with the -f functions. */
static int follow_command(struct run *r)
{
	if (!follow_to_exec(&r->target, r->o->nr_funcs))
		return 0;
	return follow_to_program(&r->target, r->o->funcs, r->o->nr_funcs);
}

/* How the -f patterns are resolved: for the process, the followed script's program, or system-wide. */
static struct resolve_conf resolve_conf_of(const struct run *r)
{
	const struct opts *o = r->o;

	return (struct resolve_conf){
		.funcs = o->funcs, .nr_funcs = o->nr_funcs, .cmd = o->cmd, .exit_mode = o->exit_mode,
		.counters = o->events != NULL, .followed = r->target.followed[0] ? r->target.followed : NULL,
		.system_wide = o->system_wide,
		/* The twin's reading is the function plus a constant, meaningless without the correction. */
		.step_pair = !o->step_single && !o->raw,
	};
}

/* The -f patterns into the probe list. */
static int resolve(struct run *r)
{
	const struct resolve_conf conf = resolve_conf_of(r);

	return resolve_probes(&conf, r->target.pid, &r->trace.pl) ? EXIT_FAIL : 0;
}

/* System-wide: the objects' files, to follow their upgrades; else the program, to notice an exec. */
static int watch_files(struct run *r)
{
	const struct resolve_conf conf = resolve_conf_of(r);

	if (!r->o->system_wide) {
		follow_remember_exe(&r->target);
		return 0;
	}
	if (upgrades_start(&r->trace.pl, &conf, &r->trace.upgrades)) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	return 0;
}

/* -e: the counters read at each traced call's entry and return. */
static int open_events(struct run *r)
{
	struct run_trace *tr = &r->trace;

	if (!r->o->events)
		return 0;
	if (events_parse(r->o->events, &tr->evs))
		return EXIT_USAGE;
	if (events_open(&tr->evs, libbpf_num_possible_cpus()))
		return EXIT_FAIL;
	tr->have_events = true;
	return 0;
}

/* The probe calibration: to subtract the bias, and to price the probes for --max-overhead. */
static bool wants_calib(const struct opts *o)
{
	return !o->raw || o->max_overhead_pct;
}

static int start_tracer(struct run *r)
{
	const struct opts *o = r->o;
	struct run_trace *tr = &r->trace;
	struct tracer_conf conf = {
		.follow_forks = o->follow_forks, .max_threads = o->max_threads,
		/* -p P1,P2,...: the others, each on its own */
		.more_pids = o->pids + 1, .nr_more = o->nr_pids > 1 ? o->nr_pids - 1 : 0,
		/* --by system-wide: figures per process, for the metrics' labels */
		.per_process = o->system_wide && o->listen && o->by != BY_NONE,
		.slow_ns = o->slow_ns, .slow_rate = SLOW_RATE,
		/* -p: the target runs while fnprof sets up; its calls count from burst_init() on. */
		.start_paused = o->max_overhead_pct > 0,
	};

	if (wants_calib(o)) {
		conf.nr_self = self_probes(tr->self, tr->pl.nr, &conf.self);
		conf.self_mask = calib_cases_of_list(&tr->pl);
	}
	if (tracer_start(&tr->pl, r->target.pid, tr->have_events ? &tr->evs : NULL, &conf, &tr->tracer))
		return EXIT_FAIL;
	return 0;
}

/* --slow: what unwinds and names the slow calls, before the probes (slow.h). */
static int prepare_slow(struct run *r)
{
	struct slow_conf c = {
		.pid = r->target.pid, .threshold_ns = r->o->slow_ns, .max_memory = r->o->max_memory,
		.pids = r->o->nr_pids > 1 ? r->o->pids : NULL, .nr_pids = r->o->nr_pids,   /* each with its objects */
	};
	int err;

	if (!r->o->slow_ns)
		return 0;
	err = slow_new(&c, &r->trace.slow);
	if (err)
		log_err("cannot set up --slow: %s", strerror(-err));
	return err ? EXIT_FAIL : 0;
}

/* --slow: the thread that reads the slow calls. */
static int start_slow(struct run *r)
{
	int err;

	if (!r->trace.slow)
		return 0;
	err = slow_start(r->trace.slow, tracer_slow_fd(r->trace.tracer));
	if (err)
		log_err("cannot set up --slow: %s", strerror(-err));
	return err ? EXIT_FAIL : 0;
}

/* The figures' bookkeeping (tally.h), reporting to the report's stream. */
static int start_tally(struct run *r)
{
	const struct opts *o = r->o;
	struct run_trace *tr = &r->trace;
	const struct tally_conf c = {
		.pl = &tr->pl, .tracer = tr->tracer, .pid = r->target.pid, .system_wide = o->system_wide,
		.json = o->json, .hist = o->hist, .max_overhead_pct = o->max_overhead_pct,
		.evs = tr->have_events ? &tr->evs : NULL, .slow = tr->slow, .out = r->outputs.out,
		.t_exec = r->loop.t_exec,
	};

	if (tally_new(&c, &tr->tally)) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	return 0;
}

/* The calibration traces fnprof's own functions with the same probes. */
static int calibrate_probes(struct run *r)
{
	struct run_trace *tr = &r->trace;

	if (wants_calib(r->o))
		tr->calibrated = !calibrate(tr->tracer, &tr->cal, calib_cases_of_list(&tr->pl));
	tr->subtract_bias = tr->calibrated && !r->o->raw;
	return 0;
}

static int check_overhead(struct run *r)
{
	if (r->o->max_overhead_pct && !r->trace.calibrated) {
		log_err("--max-overhead needs the probe calibration, which failed");
		return EXIT_FAIL;
	}
	return 0;
}

/*
 * --call-graph auto: DWARF, except for Go programs, which keep frame pointers
 * on every function and switch stacks (to the vDSO, to the system stack) in
 * ways their CFI does not describe: there the frame-pointer walk goes further.
 */
static bool use_dwarf(const struct run *r)
{
	char path[PATH_MAX];

	if (r->o->call_graph != CG_AUTO)
		return r->o->call_graph == CG_DWARF;
	follow_program_path(&r->target, path, sizeof(path));
	return !go_file(path);
}

/* --sample, or no -f: the cpu profile, of each process of a -p list on its own. */
static int start_sampling(struct run *r)
{
	const struct opts *o = r->o;
	const struct sampler_conf conf = {
		.freq_hz = o->freq_hz, .per_thread = o->per_thread, .top = o->top, .json = o->json,
		.pprof_path = o->pprof_path, .folded_path = o->folded_path,
		.dwarf = use_dwarf(r), .stack_bytes = o->stack_bytes, .all = o->all,
		.max_memory = o->max_memory, .share = o->nr_pids,
	};
	struct run_stacks *st = &r->stacks;
	size_t n = o->nr_pids > 1 ? o->nr_pids : 1;

	if (!o->sample)
		return 0;
	for (st->nr_samplers = 0; st->nr_samplers < n; st->nr_samplers++) {
		pid_t pid = o->nr_pids > 1 ? o->pids[st->nr_samplers] : r->target.pid;

		if (sampler_start(&conf, pid, &st->sampler[st->nr_samplers]))
			return EXIT_FAIL;
	}
	return 0;
}

/* --listen: the metrics and the pprof server. */
static int start_export(struct run *r)
{
	const struct opts *o = r->o;
	struct export_conf conf = {
		.listen = o->listen, .by = o->by, .max_series = o->max_series, .freq_hz = o->freq_hz,
		.dwarf = o->call_graph != CG_FP, .stack_bytes = o->stack_bytes, .pid = r->target.pid,
		.pl = r->trace.tracer ? &r->trace.pl : NULL, .all = o->all, .max_memory = o->max_memory,
		.pids = o->pids, .nr_pids = o->nr_pids,
	};

	if (!o->listen)
		return 0;
	r->loop.next_drain = monotonic_s() + EXPORT_DRAIN_S;
	return export_start(&conf, &r->outputs.export) ? EXIT_FAIL : 0;
}

/* --profile offcpu, mutex, heap: the profiles other than cpu (sample.c). */
static int start_profiles(struct run *r)
{
	const struct opts *o = r->o;
	struct prof_conf c = {
		.kinds = o->profiles, .per_thread = o->per_thread, .json = o->json, .top = o->top,
		.pprof_path = o->pprof_base, .offcpu_rate_ns = o->offcpu_rate_ns,
		.heap_rate = o->heap_rate, .cmd = o->cmd, .max_overhead_pct = o->heap_overhead_pct,
		.dwarf = use_dwarf(r), .stack_bytes = o->stack_bytes, .max_memory = o->max_memory,
		.all = o->all, .share = o->nr_pids,
	};
	struct run_stacks *st = &r->stacks;
	size_t n = o->nr_pids > 1 ? o->nr_pids : 1;

	if (!(c.kinds & ~(1U << PROF_CPU)))
		return 0;
	/* -p P1,P2,...: each process's profiles on their own, as its samples. */
	for (st->nr_profiles = 0; st->nr_profiles < n; st->nr_profiles++) {
		pid_t pid = o->nr_pids > 1 ? o->pids[st->nr_profiles] : r->target.pid;

		if (profiles_start(&c, pid, &st->profiles[st->nr_profiles]))
			return EXIT_FAIL;
	}
	return 0;
}

/* The target's CPU time so far; a launched command that was reaped gives its rusage instead. */
static void update_cpu(struct run_target *t)
{
	__u64 ns;

	if (t->pid && !t->child_reaped && !proc_cpu_ns(t->pid, &ns)) {
		t->cpu_now = ns;
		if (!t->cpu_known)
			t->cpu_start = t->cpu_last = ns;
		t->cpu_known = true;
	}
}

static const struct calibration *bias_to_subtract(const struct run_trace *tr)
{
	return tr->subtract_bias ? &tr->cal : NULL;
}

/* --svg with -f: a heatmap per process of a -p list, or the target's. */
static int new_heatmaps(struct run *r)
{
	const struct opts *o = r->o;
	size_t n = o->nr_pids > 1 ? o->nr_pids : 1;

	for (r->outputs.nr_heat = 0; r->outputs.nr_heat < n; r->outputs.nr_heat++) {
		r->outputs.heat[r->outputs.nr_heat] = heatmap_new(&r->trace.pl, r->loop.t_start, o->interval_s,
								  o->duration_s);
		if (!r->outputs.heat[r->outputs.nr_heat]) {
			log_err("out of memory");
			return EXIT_FAIL;
		}
	}
	return 0;
}

/* The run starts now: its clock, the target's CPU time, the bursts' budget, the heatmaps, the tally's sinks. */
static int start_clock(struct run *r)
{
	const struct opts *o = r->o;
	struct run_trace *tr = &r->trace;
	struct run_loop *l = &r->loop;

	l->t_start = l->t_last = monotonic_s();
	l->next_calib = l->t_start + 0.2;
	l->end = o->duration_s ? l->t_start + o->duration_s : NEVER;
	l->interval_s = o->interval_s;
	l->next_report = o->interval_s ? l->t_start + o->interval_s : NEVER;
	update_cpu(&r->target);
	if (tr->tracer && o->max_overhead_pct) {
		tr->nr_bursts = o->nr_pids > 1 ? o->nr_pids : 1;
		bursts_init(tr->burst, tr->nr_bursts, o->max_overhead_pct, &tr->cal, &tr->pl,
			    o->nr_pids > 1 ? o->pids : &r->target.pid, tr->tracer, l->t_start);
		tr->bursts = true;
	}
	if (tr->tracer && o->svg_path && new_heatmaps(r))
		return EXIT_FAIL;
	if (tr->tally) {
		tally_set_sinks(tr->tally, r->outputs.export, r->outputs.heat, r->outputs.nr_heat,
				tr->bursts ? tr->burst : NULL, tr->nr_bursts, bias_to_subtract(tr));
		/* Intervals show the steady state; the total includes the start-up. */
		tally_begin(tr->tally);
	}
	return 0;
}

/* Launch mode: the command (or the program it was followed to) goes on, its probes in place. */
static int release_target(struct run *r)
{
	struct run_target *t = &r->target;

	if (t->cmd)
		profiles_arm(r->stacks.profiles[0]);   /* a command: one process */
	if (t->followed[0] && launch_follow_stop(&t->child)) {
		log_err("cannot let %s go on: %s", t->cmd[0], strerror(errno));
		return EXIT_FAIL;
	}
	if (t->cmd && !t->followed[0] && launch_release(&t->child)) {
		log_err("cannot start '%s': the waiting child is gone", t->cmd[0]);
		return EXIT_FAIL;
	}
	return 0;
}

/* ---- the steps in their order ---- */

/*
 * A step of the set-up. With -v, each mark ends a timed step (steps.h): a
 * step's mark is set when it ran, a boundary's (no fn) whatever happened
 * before it. After a step fails, the steps that follow do not run.
 */
struct step {
	int (*fn)(struct run *r);
	const char *mark;
};

static int run_steps(struct run *r, const struct step *steps, size_t n, int err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (steps[i].fn && err)
			continue;
		if (steps[i].fn)
			err = steps[i].fn(r);
		if (steps[i].mark)
			steps_mark(steps[i].mark);
	}
	return err;
}

/* -f: the probes, then what measures them; the calibration last, with every probe in. */
static const struct step tracing_steps[] = {
	{ resolve, "resolve" },
	{ watch_files, NULL },
	{ open_events, NULL },
	{ prepare_slow, NULL },
	{ start_tracer, NULL },
	{ start_slow, NULL },
	{ start_tally, NULL },
	{ calibrate_probes, "calibration" },
	{ check_overhead, NULL },
};

static int start_tracing(struct run *r)
{
	if (!r->o->nr_funcs)
		return 0;
	return run_steps(r, tracing_steps, sizeof(tracing_steps) / sizeof(tracing_steps[0]), 0);
}

/* Before --list too: the outputs claimed first, so that no run ends unable to write them. */
static const struct step prepare_steps[] = {
	{ open_output, NULL },
	{ setup_target, NULL },
	{ NULL, "target set-up" },
};

/* Tracing, sampling, export, profiles; then the clock starts and the command goes. */
static const struct step start_steps[] = {
	{ follow_command, NULL },
	{ start_tracing, NULL },
	{ start_sampling, NULL },
	{ start_export, NULL },
	{ start_profiles, NULL },
	{ NULL, "profiles" },
	{ start_clock, NULL },
	{ release_target, NULL },
};

/* ---- the loop ---- */

static void reap_child(struct run_target *t)
{
	struct rusage ru;

	if (!t->cmd || t->child_reaped)
		return;
	if (wait4(t->child.pid, &t->child_status, WNOHANG, &ru) != t->child.pid)
		return;
	t->child_reaped = true;
	t->cpu_now = proc_rusage_ns(&ru);
	t->cpu_known = true;
}

/* Whether calibration rounds go on during the run (calib_tick): bursts keep their own measure. */
static bool samples_calib(const struct run *r)
{
	return r->trace.subtract_bias && !r->trace.bursts && r->trace.tracer;
}

/* One report for the interval that ends now; with final, the run total too. */
static int report(struct run *r, bool final)
{
	struct run_target *t = &r->target;
	struct run_loop *l = &r->loop;
	double now = monotonic_s();
	struct tally_moment m;

	/*
	 * The figures of the whole run subtract a bias measured at its start and
	 * now, at its end: the probes' time drifts with the machine's load. Burst
	 * mode keeps its own running measure of the cost (calib_refresh_cost).
	 */
	if (final)
		steps_skip();
	if (final && samples_calib(r) && calibrate_again(r->trace.tracer, &r->trace.cal))
		log_debug("second probe calibration failed: the first one stands");
	if (final)
		steps_mark("final calibration");
	update_cpu(t);
	m = (struct tally_moment){
		.now = now, .span_s = now - l->t_last, .total_s = now - l->t_start, .cpu_known = t->cpu_known,
		.cpu_now_ns = t->cpu_now, .cpu_interval_ns = t->cpu_now - t->cpu_last,
		.cpu_total_ns = t->cpu_now - t->cpu_start,
	};
	if (r->trace.tally && tally_report(r->trace.tally, final, &m, l->note))
		return EXIT_FAIL;
	for (size_t i = 0; i < r->stacks.nr_samplers; i++)
		sampler_report(r->stacks.sampler[i], r->outputs.out, m.span_s, final);
	for (size_t i = 0; i < r->stacks.nr_profiles; i++)
		profiles_report(r->stacks.profiles[i], r->outputs.out, m.span_s, final);
	l->t_last = now;
	t->cpu_last = t->cpu_now;
	return 0;
}

/* --follow-forks and -p P1,P2,...: whether a fork child with statistics or a listed process still runs. */
static bool children_alive(const struct run *r)
{
	const struct traced_proc *procs;
	size_t k, nr = 0;

	procs = r->trace.tally ? tally_procs(r->trace.tally, &nr) : NULL;
	for (k = 1; procs && k < nr; k++)
		if (procs[k].pid && proc_alive(procs[k].pid))
			return true;
	/* Sampling only: no tally knows the list. */
	for (k = 1; k < r->target.nr_pids; k++)
		if (proc_alive(r->target.pids[k]))
			return true;
	return false;
}

/* Why the run ended once the target exited. */
static const char *exit_note(struct run *r)
{
	const struct traced_proc *procs;
	size_t nr = 0;

	if (r->target.nr_pids > 1)
		return "targets exited";
	procs = r->trace.tally ? tally_procs(r->trace.tally, &nr) : NULL;
	return procs && nr > 1 && procs[1].pid ? "target and its fork children exited" : "target exited";
}

/*
 * Waits until the next report, the end of the run, a signal or the target's
 * exit (with --follow-forks, until its traced fork children have exited too).
 */
static void wait_event(struct run *r, double deadline)
{
	struct run_target *t = &r->target;
	struct pollfd pfd[2] = {
		{ .fd = t->exited ? -1 : t->pidfd, .events = POLLIN },
		{ .fd = tracer_fork_fd(r->trace.tracer), .events = POLLIN },
	};
	double left = deadline - monotonic_s();
	/* A deadline already past (a burst switch took a while) must not become poll's -1: forever. */
	int ms = left > 0.25 ? 250 : left > 0 ? (int)(left * 1000) + 1 : 0;

	poll(pfd, 2, ms);
	/* Fork children get their probes as soon as fnprof hears of them (and on every tick). */
	if (pfd[1].fd >= 0)
		tracer_follow_forks(r->trace.tracer);
	if (pfd[0].revents & POLLIN) {
		reap_child(t);
		t->exited = true;
	}
	if (t->exited) {
		if (children_alive(r))
			return;
		t->gone = true;
		r->loop.note = exit_note(r);
		return;
	}
	/* Keep the CPU reading and the mappings fresh: they are gone once the target exits. */
	update_cpu(t);
	if (r->trace.upgrades)
		upgrades_check(r->trace.upgrades, r->trace.tracer);
	for (size_t i = 0; i < r->stacks.nr_samplers; i++)
		sampler_refresh(r->stacks.sampler[i]);
	for (size_t i = 0; i < r->stacks.nr_profiles; i++)
		profiles_refresh(r->stacks.profiles[i]);
	if (t->exe_ino && follow_exec_away(t))
		r->loop.note = "target exec'd another program";
}

/*
 * In launch mode a first Ctrl-C/SIGTERM goes to the command; a second one
 * stops fnprof. Through the pidfd: once the command was reaped its pid may be
 * another process's, which must never get the signal.
 */
static bool handle_signal(struct run *r, bool *forwarded)
{
	if (!stop_signal)
		return false;
	if (r->target.cmd && !*forwarded) {
		if (syscall(SYS_pidfd_send_signal, r->target.pidfd, stop_signal == SIGHUP ? SIGHUP : SIGTERM, NULL, 0) &&
		    errno != ESRCH)
			log_warn("cannot pass the signal on to the command: %s", strerror(errno));
		*forwarded = true;
		stop_signal = 0;
		return false;
	}
	r->loop.note = "interrupted";
	return true;
}

/*
 * Calibration rounds during the run: the bias subtracted is the probes' price
 * over the run's time and CPUs, not only at its two ends. One round (~1-3 ms
 * of fnprof's CPU with single-stepped cases: 50 steps each) every 10% of the
 * time run so far, every 0.2 s at first and 2 s at most: 10 rounds in the
 * first 2 s, 19 in 5 s (+30 ms of CPU here), then under 0.1% of a CPU.
 */
static void calib_tick(struct run *r)
{
	double now = monotonic_s(), gap = 0.1 * (now - r->loop.t_start);

	if (!samples_calib(r) || now < r->loop.next_calib || r->target.gone)
		return;
	if (calib_sample(r->trace.tracer, &r->trace.cal))
		log_debug("a calibration round failed: the rounds before it stand");
	r->loop.next_calib = monotonic_s() + (gap < 0.2 ? 0.2 : gap > 2 ? 2 : gap);
}

static double earliest(double a, double b)
{
	return a < b ? a : b;
}

/* The loop's next wake-up: a report, the end, a heatmap column, a burst switch, a drain, a calibration round. */
static double next_deadline(struct run *r, double column)
{
	double deadline = earliest(earliest(r->loop.next_report, r->loop.end), column);

	if (r->trace.bursts)
		deadline = earliest(deadline, bursts_tick(r->trace.burst, r->trace.nr_bursts, r->trace.tracer,
							  monotonic_s()));
	if (r->outputs.export && r->trace.tracer)
		deadline = earliest(deadline, r->loop.next_drain);
	if (samples_calib(r))
		deadline = earliest(deadline, r->loop.next_calib);
	return deadline;
}

static int main_loop(struct run *r)
{
	struct run_loop *l = &r->loop;
	bool forwarded = false;
	int err;

	while (!r->target.gone) {
		double column = r->outputs.nr_heat ? heatmap_next(r->outputs.heat[0]) : NEVER;

		wait_event(r, next_deadline(r, column));
		if (handle_signal(r, &forwarded))
			break;
		calib_tick(r);
		if (r->outputs.export && r->trace.tracer && monotonic_s() >= l->next_drain) {
			if (tally_drain(r->trace.tally))
				return EXIT_FAIL;
			l->next_drain = monotonic_s() + EXPORT_DRAIN_S;
		}
		if (monotonic_s() >= l->end) {
			l->note = "duration reached";
			break;
		}
		if (monotonic_s() >= l->next_report && !r->target.gone) {
			err = report(r, false);
			if (err)
				return err;
			l->next_report += l->interval_s;
		} else if (monotonic_s() >= column && !r->target.gone) {
			/* --svg without -i: a heatmap column; its figures wait in the interval's for the report. */
			if (tally_drain(r->trace.tally))
				return EXIT_FAIL;
			for (size_t k = 0; r->trace.bursts && k < r->trace.nr_bursts; k++)
				burst_rebase(&r->trace.burst[k], r->trace.tracer);
		}
	}
	return report(r, true);
}

/* ---- the end ---- */

/* The files written at the end: the cpu profile's, the pictures, the other profiles'. */
static int write_files(struct run *r)
{
	const char *svg = r->o->svg_path;
	int err;

	/* A -p list's processes: one file of each kind, with all of them. */
	if (r->stacks.nr_samplers && sampler_write_files_many(r->stacks.sampler, r->stacks.nr_samplers))
		return EXIT_FAIL;
	if (svg) {
		const struct pictures_conf pc = {
			.samplers = r->stacks.sampler, .nr_samplers = r->stacks.nr_samplers, .heat = r->outputs.heat,
			.nr_heat = r->outputs.nr_heat, .pids = r->o->nr_pids > 1 ? r->o->pids : &r->target.pid,
			.span_s = r->loop.t_last - r->loop.t_start,
		};

		err = pictures_write(svg, &pc);
		if (err) {
			log_err("cannot write the pictures to %s: %s", svg, strerror(-err));
			return EXIT_FAIL;
		}
	}
	if (r->stacks.nr_profiles && profiles_write_files_many(r->stacks.profiles, r->stacks.nr_profiles))
		return EXIT_FAIL;
	return 0;
}

/* Launch mode: the child runs to its end even if fnprof stops early; its status is ours. */
static int child_exit_code(struct run_target *t)
{
	if (!t->cmd || !t->child.released)
		return EXIT_OK;
	if (!t->child_reaped && t->exe_seen && t->gone) {
		/* It exec'd another program: still the command the user started, so wait for it. */
		if (waitpid(t->child.pid, &t->child_status, 0) == t->child.pid)
			t->child_reaped = true;
	}
	if (!t->child_reaped) {
		log_info("detached; command %d keeps running", t->child.pid);
		return EXIT_OK;
	}
	return launch_exit_code(t->child_status);
}

/* --list: what the -f patterns match, read from the files; nothing attached, nothing run. */
static int list(struct run *r)
{
	int err;

	if (follow_needed(&r->target, r->o->nr_funcs)) {
		log_err("%s is a script or wrapper: --list reads programs without running them; name its "
			"interpreter or the program it runs", r->target.cmd[0]);
		return EXIT_FAIL;
	}
	err = resolve(r);
	return err ? err : list_probes(&r->trace.pl);
}

int run_all(struct run *r)
{
	int err = run_steps(r, prepare_steps, sizeof(prepare_steps) / sizeof(prepare_steps[0]), 0);

	if (!err && r->o->list)
		return list(r);
	err = run_steps(r, start_steps, sizeof(start_steps) / sizeof(start_steps[0]), err);
	if (!err)
		err = main_loop(r);
	if (!err)
		err = write_files(r);
	return err ? err : child_exit_code(&r->target);
}

/* --listen's and --slow's threads read the tracer's maps: they stop before it. */
void run_cleanup(struct run *r)
{
	export_stop(r->outputs.export);
	slow_stop(r->trace.slow);
	tracer_stop(r->trace.tracer);
	upgrades_free(r->trace.upgrades);
	calib_free_probes(r->trace.self);
	events_close(&r->trace.evs);
	for (size_t i = 0; i < r->stacks.nr_samplers; i++)
		sampler_stop(r->stacks.sampler[i]);
	for (size_t i = 0; i < r->outputs.nr_heat; i++)
		heatmap_free(r->outputs.heat[i]);
	for (size_t i = 0; i < r->stacks.nr_profiles; i++)
		profiles_stop(r->stacks.profiles[i]);
	launch_abort(&r->target.child);
	launch_free(&r->target.child);
	probe_list_free(&r->trace.pl);
	tally_free(r->trace.tally);
	if (r->target.pidfd > 0)
		close(r->target.pidfd);
	if (r->outputs.out && r->outputs.out != stderr && r->outputs.out != stdout)
		fclose(r->outputs.out);
}
