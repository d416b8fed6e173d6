/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --slow: the slow calls' records from the BPF ring buffer (struct
 * slow_call), read by a thread of its own, which unwinds their two stacks
 * (unwind.h) and names the frames at once, while the process still maps its
 * objects. The last SLOW_KEEP records of the run are kept (a ring: the
 * oldest go first); each report takes those of its span.
 */
#ifndef FNPROF_SLOW_H
#define FNPROF_SLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"

#define SLOW_KEEP 256        /* records kept, the run's latest */
#define SLOW_SHOWN 20        /* blocks a text report prints, its latest */
#define SLOW_FRAMES 64       /* frames kept of each stack */
#define SLOW_RATE 100        /* records the kernel sends per second, at most */

/* One slow call, its frames named (strings the collector owns, valid until slow_stop). */
struct slow_rec {
	__u64 seq;           /* 1, 2, ... in arrival order */
	__u32 id, pid, tid;  /* id: the probe's, in the tracer's probe list */
	__u64 wall_ns, oncpu_ns, runq_ns, blocked_ns;
	__u64 block_ns;      /* its longest block; 0 if it never blocked */
	double end_s;        /* CLOCK_MONOTONIC at its return */
	bool has_blocked;    /* blocked[] is the longest block's stack (else it was not kept, or none) */
	/*
	 * A Go function's call (kept per goroutine): on-CPU, run queue and
	 * blocked are unknown (0 here); block_ns and blocked[] are its longest
	 * park's (runtime.gopark to the goroutine's next run), wait_reason why.
	 */
	bool go;
	char wait_reason[32];
	bool truncated;      /* a stack cut short: its walk ran past the copy, or more frames than kept */
	int nr_stack, nr_blocked;
	const char *stack[SLOW_FRAMES];     /* the caller's stack at entry, the function first */
	const char *blocked[SLOW_FRAMES];   /* kernel frames, then user frames, innermost first */
};

/* One report's slow calls. */
struct slow_view {
	__u64 threshold_ns;
	struct slow_rec *recs;   /* oldest first */
	size_t nr;
	__u64 seen;              /* slow calls in the report's span */
	__u64 dropped;           /* of them, not in recs (rate limit, full ring buffer, ring of kept ones) */
	__u64 over_rate;         /* of those, over the rate limit (SLOW_RATE a second) */
	__u64 ringbuf_full;      /* and with the ring buffer to user space full */
	__u64 no_block_stack;    /* in recs without their longest block's stack (no capture slot was free) */
};

struct slow;

/* Most processes one collector names the stacks of (a -p list's). */
#define SLOW_PROCS_MAX 64

struct slow_conf {
	pid_t pid;               /* the target (its objects are unwound and named) */
	/*
	 * -p P1,P2,...: every process (pids[0] == pid), each one's calls
	 * unwound and named with its own objects; a call of another process (a
	 * fork child) with pid's. NULL: pid alone. At most SLOW_PROCS_MAX.
	 */
	const pid_t *pids;
	size_t nr_pids;
	__u64 threshold_ns;      /* --slow */
	size_t max_memory;       /* --max-memory: what the names may hold (0: the default) */
};

/*
 * The collector, each process's objects read now (a -p list's: before the
 * probes are in, so that a process that exits at once is named too). 0 or
 * -errno.
 */
int slow_new(const struct slow_conf *c, struct slow **out);
/* Starts the reading thread on the ring buffer map rb_fd. 0 or -errno. */
int slow_start(struct slow *s, int rb_fd);
/* Stops the thread (after it read what is in the ring buffer) and frees; safe with NULL. */
void slow_stop(struct slow *s);

/*
 * The slow calls since the last interval view (total: the run's kept ones),
 * once those in the ring buffer now are read (final: the run's last view,
 * which waits on while the reader gains); kdrops: the kernel's counters so
 * far (tracer_slow_drops). An interval view starts the next one's span.
 * 0 or -ENOMEM; free with slow_view_free.
 */
int slow_view(struct slow *s, const __u64 kdrops[SLOWDROP_NR], bool total, bool final, struct slow_view *out);
void slow_view_free(struct slow_view *v);

#endif /* FNPROF_SLOW_H */
