// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU profile: sched_switch takes a thread's stacks when it is switched
 * out and the time it is switched back in; the wait is charged to those
 * stacks, labelled run-queue wait (preempted while runnable) or blocked.
 * Waits of at least rate_ns are all kept; a shorter wait of d ns is kept with
 * probability d / rate_ns and counted rate_ns / d times, as Go's block
 * profile does, so that the totals stay unbiased.
 *
 * The user stack can only be walked in the thread's own context, at the
 * switch-out (~0.7 us here). The kernel stack (~2.3 us) is taken at the
 * switch-in, of a wait that is kept only: the thread has not run since, its
 * kernel stack is still the one it was switched out with. Those stacks go
 * into a hash map of their own (kstacks), ids being their contents' hash.
 *
 * --call-graph dwarf: the user stack is copied for kept waits only, in the
 * thread's own context after it came back and before it ran user code again:
 * at its system call's exit (a blocked thread waits in one) or, at the
 * latest, at its next switch-out. Its user registers are compared with those
 * it was switched out with, and a system call entered before the copy means
 * that it ran user code: a thread preempted in user code, or on its way out
 * of a system call, has run on (its stack changed), and its wait is counted
 * with the frame-pointer stack taken at the switch-out instead (counted,
 * PDROP_DW_FP).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "prof.bpf.h"
#include "arch.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 rate_ns = 100000;
/* Switches out before this time are not counted: a launched command's wait for its start. */
__u64 start_ns = 0;

struct off_state {
	__u64 out_ns;       /* when switched out, 0 while running */
	struct prof_key key;
	__u64 uip, usp;     /* dwarf: the user registers it was switched out with */
	struct prof_val pv; /* dwarf: a kept wait's values, until its stack is copied */
	bool pend;          /* dwarf: pv waits for the copy */
	bool in_sys;        /* dwarf: switched out inside a system call, which returns through sys_exit */
};

struct kstack {
	__u64 ips[FNPROF_STACK_DEPTH];
};

/* Kernel stacks by hash (31 bits, the prof_key's kstack); a different stack with the same hash is lost, counted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct kstack);
} kstacks SEC(".maps");

/* Scratch for one stack: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kstack);
} kbuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_state);
} offs SEC(".maps");

/*
 * dwarf, in the thread's own context: its kept wait with a copy of its user
 * stack if it is still the one it was switched out with, else (or when the
 * ring buffer is full) with the frame-pointer stack.
 */
static __always_inline void resolve(struct off_state *st, struct pt_regs *r)
{
	bool same = r && r->ip == st->uip && r->sp == st->usp;

	st->pend = false;
	if (same && pdw_send(r, &st->key, &st->pv, false))
		return;
	if (!same)
		pbump(PDROP_DW_FP);
	pcount(&st->key, &st->pv);
}

static __always_inline void switched_out(void *ctx, struct task_struct *prev, unsigned int prev_state)
{
	struct off_state *st = bpf_task_storage_get(&offs, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct pt_regs *r;

	if (!st) {
		pbump(PDROP_STATE);
		return;
	}
	if (dwarf) {
		r = (struct pt_regs *)bpf_task_pt_regs(prev);
		/* sched_switch runs in prev's context: the stacks taken here are prev's. */
		if (st->pend)
			resolve(st, r);
		st->uip = r->ip;
		st->usp = r->sp;
		st->in_sys = (long)ARCH_SYSCALL_NR(r) != -1;
	}
	pkey_here(ctx, &st->key, prev_state ? PROF_OFFCPU_BLOCKED : PROF_OFFCPU_RUNQ, false);
	st->out_ns = bpf_ktime_get_ns();
}

/* Whether a wait of d ns is kept: always from rate_ns on, else with probability d / rate_ns. */
static __always_inline bool keep(__u64 d)
{
	__u64 r = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();

	return d >= rate_ns || r % rate_ns < d;
}

static __always_inline bool same_stack(const struct kstack *a, const struct kstack *b)
{
	int i;

	for (i = 0; i < FNPROF_STACK_DEPTH; i++)
		if (a->ips[i] != b->ips[i])
			return false;
	return true;
}

/* The kernel stack next was switched out with: its id in kstacks, or -1 (counted). */
static __always_inline __s32 kstack_of(struct task_struct *next)
{
	struct kstack *b, *old;
	__u32 z = 0, id;
	__u64 h = 0;
	long n;
	int i;

	b = bpf_map_lookup_elem(&kbuf, &z);
	if (!b)
		return -1;
	n = bpf_get_task_stack(next, b->ips, sizeof(b->ips), 0);  /* zeroes the rest of the buffer */
	if (n <= 0) {
		pbump(PDROP_KSTACK);
		return -1;
	}
	for (i = 0; i < FNPROF_STACK_DEPTH && b->ips[i]; i++)
		h = (h ^ b->ips[i]) * 0x100000001b3ULL;
	id = (h ^ h >> 32) & 0x7fffffff;
	old = bpf_map_lookup_elem(&kstacks, &id);
	if (old && same_stack(old, b))
		return id;
	if (old || bpf_map_update_elem(&kstacks, &id, b, BPF_NOEXIST)) {
		/* A collision, or the map is full (or another CPU just stored it: then a rare false loss). */
		pbump(PDROP_KSTACK);
		return -1;
	}
	return id;
}

static __always_inline void switched_in(struct task_struct *next)
{
	struct off_state *st = bpf_task_storage_get(&offs, next, 0, 0);
	struct prof_val v = {};
	__u64 out, d;

	if (!st || !st->out_ns)
		return;
	out = st->out_ns;
	st->out_ns = 0;
	if (out < start_ns)
		return;
	d = bpf_ktime_get_ns() - out;
	pbump(PDROP_SEEN);
	if (!d || !keep(d))
		return;
	/* A short wait stands for rate_ns / d of its kind: count and delay scaled alike. */
	v.v[0] = d >= rate_ns ? PROF_FP_ONE : (rate_ns << PROF_FP_SHIFT) / d;
	v.v[1] = d >= rate_ns ? d : rate_ns;
	st->key.kstack = kstack_of(next);
	pbump(PDROP_KEPT);
	/*
	 * next has not run yet: its user stack cannot be read from here (prev's
	 * context). Back in a system call, it copies it at the call's exit;
	 * switched out in user code (a preemption, a page fault), it runs on
	 * before any exit, and keeps its frame-pointer stack.
	 */
	if (dwarf && st->in_sys) {
		st->pv = v;
		st->pend = true;
		return;
	}
	if (dwarf)
		pbump(PDROP_DW_FP);
	pcount(&st->key, &v);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (pwanted(prev->tgid) && prev->pid) {
		pnote_proc(prev);
		switched_out(ctx, prev, prev_state);
	}
	if (pwanted(next->tgid) && next->pid)
		switched_in(next);
	return 0;
}

/* dwarf: a thread back from a wait copies its stack at its system call's exit (loaded with dwarf only). */
SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *t;
	struct off_state *st;

	if (!pwanted(bpf_get_current_pid_tgid() >> 32))
		return 0;
	t = bpf_get_current_task_btf();
	st = bpf_task_storage_get(&offs, t, 0, 0);
	if (st && st->pend)
		resolve(st, (struct pt_regs *)bpf_task_pt_regs(t));
	return 0;
}
