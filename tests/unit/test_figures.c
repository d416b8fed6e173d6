// SPDX-License-Identifier: GPL-2.0
/*
 * A call's figures as the return probe computes them (bpf/figures.h), on
 * frames and thread totals made by hand, whose answers are known: the thread's
 * totals move as sched.bpf.h moves them (time off the CPU inside traced calls
 * added to runq_cum or blocked_cum), a frame keeps them at its entry.
 */
#include <string.h>

#include "figures.h"
#include "unit.h"

static struct thread_state ts;

/* A call of function id entered at start, with the thread's totals as they are now. */
static struct fn_frame *enter(__u32 d, __u32 id, __u64 start, __u64 sp)
{
	struct fn_frame *f = &ts.frames[d];

	memset(f, 0, sizeof(*f));
	f->id = id;
	f->start_ns = start;
	f->sp = sp;
	f->runq0 = ts.runq_cum;
	f->blocked0 = ts.blocked_cum;
	f->vcsw0 = ts.vcsw_cum;
	f->ivcsw0 = ts.ivcsw_cum;
	f->mig0 = ts.mig_cum;
	f->sys0 = ts.sys_cum;
	f->tail_hits0 = ts.tail_hits_cum;
	f->tail_jmps0 = ts.tail_jmps_cum;
	ts.depth = d + 1;
	return f;
}

/* The thread, inside its calls, is off the CPU for ns: on the run queue (preempted) or blocked. */
static void switched_out_for(__u64 ns, int preempted)
{
	if (preempted) {
		ts.runq_cum += ns;
		ts.ivcsw_cum++;
	} else {
		ts.blocked_cum += ns;
		ts.vcsw_cum++;
	}
}

static void reset(void)
{
	/* Totals from before these calls: what a frame reads is only what came since its entry. */
	static const struct thread_state before = { .runq_cum = 111000, .blocked_cum = 222000,
						    .vcsw_cum = 7, .ivcsw_cum = 9, .sys_cum = 5000 };

	ts = before;
}

/* 20 us from entry to return, 3 us of it preempted and 5 us blocked: 12 us on the CPU. */
static void call_with_time_off_cpu(void)
{
	struct fn_frame *f;
	struct call c;

	reset();
	f = enter(0, 1, 1000000, 0x7000);
	switched_out_for(3000, 1);
	switched_out_for(5000, 0);
	ts.sys_cum += 1500;
	ts.mig_cum++;
	call_figures(&c, f, &ts, 1020000);
	CHECK(c.wall == 20000);
	CHECK(c.runq == 3000);
	CHECK(c.blocked == 5000);
	CHECK(c.oncpu == 12000);
	CHECK(c.self == 20000);
	CHECK(c.vcsw == 1 && c.ivcsw == 1 && c.mig == 1);
	CHECK(c.sys == 1500);
	CHECK(!c.scaled);
}

/*
 * 4 us switched out in the entry probe's own path (1 us of it preempted),
 * then 2 us preempted in the function: the probe's 4 us are off the wall and
 * off the run-queue and blocked readings, which the thread's totals hold.
 */
static void entry_probe_time_is_not_the_calls(void)
{
	struct fn_frame *f;
	struct call c;

	reset();
	f = enter(0, 1, 50000, 0x7000);
	switched_out_for(1000, 1);
	switched_out_for(3000, 0);
	f->probe_off = 4000;
	f->probe_off_runq = 1000;
	switched_out_for(2000, 1);
	call_figures(&c, f, &ts, 70000);
	CHECK(c.wall == 16000);
	CHECK(c.runq == 2000);
	CHECK(c.blocked == 0);
	CHECK(c.oncpu == 14000);
}

/*
 * outer (0-10 us) calls inner (1-6 us), which is preempted 2 us; outer then
 * blocks 1 us itself. inner's figures go to outer as its children's: outer's
 * self time is its own 5 us, its off-CPU time both.
 */
static void nested_calls(void)
{
	struct fn_frame *outer, *inner, *caller;
	struct call ci, co;

	reset();
	outer = enter(0, 1, 0, 0x7100);
	inner = enter(1, 2, 1000, 0x7000);
	inner->desc_calls = 2;   /* inner's own callees, returned already */
	ts.tail_hits_cum += 3;   /* probe hits inside inner, none in its callees */
	switched_out_for(2000, 1);
	call_figures(&ci, inner, &ts, 6000);
	CHECK(ci.wall == 5000 && ci.runq == 2000 && ci.oncpu == 3000 && ci.self == 5000);
	CHECK(ci.tail_hits == 3 && ci.tail_hits_self == 3);
	caller = call_caller(&ts, 1, false);
	CHECK(caller == outer);
	call_to_caller(caller, inner, &ci);
	ts.depth = 1;
	switched_out_for(1000, 0);
	call_figures(&co, outer, &ts, 10000);
	CHECK(co.wall == 10000);
	CHECK(co.self == 5000);
	CHECK(co.runq == 2000 && co.blocked == 1000);
	CHECK(co.oncpu == 7000);
	CHECK(outer->child_calls == 1 && outer->desc_calls == 3);
	CHECK(co.tail_hits == 3 && co.tail_hits_self == 0);
	CHECK(call_caller(&ts, 0, false) == NULL);
}

/*
 * With stack switching (coroutines), the frame below may be another stack's
 * call, suspended: only a frame above on the same stack (a higher stack
 * pointer, the stack grows down) is the caller, whose self time it shrinks.
 */
static void stack_switch_caller(void)
{
	reset();
	enter(0, 1, 0, 0x10000);     /* coroutine A's stack */
	enter(1, 2, 100, 0x50000);   /* coroutine B's, higher up: not A's callee */
	CHECK(call_caller(&ts, 1, true) == NULL);
	CHECK(call_caller(&ts, 1, false) == &ts.frames[0]);
	enter(2, 3, 200, 0x4ff00);   /* called on B's stack */
	CHECK(call_caller(&ts, 2, true) == &ts.frames[1]);
}

/*
 * Readings that would go below 0 read 0: a paired call's start moved ahead
 * of its return (fn_mid), or more time off the CPU than the wall (the probe
 * paths' time taken out of the wall only).
 */
static void readings_never_below_zero(void)
{
	struct fn_frame *f;
	struct call c;

	reset();
	f = enter(0, 1, 9000, 0x7000);
	call_figures(&c, f, &ts, 8500);
	CHECK(c.wall == 0 && c.oncpu == 0 && c.self == 0);
	f = enter(0, 1, 1000, 0x7000);
	f->probe_off = 5000;
	switched_out_for(5000, 0);
	call_figures(&c, f, &ts, 4000);
	CHECK(c.wall == 0 && c.blocked == 0 && c.oncpu == 0);
	f = enter(0, 1, 1000, 0x7000);
	f->child_wall = 9000;
	switched_out_for(6000, 1);
	call_figures(&c, f, &ts, 5000);
	CHECK(c.wall == 4000 && c.runq == 6000 && c.oncpu == 0 && c.self == 0);
}

int main(void)
{
	RUN(call_with_time_off_cpu);
	RUN(entry_probe_time_is_not_the_calls);
	RUN(nested_calls);
	RUN(stack_switch_caller);
	RUN(readings_never_below_zero);
	UNIT_EXIT();
}
