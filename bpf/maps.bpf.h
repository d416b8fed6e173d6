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

#endif /* FNPROF_MAPS_BPF_H */
