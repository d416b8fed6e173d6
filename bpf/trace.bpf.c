// SPDX-License-Identifier: GPL-2.0
/*
 * Function tracing: a uprobe at each traced function's entry pushes a frame on
 * the thread's stack of active calls, the uretprobe pops it and aggregates
 * wall, on-CPU, run-queue, blocked and self time into per-CPU maps.
 * sched_switch accounts the time a thread inside a traced call spends switched
 * out. Nothing per call leaves the kernel.
 *
 * This file holds the programs and the thread's stack of frames; each concern
 * beside them has a header, included where what it needs is defined:
 *   figures.h       a call's figures from its frame (plain C, unit-tested)
 *   counters.bpf.h  perf counters per call (-e)
 *   tailcall.bpf.h  calls that end in a tail jump, and probes past the rets
 *   slow.bpf.h      --slow's records
 *   sched.bpf.h     time off the CPU: sched_switch's bookkeeping
 *   go.bpf.h        Go's calls, kept per goroutine
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
#include "figures.h"
#include "compat.bpf.h"

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
/* The same per process slot (a -p list's bursts price each process's own). */
volatile __u64 paused_calls_slot[FNPROF_PAUSED_SLOTS];

/*
 * System-wide sessions: the ret exit's bias less the uretprobe's, from the
 * calibration (user space writes it after each round). A session's function
 * has the uretprobe's bias subtracted from every call; a call closed by ret
 * probes is moved by this first, so that it is right for those too.
 */
volatile __s64 session_ret_shift_ns = 0;

/*
 * Thread states live in a pool: a thread takes one at its first traced call
 * (its index kept in task storage) and gives it back when it exits. Array
 * lookups are inlined by the JIT, where a task-storage lookup is a helper
 * call; with the per-CPU note of the running thread (`running`), the probe
 * handlers find their thread's state without any.
 */
SIZED_ARRAY(tstates, struct thread_state);

/* Pool indexes not in use. */
FREE_INDEXES(free_tstates);

THREAD_MAP(threads, struct thread_ref);

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

/* --follow-forks: the slots not yet taken, 1..nr_slots-1 in order. */
FREE_INDEXES(free_slots);

/* --follow-forks: the pid of each fork child, to wake user space at once. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FNPROF_RB_MIN);   /* set by user space */
} forks SEC(".maps");

/* System-wide sessions: the exit chosen for each process (fn_session); sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exit_choice_val);
} exit_choices SEC(".maps");

/* 2 * nr_slots * nr_funcs entries: [epoch][slot][function id]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fn_stats);
} stats SEC(".maps");

PERCPU_COUNTERS(drops, DROP_NR);

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

#ifdef FNPROF_COMPAT
/*
 * The compat build's cookie of the probe at k (probe_files): from the
 * object's build-id and the file offset of k's address, in process
 * k->tgid's slot; kept in probe_cookies for the next call. NONE when the
 * kernel cannot tell them (no build-id, the address space's lock taken) or
 * the object is not one of the probes'.
 */
static __noinline __u64 cookie_by_file(struct pt_regs *ctx, struct probe_addr *k)
{
	struct bpf_stack_build_id b = {};
	struct probe_file f = {};
	__u64 *c, cookie;
	int slot;

	if (bpf_get_stack(ctx, &b, sizeof(b), BPF_F_USER_STACK | BPF_F_USER_BUILD_ID) < (long)sizeof(b) ||
	    b.status != BPF_STACK_BUILD_ID_VALID)
		return FNPROF_COOKIE_NONE;
	__builtin_memcpy(f.build_id, b.build_id, sizeof(f.build_id));
	f.offset = b.offset;
	c = bpf_map_lookup_elem(&probe_files, &f);
	slot = c ? proc_slot(k->tgid) : -1;
	if (slot < 0)
		return FNPROF_COOKIE_NONE;
	cookie = *c | (__u64)slot << FNPROF_COOKIE_SLOT_SHIFT;
	bpf_map_update_elem(&probe_cookies, k, &cookie, BPF_ANY);
	return cookie;
}
#endif

/*
 * A probe's cookie: the attach cookie, or the compat build's entry for the
 * probed address (a uprobe program sees the trap's address as its ip), or
 * for its object's build-id and offset; FNPROF_COOKIE_NONE when there is
 * none (counted by the caller).
 */
static __always_inline __u64 attach_cookie(struct pt_regs *ctx)
{
#ifdef FNPROF_COMPAT
	struct probe_addr k = { .tgid = bpf_get_current_pid_tgid() >> 32, .addr = PT_REGS_IP(ctx) };
	__u64 *c = bpf_map_lookup_elem(&probe_cookies, &k);

	return c ? *c : cookie_by_file(ctx, &k);
#else
	return bpf_get_attach_cookie(ctx);
#endif
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

/* Thread task's entry in `threads`, NULL if it has none. */
static __always_inline struct thread_ref *task_ref(struct task_struct *task)
{
#ifdef FNPROF_COMPAT
	__u32 tid = task->pid;

	return bpf_map_lookup_elem(&threads, &tid);
#else
	return bpf_task_storage_get(&threads, task, NULL, 0);
#endif
}

/* The current thread's entry in `threads`; with create, made if it has none (NULL: no room). */
static __always_inline struct thread_ref *current_ref(bool create)
{
#ifdef FNPROF_COMPAT
	__u32 tid = bpf_get_current_pid_tgid();
	struct thread_ref *ref = bpf_map_lookup_elem(&threads, &tid), fresh = {};

	if (ref || !create)
		return ref;
	/* A full hash refuses it: the caller counts the call (DROP_NO_STATE). */
	bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&threads, &tid);
#else
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
#endif
}

/* Thread task exits: its entry goes (task storage goes with the task itself). */
static __always_inline void task_ref_gone(struct task_struct *task)
{
#ifdef FNPROF_COMPAT
	__u32 tid = task->pid;

	bpf_map_delete_elem(&threads, &tid);
#endif
}

static __always_inline struct thread_state *task_state(struct task_struct *task)
{
	return ref_state(task_ref(task));
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
#ifdef FNPROF_COMPAT
	/* No note of the running thread: sched_switch, which keeps it, is not loaded. */
	ref = current_ref(create);
	if (!ref)
		return NULL;
	return ref->idx1 ? pool_state(ref->idx1) : create ? take_state(ref) : NULL;
#endif
	if (c->regs == (__u64)regs && c->idx1)
		return pool_state(c->idx1);
	ref = current_ref(create);
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

/* Thread ts's entry in a table parallel to the pool (tctrs, tslow): at its own index. */
static __always_inline void *thread_entry(void *table, const struct thread_state *ts)
{
	__u32 idx = ts->idx;

	return bpf_map_lookup_elem(table, &idx);
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
#ifdef FNPROF_COMPAT
	/* FNPROF_MAX_FUNCS: any function's (a return's cookie is not known). */
	if (f->id != m->id && m->id != FNPROF_MAX_FUNCS)
		return 0;
#else
	if (f->id != m->id)
		return 0;
#endif
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
	FNPROF_LOOP(d, FNPROF_MAX_DEPTH, match_step, &m);
	return m.exact;
}

/* -e: perf counters per call (ctr_read, snapshot_counters, call_counters). */
#include "counters.bpf.h"
/* Tail calls and the probes past the rets (tail_caller, tail_frame, trap_closes, tail_jump). */
#include "tailcall.bpf.h"

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
	FNPROF_LOOP(FNPROF_MAX_DEPTH, FNPROF_MAX_DEPTH, dead_step, &c);
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
		if (*slot < FNPROF_PAUSED_SLOTS)
			__sync_fetch_and_add(&paused_calls_slot[*slot], 1);
		return false;
	}
	return true;
}

/* --slow: each slow call's record (slow_enter, slow_emit, slow_block_begin/end). */
#include "slow.bpf.h"
/* Time off the CPU (switched_in_unseen, switched_out, switched_in; in_entry_probe_of for go.bpf.h). */
#include "sched.bpf.h"

/*
 * Opens frame d of thread ts for a call of id (slot, cookie) whose entry
 * probe has registers ctx: the thread's totals now are where its readings
 * start. Its start time is the caller's to take, last.
 */
static __always_inline struct fn_frame *frame_open(struct pt_regs *ctx, struct thread_state *ts, __u32 d,
						   __u64 cookie, __u32 id, __u32 slot)
{
	struct fn_frame *f = &ts->frames[frame_idx(d)];
	__u32 i;

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
		   (cookie & FNPROF_COOKIE_ENTRY_JMP ? FRAME_IN_TAIL | FRAME_JMP_AT_ENTRY : 0) |
		   (cookie & FNPROF_COOKIE_SESSION_RET ? FRAME_SESSION_RET : 0);
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
	return f;
}

/*
 * The entry of a call whose process counts it (entry_counts), with cookie
 * and slot: counted, and timed from a frame of its own unless the function
 * is entry-only. Whether that frame was opened.
 */
static __always_inline bool call_entry(struct pt_regs *ctx, __u64 cookie, __u32 slot)
{
	__u32 d, id = cookie & FNPROF_COOKIE_ID_MASK;
	struct thread_state *ts;
	struct fn_frame *f;

	count_entry(slot, id, cookie & FNPROF_COOKIE_ENTRY_ONLY);
	if (cookie & FNPROF_COOKIE_ENTRY_ONLY)
		return false;
	ts = probe_thread(ctx, true);
	if (!ts) {
		count_drop(DROP_NO_STATE);
		return false;
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
		return false;
	}
	f = frame_open(ctx, ts, d, cookie, id, slot);
	ts->depth = d + 1;
	/* Last, so that the work above is not part of the measured interval. */
	trap_reset(ts);
	f->start_ns = bpf_ktime_get_ns();
	return true;
}

SEC("uprobe")
int BPF_KPROBE(fn_entry)
{
	__u64 cookie = attach_cookie(ctx);
	__u32 slot = cookie >> FNPROF_COOKIE_SLOT_SHIFT & FNPROF_COOKIE_SLOT_MASK;

#ifdef FNPROF_COMPAT
	if (cookie == FNPROF_COOKIE_NONE) {
		count_drop(DROP_NO_COOKIE);
		return 0;
	}
#endif
	if (entry_counts(cookie, &slot))
		call_entry(ctx, cookie, slot);
	return 0;
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
	if (f->flags & FRAME_SESSION_RET)
		__sync_fetch_and_add(&st->ret_exit_calls, 1);
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
	ref = current_ref(false);
	if (!ref || !ref->refused)
		count_drop(DROP_ORPHAN_RET);
}

/* count_orphan() but, at a ret probe (at_ret), for a session's ret probes (FNPROF_COOKIE_SESSION_RET). */
static __always_inline void count_orphan_at(struct pt_regs *ctx, bool at_ret)
{
#ifdef FNPROF_COMPAT
	/* No sessions on a kernel that takes the compat object (nor the helper). */
	(void)ctx;
	(void)at_ret;
	count_orphan();
#else
	/* The cookie only here: the common path does without the helper call. */
	if (!at_ret || !(bpf_get_attach_cookie(ctx) & FNPROF_COOKIE_SESSION_RET))
		count_orphan();
#endif
}

/*
 * The frame that a return at sp (as at entry) closes, of the d on thread ts;
 * *id becomes its function's. Past the rets (tail), tail_frame()'s answer
 * (-1: a hit counted, nothing more to do); else -1 for none.
 */
static __always_inline int returning_frame(struct pt_regs *ctx, struct thread_state *ts, __u32 d, __u64 sp,
					   bool tail, __u64 cookie, __u32 *id, __u64 now)
{
	struct fn_frame *top = &ts->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)];

	if (tail) {
		*id = cookie & FNPROF_COOKIE_ID_MASK;
		return tail_frame(ctx, ts, top, d, sp, cookie, id, now);
	}
	if (!stack_switching && top->sp + ARCH_RET_ADDR_BYTES == sp) {
		/*
		 * The common case, without the cookie (a helper call): entries drop
		 * the frames at or below their stack pointer, so on one stack no two
		 * frames share one but a tail call's (whose callee returns first),
		 * and the frame entered just below this return's stack pointer is
		 * the call returning.
		 */
		*id = top->id;
		return d - 1;
	}
#ifdef FNPROF_COMPAT
	/* No cookie at a return: the frame is the topmost one entered just below its stack pointer. */
	{
		int k = match_frame(ts, d, FNPROF_MAX_FUNCS, sp);

		*id = k >= 0 ? ts->frames[k & (FNPROF_MAX_DEPTH - 1)].id : 0;
		return k;
	}
#else
	*id = bpf_get_attach_cookie(ctx) & FNPROF_COOKIE_ID_MASK;
	return match_frame(ts, d, *id, sp);
#endif
}

/*
 * Frame k, of the d on thread ts (tc: their counter frames), is closed;
 * parent is its caller's, if any.
 */
static __always_inline void frame_close(struct thread_state *ts, struct thread_ctrs *tc, __u32 k, __u32 d,
					struct fn_frame *parent)
{
	struct fn_frame *f = &ts->frames[k & (FNPROF_MAX_DEPTH - 1)];

	if (stack_switching && k + 1 < d) {
		/* The frames above are other stacks' calls, still running: keep them. */
		FNPROF_LOOP(d - k - 1, FNPROF_MAX_DEPTH, shift_step_from,
			    (&(struct shift_ctx){ .ts = ts, .tc = tc, .from = k }));
		ts->depth = d - 1;
		return;
	}
	/* A tail caller's return comes next, before the thread runs on (see FRAME_TAIL_DONE). */
	if (parent && parent->sp == f->sp)
		parent->flags |= FRAME_TAIL_DONE;
	ts->depth = k;
	/* The calls beyond the deepest frame were above this one: they are over. */
	ts->over = 0;
}

/* A call closed by a session's ret probes: its start moved by session_ret_shift_ns, never past now. */
static __always_inline void session_ret_shift(struct fn_frame *f, __u64 now)
{
	__s64 shift = session_ret_shift_ns;

	f->start_ns = shift > 0 && f->start_ns + shift > now ? now : f->start_ns + shift;
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
	__u64 now = bpf_ktime_get_ns();
	struct fn_frame *f, *parent;
	struct thread_ctrs *tc = NULL;
	struct thread_state *ts;
	struct call c;
	__u32 d, id;
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
			count_orphan_at(ctx, at_ret && !tail);
		return 0;
	}
	/* Running, so switched back in: sched_switch did not see it. */
	if (ts->out_ns)
		switched_in_unseen(ts);
	if (nr_events)
		ctr_read(ts, true);
	d = ts->depth;
	k = returning_frame(ctx, ts, d, PT_REGS_SP(ctx) + (at_ret ? ARCH_RET_ADDR_BYTES : 0), tail, cookie, &id, now);
	if (tail && k == -1)
		return 0;
	if (k < 0 || k >= FNPROF_MAX_DEPTH) {
		/* The return of a call beyond the deepest frame (--exit=ret): already counted at entry. */
		if (ts->over)
			ts->over--;
		else
			count_orphan_at(ctx, at_ret && !tail);
		return 0;
	}
	/* k < d <= FNPROF_MAX_DEPTH, a power of two: the mask only shows the verifier the bound. */
	k &= FNPROF_MAX_DEPTH - 1;
	f = &ts->frames[k];
	if (at_ret && tail_sites)
		trap_closes(ctx, ts, f, now, cookie);
	if ((__u32)k + 1 < d && !stack_switching)
		count_drops(DROP_ABANDONED, d - k - 1);
	parent = call_caller(ts, k, stack_switching);
	if (f->flags & FRAME_SESSION_RET)
		session_ret_shift(f, now);
	call_figures(&c, f, ts, now);
	if (nr_events) {
		tc = thread_entry(&tctrs, ts);
		call_counters(ts, tc, k, parent != NULL, &c);
	}
	account(f->slot, id, &c, f);
	if (cookie & FNPROF_COOKIE_UNTIMED)
		count_untimed(f->slot, id);
	if (slow_ns && c.wall >= slow_ns)
		slow_emit(ctx, ts, k, f, &(struct slow_figures){ .wall = c.wall, .oncpu = c.oncpu, .runq = c.runq,
			  .blocked = c.blocked, .now = now, .id = id, .at_ret = at_ret });
	if (parent)
		call_to_caller(parent, f, &c);
	/* A uretprobe's ip is the return address: a switch there on the way back is the caller's. */
	ts->ret_ip = at_ret ? 0 : PT_REGS_IP(ctx);
	ts->ret_ns = now;
	ts->ret_sp = f->sp;
	frame_close(ts, tc, k, d, parent);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(fn_exit)
{
	return fn_return(ctx, false, false, 0);
}

/*
 * Where task_struct keeps what fn_session reads (self_exec_id, real_parent,
 * tgid), from the kernel's BTF by user space: read at fixed offsets, the
 * uprobe programs carry no relocation against the kernel's types, and load
 * beside the tracepoint programs (trace_load.c).
 */
const volatile __u32 task_exec_id_off = 0;
const volatile __u32 task_exec_id_size = 8;   /* 4 before Linux 5.8 */
const volatile __u32 task_parent_off = 0;
const volatile __u32 task_tgid_off = 0;

/* The sessions' helpers: a kernel that takes the compat object has no sessions. */
#ifndef FNPROF_COMPAT
/* The current task's exec_id: bumped by each exec. */
static __always_inline __u64 current_exec_id(void)
{
	__u64 task = bpf_get_current_task(), id = 0;

	bpf_probe_read_kernel(&id, task_exec_id_size == 4 ? 4 : 8, (void *)(task + task_exec_id_off));
	return id;
}

/* The tgid of the current task's parent, 0 if it cannot be read. */
static __always_inline __u32 parent_tgid(void)
{
	__u64 task = bpf_get_current_task(), parent = 0;
	__u32 tgid = 0;

	if (!bpf_probe_read_kernel(&parent, sizeof(parent), (void *)(task + task_parent_off)) && parent)
		bpf_probe_read_kernel(&tgid, sizeof(tgid), (void *)(parent + task_tgid_off));
	return tgid;
}

/*
 * A fork child that runs its parent's program (no exec since: the same
 * exec_id) takes its parent's uretprobe, as nginx's workers their
 * master's. Not its ret probes: those are the parent's alone, so such a
 * child asks for its own.
 */
static __always_inline bool inherit_choice(struct exit_choice_val *v)
{
	__u32 ptgid = parent_tgid();
	struct exit_choice_val *pc = ptgid ? bpf_map_lookup_elem(&exit_choices, &ptgid) : NULL;

	if (!pc || pc->exec_id != v->exec_id || pc->choice != EXIT_CHOICE_URET)
		return false;
	v->choice = EXIT_CHOICE_URET;
	bpf_get_current_comm(v->comm, sizeof(v->comm));
	return true;
}

/*
 * System-wide uprobe sessions (Linux 6.13+): which exit process tgid's
 * calls take, as user space chose for the program it runs. The first call
 * of a process (or of the program it exec'd) asks: it is marked pending and
 * user space woken (the forks ring buffer), which chooses from the program
 * (exit_choices), and attaches ret probes in that process first where it
 * chooses them.
 */
static __always_inline __u32 exit_choice(__u32 tgid)
{
	struct exit_choice_val v = { .exec_id = current_exec_id() }, *c;

	c = bpf_map_lookup_elem(&exit_choices, &tgid);
	if (c && c->exec_id == v.exec_id)
		return c->choice;
	if (!c && inherit_choice(&v) && !bpf_map_update_elem(&exit_choices, &tgid, &v, BPF_NOEXIST))
		return v.choice;
	bpf_get_current_comm(v.comm, sizeof(v.comm));
	/* A full map asks nothing: the calls are counted as made while choosing. */
	if (!bpf_map_update_elem(&exit_choices, &tgid, &v, c ? BPF_EXIST : BPF_NOEXIST))
		bpf_ringbuf_output(&forks, &tgid, sizeof(tgid), 0);
	return EXIT_CHOICE_PENDING;
}

/*
 * Open frames beyond which a session's return is declined (the call is
 * counted in DROP_DEPTH). The kernel keeps 64 pending returns a thread
 * (MAX_URETPROBE_DEPTH) and checks that before it drops those a longjmp
 * abandoned: kept below it, a longjmp never leaves a thread without
 * uretprobes, so a process that longjmps may take them.
 */
#define SESSION_MAX_OPEN (FNPROF_MAX_DEPTH - 2)

static __always_inline bool session_too_deep(struct pt_regs *ctx, __u32 id)
{
	struct thread_state *ts = probe_thread(ctx, false);

	if (!ts || ts->depth < SESSION_MAX_OPEN)
		return false;
	/* Frames a longjmp left behind are no longer open (the kernel drops their returns at this one's). */
	return (stack_switching ? ts->depth : drop_dead_frames(ts, PT_REGS_SP(ctx), id)) >= SESSION_MAX_OPEN;
}
#endif

/*
 * System-wide entry and return of a function whose exit is chosen per
 * process (exit_choice): the session's return (a uretprobe: no single
 * step) where a hijacked return address is safe, else declined (returns
 * 1), and the ret probes attached in that process alone close the call.
 */
SEC("uprobe")
int BPF_KPROBE(fn_session)
{
#ifdef FNPROF_COMPAT
	/* Never attached: a kernel that takes the compat object has no sessions (nor system-wide -f). */
	return 1;
#else
	__u64 cookie;
	__u32 slot, choice;

	/*
	 * The session's return, told without the kfunc bpf_session_is_return()
	 * (a typed ksym: libbpf would read the kernel's whole BTF, ~5-20 ms,
	 * for every load of this object, before the first probe goes in). At
	 * the entry the kernel has set the ip back to the probed address, the
	 * one bpf_get_func_ip() gives; at the return it is the caller's return
	 * address (handle_trampoline), which is never a function's entry.
	 */
	if (PT_REGS_IP(ctx) != bpf_get_func_ip(ctx))
		return fn_return(ctx, false, false, 0);
	cookie = bpf_get_attach_cookie(ctx);
	slot = cookie >> FNPROF_COOKIE_SLOT_SHIFT & FNPROF_COOKIE_SLOT_MASK;
	if (!entry_counts(cookie, &slot))
		return 1;
	choice = exit_choice(current_tgid());
	if (choice == EXIT_CHOICE_PENDING) {
		/* Entered, never returned: the report counts it, and says why it has no time. */
		count_entry(slot, cookie & FNPROF_COOKIE_ID_MASK, false);
		count_drop(DROP_UNCHOSEN);
		return 1;
	}
	if (choice == EXIT_CHOICE_URET && session_too_deep(ctx, cookie & FNPROF_COOKIE_ID_MASK)) {
		count_entry(slot, cookie & FNPROF_COOKIE_ID_MASK, false);
		count_drop(DROP_DEPTH);
		return 1;
	}
	cookie |= choice == EXIT_CHOICE_URET ? FNPROF_COOKIE_URET : FNPROF_COOKIE_SESSION_RET;
	return !(call_entry(ctx, cookie, slot) && choice == EXIT_CHOICE_URET);
#endif
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
	__u64 cookie64 = attach_cookie(ctx);
	__u32 cookie = cookie64, id = cookie & FNPROF_COOKIE_ID_MASK;
	struct thread_state *ts = probe_thread(ctx, false);
	struct fn_frame *f;

#ifdef FNPROF_COMPAT
	if (cookie64 == FNPROF_COOKIE_NONE)
		return 0;
#endif
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
 * --exit=ret, past the function's rets: its followed tail jmps (marking its
 * frame), the exits of the functions it tail-calls (the call ends when the
 * callee returns, at the stack pointer the function's own ret would have
 * had), and tail jumps to functions not known (the call ends at the jmp,
 * counted untimed beyond it).
 */
SEC("uprobe")
int BPF_KPROBE(fn_exit_tail)
{
	__u64 cookie = attach_cookie(ctx);

	if (cookie & FNPROF_COOKIE_JMP)
		return tail_jump(ctx, cookie);
	return fn_return(ctx, true, true, cookie);
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
		ts = prev_state(cpu, prev);
		if (ts && ts->depth)
			now = switched_out(ctx, preempt, prev, ts);
	}
	if (!maybe_traced(next->tgid)) {
		if (cpu)
			cpu->regs = 0;
		return 0;
	}
	ref = task_ref(next);
	ts = ref_state(ref);
	if (switch_in_hidden(cpu, ts)) {
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
	struct thread_ref *ref = task_ref(task);
	struct thread_state *ts = ref_state(ref);
	struct cpu_thread *cpu;
	__u32 idx;

	if (!ref || !ts) {
		if (ref)
			task_ref_gone(task);
		return 0;
	}
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
	task_ref_gone(task);
	return 0;
}
