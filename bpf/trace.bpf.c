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
#include "bits.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile __u32 target_tgid = 0;  /* 0: any process (probes are pid-filtered anyway) */
const volatile __u32 nr_funcs = 1;

/*
 * Interval buffer in use: user space flips it, then reads and clears the other
 * half of `stats`, so each report's min/max/histogram are its own.
 */
volatile __u32 epoch = 0;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

/* 2 * nr_funcs entries: [epoch][function id]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fn_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DROP_NR);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drops(__u32 reason, __u64 nr)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	if (n)
		__sync_fetch_and_add(n, nr);
}

#define count_drop(reason) count_drops(reason, 1)

static __always_inline bool is_target(void)
{
	return !target_tgid || (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

SEC("uprobe")
int BPF_KPROBE(fn_entry)
{
	struct thread_state *ts;
	struct fn_frame *f;
	__u32 d, i, id;

	if (!is_target())
		return 0;
	ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		count_drop(DROP_NO_STATE);
		return 0;
	}
	d = ts->depth;
	if (d >= FNPROF_MAX_DEPTH) {
		/* Still counted in depth, so that the matching return is recognised. */
		ts->depth = d + 1;
		count_drop(DROP_DEPTH);
		return 0;
	}
	id = bpf_get_attach_cookie(ctx);
	f = &ts->frames[d];
	f->id = id;
	f->sp = PT_REGS_SP(ctx);
	f->cpu = bpf_get_smp_processor_id();
	f->runq0 = ts->runq_cum;
	f->blocked0 = ts->blocked_cum;
	f->child_wall = 0;
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
	f->start_ns = bpf_ktime_get_ns();
	return 0;
}

struct match_ctx {
	struct thread_state *ts;
	__u32 d, id;
	__u64 sp;
	int exact, loose;
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
	if (f->sp + 8 == m->sp) {
		m->exact = j;
		return 1;
	}
	if (m->loose < 0)
		m->loose = j;
	return 0;
}

/*
 * Index of the frame that this return closes: the topmost frame of function
 * id whose entry stack pointer is just below the return's (the return address
 * was popped). Frames above it were abandoned by longjmp or unwinding.
 * Without an exact stack-pointer match, the topmost frame of id is taken.
 */
static __always_inline int match_frame(struct thread_state *ts, __u32 d, __u32 id, __u64 sp)
{
	struct match_ctx m = { .ts = ts, .d = d, .id = id, .sp = sp, .exact = -1, .loose = -1 };
	struct fn_frame *top = &ts->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)];

	/* The common case: the top frame is the one returning. */
	if (top->id == id && top->sp + 8 == sp)
		return d - 1;
	bpf_loop(d, match_step, &m, 0);
	return m.exact >= 0 ? m.exact : m.loose;
}

static __always_inline void account(__u32 id, __u64 wall, __u64 oncpu, __u64 runq,
				    __u64 blocked, __u64 self, struct fn_frame *f)
{
	__u32 idx = (epoch & 1) * nr_funcs + id;
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
	__sync_fetch_and_add(&st->wall_sum, wall);
	__sync_fetch_and_add(&st->runq_sum, runq);
	__sync_fetch_and_add(&st->blocked_sum, blocked);
	__sync_fetch_and_add(&st->self_sum, self);
	if (f->outer) {
		__sync_fetch_and_add(&st->outer_wall, wall);
		__sync_fetch_and_add(&st->outer_oncpu, oncpu);
	}
	if (runq)
		__sync_fetch_and_add(&st->preempted, 1);
	if (f->cpu != bpf_get_smp_processor_id())
		__sync_fetch_and_add(&st->migrated, 1);
	if (!st->wall_min || wall < st->wall_min)
		st->wall_min = wall;
	if (wall > st->wall_max)
		st->wall_max = wall;
	b = hist_bucket(wall);
	/* Keep the verifier's view of the bound on the register used for the access. */
	__asm__ volatile("" : "+r"(b));
	if (b < FNPROF_HIST_BUCKETS)
		__sync_fetch_and_add(&st->hist[b], 1);
}

SEC("uretprobe")
int BPF_KRETPROBE(fn_exit)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 wall, runq, blocked, off, self;
	struct thread_state *ts;
	struct fn_frame *f;
	__u32 d, id;
	int k;

	if (!is_target())
		return 0;
	ts = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), NULL, 0);
	if (!ts || !ts->depth) {
		count_drop(DROP_ORPHAN_RET);
		return 0;
	}
	d = ts->depth;
	if (d > FNPROF_MAX_DEPTH) {
		ts->depth = d - 1;  /* its entry was counted as DROP_DEPTH */
		return 0;
	}
	id = bpf_get_attach_cookie(ctx);
	k = match_frame(ts, d, id, PT_REGS_SP(ctx));
	if (k < 0 || k >= FNPROF_MAX_DEPTH) {
		count_drop(DROP_ORPHAN_RET);
		return 0;
	}
	/* k < d <= FNPROF_MAX_DEPTH, a power of two: the mask only shows the verifier the bound. */
	k &= FNPROF_MAX_DEPTH - 1;
	if ((__u32)k + 1 < d)
		count_drops(DROP_ABANDONED, d - k - 1);
	f = &ts->frames[k];
	wall = now - f->start_ns;
	runq = ts->runq_cum - f->runq0;
	blocked = ts->blocked_cum - f->blocked0;
	off = runq + blocked;
	if (off > wall)
		off = wall;
	self = wall > f->child_wall ? wall - f->child_wall : 0;
	account(id, wall, wall - off, runq, blocked, self, f);
	if (k > 0)
		ts->frames[(k - 1) & (FNPROF_MAX_DEPTH - 1)].child_wall += wall;
	ts->depth = k;
	return 0;
}

/* Task state as the scheduler saw it; the field was renamed in 5.14 (2f064a59a11f). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline bool switched_out_runnable(bool preempt, struct task_struct *prev)
{
	long state;

	if (preempt)
		return true;
	if (bpf_core_field_exists(prev->__state))
		state = BPF_CORE_READ(prev, __state);
	else
		state = BPF_CORE_READ((struct task_struct___pre514 *)prev, state);
	return state == 0; /* TASK_RUNNING: yielded, still on the run queue */
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct thread_state *ts;
	__u64 now = 0;

	if (!target_tgid || prev->tgid == target_tgid) {
		ts = bpf_task_storage_get(&threads, prev, NULL, 0);
		if (ts && ts->depth) {
			now = bpf_ktime_get_ns();
			ts->out_ns = now;
			ts->out_runnable = switched_out_runnable(preempt, prev);
		}
	}
	if (!target_tgid || next->tgid == target_tgid) {
		ts = bpf_task_storage_get(&threads, next, NULL, 0);
		if (ts && ts->out_ns) {
			if (!now)
				now = bpf_ktime_get_ns();
			if (ts->out_runnable)
				ts->runq_cum += now - ts->out_ns;
			else
				ts->blocked_cum += now - ts->out_ns;
			ts->out_ns = 0;
		}
	}
	return 0;
}
