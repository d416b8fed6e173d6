/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the offcpu, mutex and heap programs share: their stack map, the
 * weighted counts per stack and the drop counters. Each object that includes
 * this has maps of its own.
 */
#ifndef FNPROF_PROF_BPF_H
#define FNPROF_PROF_BPF_H

#include "fnprof.h"
#include "maps.bpf.h"

#define EFAULT 14  /* not in vmlinux.h: errno values are macros */

const volatile __u32 target_tgid = 0;
const volatile bool per_thread = false;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, FNPROF_STACK_MAP_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, FNPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct prof_key);
	__type(value, struct prof_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PDROP_NR);
	__type(key, __u32);
	__type(value, __u64);
} pdrops SEC(".maps");

static __always_inline void pbump(__u32 idx)
{
	percpu_add(&pdrops, idx, 1);
}

/* A stack id, or the reason there is none: -EFAULT only means "no such stack" (a kernel thread's user stack). */
static __always_inline __s32 pstack_id(void *ctx, __u64 flags, __u32 drop)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 && id != -EFAULT)
		pbump(drop);
	return id;
}

/* The current thread's key: its stacks now, and label. */
static __always_inline void pkey_here(void *ctx, struct prof_key *k, __u32 label, bool kernel)
{
	k->tid = per_thread ? (__u32)bpf_get_current_pid_tgid() : 0;
	k->label = label;
	k->ustack = pstack_id(ctx, BPF_F_USER_STACK, PDROP_USTACK);
	k->kstack = kernel ? pstack_id(ctx, 0, PDROP_KSTACK) : -1;
	k->caller = 0;
}

/* Adds v to the counts of k; a full map is counted, never silent. */
static __always_inline void pcount(const struct prof_key *k, const struct prof_val *v)
{
	struct prof_val *c = bpf_map_lookup_elem(&counts, k);
	int i;

	if (!c && bpf_map_update_elem(&counts, k, v, BPF_NOEXIST) == 0)
		return;
	if (!c)  /* another CPU may have inserted it meanwhile; otherwise the map is full */
		c = bpf_map_lookup_elem(&counts, k);
	if (!c) {
		pbump(PDROP_COUNTS_FULL);
		return;
	}
	for (i = 0; i < PROF_NR_VALUES; i++)
		if (v->v[i])
			__sync_fetch_and_add(&c->v[i], v->v[i]);
}

#endif /* FNPROF_PROF_BPF_H */
