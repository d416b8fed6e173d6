/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --call-graph dwarf: the samples' register and stack copies, read from the
 * BPF ring buffer by a thread of its own, unwound (unwind.h), and counted
 * per (thread, user stack, kernel stack) as the kernel counts frame-pointer
 * stacks. The unwound stacks get ids from DWSTACK_BASE up, apart from the
 * kernel stack map's.
 */
#ifndef FNPROF_DWSTACKS_H
#define FNPROF_DWSTACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"

#define DWSTACK_BASE 16384     /* the stack map's size: ids below are the kernel's */
#define DWSTACK_MAX 65536      /* distinct unwound stacks kept; beyond, a sample's user stack is lost */
#define DWSTACK_MAX_UNWINDERS 64  /* -a: processes with an unwinder (their objects' CFI) at once */

struct dwstacks;

struct dwstack_count {
	struct sample_key key;
	__u64 count;
};

struct dwstack_stats {
	__u64 samples;      /* unwound */
	__u64 truncated;    /* the walk ran past the end of the stack copy */
	__u64 lost;         /* no room for one more distinct stack */
	double cpu_s;       /* CPU time the unwinding thread used */
	__u64 unwinders;    /* processes with an unwinder now */
	__u64 unwinders_evicted;  /* -a: unwinders given up at DWSTACK_MAX_UNWINDERS (re-made when sampled again) */
};

/*
 * Starts the reading thread on ring buffer map rb_fd of process pid; pid 0:
 * of every process (-a), counted per process, each unwound with its own
 * unwinder (at most DWSTACK_MAX_UNWINDERS; an exited process's goes within
 * a second). 0 or -errno.
 */
int dwstacks_start(int rb_fd, pid_t pid, bool per_thread, struct dwstacks **out);
/* Stops the thread (after it read what is in the ring buffer) and frees; safe with NULL. */
void dwstacks_stop(struct dwstacks *d);

/* Waits until the samples in the ring buffer now are counted. */
void dwstacks_sync(struct dwstacks *d);

/* A copy of the counts so far (the caller frees *out). The number of entries. */
size_t dwstacks_counts(struct dwstacks *d, struct dwstack_count **out);

/* The frames of stack id (>= DWSTACK_BASE) into ips, leaf first, up to max. -ENOENT if none. */
int dwstacks_stack(struct dwstacks *d, __s32 id, __u64 *ips, int max);

void dwstacks_stats(struct dwstacks *d, struct dwstack_stats *out);

#endif /* FNPROF_DWSTACKS_H */
