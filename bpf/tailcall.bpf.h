/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Calls that end in a tail jump. A function that ends in `jmp callee` has
 * its return done by the callee's ret: with a uretprobe, the kernel keeps
 * the caller's return pending through the jmp; with --exit=ret, probes on
 * the followed jmps mark the frame (FRAME_IN_TAIL, tail_jump) and probes
 * past the function's rets, on its tail callees' rets (fn_exit_tail), close
 * it. Those probes also fire on the callees' other calls: each such hit is
 * counted (tail_hits), for the cost it adds to the calls open on the thread,
 * and a trap that several probes on one ret share is paid once (note_trap).
 *
 * Included by trace.bpf.c after its maps and frame helpers (match_frame,
 * probe_thread, gen_live, stats_idx).
 */
#ifndef FNPROF_TAILCALL_BPF_H
#define FNPROF_TAILCALL_BPF_H

#include "fnprof.h"
#include "trace.bpf.h"
#include "arch.bpf.h"

/*
 * Notes f's return address, at sp (its entry's): read when the call takes
 * its tail jmp, where the stack holds it as at entry, rather than at every
 * entry of a function that may.
 */
static __always_inline void note_return(struct fn_frame *f, __u64 sp)
{
	if (bpf_probe_read_user(&f->ret_addr, sizeof(f->ret_addr), (void *)sp))
		f->ret_addr = 0;
}

/*
 * Whether the return address at sp (a stack pointer as at entry: pointing
 * at it) is still that of FRAME_IN_TAIL frame f's call. A tail callee runs
 * with the caller's return address where the caller had it; a new call at
 * that stack pointer has pushed its own, from its call site (the same only
 * when the two are called from one site, as through a function pointer).
 * Not readable: taken as the same, the stack pointer decides.
 */
static __always_inline bool same_return(const struct fn_frame *f, __u64 sp)
{
	__u64 ra;

	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)sp))
		return true;
	return ra == f->ret_addr;
}

/*
 * Whether the top frame f, at the stack pointer of a new call of function
 * id, lives on: a frame left by a tail call (jmp) to this function, whose
 * return is a uretprobe, or in ret mode one whose jmp probe has marked it
 * (and the return address is still its call's). Its callee returning first
 * marks it; found on top after that, it never got its return. A function
 * does not tail-call itself (the compiler makes that a loop): a frame of the
 * same function at the same stack pointer is one whose return was never
 * seen, called again.
 */
static __always_inline bool tail_caller(const struct fn_frame *f, __u64 sp, __u32 id)
{
	if (f->sp != sp || f->id == id || f->flags & FRAME_TAIL_DONE)
		return false;
	return f->flags & FRAME_URET || (f->flags & FRAME_IN_TAIL && same_return(f, sp));
}

/* A call of id that ended at a tail jump to a function not known: its callee's time is not in it. */
static __always_inline void count_untimed(__u32 slot, __u32 id)
{
	__u32 idx = stats_idx(slot, id);
	struct fn_stats *st = id < nr_funcs ? bpf_map_lookup_elem(&stats, &idx) : NULL;

	if (st)
		__sync_fetch_and_add(&st->tail_untimed, 1);
}

/*
 * A hit of a probe in a tail-called function (FNPROF_COOKIE_TAIL) that is
 * not the end of a call of the function whose probe it is: another call of
 * the callee, from anywhere. Only counted, for the probes' cost.
 */
static __always_inline void count_tail_hit(__u64 cookie, __s64 n)
{
	__u32 id = cookie & FNPROF_COOKIE_ID_MASK, slot = cookie >> FNPROF_COOKIE_SLOT_SHIFT & FNPROF_COOKIE_SLOT_MASK;
	__u32 idx = stats_idx(slot, id);
	struct fn_stats *st;

	st = id < nr_funcs && slot < nr_slots ? bpf_map_lookup_elem(&stats, &idx) : NULL;
	if (st)
		__sync_fetch_and_add(&st->tail_hits, n);
}

#define TRAP_HIT 1U      /* a probe at it counted a hit in tail_hits_cum */
#define TRAP_CLOSED 2U   /* a probe at it closed a call */
/* Probes of one trap run one after the other: well within this of each other. */
#define TRAP_SAME_NS 1000000

/*
 * Notes that probe cookie at a ret ran, in the trap it shares with the
 * thread's other probes there: the same address and stack pointer, and not
 * the trap's first probe again (the kernel runs a trap's probes in one
 * order, each once: the first one's next hit is the next trap). Any other
 * probe of the thread's in between also starts a new one (trap_reset).
 * Returns the trap's flags before this probe's.
 */
static __always_inline __u32 note_trap(struct pt_regs *ctx, struct thread_state *ts, __u64 now, __u64 cookie,
				       __u32 flag)
{
	__u64 ip = PT_REGS_IP(ctx), sp = PT_REGS_SP(ctx);
	__u32 was;

	if (ts->trap_ip != ip || ts->trap_sp != sp || ts->trap_first == cookie || now - ts->trap_ns > TRAP_SAME_NS) {
		ts->trap_ip = ip;
		ts->trap_sp = sp;
		ts->trap_first = cookie;
		ts->trap_flags = 0;
	}
	ts->trap_ns = now;
	was = ts->trap_flags;
	ts->trap_flags |= flag;
	return was;
}

/*
 * A probe at this ret that counted a hit before this one (cookie) closed the
 * call in frame f (their order is the kernel's): the trap is this call's
 * exit, not a hit. Taken back only if it is the count's last step and after
 * this call's start.
 */
static __always_inline void trap_closes(struct pt_regs *ctx, struct thread_state *ts, const struct fn_frame *f,
					__u64 now, __u64 cookie)
{
	if (note_trap(ctx, ts, now, cookie ?: attach_cookie(ctx), TRAP_CLOSED) & TRAP_HIT &&
	    ts->tail_hits_cum == ts->trap_hits && ts->tail_hits_cum > f->tail_hits0) {
		ts->trap_flags &= ~TRAP_HIT;
		ts->tail_hits_cum--;
		count_tail_hit(ts->trap_hit_cookie, -1);
	}
}

/*
 * The frame a probe past the function's rets (fn_exit_tail) closes, with
 * cookie, at sp, of the d on the stack (top the topmost); *id becomes its
 * function's. -1 for none: a site in a callee that fires on another call of
 * it is no orphan. That is a hit where no frame of the function has the
 * stack pointer, or where the one that has it did not take its tail jmp
 * (FRAME_IN_TAIL; a frame an exception or longjmp left behind) or has
 * another return address there (left behind after its jmp): the callee's
 * own call, whose hit the calls open on the thread pay for (tail_hits_cum).
 * The frame is the function's own, or a traced tail callee's above it at
 * the same stack pointer: its own probe, here too, then closes the
 * function's (whichever of the two runs first, each closes one).
 */
static __always_inline int tail_frame(struct pt_regs *ctx, struct thread_state *ts, struct fn_frame *top, __u32 d,
				      __u64 sp, __u64 cookie, __u32 *id, __u64 now)
{
	int k = match_frame(ts, d, *id, sp);
	struct fn_frame *f = &ts->frames[k & (FNPROF_MAX_DEPTH - 1)];

	if (cookie & FNPROF_COOKIE_TAIL &&
	    (k < 0 || !(f->flags & FRAME_IN_TAIL) || !same_return(f, sp - ARCH_RET_ADDR_BYTES))) {
		/*
		 * A ret whose trap closed a call: its cost is that call's exit,
		 * already priced; or whose hit another probe counted: one step.
		 */
		if (note_trap(ctx, ts, now, cookie, TRAP_HIT))
			return -1;
		count_tail_hit(cookie, 1);
		ts->trap_hits = ++ts->tail_hits_cum;
		ts->trap_hit_cookie = cookie;
		return -1;
	}
	if (k >= 0 && !stack_switching && top->sp + ARCH_RET_ADDR_BYTES == sp) {
		*id = top->id;
		return d - 1;
	}
	return k < 0 ? -2 : k;
}

/*
 * A followed tail jmp of a traced function (FNPROF_COOKIE_JMP; a direct jmp,
 * which the kernel emulates): its frame, at the jmp's stack pointer (the
 * entry's, the frame popped), is marked FRAME_IN_TAIL, so that the exits of
 * its callees may close it from now on. The hit itself (~1 us here) is inside
 * every call open on the thread, the frame's own: tail_jmps_cum.
 */
static __always_inline int tail_jump(struct pt_regs *ctx, __u64 cookie)
{
	__u32 id = cookie & FNPROF_COOKIE_ID_MASK;
	struct thread_state *ts;
	int k;

	if (!links_per_process && proc_slot(current_tgid()) < 0)
		return 0;
	ts = probe_thread(ctx, false);
	if (!ts || !ts->depth || !gen_live(ts))
		return 0;
	ts->tail_jmps_cum++;
	trap_reset(ts);
	k = match_frame(ts, ts->depth, id, PT_REGS_SP(ctx) + ARCH_RET_ADDR_BYTES);
	if (k >= 0) {
		ts->frames[k & (FNPROF_MAX_DEPTH - 1)].flags |= FRAME_IN_TAIL;
		note_return(&ts->frames[k & (FNPROF_MAX_DEPTH - 1)], PT_REGS_SP(ctx));
	}
	return 0;
}

#endif /* FNPROF_TAILCALL_BPF_H */
