/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What one traced call measured, from its frame and the thread's running
 * totals at its return: wall, on-CPU, run-queue, blocked and self time and
 * the counts inside it. Plain C, no BPF helper: trace.bpf.c's return probe
 * and go.bpf.h call it, and a unit test (tests/unit/test_figures.c) checks
 * the arithmetic on frames made by hand.
 *
 * Units: ns for every time; the thread's totals only grow while it is inside
 * traced calls (sched.bpf.h adds to them), so a frame's reading is the total
 * now less the total at its entry.
 */
#ifndef FNPROF_FIGURES_H
#define FNPROF_FIGURES_H

#ifndef __bpf__
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#endif

#include "fnprof.h"
#include "trace.bpf.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * What one call measured, handed from the return probe to the aggregation.
 * The counter arrays are written and read only for the nr_events in use.
 */
struct call {
	__u64 wall, oncpu, runq, blocked, self, sys;
	__u64 vcsw, ivcsw, mig;
	__u64 tail_hits, tail_hits_self;   /* callees' exit-probe hits inside the call, and outside its callees */
	__u64 tail_jmps, tail_jmps_self;   /* the same for the tail jmps' probes */
	bool scaled;
	__u64 ctr[FNPROF_MAX_EVENTS], ctr_self[FNPROF_MAX_EVENTS];
};

/* a - b, or 0 where b is more: a reading under 0 is taken as 0. */
static __always_inline __u64 sub_floor0(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/*
 * The figures of the call in frame f, returning at now, of thread ts (its
 * running totals); the counters (-e) are call_counters()'s.
 */
static __always_inline void call_figures(struct call *c, const struct fn_frame *f, const struct thread_state *ts,
					 __u64 now)
{
	/* A paired call's start may lie ahead (fn_mid): a reading under 0 is taken as 0. */
	c->wall = sub_floor0(now, f->start_ns);
	/* Time switched out before the function's first instruction ran is the entry probes'. */
	c->wall = sub_floor0(c->wall, f->probe_off);
	/* The time switched out in its entry probe is off its wall, so off these too. */
	c->runq = sub_floor0(ts->runq_cum - f->runq0, f->probe_off_runq);
	c->blocked = sub_floor0(ts->blocked_cum - f->blocked0, f->probe_off - f->probe_off_runq);
	c->oncpu = sub_floor0(c->wall, c->runq + c->blocked);
	c->self = sub_floor0(c->wall, f->child_wall);
	c->vcsw = ts->vcsw_cum - f->vcsw0;
	c->ivcsw = ts->ivcsw_cum - f->ivcsw0;
	c->mig = ts->mig_cum - f->mig0;
	c->sys = ts->sys_cum - f->sys0;
	c->tail_hits = ts->tail_hits_cum - f->tail_hits0;
	c->tail_hits_self = sub_floor0(c->tail_hits, f->child_tail_hits);
	c->tail_jmps = ts->tail_jmps_cum - f->tail_jmps0;
	c->tail_jmps_self = sub_floor0(c->tail_jmps, f->child_tail_jmps);
	c->scaled = false;
}

/*
 * The caller of the call in frame k of ts, NULL for none: the frame below.
 * On several stacks (stack_switching), only if it is on this stack, above:
 * the frame below may be another stack's call, suspended.
 */
static __always_inline struct fn_frame *call_caller(struct thread_state *ts, __u32 k, bool stack_switching)
{
	struct fn_frame *f = &ts->frames[k & (FNPROF_MAX_DEPTH - 1)], *parent;

	if (!k)
		return NULL;
	parent = &ts->frames[(k - 1) & (FNPROF_MAX_DEPTH - 1)];
	if (stack_switching && parent->sp <= f->sp)
		return NULL;
	return parent;
}

/* The caller learns what its callee f (call c) took: its time and calls are not the caller's own. */
static __always_inline void call_to_caller(struct fn_frame *parent, const struct fn_frame *f, const struct call *c)
{
	parent->child_wall += c->wall;
	parent->child_calls++;
	parent->desc_calls += 1 + f->desc_calls;
	parent->child_tail_hits += c->tail_hits;
	parent->child_tail_jmps += c->tail_jmps;
}

#endif /* FNPROF_FIGURES_H */
