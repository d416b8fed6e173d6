/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --slow: a record for each traced call whose wall time reaches slow_ns,
 * sent to user space at its return (ring buffer `slow_calls`, at most
 * slow_rate a second). Included by trace.bpf.c, after its maps and helpers.
 *
 * What it holds and when it is taken:
 * - the caller's stack, taken at the return: the callers' frames are those
 *   of the entry, so a call that turns out fast pays for no stack at all;
 * - the stack where the call blocked longest: at each switch-out asleep
 *   inside a traced call, the kernel stack and a copy of the user stack go
 *   into a capture slot of the thread; at the switch-in, each open call
 *   whose longest block this one is points at that slot. A slot no open
 *   call points at is free for the next block.
 */
#ifndef FNPROF_SLOW_BPF_H
#define FNPROF_SLOW_BPF_H

#include "fnprof.h"
#include "maps.bpf.h"
#include "trace.bpf.h"
#include "ustack.bpf.h"

/* Set by user space between open and load: 0 without --slow. */
const volatile __u64 slow_ns = 0;
const volatile __u64 slow_rate = 100;  /* records sent per second, at most */
const volatile __u32 slow_nr_ids = 0;  /* the target's functions: ids beyond are fnprof's calibration's */

/* The rate limit's second (CLOCK_MONOTONIC) and the records sent in it. */
volatile __u64 slow_second = 0;
volatile __u64 slow_in_second = 0;

/* Capture slots per thread: one per distinct longest block of nested open calls, and one to fill. */
#define SLOW_CAPTURES 3

/* Per open call, parallel to thread_state's frames. */
struct slow_frame {
	__u64 block_ns;      /* its longest block so far */
	__u64 ret_addr;      /* its return address (a uretprobe replaces it on the stack); 0: not read */
	__u32 cap1;          /* the capture slot of that block + 1; 0: none */
	__u32 pad;
};

struct thread_slow {
	struct slow_frame frames[FNPROF_MAX_DEPTH];
	__u32 out_cap1;      /* the slot filled at the last switch-out asleep + 1; 0: none */
	__u32 pad;
	struct slow_stack caps[SLOW_CAPTURES];
};

/* With --slow, each thread state's, at the same index (else one unused entry). */
SIZED_ARRAY(tslow, struct thread_slow);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FNPROF_RB_MIN);   /* set by user space */
} slow_calls SEC(".maps");

PERCPU_COUNTERS(slow_drops, SLOWDROP_NR);

static __always_inline void slow_count(__u32 reason)
{
	percpu_add(&slow_drops, reason, 1);
}

/* A new call in frame d (f): no block yet; behind a uretprobe, its return address is kept. */
static __always_inline void slow_enter(struct thread_state *ts, __u32 d, const struct fn_frame *f)
{
	struct thread_slow *s = thread_entry(&tslow, ts);
	struct slow_frame *sf;

	if (!s)
		return;
	sf = &s->frames[frame_idx(d)];
	sf->block_ns = 0;
	sf->cap1 = 0;
	sf->ret_addr = 0;
	if (f->flags & FRAME_URET)
		bpf_probe_read_user(&sf->ret_addr, sizeof(sf->ret_addr), (void *)f->sp);
}

struct rets_ctx {
	const struct thread_state *ts;
	const struct thread_slow *s;
	struct dwarf_sample *h;
	__u32 d;
};

/* One frame of the walk below, from the top down. */
static long rets_step(__u32 i, struct rets_ctx *c)
{
	__u32 j = frame_idx(c->d - 1 - i), n = c->h->nr_rets;

	if (n >= FNPROF_MAX_RETS)
		return 1;
	if (!(c->ts->frames[j].flags & FRAME_URET) || !c->s->frames[j].ret_addr)
		return 0;
	c->h->ret_slot[n] = c->ts->frames[j].sp;
	c->h->ret_addr[n] = c->s->frames[j].ret_addr;
	c->h->nr_rets = n + 1;
	return 0;
}

/* The return addresses that the uretprobes of frames below d replaced, innermost first. */
static __always_inline void slow_rets(const struct thread_state *ts, const struct thread_slow *s, __u32 d,
				      struct dwarf_sample *h)
{
	h->nr_rets = 0;
	FNPROF_LOOP(d < FNPROF_MAX_DEPTH ? d : FNPROF_MAX_DEPTH, FNPROF_MAX_DEPTH, rets_step,
		    (&(struct rets_ctx){ .ts = ts, .s = s, .h = h, .d = d }));
}

/* Capture slot cap1 - 1 of the thread's, NULL for 0. */
static __always_inline struct slow_stack *slow_cap(struct thread_slow *s, __u32 cap1)
{
	__u32 c = cap1 - 1;

	if (c >= SLOW_CAPTURES)
		return NULL;
	/* After the check: the address is computed from the very register the verifier saw bounded. */
	__asm__ volatile("" : "+r"(c));
	return &s->caps[c];
}

/* A capture slot no open call points at (+ 1), 0 if all are taken. */
static __always_inline __u32 slow_free_slot(const struct thread_state *ts, const struct thread_slow *s)
{
	__u32 used = 0, i;

	for (i = 0; i < FNPROF_MAX_DEPTH && i < ts->depth; i++)
		used |= 1U << (s->frames[i].cap1 & 7);
	for (i = 0; i < SLOW_CAPTURES; i++)
		if (!(used & 2U << i))
			return i + 1;
	return 0;
}

/*
 * sched_switch: prev (current), inside traced calls, leaves the CPU asleep.
 * Its kernel and user stacks go to a free capture slot; the switch-in
 * decides whether they are kept.
 */
static __always_inline void slow_block_begin(void *ctx, struct task_struct *prev, struct thread_state *ts)
{
	struct thread_slow *s = thread_entry(&tslow, ts);
	struct slow_stack *cap;
	struct pt_regs *r;
	long n;
	__u32 c;

	if (!s)
		return;
	s->out_cap1 = c = slow_free_slot(ts, s);
	cap = slow_cap(s, c);
	if (!cap)
		return;
	n = bpf_get_stack(ctx, cap->kips, sizeof(cap->kips), 0);
	cap->nr_kips = n > 0 ? n / sizeof(__u64) : 0;
	r = (struct pt_regs *)bpf_task_pt_regs(prev);
	ustack_regs(cap->user.regs, r);
	cap->user.tid = prev->pid;
	cap->user.kstack = -1;
	slow_rets(ts, s, ts->depth, &cap->user);
	cap->user.stack_len = ustack_copy(cap->bytes, r->sp, FNPROF_SLOW_STACK, FNPROF_SLOW_STACK);
}

/* sched_switch: the thread comes back after blocking dt ns; the open calls' longest blocks. */
static __always_inline void slow_block_end(struct thread_state *ts, __u64 dt)
{
	struct thread_slow *s = thread_entry(&tslow, ts);
	struct slow_frame *sf;
	__u32 i;

	if (!s)
		return;
	for (i = 0; i < FNPROF_MAX_DEPTH && i < ts->depth; i++) {
		sf = &s->frames[i];
		if (dt > sf->block_ns) {
			sf->block_ns = dt;
			sf->cap1 = s->out_cap1;
		}
	}
	s->out_cap1 = 0;
}

/* Whether one more record fits this second's rate. */
static __always_inline bool slow_admit(__u64 now)
{
	__u64 second = now / 1000000000ULL;

	if (slow_second != second) {
		slow_second = second;
		slow_in_second = 0;
	}
#ifdef FNPROF_COMPAT
	/* No fetching atomics before 5.12: a plain add, read after (two handlers may both pass the last). */
	__sync_fetch_and_add(&slow_in_second, 1);
	return slow_in_second <= slow_rate;
#else
	return __sync_fetch_and_add(&slow_in_second, 1) < slow_rate;
#endif
}

/* A record for a slow call, if this second's rate and the ring buffer take it; each refusal counted. */
static __always_inline struct slow_call *slow_reserve(__u64 now)
{
	struct slow_call *r;

	if (!slow_admit(now)) {
		slow_count(SLOWDROP_RATE);
		return NULL;
	}
	r = bpf_ringbuf_reserve(&slow_calls, sizeof(*r), 0);
	if (!r)
		slow_count(SLOWDROP_RINGBUF);
	return r;
}

/* What the return probe measured of the slow call. */
struct slow_figures {
	__u64 wall, oncpu, runq, blocked, now;
	__u32 id;
	bool at_ret;
};

/* The caller's stack from the return's registers (regs), and the longest block's from its slot. */
static __always_inline void slow_stacks(struct slow_call *r, struct pt_regs *regs, const struct thread_state *ts,
					struct thread_slow *s, __u32 k)
{
	const struct slow_frame *sf = &s->frames[frame_idx(k)];
	struct slow_stack *cap = slow_cap(s, sf->cap1);

	r->entry.nr_kips = 0;
	ustack_regs(r->entry.user.regs, regs);
	r->entry.user.tid = r->tid;
	r->entry.user.kstack = -1;
	slow_rets(ts, s, k, &r->entry.user);
	r->entry.user.stack_len = ustack_copy(r->entry.bytes, regs->sp, FNPROF_SLOW_STACK, FNPROF_SLOW_STACK);
	r->block_ns = sf->block_ns;
	if (cap && !bpf_probe_read_kernel(&r->blocked, sizeof(r->blocked), cap))
		r->flags |= SLOW_BLOCKED;
	else if (sf->block_ns)
		slow_count(SLOWDROP_NO_BLOCK);
}

/* The return of the call in frame k took --slow or longer: its record to user space. */
static __always_inline void slow_emit(struct pt_regs *regs, const struct thread_state *ts, __u32 k,
				      const struct fn_frame *f, const struct slow_figures *c)
{
	struct thread_slow *s = thread_entry(&tslow, ts);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct slow_call *r;

	if (c->id >= slow_nr_ids)
		return;
	slow_count(SLOWDROP_SEEN);
	if (!s)
		return;
	r = slow_reserve(c->now);
	if (!r)
		return;
	r->wall_ns = c->wall;
	r->oncpu_ns = c->oncpu;
	r->runq_ns = c->runq;
	r->blocked_ns = c->blocked;
	r->end_ns = c->now;
	r->fn_ip = f->ip;
	r->id = c->id;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->flags = c->at_ret ? SLOW_AT_RET : 0;
	slow_stacks(r, regs, ts, s, k);
	bpf_ringbuf_submit(r, 0);
}

#endif /* FNPROF_SLOW_BPF_H */
