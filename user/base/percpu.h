/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FNPROF_PERCPU_H
#define FNPROF_PERCPU_H

#include <linux/types.h>

/*
 * The sum over the possible CPUs of entry key of the per-CPU array fd (the
 * BPF programs' counters). 0, or a negative errno with *sum 0.
 */
int percpu_sum(int fd, __u32 key, __u64 *sum);

/*
 * Entries [0, n) of the per-CPU array fd, each summed over the CPUs
 * (percpu_sum) into sums: all of them read, 0 where unreadable. 0, or the
 * first entry's negative errno.
 */
int percpu_sums(int fd, __u32 n, __u64 *sums);

#endif /* FNPROF_PERCPU_H */
