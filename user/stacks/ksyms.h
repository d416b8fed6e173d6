/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel symbols from /proc/kallsyms, for kernel frames of sampled stacks. */
#ifndef FNPROF_KSYMS_H
#define FNPROF_KSYMS_H

#include <linux/types.h>

struct ksyms;

/* NULL if /proc/kallsyms cannot be read (kernel frames then show as [unknown]). */
struct ksyms *ksyms_load(void);
void ksyms_free(struct ksyms *k);

/* The function holding kernel address addr, or NULL. */
const char *ksyms_lookup(const struct ksyms *k, __u64 addr);

#endif /* FNPROF_KSYMS_H */
