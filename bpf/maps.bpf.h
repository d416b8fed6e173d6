/* SPDX-License-Identifier: GPL-2.0 */
/* Map helpers every BPF program of fnprof's uses. */
#ifndef FNPROF_MAPS_BPF_H
#define FNPROF_MAPS_BPF_H

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
