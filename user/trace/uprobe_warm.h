/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Taking the first uprobe registration's wait off the attach path.
 *
 * Registering a uprobe takes the kernel's dup_mmap_sem for writing
 * (register_for_each_vma() in kernel/events/uprobes.c), a per-CPU
 * rw-semaphore whose writer waits for an RCU grace period (10-30 ms on the
 * development VM) unless another writer came by less than about a grace
 * period before (rcu_sync). So the first uprobe that a tool attaches after a quiet
 * spell waits, and the next ones do not. uprobe_warm_start() registers
 * throwaway uprobes, on a function of fnprof's own that is never called, from
 * a thread, at once and then every few milliseconds: the wait happens while
 * the BPF programs load, and the target's probes go in without it. They are
 * uprobe_multi links of an empty program where the kernel has them: perf-event
 * uprobes each wait for grace periods on close under a kernel-wide mutex
 * (32 of them held fnprof's exit up by 2 s); links closed together wait once.
 */
#ifndef FNPROF_UPROBE_WARM_H
#define FNPROF_UPROBE_WARM_H

struct uprobe_warm;

/*
 * Starts the thread; NULL if it cannot (nothing is lost but the head start).
 * After uprobe_warm_early(), hands over the thread started then.
 */
struct uprobe_warm *uprobe_warm_start(void);

/*
 * Starts the thread now, for the next uprobe_warm_start() to take: main()
 * calls it as soon as it knows probes will be attached, so that the wait
 * overlaps the resolving of the functions too (with the target's CPU busy,
 * the wait was all of the attach time, and funclatency's is no longer).
 */
void uprobe_warm_early(void);

/* Stops and frees a thread that uprobe_warm_early() started and nothing took. */
void uprobe_warm_discard(void);

/*
 * Tells the thread to stop registering (the target's probes are in); it
 * then removes the throwaway probes. Does not wait. NULL is fine.
 */
void uprobe_warm_stop(struct uprobe_warm *w);

/* Waits for the thread (its probes gone) and frees w. NULL is fine. */
void uprobe_warm_free(struct uprobe_warm *w);

#endif /* FNPROF_UPROBE_WARM_H */
