/* SPDX-License-Identifier: GPL-2.0 */
/* Map helpers every BPF program of fnprof's uses, and the kinds of map that recur among them. */
#ifndef FNPROF_MAPS_BPF_H
#define FNPROF_MAPS_BPF_H

/*
 * An array of value_type whose length user space sets between open and load
 * (bpf_map__set_max_entries): one entry per thread state, per function, per CPU.
 */
#define SIZED_ARRAY(name, value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY);			\
		__uint(max_entries, 1);	/* set by user space */		\
		__type(key, __u32);					\
		__type(value, value_type);				\
	} name SEC(".maps")

/* The free indexes of a pool (thread states, statistics slots), put in by user space; sized by it. */
#define FREE_INDEXES(name)						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_QUEUE);			\
		__uint(max_entries, 1);	/* set by user space */		\
		__type(value, __u32);					\
	} name SEC(".maps")

/* nr per-CPU __u64 counters (drops, events) that percpu_add() bumps and user space sums and shows. */
#define PERCPU_COUNTERS(name, nr)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);		\
		__uint(max_entries, nr);				\
		__type(key, __u32);					\
		__type(value, __u64);					\
	} name SEC(".maps")

/* A hash of value_type by a 64-bit key (a goroutine's g address), entries made as needed; sized by user space. */
#define SIZED_HASH(name, value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH);			\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
		__uint(max_entries, 1);	/* set by user space */		\
		__type(key, __u64);					\
		__type(value, value_type);				\
	} name SEC(".maps")

/* One zeroed value_type per CPU, to insert from (too large for the BPF stack). */
#define ZERO_VALUE(name, value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);		\
		__uint(max_entries, 1);					\
		__type(key, __u32);					\
		__type(value, value_type);				\
	} name SEC(".maps")

/* -a: the processes seen, with their names (struct proc_seen); LRU: a busy machine sees more than it keeps. */
#define PROCS_SEEN(name)						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_LRU_HASH);			\
		__uint(max_entries, FNPROF_MAX_PROCS_SEEN);		\
		__type(key, __u32);					\
		__type(value, struct proc_seen);			\
	} name SEC(".maps")

/* The stack map of an object that takes stacks (bpf_get_stackid): sized once, in fnprof.h. */
#define STACK_MAP(name)							\
	struct {							\
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);			\
		__uint(max_entries, FNPROF_STACK_MAP_ENTRIES);		\
		__uint(key_size, sizeof(__u32));			\
		__uint(value_size, FNPROF_STACK_DEPTH * sizeof(__u64));	\
	} name SEC(".maps")

/*
 * Adds n to counter key of map, a per-CPU array of __u64 (the drop and
 * event counts that user space sums and shows). Atomic: a uprobe program
 * may be preempted on its CPU by another that counts too.
 */
static __always_inline void percpu_add(void *map, __u32 key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &key);

	if (v)
		__sync_fetch_and_add(v, n);
}

/*
 * The flag for a record sent to ring buffer rb: wake its reader only when
 * the buffer is half full. The reader reads every 50 ms anyway (rbreader.c),
 * and a wake-up at each record makes it runnable just as the thread that
 * sent it returns to user space, which on a busy machine preempts that
 * thread: run-queue waits an off-CPU profile then counts, and CPU a sampled
 * process loses, both caused by fnprof.
 */
static __always_inline __u64 rb_wakeup(void *rb)
{
	return bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(rb, BPF_RB_RING_SIZE) / 2 ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#endif /* FNPROF_MAPS_BPF_H */
