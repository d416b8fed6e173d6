/* SPDX-License-Identifier: GPL-2.0 */
/* The function tracer: loads trace.bpf.c, attaches the probes, reads the aggregates. */
#ifndef FNPROF_TRACER_H
#define FNPROF_TRACER_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "trace/events.h"
#include "fnprof.h"
#include "target/probe.h"

struct tracer;

/* Most processes besides the first a tracer takes (tracer_conf.more_pids). */
#define TRACER_MORE_MAX 63

/* Most probes in fnprof's own process a tracer takes (tracer_conf.self). */
#define TRACER_SELF_MAX 12

/* How a tracer is set up. */
/* A process with statistics of its own (--follow-forks: the target, then fork children). */
struct traced_proc {
	pid_t pid, ppid;            /* pid 0: slot not used (yet) */
	unsigned long long delay_ns; /* fork to its probes in place; calls before are not seen */
	char comm[FNPROF_COMM_LEN]; /* system-wide --by: its name at its first call ("" if unknown) */
	unsigned long long cgroup_id; /* and its cgroup v2 id (0 if unknown) */
};

struct tracer_conf {
	/*
	 * Probes in fnprof's own process, traced like the target's (the
	 * calibration's), or none: ids from the target's number of probes on,
	 * at most TRACER_SELF_MAX. They stay the caller's and must outlive the
	 * tracer; their calls count even while the target's probes are paused.
	 */
	const struct probe *self;
	size_t nr_self;
	/*
	 * The self probes to attach (bit k: self[k]), 0 for all: the others
	 * keep their ids but see no call, and a program that only they would
	 * use is not even loaded (verification is most of the start-up).
	 */
	unsigned int self_mask;
	bool follow_forks;   /* fork children get probes and statistics of their own */
	/*
	 * -p P1,P2,...: processes traced besides pid, each in a slot of its own
	 * (1..nr_more, with ppid 0 in tracer_procs), as a fork child's. The
	 * array stays the caller's; at most TRACER_MORE_MAX.
	 */
	const pid_t *more_pids;
	size_t nr_more;
	bool per_process;    /* system-wide (pid 0): each process gets a statistics slot at its first
			      * call (slot 0: the processes beyond); see tracer_note_exited() */
	__u32 max_threads;   /* thread states (a thread holds one from its first traced call until
			      * it exits); 0: TRACER_THREADS_DEFAULT or more */
	__u64 slow_ns;       /* --slow: calls this long or longer are sent with their stacks; 0: none */
	__u32 slow_rate;     /* --slow: at most this many a second (the others are counted) */
	/*
	 * Burst mode: the target's probes count no call until
	 * tracer_count_calls(t, true), so that the calls counted and the
	 * target's work read when the bursts begin cover the same stretch.
	 */
	bool start_paused;
};

/*
 * Thread states by default: this many, or twice the target's threads at the
 * start, up to TRACER_THREADS_MAX (which --max-threads may pass). Each takes
 * ~8.5 KiB of kernel memory (twice that with -e): 4 MiB by default.
 */
#define TRACER_THREADS_DEFAULT 512
#define TRACER_THREADS_MAX 16384
/* System-wide (pid 0): threads of every process that maps the objects may call them. */
#define TRACER_THREADS_SYSTEM 4096
/* Go: goroutines inside traced calls at once, at least (or --max-threads, if more). */
#define TRACER_GOROUTINES_MIN 4096

/*
 * Loads the BPF object and attaches a uprobe/uretprobe pair per probe (and
 * per self probe, in fnprof's own process), in process pid (0: in every
 * process that maps the object, now or later); with
 * evs (opened counters, or NULL), the probes read them per call and system
 * calls are timed. 0, or -errno (message printed).
 */
int tracer_start(const struct probe_list *pl, pid_t pid, const struct events *evs,
		 const struct tracer_conf *conf, struct tracer **out);

/*
 * Processes with statistics of their own: 1, or with follow_forks the target
 * and the fork children it can hold (slots 1.. in fork order).
 */
size_t tracer_nr_slots(const struct tracer *t);

/* Which process each slot holds (nr_slots entries; [0] is the target). */
int tracer_procs(struct tracer *t, struct traced_proc *procs);

/*
 * --follow-forks: a descriptor that turns readable at each fork of a traced
 * process (-1 without), and what to call then (and now and then anyway): it
 * attaches the probes of the children forked since.
 */
int tracer_fork_fd(struct tracer *t);
int tracer_follow_forks(struct tracer *t);

/*
 * per_process: slots of processes that have exited go back in two steps
 * around tracer_collect(): noted before (so that their last calls are in
 * the buffers it drains), given back after. Nothing without per_process.
 */
void tracer_note_exited(struct tracer *t);
void tracer_release_exited(struct tracer *t);

/*
 * The current aggregate of self probe k (conf->self[k]), taken out of the
 * buffer: 0, or -ENOENT without self probes, or -errno.
 */
int tracer_calibration_stats(struct tracer *t, int k, struct fn_stats *out);

/* The self probes attached (bit k: conf->self[k]): the compat trace object leaves tail jumps out. */
unsigned int tracer_self_mask(const struct tracer *t);

/*
 * Takes the aggregates since the last call: out[slot * nr + i] for probe i of
 * the process in slot, summed over CPUs (nr = number of probes), and the drop
 * counters since the last call.
 */
int tracer_collect(struct tracer *t, struct fn_stats *out, __u64 drops[DROP_NR]);

/*
 * The calls open on the target's threads now (entered, not returned yet):
 * adds, for each, 1 to open[slot * nr + id] (nr = number of probes; the
 * caller zeroes it). Frames a burst's detach left, whose returns go unseen,
 * are not counted; nor goroutines' (Go). Read while the threads run: a
 * call may return meanwhile. 0, or -errno.
 */
int tracer_open_calls(struct tracer *t, __u64 *open);

/*
 * Burst mode: removes the target's probes (a -p list's: every process's),
 * or puts them back. Both wait for
 * the kernel (an RCU grace period before the breakpoints change); from the
 * pause until tracer_count_calls(t, true) the probes count no call.
 */
int tracer_pause(struct tracer *t);
int tracer_resume(struct tracer *t);
void tracer_count_calls(struct tracer *t, bool on);
/* Calls that hit the probes while they did not count (attaching, detaching): they cost the same. */
__u64 tracer_paused_calls(struct tracer *t);
/* The same of the process in slot (below FNPROF_PAUSED_SLOTS; else 0). */
__u64 tracer_paused_calls_of(struct tracer *t, __u32 slot);

/*
 * Shows fn each target probe's aggregate in the current buffer so far (not
 * drained; the target's slot only), e.g. to price the calls made. A probe
 * whose aggregate cannot be read is left out.
 */
typedef void (*tracer_peek_fn)(void *ctx, const struct probe *p, const struct fn_stats *s);
void tracer_peek(struct tracer *t, tracer_peek_fn fn, void *ctx);
/* The same of the process in slot (a -p list's: 0 the first, 1.. the others). */
void tracer_peek_slot(struct tracer *t, __u32 slot, tracer_peek_fn fn, void *ctx);

/*
 * System-wide: probes on more files (an upgraded object), each probe with the
 * id of the function it counts as (probes[i].id: an index of the tracer's
 * probe list, whose statistics it adds to). 0 or -errno (message printed).
 */
int tracer_attach_more(struct tracer *t, const struct probe *probes, size_t nr);

/* --slow: the ring buffer of slow calls (struct slow_call), -1 without. */
int tracer_slow_fd(struct tracer *t);
/* --slow: the kernel's counters of slow calls (enum slow_drop), since the start. 0 or -errno. */
int tracer_slow_drops(struct tracer *t, __u64 drops[SLOWDROP_NR]);

/*
 * System-wide sessions: the ret exit's bias less the uretprobe's (ns, from
 * the calibration), by which calls closed at ret probes are moved.
 */
void tracer_set_session_ret_shift(struct tracer *t, double ns);

/*
 * System-wide sessions: the processes whose exit was chosen so far (which
 * took the uretprobe, which ret probes and why), a copy for the caller to
 * free; NULL and 0 without.
 */
struct sysexit_proc;
struct sysexit_proc *tracer_exit_choices(struct tracer *t, size_t *nr);

void tracer_stop(struct tracer *t);

#endif /* FNPROF_TRACER_H */
