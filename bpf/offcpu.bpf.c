// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU profile: sched_switch takes a thread's stacks when it is switched
 * out and the time it is switched back in; the wait is charged to those
 * stacks, labelled run-queue wait (preempted while runnable) or blocked.
 * Waits of at least rate_ns are all kept; a shorter wait of d ns is kept with
 * probability d / rate_ns and counted rate_ns / d times, as Go's block
 * profile does, so that the totals stay unbiased.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "prof.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 rate_ns = 100000;
/* Switches out before this time are not counted: a launched command's wait for its start. */
__u64 start_ns = 0;

struct off_state {
	__u64 out_ns;       /* when switched out, 0 while running */
	struct prof_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_state);
} offs SEC(".maps");

static __always_inline void switched_out(void *ctx, struct task_struct *prev, unsigned int prev_state)
{
	struct off_state *st = bpf_task_storage_get(&offs, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!st) {
		pbump(PDROP_STATE);
		return;
	}
	/* sched_switch runs in prev's context: the stacks taken here are prev's. */
	pkey_here(ctx, &st->key, prev_state ? PROF_OFFCPU_BLOCKED : PROF_OFFCPU_RUNQ, true);
	st->out_ns = bpf_ktime_get_ns();
}

/* Whether a wait of d ns is kept: always from rate_ns on, else with probability d / rate_ns. */
static __always_inline bool keep(__u64 d)
{
	__u64 r = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();

	return d >= rate_ns || r % rate_ns < d;
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
	pcount(&st->key, &v);
	pbump(PDROP_KEPT);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	if (prev->tgid == target_tgid && prev->pid)
		switched_out(ctx, prev, prev_state);
	if (next->tgid == target_tgid && next->pid)
		switched_in(next);
	return 0;
}
