/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FNPROF_PERCPU_H
#define FNPROF_PERCPU_H

#include <linux/types.h>

/*
 * The sum over the possible CPUs of entry key of the per-CPU array fd (the
 * BPF programs' counters). 0, or a negative errno with *sum 0.
 */
int percpu_sum(int fd, __u32 key, __u64 *sum);

#endif /* FNPROF_PERCPU_H */
