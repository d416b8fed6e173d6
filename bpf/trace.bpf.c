// SPDX-License-Identifier: GPL-2.0
/*
 * Function tracing: a uprobe at each traced function's entry pushes a frame on
 * the thread's stack of active calls, the uretprobe pops it and aggregates
 * wall, on-CPU, run-queue, blocked and self time into per-CPU maps.
 * sched_switch accounts the time a thread inside a traced call spends switched
 * out. Nothing per call leaves the kernel.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "fnprof.h"
#include "maps.bpf.h"
#include "trace.bpf.h"
#include "arch.bpf.h"
#include "bits.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile __u32 target_tgid = 0;  /* 0: any process (probes are pid-filtered anyway) */
const volatile __u32 self_tgid = 0;    /* fnprof itself, while it calibrates the probe bias */
/* fnprof's own process: system-wide (target_tgid 0), its calls of traced functions are not the target's. */
const volatile __u32 fnprof_tgid = 0;
const volatile __u32 nr_funcs = 1;
const volatile __u32 nr_events = 0;    /* perf counters in `counters`, per CPU */
const volatile __u32 nr_cpus = 1;
/*
 * The program runs code on stacks of its own (coroutines, sigaltstack): the
 * thread's frames may lie on several stacks, so a frame below the stack
 * pointer is not necessarily dead, and a return closes exactly its own frame.
 */
const volatile __u32 stack_switching = 0;
/*
 * Processes with statistics of their own: 1, or with --follow-forks the
 * target (slot 0) and fork children of traced processes, which take slots
 * 1..nr_slots-1 in fork order (user space attaches their probes when it
 * hears of the fork).
 */
const volatile __u32 nr_slots = 1;
/*
 * The kernel runs a probe's program only for the process the probe is for
 * (uprobe_multi links with a pid): the handlers need not check. Perf-event
 * links filter by address space only, which a vfork child shares.
 */
const volatile __u32 links_per_process = 0;
/* Go functions are traced: their calls are kept per goroutine (go.bpf.h). */
const volatile __u32 go_calls = 0;
/* Probes past some function's rets (fn_exit_tail): a ret may be shared with them (note_trap). */
const volatile __u32 tail_sites = 0;

/*
 * System-wide with --by: each process takes a slot of its own at its first
 * traced call (user space gives it back after the process exits); slot 0
 * sums the processes beyond.
 */
const volatile __u32 dynamic_slots = 0;

#define follow_forks (nr_slots > 1 && !dynamic_slots)

/*
 * Interval buffer in use: user space flips it, then reads and clears the other
 * half of `stats`, so each report's min/max/histogram are its own.
 */
volatile __u32 epoch = 0;

/*
 * Bumped by user space whenever it detaches the probes (burst mode), before
 * it does: frames pushed before that may never see their return, so a thread
 * drops them (DROP_DETACHED), and returns of calls entered before that are
 * not orphans. Bumped again before it attaches them: the frames a detach
 * left are then two generations back, and no return closes them (one would
 * be of a call made since, and take the whole pause for its time). A thread that exits counts its frames of the current
 * generation abandoned: every return of those is seen, so they never returned.
 */
volatile __u32 generation = 0;

/*
 * Set by user space while it attaches or detaches the probes in burst mode:
 * the target's calls are not counted then, so that the calls counted in a
 * burst and the target's CPU time read at its ends cover the same stretch.
 */
volatile __u32 paused = 0;
/* Calls that hit the probes while paused: not measured, but they cost the target. */
volatile __u64 paused_calls = 0;
/*
 * Where task_struct keeps sched_info's pcount and last_arrival, for the
 * uprobe programs, which read no kernel type of their own (see trace_load.c):
 * set by on_switch, from its BTF; 0 until then, or on a kernel without them.
 */
volatile __u32 task_pcount_off = 0, task_arrival_off = 0;
/* Tests (FNPROF_TEST_HIDE_SWITCH_IN=N): every Nth switch back in inside a call goes as if not reported. */
const volatile __u32 hide_switch_in = 0;

/*
 * Thread states live in a pool: a thread takes one at its first traced call
 * (its index kept in task storage) and gives it back when it exits. Array
 * lookups are inlined by the JIT, where a task-storage lookup is a helper
 * call; with the per-CPU note of the running thread (`running`), the probe
 * handlers find their thread's state without any.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);   /* set by user space */
	__type(key, __u32);
	__type(value, struct thread_state);
} tstates SEC(".maps");

/* With -e, each thread state's counter frames, at the same index (else one unused entry). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);   /* set by user space */
	__type(key, __u32);
	__type(value, struct thread_ctrs);
} tctrs SEC(".maps");

/* Pool indexes not in use (filled by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 1);   /* set by user space */
	__type(value, __u32);
} free_tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_ref);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_thread);
} running SEC(".maps");

/* --follow-forks: tgid of each traced fork child -> its slot. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);   /* set by user space */
	__type(key, __u32);
	__type(value, struct proc_info);
} procs SEC(".maps");

/* --follow-forks: the slots not yet taken, 1..nr_slots-1 in order (filled by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 1);   /* set by user space */
	__type(value, __u32);
} free_slots SEC(".maps");

/* --follow-forks: the pid of each fork child, to wake user space at once. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FNPROF_RB_MIN);   /* set by user space */
} forks SEC(".maps");

/* 2 * nr_slots * nr_funcs entries: [epoch][slot][function id]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fn_stats);
} stats SEC(".maps");

/*
 * Per function id: where the branch its entry probe sits on (jcc, jmp,
 * call) lands when taken, in bytes from the probe; 0 for other sites. A
 * switch in that probe's return path finds the thread there (the kernel has
 * emulated the branch), anywhere in the function or beyond it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);   /* set by user space: nr_funcs */
	__type(key, __u32);
	__type(value, __s32);
} entry_branch SEC(".maps");

/* Per-CPU perf counters opened by user space: [event * nr_cpus + cpu]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP_NR);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drops(__u32 reason, __u64 nr)
{
	percpu_add(&drops, reason, nr);
}

#define count_drop(reason) count_drops(reason, 1)

/*
 * A frame index already known to be below FNPROF_MAX_DEPTH, masked so that
 * the verifier sees the bound too (the barrier keeps clang from dropping the
 * mask as redundant).
 */
static __always_inline __u32 frame_idx(__u32 i)
{
	__asm__ volatile("" : "+r"(i));
	return i & (FNPROF_MAX_DEPTH - 1);
}

static __always_inline bool is_tgid(__u32 tgid)
{
	return !target_tgid || tgid == target_tgid || (self_tgid && tgid == self_tgid);
}

/*
 * The current process: the handlers take its tgid from a helper rather than
 * task->tgid: a kernel type relocated in the uprobe programs would make the
 * loader verify them against the kernel's BTF, in one piece with the rest
 * (~20 ms more to attach, for ~20 ns less per call).
 */
static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/*
 * The statistics slot of process tgid: 0 for the target (and for fnprof's
 * own calibration calls), a traced fork child's own, or -1 for any other.
 */
static __always_inline int proc_slot(__u32 tgid)
{
	struct proc_info *pi;

	if (dynamic_slots) {
		pi = bpf_map_lookup_elem(&procs, &tgid);
		return pi ? pi->slot : 0;
	}
	if (is_tgid(tgid))
		return 0;
	if (!follow_forks)
		return -1;
	pi = bpf_map_lookup_elem(&procs, &tgid);
	return pi ? pi->slot : -1;
}

/* The pool's entry at index idx1 - 1 (as thread_ref and cpu_thread keep it), NULL for 0. */
static __always_inline struct thread_state *pool_state(__u32 idx1)
{
	__u32 idx = idx1 - 1;

	return idx1 ? bpf_map_lookup_elem(&tstates, &idx) : NULL;
}

/* The state of thread ref, NULL if it has none. */
static __always_inline struct thread_state *ref_state(const struct thread_ref *ref)
{
	return ref ? pool_state(ref->idx1) : NULL;
}

static __always_inline struct thread_state *task_state(struct task_struct *task)
{
	return ref_state(bpf_task_storage_get(&threads, task, NULL, 0));
}

static __always_inline struct cpu_thread *this_cpu_thread(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&running, &zero);
}

/* A probe that is no ret's: the next ret trap is a new one. */
static __always_inline void trap_reset(struct thread_state *ts)
{
	ts->trap_ip = 0;
}

/*
 * A fresh state from the pool for thread ref, NULL if the pool is empty (the
 * thread is marked: its returns without a frame are of calls not timed).
 */
static __always_inline struct thread_state *take_state(struct thread_ref *ref)
{
	struct thread_state *ts;
	__u32 idx;

	if (bpf_map_pop_elem(&free_tstates, &idx)) {
		ref->refused = 1;
		return NULL;
	}
	ts = bpf_map_lookup_elem(&tstates, &idx);
	if (!ts)
		return NULL;
	ts->idx = idx;
	ts->depth = 0;
	ts->over = 0;
	ts->gen = generation;
	ts->out_ns = 0;
	ts->sys_start = 0;
	trap_reset(ts);
	ref->idx1 = idx + 1;
	return ts;
}

/*
 * The state of the thread hitting a probe, whose registers are regs (the
 * program's context): on the fast path from this CPU's note of the running
 * thread, else from task storage, which then fills in the note; with create,
 * a thread without a state takes one from the pool. NULL: none (without
 * create), or the pool is empty.
 */
static __always_inline struct thread_state *probe_thread(void *regs, bool create)
{
	struct cpu_thread *c = this_cpu_thread();
	struct thread_state *ts;
	struct thread_ref *ref;

	if (!c)
		return NULL;
	if (c->regs == (__u64)regs && c->idx1)
		return pool_state(c->idx1);
	ref = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
				   create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!ref)
		return NULL;
	ts = ref->idx1 ? pool_state(ref->idx1) : create ? take_state(ref) : NULL;
	if (ts) {
		/* Volatile: the compiler dropped the first store as dead, and with it the point. */
		*(volatile __u32 *)&c->idx1 = 0;
		*(volatile __u64 *)&c->regs = (__u64)regs;
		*(volatile __u32 *)&c->idx1 = ref->idx1;
	}
	return ts;
}

/* Whether a thread of process tgid may be inside traced calls (sched_switch, syscalls). */
static __always_inline bool maybe_traced(__u32 tgid)
{
	/* Fork children: only threads that hit a probe have task storage, checked next. */
	return follow_forks || is_tgid(tgid);
}

static __always_inline __u32 stats_idx(__u32 slot, __u32 id)
{
	return fnprof_stats_key(epoch & 1, nr_slots, slot, nr_funcs, id);
}

static __always_inline struct thread_ctrs *ctr_frames(const struct thread_state *ts)
{
	__u32 idx = ts->idx;

	return bpf_map_lookup_elem(&tctrs, &idx);
}

/* Frame d's counts start from the thread's totals now. */
static __always_inline void snapshot_counters(struct thread_state *ts, __u32 d, struct fn_frame *f)
{
	struct thread_ctrs *tc = ctr_frames(ts);
	struct ctr_frame *cf;
	__u32 e;

	f->scaled0 = ts->scaled_seq;
	if (!tc)
		return;
	cf = &tc->frames[frame_idx(d)];
	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		cf->ctr0[e] = ts->ctr_cum[e];
		cf->child_ctr[e] = 0;
	}
}

/*
 * Per-thread counting with per-CPU counters: the counts that accrue on this
 * CPU while the thread runs inside a traced call are added to ctr_cum; the
 * reading is restarted whenever the thread comes back on a CPU.
 */
/*
 * d * num / den without the product's overflow (a cycle count of seconds
 * times ns passes 2^64): the remainder's share in 20-bit fixed point
 * (num < 2^44: hours of ns).
 */
static __always_inline __u64 scale(__u64 d, __u64 num, __u64 den)
{
	__u64 q = d / den, r = d % den;

	if (den >= (1ULL << 44)) {
		r >>= 20;
		den >>= 20;
	}
	return q * num + ((((r << 20) / den) * num) >> 20);
}

static __always_inline void ctr_read_part(struct thread_state *ts, bool accumulate, __u64 part, __u64 whole)
{
	struct bpf_perf_event_value v;
	struct ctr_reading *last;
	__u32 e, cpu = bpf_get_smp_processor_id();
	__u64 d, en, run;

	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		if (e >= nr_events)
			break;
		if (bpf_perf_event_read_value(&counters, e * nr_cpus + cpu, &v, sizeof(v))) {
			count_drop(DROP_CTR_READ);
			continue;
		}
		last = &ts->ctr_last[e];
		if (accumulate && v.counter >= last->counter && whole) {
			d = v.counter - last->counter;
			en = v.enabled - last->enabled;
			run = v.running - last->running;
			/* Multiplexed: the counter ran part of the time; scale up, and say so. */
			if (run < en) {
				ts->scaled_seq++;
				if (run)
					d = scale(d, en, run);
			}
			/* Only part of the time since the last reading was the thread's: its share, said so. */
			if (part < whole) {
				ts->scaled_seq++;
				d = scale(d, part, whole);
			}
			ts->ctr_cum[e] += d;
		}
		last->counter = v.counter;
		last->enabled = v.enabled;
		last->running = v.running;
	}
}

static __always_inline void ctr_read(struct thread_state *ts, bool accumulate)
{
	ctr_read_part(ts, accumulate, 1, 1);
}

struct dead_ctx {
	struct thread_state *ts;
	__u64 sp;
	__u32 d;
};

/* One frame of the search below: the next one down is dead, or the search ends. */
static long dead_step(__u32 i, struct dead_ctx *c)
{
	if (!c->d || c->ts->frames[(c->d - 1) & (FNPROF_MAX_DEPTH - 1)].sp > c->sp)
		return 1;
	c->d--;
	return 0;
}

/*
 * Whether the return address at sp (a stack pointer as at entry: pointing
 * at it) is still that of FRAME_IN_TAIL frame f's call. A tail callee runs
 * with the caller's return address where the caller had it; a new call at
 * that stack pointer has pushed its own, from its call site (the same only
 * when the two are called from one site, as through a function pointer).
 * Not readable: taken as the same, the stack pointer decides.
 */
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

/*
 * Frames that the stack has already unwound past (a C++ exception, longjmp,
 * a return we never saw) sit at or below the new call's stack pointer: a
 * live caller's frame is always above it, or, for a tail call, at it. They
 * are dropped and counted, and so are the calls above them beyond the
 * deepest frame. The top frame is checked here; below it, in a bpf_loop
 * (rare, and a loop the verifier would walk 64 times).
 */
static __always_inline __u32 drop_dead_frames(struct thread_state *ts, __u64 sp, __u32 id)
{
	struct dead_ctx c = { .ts = ts, .sp = sp, .d = ts->depth };
	struct fn_frame *top = &ts->frames[(c.d - 1) & (FNPROF_MAX_DEPTH - 1)];

	if (!c.d || (!(top->flags & FRAME_TAIL_DONE) && (top->sp > sp || tail_caller(top, sp, id))))
		return c.d;
	/* A tail caller whose return did not follow its callee's is dead, wherever this call is. */
	if (top->flags & FRAME_TAIL_DONE)
		c.d--;
	bpf_loop(FNPROF_MAX_DEPTH, dead_step, &c, 0);
	count_drops(DROP_ABANDONED, ts->depth - c.d);
	ts->depth = c.d;
	ts->over = 0;
	return c.d;
}

/*
 * Every call that enters is counted, whatever becomes of its return: a
 * report then never shows 0 calls of a function that was called. With
 * --entry-only (returned) that is all that is kept.
 */
static __always_inline void count_entry(__u32 slot, __u32 id, bool returned)
{
	__u32 idx = stats_idx(slot, id);
	struct fn_stats *st;

	st = id < nr_funcs ? bpf_map_lookup_elem(&stats, &idx) : NULL;
	if (!st) {
		count_drop(DROP_NO_STATS);
		return;
	}
	__sync_fetch_and_add(&st->entered, 1);
	if (returned)
		__sync_fetch_and_add(&st->calls, 1);
}

/* dynamic_slots: the slot of process tgid, taken at its first call; 0 when none is free. */
static __always_inline __u32 take_slot(__u32 tgid)
{
	struct proc_info pi = {}, *p = bpf_map_lookup_elem(&procs, &tgid);

	if (p)
		return p->slot;
	if (bpf_map_pop_elem(&free_slots, &pi.slot))
		return 0;
	pi.fork_ns = bpf_ktime_get_ns();
	pi.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(pi.comm, sizeof(pi.comm));
	if (pi.slot < nr_slots && !bpf_map_update_elem(&procs, &tgid, &pi, BPF_NOEXIST))
		return pi.slot;
	/* Another thread of the process was first: its slot stands, this one goes back. */
	if (pi.slot < nr_slots)
		bpf_map_push_elem(&free_slots, &pi.slot, 0);
	p = bpf_map_lookup_elem(&procs, &tgid);
	return p ? p->slot : 0;
}

/*
 * Whether an entry probe with this cookie counts the call: its process's, and
 * not paused. System-wide, fnprof's own calls do not count, and with dynamic
 * slots *slot becomes the process's own.
 */
static __always_inline bool entry_counts(__u32 cookie, __u32 *slot)
{
	if (!target_tgid && !(cookie & FNPROF_COOKIE_SELF)) {
		__u32 tgid = current_tgid();

		if (tgid == fnprof_tgid)
			return false;
		if (dynamic_slots)
			*slot = take_slot(tgid);
	} else if (!links_per_process && proc_slot(current_tgid()) != (int)*slot) {
		return false;
	}
	if (*slot >= nr_slots)
		return false;
	if (paused && !(cookie & FNPROF_COOKIE_SELF)) {
		__sync_fetch_and_add(&paused_calls, 1);
		return false;
	}
	return true;
}

/* --slow: each slow call's record (slow_enter, slow_emit, slow_block_begin/end). */
#include "slow.bpf.h"

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

SEC("uprobe")
int BPF_KPROBE(fn_entry)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 d, i, id = cookie & FNPROF_COOKIE_ID_MASK;
	__u32 slot = cookie >> FNPROF_COOKIE_SLOT_SHIFT & FNPROF_COOKIE_SLOT_MASK;
	struct thread_state *ts;
	struct fn_frame *f;

	if (!entry_counts(cookie, &slot))
		return 0;
	count_entry(slot, id, cookie & FNPROF_COOKIE_ENTRY_ONLY);
	if (cookie & FNPROF_COOKIE_ENTRY_ONLY)
		return 0;
	ts = probe_thread(ctx, true);
	if (!ts) {
		count_drop(DROP_NO_STATE);
		return 0;
	}
	if (ts->gen != generation) {
		count_drops(DROP_DETACHED, ts->depth);
		ts->gen = generation;
		ts->depth = 0;
		ts->over = 0;
	}
	/* Before this call's start: the time off the CPU of a switch back in not seen is its callers'. */
	if (ts->out_ns)
		switched_in_unseen(ts);
	d = stack_switching ? ts->depth : drop_dead_frames(ts, PT_REGS_SP(ctx), id);
	if (d >= FNPROF_MAX_DEPTH) {
		/*
		 * The kernel keeps at most 64 pending uretprobe returns per task
		 * (MAX_URETPROBE_DEPTH): this call's return will never be seen.
		 * Count it and push nothing, so that the outer 64 still match.
		 */
		count_drop(DROP_DEPTH);
		ts->over++;
		return 0;
	}
	f = &ts->frames[frame_idx(d)];
	if (nr_events) {
		/* Outside any traced call the thread's reading is stale: restart it. */
		ctr_read(ts, d > 0);
		snapshot_counters(ts, d, f);
	}
	f->vcsw0 = ts->vcsw_cum;
	f->ivcsw0 = ts->ivcsw_cum;
	f->mig0 = ts->mig_cum;
	f->sys0 = ts->sys_cum;
	f->child_calls = 0;
	f->desc_calls = 0;
	f->tail_hits0 = ts->tail_hits_cum;
	f->child_tail_hits = 0;
	f->tail_jmps0 = ts->tail_jmps_cum;
	f->child_tail_jmps = 0;
	f->id = id;
	f->slot = slot;
	f->flags = (cookie & FNPROF_COOKIE_URET ? FRAME_URET : 0) |
		   (cookie & FNPROF_COOKIE_ENTRY_JMP ? FRAME_IN_TAIL | FRAME_JMP_AT_ENTRY : 0);
	f->sp = PT_REGS_SP(ctx);
	/* Marked here: what tells its callee's return from another call of the callee (as tail_jump). */
	if (cookie & FNPROF_COOKIE_ENTRY_JMP)
		note_return(f, f->sp);
	/* The kernel has set the trap's ip back to the probed address, the function's. */
	f->ip = PT_REGS_IP(ctx);
	f->probe_off = 0;
	f->probe_off_runq = 0;
	f->cpu = bpf_get_smp_processor_id();
	f->runq0 = ts->runq_cum;
	f->blocked0 = ts->blocked_cum;
	f->child_wall = 0;
	if (slow_ns)
		slow_enter(ts, d, f);
	/* Outermost activation of this function? Only those count for CPU%. */
	f->outer = 1;
	for (i = 0; i < FNPROF_MAX_DEPTH && i < d; i++) {
		if (ts->frames[i].id == id) {
			f->outer = 0;
			break;
		}
	}
	ts->depth = d + 1;
	/* Last, so that the work above is not part of the measured interval. */
	trap_reset(ts);
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

struct match_ctx {
	struct thread_state *ts;
	__u32 d, id;
	__u64 sp;
	int exact;
};

/* One step of the search below, from the top of the stack down. */
static long match_step(__u32 i, struct match_ctx *m)
{
	__u32 j = m->d - 1 - i;
	struct fn_frame *f;

	if (j >= FNPROF_MAX_DEPTH)
		return 1;
	f = &m->ts->frames[j];
	if (f->id != m->id)
		return 0;
	if (f->sp + ARCH_RET_ADDR_BYTES == m->sp) {
		m->exact = j;
		return 1;
	}
	return 0;
}

/*
 * Index of the frame that this return closes: the topmost frame of function
 * id whose entry stack pointer is just below the return's (the return address
 * was popped). Frames above it were abandoned by longjmp or unwinding.
 * Without an exact stack-pointer match, none: the return is of a call that
 * has no frame (deeper than FNPROF_MAX_DEPTH, or entered before the probes),
 * and closing another activation of the function would time it wrongly.
 */
static __always_inline int match_frame(struct thread_state *ts, __u32 d, __u32 id, __u64 sp)
{
	struct match_ctx m = { .ts = ts, .d = d, .id = id, .sp = sp, .exact = -1 };
	struct fn_frame *top = &ts->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)];

	/* The common case: the top frame is the one returning. */
	if (top->id == id && top->sp + ARCH_RET_ADDR_BYTES == sp)
		return d - 1;
	bpf_loop(d, match_step, &m, 0);
	return m.exact;
}

struct shift_ctx {
	struct thread_state *ts;
	struct thread_ctrs *tc;
	__u32 from;
};

/* Moves frame from + i + 1 down by one: closing a frame under those of other stacks. */
static long shift_step_from(__u32 i, struct shift_ctx *c)
{
	__u32 j = c->from + i;

	if (j + 1 >= FNPROF_MAX_DEPTH)
		return 1;
	c->ts->frames[j & (FNPROF_MAX_DEPTH - 1)] = c->ts->frames[(j + 1) & (FNPROF_MAX_DEPTH - 1)];
	if (c->tc)
		c->tc->frames[j & (FNPROF_MAX_DEPTH - 1)] = c->tc->frames[(j + 1) & (FNPROF_MAX_DEPTH - 1)];
	return 0;
}

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

static __always_inline void add_counters(struct fn_stats *st, const struct call *c)
{
	__u32 e;

	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		if (e >= nr_events)
			break;
		__sync_fetch_and_add(&st->ctr[e], c->ctr[e]);
		__sync_fetch_and_add(&st->ctr_self[e], c->ctr_self[e]);
		if (c->scaled)
			__sync_fetch_and_add(&st->ctr_scaled[e], 1);
	}
}

static __always_inline void account(__u32 slot, __u32 id, const struct call *c, const struct fn_frame *f)
{
	__u32 idx = stats_idx(slot, id);
	struct fn_stats *st;
	__u64 b;

	if (id >= nr_funcs) {
		count_drop(DROP_NO_STATS);
		return;
	}
	st = bpf_map_lookup_elem(&stats, &idx);
	if (!st) {
		count_drop(DROP_NO_STATS);
		return;
	}
	/* Atomic: a preempted handler may share this CPU's slot with another. */
	__sync_fetch_and_add(&st->calls, 1);
	__sync_fetch_and_add(&st->wall_sum, c->wall);
	__sync_fetch_and_add(&st->runq_sum, c->runq);
	__sync_fetch_and_add(&st->blocked_sum, c->blocked);
	__sync_fetch_and_add(&st->self_sum, c->self);
	if (f->outer) {
		__sync_fetch_and_add(&st->outer_calls, 1);
		__sync_fetch_and_add(&st->outer_wall, c->wall);
		__sync_fetch_and_add(&st->outer_oncpu, c->oncpu);
	}
	if (f->desc_calls) {
		__sync_fetch_and_add(&st->child_calls, f->child_calls);
		__sync_fetch_and_add(&st->desc_calls, f->desc_calls);
	}
	if (c->tail_hits) {
		__sync_fetch_and_add(&st->tail_hits_inside, c->tail_hits);
		__sync_fetch_and_add(&st->tail_hits_self, c->tail_hits_self);
	}
	if (c->tail_jmps) {
		__sync_fetch_and_add(&st->tail_jmps_inside, c->tail_jmps);
		__sync_fetch_and_add(&st->tail_jmps_self, c->tail_jmps_self);
	}
	/* A jmp probe's hit: not when the entry's own trap marked it. */
	if ((f->flags & (FRAME_IN_TAIL | FRAME_JMP_AT_ENTRY)) == FRAME_IN_TAIL)
		__sync_fetch_and_add(&st->tail_jmp_calls, 1);
	if (c->runq)
		__sync_fetch_and_add(&st->preempted, 1);
	if (f->cpu != bpf_get_smp_processor_id())
		__sync_fetch_and_add(&st->migrated, 1);
	if (c->vcsw | c->ivcsw | c->mig | c->sys) {
		__sync_fetch_and_add(&st->vcsw, c->vcsw);
		__sync_fetch_and_add(&st->ivcsw, c->ivcsw);
		__sync_fetch_and_add(&st->migrations, c->mig);
		__sync_fetch_and_add(&st->sys_sum, c->sys);
	}
	if (nr_events)
		add_counters(st, c);
	if (!st->wall_min || c->wall < st->wall_min)
		st->wall_min = c->wall;
	if (c->wall > st->wall_max)
		st->wall_max = c->wall;
	b = hist_bucket(c->wall);
	/* Keep the verifier's view of the bound on the register used for the access. */
	__asm__ volatile("" : "+r"(b));
	if (b < FNPROF_HIST_BUCKETS)
		__sync_fetch_and_add(&st->hist[b], 1);
}

/*
 * Per-call counts of frame k: the thread's totals since entry; the parent
 * (when it is one) learns what its child used.
 */
static __always_inline void call_counters(struct thread_state *ts, struct thread_ctrs *tc, __u32 k,
					  bool parent, struct call *c)
{
	struct ctr_frame *cf, *pf;
	__u32 e;

	c->scaled = ts->scaled_seq != ts->frames[frame_idx(k)].scaled0;
	if (!tc) {
		count_drop(DROP_CTR_READ);
		return;
	}
	cf = &tc->frames[frame_idx(k)];
	pf = &tc->frames[frame_idx(k - 1)];
	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		if (e >= nr_events)
			break;
		c->ctr[e] = ts->ctr_cum[e] - cf->ctr0[e];
		c->ctr_self[e] = c->ctr[e] > cf->child_ctr[e] ? c->ctr[e] - cf->child_ctr[e] : 0;
		if (parent)
			pf->child_ctr[e] += c->ctr[e];
	}
}

/*
 * Whether a thread's frames still take returns: those of the current
 * generation, and while paused those of the one before (pushed before the
 * probes were paused, while their handlers are not taken out yet).
 */
static __always_inline bool gen_live(const struct thread_state *ts)
{
	return ts->gen == generation || (paused && ts->gen + 1 == generation);
}

/*
 * A return without its entry; while paused (burst mode) the entry was left
 * out on purpose, and in a thread the pool had no room for, it was counted
 * as not timed.
 */
static __always_inline void count_orphan(void)
{
	struct thread_ref *ref;

	if (paused)
		return;
	/* System-wide: fnprof's own calls were left out at entry, not lost. */
	if (!target_tgid && current_tgid() == fnprof_tgid)
		return;
	ref = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL, 0);
	if (!ref || !ref->refused)
		count_drop(DROP_ORPHAN_RET);
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
 * The return of a traced call: a uretprobe (after ret popped the return
 * address) or, at_ret, a probe on a ret instruction (before it: the stack
 * pointer is as at entry). Two programs, so that neither needs the attach
 * cookie to tell which it is; a third (tail) for the probes past the rets,
 * which reads it (FNPROF_COOKIE_TAIL, _UNTIMED).
 */
static __always_inline int fn_return(struct pt_regs *ctx, bool at_ret, bool tail, __u64 cookie)
{
	__u64 now = bpf_ktime_get_ns(), off;
	struct fn_frame *f, *top, *parent = NULL;
	struct thread_ctrs *tc = NULL;
	struct thread_state *ts;
	struct call c;
	__u32 d, id;
	__u64 sp;
	int k;

	if (!links_per_process && proc_slot(current_tgid()) < 0)
		return 0;
	ts = probe_thread(ctx, false);
	/*
	 * Burst mode: a call entered before the probes were last paused is not an
	 * orphan; one entered just before the pause still returns to its frame.
	 */
	if (ts && !gen_live(ts))
		return 0;
	if (!ts || !ts->depth) {
		if (cookie & FNPROF_COOKIE_TAIL)
			count_tail_hit(cookie, 1);
		else
			count_orphan();
		return 0;
	}
	/* Running, so switched back in: sched_switch did not see it. */
	if (ts->out_ns)
		switched_in_unseen(ts);
	if (nr_events)
		ctr_read(ts, true);
	d = ts->depth;
	sp = PT_REGS_SP(ctx) + (at_ret ? ARCH_RET_ADDR_BYTES : 0);
	top = &ts->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)];
	if (tail) {
		id = cookie & FNPROF_COOKIE_ID_MASK;
		k = tail_frame(ctx, ts, top, d, sp, cookie, &id, now);
		if (k == -1)
			return 0;
	} else if (!stack_switching && top->sp + ARCH_RET_ADDR_BYTES == sp) {
		/*
		 * The common case, without the cookie (a helper call): entries drop
		 * the frames at or below their stack pointer, so on one stack no two
		 * frames share one but a tail call's (whose callee returns first),
		 * and the frame entered just below this return's stack pointer is
		 * the call returning.
		 */
		k = d - 1;
		id = top->id;
	} else {
		id = bpf_get_attach_cookie(ctx) & FNPROF_COOKIE_ID_MASK;
		k = match_frame(ts, d, id, sp);
	}
	if (k < 0 || k >= FNPROF_MAX_DEPTH) {
		/* The return of a call beyond the deepest frame (--exit=ret): already counted at entry. */
		if (ts->over)
			ts->over--;
		else
			count_orphan();
		return 0;
	}
	/*
	 * A probe at this ret that counted a hit before this one closed the call
	 * (their order is the kernel's): the trap is this call's exit.
	 */
	/* k < d <= FNPROF_MAX_DEPTH, a power of two: the mask only shows the verifier the bound. */
	k &= FNPROF_MAX_DEPTH - 1;
	f = &ts->frames[k];
	/* Taken back only if it is the count's last step and after this call's start. */
	if (at_ret && tail_sites && note_trap(ctx, ts, now, cookie ?: bpf_get_attach_cookie(ctx), TRAP_CLOSED) & TRAP_HIT &&
	    ts->tail_hits_cum == ts->trap_hits && ts->tail_hits_cum > f->tail_hits0) {
		ts->trap_flags &= ~TRAP_HIT;
		ts->tail_hits_cum--;
		count_tail_hit(ts->trap_hit_cookie, -1);
	}
	if ((__u32)k + 1 < d && !stack_switching)
		count_drops(DROP_ABANDONED, d - k - 1);
	if (k > 0)
		parent = &ts->frames[(k - 1) & (FNPROF_MAX_DEPTH - 1)];
	/* On several stacks, the frame below is the caller only if it is on this stack, above. */
	if (stack_switching && parent && parent->sp <= f->sp)
		parent = NULL;
	/* Time switched out before the function's first instruction ran is the entry probes'. */
	off = f->probe_off;
	/* A paired call's start may lie ahead (fn_mid): a reading under 0 is taken as 0. */
	c.wall = now > f->start_ns ? now - f->start_ns : 0;
	c.wall -= off < c.wall ? off : c.wall;
	c.runq = ts->runq_cum - f->runq0;
	c.blocked = ts->blocked_cum - f->blocked0;
	/* The time switched out in its entry probe is off its wall, so off these too. */
	off = f->probe_off_runq;
	c.runq -= off < c.runq ? off : c.runq;
	off = f->probe_off - f->probe_off_runq;
	c.blocked -= off < c.blocked ? off : c.blocked;
	off = c.runq + c.blocked;
	c.oncpu = c.wall - (off > c.wall ? c.wall : off);
	c.self = c.wall > f->child_wall ? c.wall - f->child_wall : 0;
	c.vcsw = ts->vcsw_cum - f->vcsw0;
	c.ivcsw = ts->ivcsw_cum - f->ivcsw0;
	c.mig = ts->mig_cum - f->mig0;
	c.sys = ts->sys_cum - f->sys0;
	c.tail_hits = ts->tail_hits_cum - f->tail_hits0;
	c.tail_hits_self = c.tail_hits > f->child_tail_hits ? c.tail_hits - f->child_tail_hits : 0;
	c.tail_jmps = ts->tail_jmps_cum - f->tail_jmps0;
	c.tail_jmps_self = c.tail_jmps > f->child_tail_jmps ? c.tail_jmps - f->child_tail_jmps : 0;
	c.scaled = false;
	if (nr_events) {
		tc = ctr_frames(ts);
		call_counters(ts, tc, k, parent != NULL, &c);
	}
	account(f->slot, id, &c, f);
	if (cookie & FNPROF_COOKIE_UNTIMED)
		count_untimed(f->slot, id);
	if (slow_ns && c.wall >= slow_ns)
		slow_emit(ctx, ts, k, f, &(struct slow_figures){ .wall = c.wall, .oncpu = c.oncpu, .runq = c.runq,
			  .blocked = c.blocked, .now = now, .id = id, .at_ret = at_ret });
	if (parent) {
		parent->child_wall += c.wall;
		parent->child_calls++;
		parent->desc_calls += 1 + f->desc_calls;
		parent->child_tail_hits += c.tail_hits;
		parent->child_tail_jmps += c.tail_jmps;
	}
	/* A uretprobe's ip is the return address: a switch there on the way back is the caller's. */
	ts->ret_ip = at_ret ? 0 : PT_REGS_IP(ctx);
	ts->ret_ns = now;
	ts->ret_sp = f->sp;
	if (stack_switching && (__u32)k + 1 < d) {
		/* The frames above are other stacks' calls, still running: keep them. */
		bpf_loop(d - k - 1, shift_step_from, &(struct shift_ctx){ .ts = ts, .tc = tc, .from = k }, 0);
		ts->depth = d - 1;
		return 0;
	}
	/* A tail caller's return comes next, before the thread runs on (see FRAME_TAIL_DONE). */
	if (parent && parent->sp == f->sp)
		parent->flags |= FRAME_TAIL_DONE;
	ts->depth = k;
	/* The calls beyond the deepest frame were above this one: they are over. */
	ts->over = 0;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(fn_exit)
{
	return fn_return(ctx, false, false, 0);
}

/*
 * SITE_PAIR: the twin of a single-stepped entry, on the next instruction,
 * itself single-stepped. From the entry's timestamp to this one is one
 * step (A, with the entry's return path and this probe's trap); from here
 * to the return, another step and the function (B). The step's cost moves
 * by microseconds from one moment to the next here, but two steps of one
 * call, microseconds apart, cost the same: B - A is the function and a
 * constant the calibration measures. The frame's start is moved so that
 * the return reads B - A + PAIR_OFFSET_NS, without the time switched out
 * inside either probe (off_A now, the rest at the return).
 */
SEC("uprobe")
int BPF_KPROBE(fn_mid)
{
	__u64 now = bpf_ktime_get_ns(), a, off;
	__u32 cookie = bpf_get_attach_cookie(ctx), id = cookie & FNPROF_COOKIE_ID_MASK;
	struct thread_state *ts = probe_thread(ctx, false);
	struct fn_frame *f;

	if (!ts || !ts->depth || !gen_live(ts))
		return 0;
	/* off_A below must have the entry probe's time switched out. */
	if (ts->out_ns)
		switched_in_unseen(ts);
	f = &ts->frames[(ts->depth - 1) & (FNPROF_MAX_DEPTH - 1)];
	if (f->id != id || f->flags & FRAME_PAIRED || now < f->start_ns)
		return 0;
	f->flags |= FRAME_PAIRED | (cookie & FNPROF_COOKIE_AT_RET ? FRAME_PAIR_AT_RET : 0);
	off = f->probe_off;
	a = now - f->start_ns;
	/* return - start' - (off_A + off_B) = (B - off_B) - (A - off_A) + PAIR_OFFSET_NS */
	f->start_ns = now + a - 2 * off - PAIR_OFFSET_NS;
	return 0;
}

/* --exit=ret: a uprobe on each ret instruction of the function. */
SEC("uprobe")
int BPF_KPROBE(fn_exit_ret)
{
	return fn_return(ctx, true, false, 0);
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

/*
 * --exit=ret, past the function's rets: its followed tail jmps (marking its
 * frame), the exits of the functions it tail-calls (the call ends when the
 * callee returns, at the stack pointer the function's own ret would have
 * had), and tail jumps to functions not known (the call ends at the jmp,
 * counted untimed beyond it).
 */
SEC("uprobe")
int BPF_KPROBE(fn_exit_tail)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	if (cookie & FNPROF_COOKIE_JMP)
		return tail_jump(ctx, cookie);
	return fn_return(ctx, true, true, cookie);
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

/* Go programs: calls kept per goroutine (go_entry, go_exit_ret, go_gone; go_on_switch). */
#include "go.bpf.h"

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cpu_thread *cpu = this_cpu_thread();
	struct thread_state *ts;
	struct thread_ref *ref;
	__u64 now = 0;

	if (go_calls)
		go_on_switch(prev, next);
	if (maybe_traced(prev->tgid)) {
		/* prev is the thread this CPU's note is of, if it has one (else the note is cleared). */
		if (cpu && cpu->idx1 && cpu->regs == (__u64)bpf_task_pt_regs(prev))
			ts = pool_state(cpu->idx1);
		else
			ts = task_state(prev);
		if (ts && ts->depth) {
			/* sched_info, and the run queue's clock through the task's CFS queue (group scheduling). */
			bool si = bpf_core_field_exists(prev->sched_info) && bpf_core_field_exists(prev->se.cfs_rq) &&
				  bpf_core_field_exists(struct cfs_rq, rq);

			if (si && !task_arrival_off) {
				task_pcount_off = bpf_core_field_offset(struct task_struct, sched_info.pcount);
				task_arrival_off = bpf_core_field_offset(struct task_struct, sched_info.last_arrival);
			}
			if (ts->out_ns)
				switched_in_late(ts, si, si ? prev->sched_info.pcount : 0,
						 si ? prev->sched_info.last_arrival : 0);
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
		}
	}
	if (!maybe_traced(next->tgid)) {
		if (cpu)
			cpu->regs = 0;
		return 0;
	}
	ref = bpf_task_storage_get(&threads, next, NULL, 0);
	ts = ref_state(ref);
	if (hide_switch_in && cpu && ts && ts->out_ns && ++cpu->hidden % hide_switch_in == 0) {
		cpu->regs = 0;
		return 0;
	}
	if (cpu) {
		cpu->regs = (__u64)bpf_task_pt_regs(next);
		cpu->idx1 = ref ? ref->idx1 : 0;
	}
	if (!ts || !ts->out_ns)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	switched_in(ts, now - ts->out_ns);
	if (nr_events)
		ctr_read(ts, false);
	return 0;
}

/*
 * User vs system time (with -e): on-CPU time between sys_enter and sys_exit of
 * a thread inside a traced call. Page faults and interrupts count as user.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	struct thread_state *ts;

	if (!maybe_traced(current_tgid()))
		return 0;
	ts = task_state(bpf_get_current_task_btf());
	if (!ts || !ts->depth)
		return 0;
	ts->sys_off0 = ts->runq_cum + ts->blocked_cum;
	ts->sys_start = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	struct thread_state *ts;
	__u64 now, off;

	if (!maybe_traced(current_tgid()))
		return 0;
	ts = task_state(bpf_get_current_task_btf());
	if (!ts || !ts->sys_start)
		return 0;
	now = bpf_ktime_get_ns();
	off = ts->runq_cum + ts->blocked_cum - ts->sys_off0;
	if (now - ts->sys_start > off)
		ts->sys_cum += now - ts->sys_start - off;
	ts->sys_start = 0;
	return 0;
}

/*
 * --follow-forks: a new process forked from a traced one gets a statistics
 * slot before it runs, and user space is told to attach its probes (calls it
 * makes before that are not seen). Threads stay in their process's slot.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	struct proc_info pi = { .ppid = parent->tgid, .fork_ns = bpf_ktime_get_ns() };
	__u32 tgid = child->tgid, *e;

	if (tgid == pi.ppid || (self_tgid && pi.ppid == self_tgid))
		return 0;
	if (pi.ppid != target_tgid && !bpf_map_lookup_elem(&procs, &pi.ppid))
		return 0;
	if (bpf_map_pop_elem(&free_slots, &pi.slot) || pi.slot >= nr_slots ||
	    bpf_map_update_elem(&procs, &tgid, &pi, BPF_ANY)) {
		count_drop(DROP_FORK_LOST);
		return 0;
	}
	/* Without room here, user space still finds the child in procs, a little later. */
	e = bpf_ringbuf_reserve(&forks, sizeof(*e), 0);
	if (e) {
		*e = tgid;
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

/*
 * A thread that exits gives its state back to the pool. It runs no more user
 * code, so no probe of its can follow; calls still open (exit() or
 * pthread_exit() inside a traced function) never return, and are counted.
 * Every exiting thread with a state, whatever its process: the states of a
 * process seen under another pid (a pid namespace) come back too.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	struct thread_ref *ref = bpf_task_storage_get(&threads, task, NULL, 0);
	struct thread_state *ts = ref_state(ref);
	struct cpu_thread *cpu;
	__u32 idx;

	if (!ref || !ts)
		return 0;
	if (ts->depth)
		count_drops(ts->gen == generation ? DROP_ABANDONED : DROP_DETACHED, ts->depth);
	/* Counted: user space, which reads the pool for the calls still open, must not count them again. */
	ts->depth = 0;
	idx = ts->idx;
	ref->idx1 = 0;
	cpu = this_cpu_thread();
	if (cpu)
		cpu->idx1 = 0;
	/* The queue's lock may refuse (rqspinlock): try again once, then count the loss. */
	if (bpf_map_push_elem(&free_tstates, &idx, 0) && bpf_map_push_elem(&free_tstates, &idx, 0))
		count_drop(DROP_POOL_LOST);
	return 0;
}
