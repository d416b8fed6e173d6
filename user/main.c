// SPDX-License-Identifier: GPL-2.0
/*
 * fnprof: per-function latency, on-CPU time and CPU% of a running process or
 * a launched command, measured in the kernel with eBPF.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/clock.h"
#include "trace/burst.h"
#include "trace/calib.h"
#include "trace/events.h"
#include "report/export.h"
#include "elf/gobin.h"
#include "report/heatmap.h"
#include "target/launch.h"
#include "target/kfeatures.h"
#include "elf/debuginfo.h"
#include "base/log.h"
#include "opts.h"
#include "format/outfile.h"
#include "report/pictures.h"
#include "base/proc.h"
#include "stacks/prof_kind.h"
#include "profile/profiles.h"
#include "report/report.h"
#include "target/resolve.h"
#include "trace/steps.h"
#include "report/tally.h"
#include "trace/uprobe_warm.h"
#include "profile/sample.h"
#include "base/sanitize.h"
#include "profile/slow.h"
#include "trace/stats.h"
#include "trace/tracer.h"
#include "trace/upgrade.h"
#include "base/version.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* Everything one run holds; main's loop and the report functions share it. */
struct run {
	const struct opts *o;
	pid_t pid;
	struct child child;
	struct launch_signals sigs;  /* as fnprof started: the command gets them back */
	int pidfd;
	FILE *out;
	struct probe_list pl;
	struct tracer *tracer;
	struct events evs;
	bool have_events;
	struct calibration cal;
	bool calibrated;
	struct probe self[CAL_NR];  /* the calibration's probes on fnprof's own functions */
	struct burst burst;
	bool bursts;
	struct sampler *sampler;
	struct heatmap *heat;       /* --svg with -f: the latency heatmaps' columns */
	struct profiles *profiles;  /* --profile offcpu, mutex, heap */
	struct slow *slow;          /* --slow: the slow calls' records */
	struct tally *tally;        /* -f: the figures of the intervals and of the run */
	struct export *export;      /* --listen */
	struct upgrades *upgrades;  /* system-wide: the objects' files, to follow their upgrades */
	double next_drain;          /* --listen: when the metrics take the figures next */
	double next_calib;          /* when the calibration takes its next round (calib_sample) */
	bool target_exited;         /* --follow-forks: the run goes on while fork children live */
	double t_start, t_last;
	__u64 cpu_start, cpu_last, cpu_now;
	bool cpu_known;
	bool target_gone, child_reaped;
	int child_status;
	char followed[64];          /* a script followed through exec: /proc/PID/exe of the program traced */
	dev_t exe_dev;              /* the program being traced, to notice an exec */
	ino_t exe_ino;
	bool exe_seen;
	const char *note;
	double t_exec;              /* when fnprof started (monotonic_s) */
};

static void setup_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

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
	int fd;

	r->out = r->o->json ? stdout : stderr;
	if (claim_outputs(r->o))
		return EXIT_FAIL;
	if (!r->o->output)
		return 0;
	fd = outfile_create(r->o->output);
	r->out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!r->out) {
		log_err("cannot write the report to %s: %s", r->o->output, outfile_strerror(fd < 0 ? fd : -errno));
		return EXIT_FAIL;
	}
	return 0;
}

/* The target process: the one given with -p, or the launched command (still waiting). */
static int setup_target(struct run *r)
{
	int err;

	if (r->o->system_wide || r->o->all)
		return 0;   /* every process (that maps the objects): no pid, nothing to watch */
	if (!r->o->cmd) {
		r->pid = r->o->pid;
		for (size_t i = 0; i < r->o->nr_pids; i++) {
			if (!proc_alive(r->o->pids[i])) {
				log_err("no such process: %d", r->o->pids[i]);
				return EXIT_FAIL;
			}
		}
	} else {
		err = launch_prepare(r->o->cmd, &r->sigs, &r->child);
		if (err) {
			/* A bad SUDO_UID or SUDO_GID was named already. */
			if (err != -EINVAL)
				log_err("cannot start '%s': %s", r->o->cmd[0], strerror(-err));
			return EXIT_FAIL;
		}
		r->pid = r->child.pid;
	}
	r->pidfd = syscall(SYS_pidfd_open, r->pid, 0);
	if (r->pidfd < 0) {
		log_err("cannot watch process %d: %s", r->pid, strerror(errno));
		return EXIT_FAIL;
	}
	return 0;
}

/* The program traced: the one a script was followed to, the command, or the process's. */
static void program_path(const struct run *r, char *path, size_t size)
{
	if (r->followed[0])
		snprintf(path, size, "%s", r->followed);
	else if (r->o->cmd)
		find_in_path(r->o->cmd[0], path, size);
	else
		snprintf(path, size, "/proc/%d/exe", r->pid);
}

/* The program the probes are for: what /proc/PID/exe must stay. */
static void remember_exe(struct run *r)
{
	char path[PATH_MAX];
	struct stat st;

	/* A followed script's program is already running, stopped at its exec. */
	if (r->followed[0])
		r->exe_seen = true;
	program_path(r, path, sizeof(path));
	if (!stat(path, &st)) {
		r->exe_dev = st.st_dev;
		r->exe_ino = st.st_ino;
	}
}

/* How the -f patterns are resolved: for the process, the followed script's program, or system-wide. */
static struct resolve_conf resolve_conf_of(const struct run *r)
{
	return (struct resolve_conf){
		.funcs = r->o->funcs, .nr_funcs = r->o->nr_funcs, .cmd = r->o->cmd, .exit_mode = r->o->exit_mode,
		.counters = r->o->events != NULL, .followed = r->followed[0] ? r->followed : NULL,
		.system_wide = r->o->system_wide,
		/* The twin's reading is the function plus a constant, meaningless without the correction. */
		.step_pair = !r->o->step_single && !r->o->raw,
	};
}

/* The -f patterns into r->pl. 0 or EXIT_FAIL (message printed). */
static int resolve(struct run *r)
{
	const struct resolve_conf conf = resolve_conf_of(r);

	return resolve_probes(&conf, r->pid, &r->pl) ? EXIT_FAIL : 0;
}

/*
 * The calibration's probes, ids from first_id, into self (freed with
 * calib_free_probes): how many, 0 when fnprof cannot find its own functions.
 */
static size_t self_probes(struct probe self[CAL_NR], __u32 first_id, const struct probe **out)
{
	*out = self;
	if (!calib_self_probes(self, first_id))
		return CAL_NR;
	log_warn("cannot find fnprof's calibration functions: no probe-bias correction");
	return 0;
}

/* System-wide: the objects' files, to follow their upgrades. 0 or EXIT_FAIL. */
static int watch_upgrades(struct run *r)
{
	const struct resolve_conf conf = resolve_conf_of(r);

	if (upgrades_start(&r->pl, &conf, &r->upgrades)) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	return 0;
}

/* --slow: the thread that reads, unwinds and names the slow calls. 0 or EXIT_FAIL. */
static int start_slow(struct run *r)
{
	const struct slow_conf c = { .pid = r->pid, .rb_fd = tracer_slow_fd(r->tracer), .threshold_ns = r->o->slow_ns,
				     .max_memory = r->o->max_memory };
	int err = slow_start(&c, &r->slow);

	if (err)
		log_err("cannot set up --slow: %s", strerror(-err));
	return err ? EXIT_FAIL : 0;
}

/* The figures' bookkeeping (tally.h), reporting to r->out. 0 or EXIT_FAIL. */
static int start_tally(struct run *r)
{
	const struct tally_conf c = {
		.pl = &r->pl, .tracer = r->tracer, .pid = r->pid, .system_wide = r->o->system_wide,
		.json = r->o->json, .hist = r->o->hist, .max_overhead_pct = r->o->max_overhead_pct,
		.evs = r->have_events ? &r->evs : NULL, .slow = r->slow, .out = r->out, .t_exec = r->t_exec,
	};

	if (tally_new(&c, &r->tally)) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	return 0;
}

static int start_tracing(struct run *r)
{
	int err;

	if (!r->o->nr_funcs)
		return 0;
	err = resolve(r);
	steps_mark("resolve");
	if (err)
		return err;
	if (r->o->system_wide && watch_upgrades(r))
		return EXIT_FAIL;
	if (!r->o->system_wide)
		remember_exe(r);
	if (r->o->events) {
		if (events_parse(r->o->events, &r->evs))
			return EXIT_USAGE;
		if (events_open(&r->evs, libbpf_num_possible_cpus()))
			return EXIT_FAIL;
		r->have_events = true;
	}
	bool calib = !r->o->raw || r->o->max_overhead_pct;

	struct tracer_conf conf = {
		.follow_forks = r->o->follow_forks, .max_threads = r->o->max_threads,
		/* -p P1,P2,...: the others, each on its own */
		.more_pids = r->o->pids + 1, .nr_more = r->o->nr_pids > 1 ? r->o->nr_pids - 1 : 0,
		/* --by system-wide: figures per process, for the metrics' labels */
		.per_process = r->o->system_wide && r->o->listen && r->o->by != BY_NONE,
		.slow_ns = r->o->slow_ns, .slow_rate = SLOW_RATE,
		/* -p: the target runs while fnprof sets up; its calls count from burst_init() on. */
		.start_paused = r->o->max_overhead_pct > 0,
	};

	if (calib) {
		conf.nr_self = self_probes(r->self, r->pl.nr, &conf.self);
		conf.self_mask = calib_cases_of_list(&r->pl);
	}
	if (tracer_start(&r->pl, r->pid, r->have_events ? &r->evs : NULL, &conf, &r->tracer))
		return EXIT_FAIL;
	if (r->o->slow_ns && start_slow(r))
		return EXIT_FAIL;
	if (start_tally(r))
		return EXIT_FAIL;
	/* The calibration traces fnprof's own functions with the same probes. */
	if (!err && calib)
		r->calibrated = !calibrate(r->tracer, &r->cal, calib_cases_of_list(&r->pl));
	steps_mark("calibration");
	if (!err && r->o->max_overhead_pct && !r->calibrated) {
		log_err("--max-overhead needs the probe calibration, which failed");
		err = EXIT_FAIL;
	}
	return err;
}

static bool use_dwarf(const struct run *r);

/* --profile offcpu, mutex, heap: the profiles other than cpu (sample.c). */
static int start_profiles(struct run *r)
{
	struct prof_conf c = {
		.kinds = r->o->profiles, .per_thread = r->o->per_thread, .json = r->o->json, .top = r->o->top,
		.pprof_path = r->o->pprof_base, .offcpu_rate_ns = r->o->offcpu_rate_ns,
		.heap_rate = r->o->heap_rate, .cmd = r->o->cmd, .max_overhead_pct = r->o->heap_overhead_pct,
		.dwarf = use_dwarf(r), .stack_bytes = r->o->stack_bytes, .max_memory = r->o->max_memory,
	};

	if (!(c.kinds & ~(1U << PROF_CPU)))
		return 0;
	return profiles_start(&c, r->pid, &r->profiles) ? EXIT_FAIL : 0;
}

/* Process CPU time so far; a launched child that was reaped gives its rusage instead. */
static void update_cpu(struct run *r)
{
	__u64 ns;

	if (r->pid && !r->child_reaped && !proc_cpu_ns(r->pid, &ns)) {
		r->cpu_now = ns;
		if (!r->cpu_known)
			r->cpu_start = r->cpu_last = ns;
		r->cpu_known = true;
	}
}

static void reap_child(struct run *r)
{
	struct rusage ru;

	if (!r->o->cmd || r->child_reaped)
		return;
	if (wait4(r->child.pid, &r->child_status, WNOHANG, &ru) != r->child.pid)
		return;
	r->child_reaped = true;
	r->cpu_now = proc_rusage_ns(&ru);
	r->cpu_known = true;
}

static bool samples_calib(const struct run *r)
{
	return r->calibrated && !r->o->raw && !r->bursts && r->tracer;
}

static const struct calibration *bias_to_subtract(const struct run *r)
{
	return r->calibrated && !r->o->raw ? &r->cal : NULL;
}

/* One report for the interval that ends now; with final, the run total too. */
static int report(struct run *r, bool final)
{
	double t = monotonic_s();
	struct tally_moment m;

	/*
	 * The figures of the whole run subtract a bias measured at its start and
	 * now, at its end: the probes' time drifts with the machine's load. Burst
	 * mode keeps its own running measure of the cost (calib_refresh_cost).
	 */
	if (final)
		steps_skip();
	if (final && samples_calib(r) && calibrate_again(r->tracer, &r->cal))
		log_debug("second probe calibration failed: the first one stands");
	if (final)
		steps_mark("final calibration");
	update_cpu(r);
	m = (struct tally_moment){
		.now = t, .span_s = t - r->t_last, .total_s = t - r->t_start, .cpu_known = r->cpu_known,
		.cpu_now_ns = r->cpu_now, .cpu_interval_ns = r->cpu_now - r->cpu_last,
		.cpu_total_ns = r->cpu_now - r->cpu_start,
	};
	if (r->tally && tally_report(r->tally, final, &m, r->note))
		return EXIT_FAIL;
	if (r->sampler)
		sampler_report(r->sampler, r->out, m.span_s, final);
	if (r->profiles)
		profiles_report(r->profiles, r->out, m.span_s, final);
	r->t_last = t;
	r->cpu_last = r->cpu_now;
	return 0;
}

/*
 * After an exec of another program the probes no longer apply (they are on
 * the old program's file): the run ends there. A launched command counts as
 * started once its own executable shows.
 */
static void check_exec(struct run *r)
{
	char path[64], now[PATH_MAX], clean[PATH_MAX];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", r->pid);
	if (stat(path, &st))
		return;
	if (st.st_dev == r->exe_dev && st.st_ino == r->exe_ino) {
		r->exe_seen = true;
		return;
	}
	if (!r->exe_seen)
		return;
	n = readlink(path, now, sizeof(now) - 1);
	now[n > 0 ? n : 0] = 0;
	log_info("process %d exec'd %s: the probes were on the program it replaced", r->pid,
		 sanitize_term(now, clean, sizeof(clean)));
	r->target_gone = true;
	r->note = "target exec'd another program";
}

/* --follow-forks: whether a fork child with statistics is still running. */
static bool children_alive(struct run *r)
{
	const struct traced_proc *procs;
	size_t k, nr = 0;

	procs = r->tally ? tally_procs(r->tally, &nr) : NULL;
	for (k = 1; procs && k < nr; k++)
		if (procs[k].pid && proc_alive(procs[k].pid))
			return true;
	return false;
}

/* Why the run ended once the target exited. */
static const char *exit_note(struct run *r)
{
	const struct traced_proc *procs;
	size_t nr = 0;

	if (r->o->nr_pids > 1)
		return "targets exited";
	procs = r->tally ? tally_procs(r->tally, &nr) : NULL;
	return procs && nr > 1 && procs[1].pid ? "target and its fork children exited" : "target exited";
}

/*
 * Waits until the next report, the end of the run, a signal or the target's
 * exit (with --follow-forks, until its traced fork children have exited too).
 */
static void wait_event(struct run *r, double deadline)
{
	struct pollfd pfd[2] = {
		{ .fd = r->target_exited ? -1 : r->pidfd, .events = POLLIN },
		{ .fd = tracer_fork_fd(r->tracer), .events = POLLIN },
	};
	double left = deadline - monotonic_s();
	/* A deadline already past (a burst switch took a while) must not become poll's -1: forever. */
	int ms = left > 0.25 ? 250 : left > 0 ? (int)(left * 1000) + 1 : 0;

	poll(pfd, 2, ms);
	/* Fork children get their probes as soon as fnprof hears of them (and on every tick). */
	if (pfd[1].fd >= 0)
		tracer_follow_forks(r->tracer);
	if (pfd[0].revents & POLLIN) {
		reap_child(r);
		r->target_exited = true;
	}
	if (r->target_exited) {
		if (children_alive(r))
			return;
		r->target_gone = true;
		r->note = exit_note(r);
		return;
	}
	/* Keep the CPU reading and the mappings fresh: they are gone once the target exits. */
	update_cpu(r);
	if (r->upgrades)
		upgrades_check(r->upgrades, r->tracer);
	sampler_refresh(r->sampler);
	profiles_refresh(r->profiles);
	if (r->exe_ino)
		check_exec(r);
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
	if (r->o->cmd && !*forwarded) {
		if (syscall(SYS_pidfd_send_signal, r->pidfd, stop_signal == SIGHUP ? SIGHUP : SIGTERM, NULL, 0) &&
		    errno != ESRCH)
			log_warn("cannot pass the signal on to the command: %s", strerror(errno));
		*forwarded = true;
		stop_signal = 0;
		return false;
	}
	r->note = "interrupted";
	return true;
}

/* --listen: how often the metrics take the figures (a scrape sees them this late at most). */
#define EXPORT_DRAIN_S 0.5

/*
 * Calibration rounds during the run: the bias subtracted is the probes' price
 * over the run's time and CPUs, not only at its two ends. One round (~1-3 ms
 * of fnprof's CPU with single-stepped cases: 50 steps each) every 10% of the
 * time run so far, every 0.2 s at first and 2 s at most: 10 rounds in the
 * first 2 s, 19 in 5 s (+30 ms of CPU here), then under 0.1% of a CPU.
 */

static void calib_tick(struct run *r)
{
	double now = monotonic_s(), gap = 0.1 * (now - r->t_start);

	if (!samples_calib(r) || now < r->next_calib || r->target_gone)
		return;
	if (calib_sample(r->tracer, &r->cal))
		log_debug("a calibration round failed: the rounds before it stand");
	r->next_calib = monotonic_s() + (gap < 0.2 ? 0.2 : gap > 2 ? 2 : gap);
}

static int main_loop(struct run *r)
{
	double end = r->o->duration_s ? r->t_start + r->o->duration_s : 1e300;
	double next = r->o->interval_s ? r->t_start + r->o->interval_s : 1e300;
	bool forwarded = false;
	int err;

	while (!r->target_gone) {
		double column = r->heat ? heatmap_next(r->heat) : 1e300;
		double deadline = next < end ? next : end;

		deadline = column < deadline ? column : deadline;
		if (r->bursts) {
			double sw = burst_tick(&r->burst, r->tracer, monotonic_s());

			deadline = sw < deadline ? sw : deadline;
		}
		if (r->export && r->tracer)
			deadline = r->next_drain < deadline ? r->next_drain : deadline;
		if (samples_calib(r))
			deadline = r->next_calib < deadline ? r->next_calib : deadline;
		wait_event(r, deadline);
		if (handle_signal(r, &forwarded))
			break;
		calib_tick(r);
		if (r->export && r->tracer && monotonic_s() >= r->next_drain) {
			if (tally_drain(r->tally))
				return EXIT_FAIL;
			r->next_drain = monotonic_s() + EXPORT_DRAIN_S;
		}
		if (monotonic_s() >= end) {
			r->note = "duration reached";
			break;
		}
		if (monotonic_s() >= next && !r->target_gone) {
			err = report(r, false);
			if (err)
				return err;
			next += r->o->interval_s;
		} else if (monotonic_s() >= column && !r->target_gone) {
			/* --svg without -i: a heatmap column; its figures wait in the interval's for the report. */
			if (tally_drain(r->tally))
				return EXIT_FAIL;
			if (r->bursts)
				burst_rebase(&r->burst, r->tracer);
		}
	}
	return report(r, true);
}

static int list_probes(struct run *r)
{
	char obj[PATH_MAX], name[1024];
	size_t i;

	/* SITE: how the kernel takes the entry probe; SKIP: bytes it lets run before it (arch_entry_skip). */
	fprintf(stdout, "%-40s %-18s %-10s %8s  %-16s %4s %-9s  %s\n", "OBJECT", "ADDRESS", "OFFSET", "SIZE", "SITE",
		"SKIP", "EXIT", "FUNCTION");
	for (i = 0; i < r->pl.nr; i++) {
		const struct probe *p = &r->pl.probes[i];

		fprintf(stdout, "%-40s 0x%016llx 0x%-8llx %8llu  %-16s %4u %-9s  %s\n",
			sanitize_term(p->object, obj, sizeof(obj)), (unsigned long long)p->addr,
			(unsigned long long)p->offset, (unsigned long long)p->size, site_kind_name(p->kind), p->entry_skip,
			exit_mode_name(p->exit), sanitize_term(p->name, name, sizeof(name)));
	}
	return 0;
}

static void cleanup(struct run *r)
{
	export_stop(r->export);
	slow_stop(r->slow);
	tracer_stop(r->tracer);
	upgrades_free(r->upgrades);
	calib_free_probes(r->self);
	events_close(&r->evs);
	sampler_stop(r->sampler);
	heatmap_free(r->heat);
	profiles_stop(r->profiles);
	launch_abort(&r->child);
	launch_free(&r->child);
	probe_list_free(&r->pl);
	tally_free(r->tally);
	if (r->pidfd > 0)
		close(r->pidfd);
	if (r->out && r->out != stderr && r->out != stdout)
		fclose(r->out);
}

/* Launch mode: the child runs to its end even if fnprof stops early; its status is ours. */
static int child_exit_code(struct run *r)
{
	if (!r->o->cmd || !r->child.released)
		return EXIT_OK;
	if (!r->child_reaped && r->exe_seen && r->target_gone) {
		/* It exec'd another program: still the command the user started, so wait for it. */
		if (waitpid(r->child.pid, &r->child_status, 0) == r->child.pid)
			r->child_reaped = true;
	}
	if (!r->child_reaped) {
		log_info("detached; command %d keeps running", r->child.pid);
		return EXIT_OK;
	}
	return launch_exit_code(r->child_status);
}

static int write_svg(struct run *r)
{
	int err = pictures_write(r->o->svg_path, r->sampler, r->heat, r->pid, r->t_last - r->t_start);

	if (err)
		log_err("cannot write the pictures to %s: %s", r->o->svg_path, strerror(-err));
	return err ? EXIT_FAIL : 0;
}

static int start_export(struct run *r)
{
	struct export_conf conf = {
		.listen = r->o->listen, .by = r->o->by, .max_series = r->o->max_series, .freq_hz = r->o->freq_hz,
		.dwarf = r->o->call_graph != CG_FP, .stack_bytes = r->o->stack_bytes,
		.pid = r->pid, .pl = r->tracer ? &r->pl : NULL, .all = r->o->all, .max_memory = r->o->max_memory,
	};

	r->next_drain = monotonic_s() + EXPORT_DRAIN_S;
	return export_start(&conf, &r->export) ? EXIT_FAIL : 0;
}

/*
 * The program found in a fork child of the command (timeout's, a shell's):
 * the run watches it, and Ctrl-C goes to it; the command's status is taken
 * at the end, or now if it exited already. 1, or -1 (said).
 */
static int watch_program(struct run *r, pid_t pid)
{
	if (pid == r->pid)
		return 1;
	r->pid = pid;
	r->child_reaped = r->child.exited;
	r->child_status = r->child.status;
	close(r->pidfd);
	r->pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (r->pidfd >= 0)
		return 1;
	log_err("cannot watch process %d: %s", pid, strerror(errno));
	return -1;
}

/*
 * Where following the command stands after an exec: 1 it is the program
 * to trace, 0 go on (a wrapper; a fork child's program, let go), -1 the
 * command's own process runs a program without the functions (said).
 */
static int followed_exec(struct run *r, const struct resolve_conf *conf)
{
	char real[PATH_MAX], clean[PATH_MAX];
	pid_t pid = r->child.program;
	ssize_t n;

	snprintf(r->followed, sizeof(r->followed), "/proc/%d/exe", pid);
	n = readlink(r->followed, real, sizeof(real) - 1);
	real[n > 0 ? n : 0] = 0;
	if (resolve_program_fits(conf, r->followed, real)) {
		log_info("%s is a script or wrapper: tracing %s, the program it runs (pid %d)", r->o->cmd[0],
			 sanitize_term(real, clean, sizeof(clean)), pid);
		return watch_program(r, pid);
	}
	log_debug("following %s: %s (pid %d) is not the program to trace", r->o->cmd[0], real, pid);
	if (resolve_is_wrapper(real))
		return 0;
	if (pid != r->child.pid) {
		launch_follow_release(&r->child);
		return 0;
	}
	log_err("%s runs %s, which is not a wrapper (a shell, env, nice, taskset, timeout...) and lacks the "
		"functions asked for; name the program itself, or its library (-f LIB:NAME)", r->o->cmd[0],
		sanitize_term(real, clean, sizeof(clean)));
	return -1;
}

/*
 * Launch mode with a script or a wrapper (a shebang script, env, nice,
 * sh -c, timeout): the command runs, traced with ptrace, up to the exec of
 * the program to trace, and waits there while the probes go in.
 */
static int follow_to_program(struct run *r)
{
	const struct resolve_conf conf = { .funcs = r->o->funcs, .nr_funcs = r->o->nr_funcs };
	int err, status, hops, fits = 0;

	err = launch_follow_start(&r->child);
	for (hops = 0; !err && !fits && hops < 4096; hops++) {
		err = launch_follow_next(&r->child, &status);
		fits = err ? 0 : followed_exec(r, &conf);
	}
	if (fits > 0)
		return 0;
	r->followed[0] = 0;
	if (err == -ESRCH) {
		r->child_reaped = true;
		r->child_status = status;
		log_err("%s is a script or wrapper, and it exited (status %d) before it exec'd a program with the "
			"functions asked for; name the program itself (see -v for the programs it ran)", r->o->cmd[0],
			launch_exit_code(status));
	} else if (!fits) {
		log_err("cannot follow %s through exec: %s", r->o->cmd[0], err ? strerror(-err) : "too many execs");
	}
	return EXIT_FAIL;
}

/* Whether the command is a script or wrapper to follow to its program (with functions to trace). */
static bool needs_follow(struct run *r)
{
	char path[PATH_MAX];

	return r->o->cmd && r->o->nr_funcs && !find_in_path(r->o->cmd[0], path, sizeof(path)) &&
	       (launch_is_script(path) || resolve_is_wrapper(path));
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
	program_path(r, path, sizeof(path));
	return !go_file(path);
}

static int start_sampling(struct run *r)
{
	const struct sampler_conf conf = {
		.freq_hz = r->o->freq_hz, .per_thread = r->o->per_thread, .top = r->o->top, .json = r->o->json,
		.pprof_path = r->o->pprof_path, .folded_path = r->o->folded_path,
		.dwarf = use_dwarf(r), .stack_bytes = r->o->stack_bytes, .all = r->o->all,
		.max_memory = r->o->max_memory,
	};

	return sampler_start(&conf, r->pid, &r->sampler);
}

static int run(struct run *r)
{
	int err;

	err = open_output(r);
	if (!err)
		err = setup_target(r);
	steps_mark("target set-up");
	if (!err && r->o->list) {
		if (needs_follow(r)) {
			log_err("%s is a script or wrapper: --list reads programs without running them; name its "
				"interpreter or the program it runs", r->o->cmd[0]);
			return EXIT_FAIL;
		}
		err = resolve(r);
		return err ? err : list_probes(r);
	}
	if (!err && needs_follow(r))
		err = follow_to_program(r);
	if (!err)
		err = start_tracing(r);
	if (!err && r->o->sample && start_sampling(r))
		err = EXIT_FAIL;
	if (!err && r->o->listen)
		err = start_export(r);
	if (!err)
		err = start_profiles(r);
	steps_mark("profiles");
	if (err)
		return err;
	r->t_start = r->t_last = monotonic_s();
	r->next_calib = r->t_start + 0.2;
	update_cpu(r);
	if (r->tracer && r->o->max_overhead_pct) {
		burst_init(&r->burst, r->o->max_overhead_pct, &r->cal, &r->pl, r->pid, r->tracer, r->t_start);
		r->bursts = true;
	}
	if (r->tracer && r->o->svg_path &&
	    !(r->heat = heatmap_new(&r->pl, r->t_start, r->o->interval_s, r->o->duration_s))) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	if (r->tally) {
		tally_set_sinks(r->tally, r->export, r->heat, r->bursts ? &r->burst : NULL, bias_to_subtract(r));
		/* Intervals show the steady state; the total includes the start-up. */
		tally_begin(r->tally);
	}
	if (r->o->cmd)
		profiles_arm(r->profiles);
	if (r->followed[0] && launch_follow_stop(&r->child)) {
		log_err("cannot let %s go on: %s", r->o->cmd[0], strerror(errno));
		return EXIT_FAIL;
	}
	if (r->o->cmd && !r->followed[0] && launch_release(&r->child)) {
		log_err("cannot start '%s': the waiting child is gone", r->o->cmd[0]);
		return EXIT_FAIL;
	}
	err = main_loop(r);
	if (!err && r->sampler && sampler_write_files(r->sampler))
		err = EXIT_FAIL;
	if (!err && r->o->svg_path)
		err = write_svg(r);
	if (!err && r->profiles && profiles_write_files(r->profiles))
		err = EXIT_FAIL;
	return err ? err : child_exit_code(r);
}

static int run_calibration(void)
{
	struct probe_list none = {};
	struct probe self[CAL_NR];
	struct calibration cal;
	struct tracer *t;
	int err;

	struct tracer_conf conf = {};

	conf.nr_self = self_probes(self, 0, &conf.self);
	if (tracer_start(&none, getpid(), NULL, &conf, &t)) {
		calib_free_probes(self);
		return EXIT_FAIL;
	}
	err = calibrate(t, &cal, CALIB_ALL);
	tracer_stop(t);
	calib_free_probes(self);
	if (err)
		return EXIT_FAIL;
	calibration_print(&cal, stdout);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct run r = { .pidfd = -1, .t_exec = monotonic_s() };
	struct opts o;
	int err;

	steps_begin();
	err = opts_parse(argc, argv, &o);
	if (err >= 0)
		return err;
	if (o.version) {
		version_print(stdout, o.verbose);
		if (o.verbose)
			kfeatures_print(stdout);  /* what this kernel offers, found on it */
		return EXIT_OK;
	}
	log_verbose = o.verbose;
	if (log_verbose)
		version_print(stderr, true);  /* what a bug report quotes */
	debuginfo_configure(&(struct debuginfo_conf){ .no_debuginfod = o.no_debuginfod });
	log_setup_libbpf();
	launch_save_signals(&r.sigs);
	setup_signals();
	err = proc_raise_nofile();
	if (err)
		log_debug("cannot raise the limit on open files: %s", strerror(-err));
	/*
	 * Then at once: the first registration's wait overlaps everything else
	 * (uprobe_warm.h). Not before a command is forked: glibc's first thread
	 * sets up signal 33 (setxid), which a command would not inherit ignored.
	 */
	if (o.nr_funcs && o.pid && !o.list && !o.list_events && !o.calibrate)
		uprobe_warm_early();
	r.o = &o;
	/* --list needs no privileges, but never runs setuid either: it reads files and starts commands. */
	if (o.list ? check_not_setuid() : check_system())
		return EXIT_FAIL;
	steps_mark("checks");
	if (o.list_events)
		return events_list(stdout);
	if (o.calibrate)
		return run_calibration();
	err = run(&r);
	steps_mark("final report");
	cleanup(&r);
	outfile_drop_unwritten();
	uprobe_warm_discard();
	steps_mark("detach and clean-up");
	if (log_verbose)
		steps_print(stderr);
	return err;
}
