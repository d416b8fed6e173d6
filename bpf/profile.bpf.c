// SPDX-License-Identifier: GPL-2.0
/*
 * Sampling: a perf_event program on every CPU (cpu-clock, or cycles with a
 * PMU) counts the target process's samples per (thread, user stack, kernel
 * stack) in a hash map. No per-sample copy to user space, no signal.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "fnprof.h"

#define EFAULT 14  /* not in vmlinux.h: errno values are macros */

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile bool per_thread = false;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, FNPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sample_key);
	__type(value, __u64);
} counts SEC(".maps");

/* [SDROP_*], plus the total of samples seen at SDROP_NR. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SDROP_NR + 1);
	__type(key, __u32);
	__type(value, __u64);
} sdrops SEC(".maps");

static __always_inline void bump(__u32 idx)
{
	__u64 *n = bpf_map_lookup_elem(&sdrops, &idx);

	if (n)
		(*n)++;  /* per-CPU and not preemptible here (NMI or hrtimer context) */
}

/* A stack id, or the reason there is none: -EFAULT only means "no such stack". */
static __always_inline __s32 stack_id(struct bpf_perf_event_data *ctx, __u64 flags, __u32 drop)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 && id != -EFAULT)
		bump(drop);
	return id;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), one = 1, *n;
	struct sample_key key = {};

	if (pid_tgid >> 32 != target_tgid)
		return 0;
	bump(SDROP_NR);
	key.tid = per_thread ? (__u32)pid_tgid : 0;
	key.ustack = stack_id(ctx, BPF_F_USER_STACK, SDROP_USTACK);
	key.kstack = stack_id(ctx, 0, SDROP_KSTACK);
	n = bpf_map_lookup_elem(&counts, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		/* Another CPU may have inserted it meanwhile; otherwise the map is full. */
		n = bpf_map_lookup_elem(&counts, &key);
		if (n)
			__sync_fetch_and_add(n, 1);
		else
			bump(SDROP_COUNTS_FULL);
	}
	return 0;
}
