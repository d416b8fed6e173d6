/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Time off the CPU inside traced calls: sched_switch's bookkeeping. A thread
 * switched out inside a traced call notes when, why (run queue or blocked)
 * and where (in an entry probe's own path, which is not the function's time);
 * switched back in, it adds the time off the CPU to its running totals
 * (runq_cum, blocked_cum), which each frame reads at entry and at return
 * (figures.h). A switch back in that sched_switch did not report is
 * recovered from the scheduler's own statistics of the thread.
 *
 * Included by trace.bpf.c after its maps and helpers, counters.bpf.h and
 * slow.bpf.h (a block's stacks are --slow's).
 */
#ifndef FNPROF_SCHED_BPF_H
#define FNPROF_SCHED_BPF_H

#include "fnprof.h"
#include "maps.bpf.h"
#include "trace.bpf.h"
#include "arch.bpf.h"

/*
 * Where task_struct keeps sched_info's pcount and last_arrival, for the
 * uprobe programs, which read no kernel type of their own (see trace_load.c):
 * set by on_switch (switched_out), from its BTF; 0 until then, or on a kernel
 * without them.
 */
volatile __u32 task_pcount_off = 0, task_arrival_off = 0;

/*
 * Per function id: where the branch its entry probe sits on (jcc, jmp,
 * call) lands when taken, in bytes from the probe; 0 for other sites. A
 * switch in that probe's return path finds the thread there (the kernel has
 * emulated the branch), anywhere in the function or beyond it.
 */
SIZED_ARRAY(entry_branch, __s32);   /* nr_funcs entries */

/*
 * The thread, switched out inside a traced call (at out_ns), was switched
 * back in off_ns later, on this CPU: the time off the CPU is its calls'.
 */
static __always_inline void switched_in(struct thread_state *ts, __u64 off_ns)
{
	/*
	 * The frame on top is the one whose entry probe it was; only its own
	 * reading leaves it out. A call suspended on another stack (a coroutine's)
	 * meanwhile keeps it, as its own clock does.
	 */
	if (ts->out_probe && ts->depth) {
		struct fn_frame *top = &ts->frames[(ts->depth - 1) & (FNPROF_MAX_DEPTH - 1)];

		top->probe_off += off_ns;
		if (ts->out_runnable)
			top->probe_off_runq += off_ns;
	}
	/* Off the CPU in the callers' calls too (the top call's own reading takes it back out). */
	if (ts->out_runnable)
		ts->runq_cum += off_ns;
	else
		ts->blocked_cum += off_ns;
	if (slow_ns && !ts->out_probe && !ts->out_runnable)
		slow_block_end(ts, off_ns);
	ts->out_ns = 0;
	if (ts->out_cpu != bpf_get_smp_processor_id())
		ts->mig_cum++;
}

/*
 * A switch back in that sched_switch did not report (running again with
 * out_ns set): some kernels leave the tracepoint out for switches away from
 * tasks they hide (here, a sandbox's agent threads: none of their switches
 * out is reported), so the next thread's switch in goes unseen. The
 * scheduler's own statistics of the thread still tell when it came back:
 * sched_info's last_arrival (its run queue's clock then) and pcount (its
 * runs: one more since it was switched out, so that arrival was this one).
 * Pass them, and whether they were read.
 */
static __always_inline void switched_in_late(struct thread_state *ts, bool read, __u64 pcount, __u64 arrival)
{
	__u64 off, ago;

	if (read && ts->out_clock && pcount == ts->out_pcount + 1 && arrival >= ts->out_clock) {
		/*
		 * Both clock readings are the scheduler's at its entry, each some
		 * microseconds before its tracepoint: off the CPU no longer than since.
		 */
		off = arrival - ts->out_clock;
		ago = bpf_ktime_get_ns() - ts->out_ns;
		if (off > ago)
			off = ago;
		/*
		 * Counters (-e): what the CPU counted since the switch out is the
		 * thread's own only from its return on, part of the ns since: that
		 * share (said so); none if it came back on another CPU. Then a fresh
		 * reading, as at a switch back in.
		 */
		if (nr_events)
			ctr_read_part(ts, ts->out_cpu == bpf_get_smp_processor_id(), ago - off, ago);
		switched_in(ts, off);
		return;
	}
	count_drop(DROP_SWITCH_IN);
	ts->out_ns = 0;
}

/* The same from a uprobe program (rare: no helper calls on the common path). */
static __noinline void switched_in_unseen(struct thread_state *ts)
{
	__u64 task = bpf_get_current_task(), pcount = 0, arrival = 0;
	__u32 poff = task_pcount_off, aoff = task_arrival_off;
	bool read = poff && aoff &&
		    !bpf_probe_read_kernel(&pcount, sizeof(pcount), (void *)(task + poff)) &&
		    !bpf_probe_read_kernel(&arrival, sizeof(arrival), (void *)(task + aoff));

	switched_in_late(ts, read, pcount, arrival);
}

/*
 * Longest time after an entry probe's timestamp in which a switch at the
 * function's first bytes is taken for one in the probe's own return path: a
 * single step takes ~10 us here, and stalls of the virtual CPU stretch it.
 * The time switched out in the probe's path does not count: switched back
 * in there, a thread can be switched out again before it reaches user space
 * (a wakeup preempts it), and that one is the probe's too. Counted with it,
 * the second switch of one call came 4.0 ms (a tick) after its entry, and
 * its 3.9 ms on the run queue went into a 2 ns function's calls.
 */
#define PROBE_WINDOW_NS 1000000

/*
 * Whether prev, inside a traced call, is switched out before the function's
 * first instruction has run: in the return path of its entry probe. With
 * preemption pending, the kernel switches when it returns to user space,
 * after the entry timestamp: at the instruction after the first one
 * (emulated), or in the out-of-line slot where the first one is single-
 * stepped (the kernel switches before it finishes the step), or after it.
 * Preemptions that fell due during the probe's trap all land there, inside
 * the call; the function itself would have met them elsewhere. Within the
 * function's first bytes (ARCH_FIRST_INSN_SPAN), and within PROBE_WINDOW_NS
 * since the entry, less the time out in the probe's path (on_ns): a loop in
 * those bytes loses at most that.
 */
static __always_inline bool in_entry_probe_of(struct task_struct *prev, __u64 ip, __u64 fn_ip, __u64 span,
					      __s64 on_ns, __s32 branch)
{
	__u64 xol;

	/* Signed: a paired call's start may lie ahead (fn_mid). 0: the ip is not known. */
	if (on_ns > PROBE_WINDOW_NS || !ip)
		return false;
	xol = BPF_CORE_READ(prev, utask, xol_vaddr);
	/*
	 * In an out-of-line step: of this call's entry probe only if the stepped
	 * instruction is the function's (vaddr: the probed address). A return
	 * probe's step (a ret, in ret mode) is of a call already over: under
	 * load, a preemption there was taken out of the caller (then on top),
	 * or of a coroutine's call suspended meanwhile, whose clocks ran on.
	 */
	if (xol && ip - xol < ARCH_XOL_SLOT_BYTES)
		return BPF_CORE_READ(prev, utask, vaddr) - fn_ip < span;
	/* Or where its branch landed (emulated, taken): an early return 40 bytes on read 1.4-2.3 us. */
	return ip - fn_ip < span || (branch && ip == fn_ip + branch);
}

/* How many of a process's uprobe trampoline pages are looked through: one per 4 GiB of code. */
#define PROBE_TRAMPS_MAX 4

/*
 * The kernel's probe machinery in user space, which only a probe's hit runs.
 * A preemption there is the probe's: untraced, it would have come elsewhere.
 *
 * The uretprobe trampoline (the first slot of the uprobes area): after a
 * traced function returned, before its uretprobe's program ran. Counted as
 * the function's, 2 of 55 runs of a 2 ns function beside a busy loop read
 * 1.7 and 3.9 ms of run queue.
 */
static __always_inline bool in_uret_trampoline(struct task_struct *prev, __u64 ip)
{
	__u64 tramp = BPF_CORE_READ(prev, mm, uprobes_state.xol_area, vaddr);

	return tramp && ip - tramp < ARCH_XOL_SLOT_BYTES;
}

/*
 * In that trampoline, whether the return it is for has been handled: its
 * uretprobe's program ran in the trampoline's syscall and closed the call,
 * and the thread is on its way out of the trampoline, whose ret takes the
 * real return address the kernel left on the stack, in the very slot the
 * call's own return address had (the closed frame's sp, ret_sp), 0-2 slots
 * above the stack pointer as the trampoline pops the two registers it
 * saved. The function is gone from the top then: a switch there is its
 * caller's time, which keeps its callees' probes. Taken for the caller's
 * own probe's, it made an outer() that calls inner() read 12.5 us a call
 * under its own clock, raw.
 */
static __always_inline bool uret_closed(const struct thread_state *ts, __u64 sp)
{
	__u64 slot;

	/* sched_switch runs in prev's context: its user stack is the one read. */
	if (!ts->ret_ip || ts->ret_sp - sp >= 3 * sizeof(__u64) ||
	    bpf_probe_read_user(&slot, sizeof(slot), (void *)ts->ret_sp))
		return false;
	return slot == ts->ret_ip;
}

/*
 * In a 5-byte nop's trampoline (stack pointer sp), whether it is the entry
 * of the call whose probe is at site, entered with its stack pointer at
 * frame_sp: that probe's program has run (in the trampoline's syscall) and
 * pushed the call, and the thread is on its way out to the function. The
 * call into the trampoline left its return address, site + 5, just below
 * frame_sp, 0-3 slots above sp as the trampoline pops what it saved. On the
 * way in, before the syscall, the call on top is the caller's, and the
 * switch is its time; a recursive call's way in has site + 5 too, but lower
 * down.
 */
static __always_inline bool nop5_entered(__u64 sp, __u64 site, __u64 frame_sp)
{
	__u64 slot;

	if (frame_sp - sizeof(__u64) - sp >= 4 * sizeof(__u64) ||
	    bpf_probe_read_user(&slot, sizeof(slot), (void *)(frame_sp - sizeof(__u64))))
		return false;
	return slot == site + 5;
}

/*
 * A page of the trampolines that a probe on a 5-byte nop calls (6.18's
 * optimized uprobes), entered through a syscall, not a trap: a preemption
 * due during the probe is taken on the syscall's way out, in the
 * trampoline, not at the function's first bytes. Counted as the function's,
 * a 2 ns function entered by a 5-byte nop read 242-630 ns a call off the
 * CPU beside a build.
 */
static __always_inline bool in_nop5_trampoline(struct task_struct *prev, __u64 ip)
{
	struct hlist_node *node;
	__u64 tramp;
	int i;

	if (!bpf_core_field_exists(struct uprobes_state, head_tramps))
		return false;
	node = BPF_CORE_READ(prev, mm, uprobes_state.head_tramps.first);
	for (i = 0; i < PROBE_TRAMPS_MAX && node; i++) {
		/* Its node comes first: the node is the trampoline. */
		tramp = BPF_CORE_READ((struct uprobe_trampoline *)node, vaddr);
		if (ip - tramp < ARCH_PAGE_SIZE)
			return true;
		node = BPF_CORE_READ(node, next);
	}
	return false;
}

static __always_inline bool in_entry_probe(struct task_struct *prev, struct thread_state *ts, __u64 now)
{
	struct fn_frame *top = &ts->frames[(ts->depth - 1) & (FNPROF_MAX_DEPTH - 1)];
	struct pt_regs *regs;
	__s32 *branch;
	__u64 ip, sp;
	/*
	 * Since the entry, less the time switched out in its probes' paths
	 * (switched_in): a real preemption or wait at its first bytes still
	 * spends the window.
	 */
	__s64 on_ns = (__s64)(now - top->start_ns) - (__s64)top->probe_off;

	/*
	 * A twin on the ret: a preemption that fell due in its trap happens on the
	 * way back to user space, after the ret (at the uretprobe's trampoline),
	 * outside the function's bytes. Counted as the function's, one 4 ms switch
	 * read a 2 ns function (`lea; ret`) as 2 us on average over 20000 calls.
	 */
	if (top->flags & FRAME_PAIR_AT_RET && on_ns <= PROBE_WINDOW_NS)
		return true;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	ip = regs ? ARCH_REGS_IP(regs) : 0;
	sp = regs ? ARCH_REGS_SP(regs) : 0;
	if (ip && in_uret_trampoline(prev, ip))
		return !uret_closed(ts, sp);
	if (ip && in_nop5_trampoline(prev, ip))
		return nop5_entered(sp, top->ip, top->sp);
	/*
	 * Just back from a traced callee (its uretprobe's program has run) at
	 * its return address: the caller's time, even where that lies in the
	 * caller's first bytes (a call made at once). Counted as the caller's
	 * probe's, one such switch (4.4 ms) took an outer() 5% under its own
	 * clock's reading.
	 */
	if (ip && ip == ts->ret_ip && ts->ret_ns >= top->start_ns)
		return false;
	branch = bpf_map_lookup_elem(&entry_branch, &top->id);
	/* A paired call has two probes' return paths: its first two instructions' bytes. */
	return in_entry_probe_of(prev, ip, top->ip, top->flags & FRAME_PAIRED ? 2 * ARCH_FIRST_INSN_SPAN :
				 ARCH_FIRST_INSN_SPAN, on_ns, branch ? *branch : 0);
}

/*
 * Task state as the scheduler saw it: TASK_RUNNING (0) when it yielded and is
 * still on the run queue. The field is __state since 5.14 (2f064a59a11f); no
 * variant for older kernels, which lack task storage and bpf_loop anyway, and
 * each CO-RE type costs the loader a search of the kernel's 100k+ types.
 */
static __always_inline bool switched_out_runnable(bool preempt, struct task_struct *prev)
{
	return preempt || prev->__state == 0;
}

/* prev's state, if it has one: the thread this CPU's note is of (else the note is cleared), or from task storage. */
static __always_inline struct thread_state *prev_state(const struct cpu_thread *cpu, struct task_struct *prev)
{
	if (cpu && cpu->idx1 && cpu->regs == (__u64)bpf_task_pt_regs(prev))
		return pool_state(cpu->idx1);
	return task_state(prev);
}

/*
 * prev, inside traced calls (ts), leaves the CPU (preempt: still runnable):
 * when, how and where, for its switch back in. Returns the time now.
 */
static __always_inline __u64 switched_out(void *ctx, bool preempt, struct task_struct *prev, struct thread_state *ts)
{
	/* sched_info, and the run queue's clock through the task's CFS queue (group scheduling). */
	bool si = bpf_core_field_exists(prev->sched_info) && bpf_core_field_exists(prev->se.cfs_rq) &&
		  bpf_core_field_exists(struct cfs_rq, rq);
	__u64 now;

	if (si && !task_arrival_off) {
		task_pcount_off = bpf_core_field_offset(struct task_struct, sched_info.pcount);
		task_arrival_off = bpf_core_field_offset(struct task_struct, sched_info.last_arrival);
	}
	if (ts->out_ns)
		switched_in_late(ts, si, si ? prev->sched_info.pcount : 0, si ? prev->sched_info.last_arrival : 0);
	now = bpf_ktime_get_ns();
	if (nr_events)
		ctr_read(ts, true);
	ts->out_ns = now;
	/* The clock that sched_info_depart() reads next, and the arrival after it. */
	ts->out_clock = si ? prev->se.cfs_rq->rq->clock : 0;
	ts->out_pcount = si ? prev->sched_info.pcount : 0;
	ts->out_probe = in_entry_probe(prev, ts, now);
	ts->out_runnable = switched_out_runnable(preempt, prev);
	ts->out_cpu = bpf_get_smp_processor_id();
	if (slow_ns && !ts->out_runnable && !ts->out_probe)
		slow_block_begin(ctx, prev, ts);
	if (ts->out_runnable)
		ts->ivcsw_cum++;
	else
		ts->vcsw_cum++;
	return now;
}

#ifdef FNPROF_TEST_HOOKS
/*
 * Tests only (fnprof-test, FNPROF_TEST_HIDE_SWITCH_IN=N): every Nth switch
 * back in inside a call goes as if sched_switch had not reported it, to
 * check its recovery (switched_in_late).
 */
const volatile __u32 hide_switch_in = 0;

static __always_inline bool switch_in_hidden(struct cpu_thread *cpu, const struct thread_state *ts)
{
	return hide_switch_in && cpu && ts && ts->out_ns && ++cpu->hidden % hide_switch_in == 0;
}
#else
static __always_inline bool switch_in_hidden(struct cpu_thread *cpu, const struct thread_state *ts)
{
	return false;
}
#endif

#endif /* FNPROF_SCHED_BPF_H */
