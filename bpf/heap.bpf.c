// SPDX-License-Identifier: GPL-2.0
/*
 * Heap profile: uprobes on the allocator's entry points count down the bytes
 * allocated; an allocation that crosses the next sampling point (drawn from
 * an exponential distribution of mean rate bytes, as Go's heap profiler) is
 * sampled with its stacks, weighted S / (1 - e^(-S/rate)) so that totals are
 * unbiased, and its pointer, seen at the return, is kept until freed.
 * Calls that are not sampled cost the probes and a per-CPU countdown; every
 * free costs a lookup in the map of sampled pointers. Under --max-overhead
 * the allocation probes come and go in bursts (user/profile/duty.c); free's and
 * realloc's entry probes stay, so that sampled blocks are not freed unseen.
 *
 * --call-graph dwarf: a sampled allocation's stack is copied at its return
 * (the callers' frames are as they were at the call; the allocator's own is
 * gone: its address, taken at the entry, goes first) and sent with its values
 * under an id, which its live entry keeps (dw_id) for user space to find
 * the stack by. Allocations not sampled copy nothing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "prof.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 rate = 512 * 1024;
/*
 * --max-overhead (duty.c): whether allocations are sampled now, and the
 * burst a pending sample belongs to; a sample whose return probe was taken
 * out before it ran is stale in the next burst.
 */
__u32 allocs_on = 1;
__u32 burst = 0;

/* Exponential intervals -ln(U) * rate, drawn by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROF_HEAP_EXPO);
	__type(key, __u32);
	__type(value, __u64);
} expo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROF_HEAP_WTAB);
	__type(key, __u32);
	__type(value, __u64);
} wtab SEC(".maps");

/* Bytes until the next sample, per CPU: with exponential intervals, memoryless, so any split is fair. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} left SEC(".maps");

/* A sampled call between its entry and its return. */
struct pending {
	struct prof_key key;
	__u64 size;
	__u64 memptr;   /* posix_memalign: where the pointer will be */
	__u32 burst;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pending);
} pendings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
	__type(key, __u64);
	__type(value, struct prof_live);
} live SEC(".maps");

static __always_inline bool ours(void)
{
	return bpf_get_current_pid_tgid() >> 32 == target_tgid;
}

/* Whether this allocation of size bytes crosses the next sampling point (then a new one is drawn). */
static __always_inline bool sample_now(__u64 size)
{
	__u32 z = 0, i;
	__s64 *l = bpf_map_lookup_elem(&left, &z);
	__u64 *e;

	if (!l)
		return false;
	*l -= size;
	if (*l > 0)
		return false;
	i = bpf_get_prandom_u32() % PROF_HEAP_EXPO;
	e = bpf_map_lookup_elem(&expo, &i);
	*l = e ? *e : rate;
	return true;
}

/* watched: the call's entry probe is a watch probe (realloc's), already counted as a free. */
static __always_inline void on_alloc(void *ctx, __u64 size, __u64 memptr, bool watched)
{
	struct pending p = { .size = size, .memptr = memptr, .burst = burst };
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (!ours())
		return;
	/* Between bursts only realloc's entry probe is in: its cost is a free's. */
	if (!allocs_on && watched)
		return;
	pbump(PDROP_SEEN);
	if (!allocs_on || !size || !sample_now(size))
		return;
	if (dwarf) {  /* the stack is copied at the return; the allocator's address will be its leaf */
		p.key = (struct prof_key){ .tid = per_thread ? tid : 0, .ustack = -1, .kstack = -1,
					   .caller = PT_REGS_IP((struct pt_regs *)ctx) };
		goto keep;
	}
	pkey_here(ctx, &p.key, 0, false);
	/* At the first instruction the caller's frame is not linked yet: its return address is at [sp]. */
	if (bpf_probe_read_user(&p.key.caller, sizeof(p.key.caller), (void *)PT_REGS_SP((struct pt_regs *)ctx)))
		p.key.caller = 0;
keep:
	if (bpf_map_update_elem(&pendings, &tid, &p, BPF_ANY))
		pbump(PDROP_STATE);
}

/* S / (1 - e^(-S/rate)) in bytes, and that over S in 1/1024 objects. */
static __always_inline void weigh(__u64 size, struct prof_live *l)
{
	__u64 i, frac, *w0, *w1, f;
	__u32 k;

	if (size >= rate * (PROF_HEAP_WTAB - 1) / PROF_HEAP_WSTEPS) {
		l->bytes = size;
		l->objects = PROF_FP_ONE;
		return;
	}
	i = size * PROF_HEAP_WSTEPS / rate;
	frac = size * PROF_HEAP_WSTEPS - i * rate;   /* in 1/rate of a step */
	k = i;
	w0 = bpf_map_lookup_elem(&wtab, &k);
	k = i + 1;
	w1 = bpf_map_lookup_elem(&wtab, &k);
	if (!w0 || !w1)
		return;
	f = *w0 + (*w1 - *w0) * frac / rate;     /* x/(1-e^-x) in 1/PROF_HEAP_WONE */
	l->bytes = rate * f >> PROF_HEAP_WSHIFT;
	l->objects = (l->bytes << PROF_FP_SHIFT) / size;
}

/* A sampled allocation's values: with its stack copied (dwarf: its id into l), or the frame-pointer one. */
static __always_inline void count_alloc(struct pt_regs *ctx, struct prof_live *l, const struct prof_val *v)
{
	__u64 id;

	if (dwarf) {
		id = pdw_send(ctx, &l->key, v, true);
		l->key.caller = 0;  /* sent as the leaf (dwstacks.c puts it first) */
		if (id) {
			l->key.ustack = PROF_DW_ID;
			l->dw_id = id;
			return;
		}
		pkey_here(ctx, &l->key, 0, false);
	}
	pcount(&l->key, v);
}

static __always_inline void on_return(struct pt_regs *ctx, __u64 ptr, bool via_memptr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending *p = bpf_map_lookup_elem(&pendings, &tid);
	struct prof_live l = {};
	struct prof_val v = {};

	if (!p)
		return;
	if (p->burst != burst) {
		bpf_map_delete_elem(&pendings, &tid);
		return;
	}
	if (via_memptr && (ptr || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)p->memptr)))
		ptr = 0;   /* posix_memalign failed (non-zero return) or its pointer is unreadable */
	l.key = p->key;
	weigh(p->size, &l);
	bpf_map_delete_elem(&pendings, &tid);
	if (!ptr || !l.bytes)
		return;
	v.v[0] = l.objects;
	v.v[1] = l.bytes;
	count_alloc(ctx, &l, &v);
	pbump(PDROP_KEPT);
	if (bpf_map_update_elem(&live, &ptr, &l, BPF_ANY))
		pbump(PDROP_STATE);
}

static __always_inline void on_free(__u64 ptr)
{
	if (!ours())
		return;
	pbump(PDROP_FREED);
	if (ptr)
		bpf_map_delete_elem(&live, &ptr);
}

/* BPF_KPROBE: pt_regs arguments, the same for uprobes (libbpf 1.1 has no BPF_UPROBE). */
SEC("uprobe")
int BPF_KPROBE(malloc_enter, __u64 size)
{
	on_alloc(ctx, size, 0, false);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, __u64 n, __u64 size)
{
	on_alloc(ctx, n * size, 0, false);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, __u64 ptr, __u64 size)
{
	/* The old block is gone (or, rarely, kept on failure: then no longer counted in use). */
	on_free(ptr);
	on_alloc(ctx, size, 0, true);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(aligned_alloc_enter, __u64 align, __u64 size)
{
	on_alloc(ctx, size, 0, false);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_enter, __u64 memptr, __u64 align, __u64 size)
{
	on_alloc(ctx, size, memptr, false);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_return, __u64 ptr)
{
	on_return(ctx, ptr, false);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(posix_memalign_return, __u64 ret)
{
	on_return(ctx, ret, true);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_enter, __u64 ptr)
{
	on_free(ptr);
	return 0;
}
