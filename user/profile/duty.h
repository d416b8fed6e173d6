/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --max-overhead for probes that sample in the kernel (the heap profile): a
 * thread attaches the main probes (the allocations') in bursts, so that what
 * all the probes cost stays under a share of the target's own work. The
 * account is burst.c's: the target's CPU time less the probes' estimated
 * time (events seen x their measured cost) is its work, and the budget earns
 * its share of that.
 *
 * The watch probes (free's) stay in throughout, so that the sampled blocks
 * they follow are never freed unseen. If they alone cost more than the
 * budget, they join the bursts, and from then on duty_take() says that what
 * they follow is lost.
 *
 * What the main probes saw stands for a share of the target's work: its
 * work while they were in over all of it. Work, not time: the target works
 * more slowly while the probes are in, so a share of the time would
 * undercount.
 */
#ifndef FNPROF_DUTY_H
#define FNPROF_DUTY_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

enum duty_group {
	DUTY_MAIN,    /* in bursts */
	DUTY_WATCH,   /* in throughout, unless it alone is over budget */
	DUTY_NR,
};

/* How the thread works the probes. Called from its own thread; errors are negative errno. */
struct duty_ops {
	int (*attach)(void *ctx, enum duty_group g);
	void (*detach)(void *ctx, enum duty_group g);
	/* Events each group's probes have seen so far (each costs cost_ns[group]). */
	void (*events)(void *ctx, __u64 ev[DUTY_NR]);
	/* The main group's events count from now on (true, a new burst), or no longer. */
	void (*sampling)(void *ctx, bool on);
};

struct duty_conf {
	double budget_pct;           /* probes' cost <= this % of the target's own work */
	double cost_ns[DUTY_NR];     /* what one event of each group costs the target, measured */
	pid_t pid;                   /* the target, for its CPU time */
	const struct duty_ops *ops;
	void *ctx;
};

/* What the thread has seen so far. */
struct duty_figures {
	double share;        /* the target's work with the main probes in, over all of it, since the last take */
	double run_share;    /* the same over the whole run */
	double probe_ns;     /* the probes' estimated cost over the whole run */
	double work_ns;      /* the target's own work over the whole run (its CPU time less probe_ns) */
	bool watch_lost;     /* the watch probes were out at times: what they follow is incomplete */
	bool work_unknown;   /* the work could not be told from the probes' cost: shares are 1 (what was seen) */
	unsigned int bursts;
};

struct duty;

/* Starts the thread; both groups' probes are in and sampling is on when it is called. 0 or -errno. */
int duty_start(const struct duty_conf *c, struct duty **out);

/* The figures; share is since the last call. */
void duty_take(struct duty *d, struct duty_figures *out);

/* Stops the thread (the probes stay as they are, for the caller to free). Safe with NULL. */
void duty_stop(struct duty *d);

#endif /* FNPROF_DUTY_H */
