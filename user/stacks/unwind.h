/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwinding a sampled user stack without frame pointers: the registers and
 * the copy of the stack's top that the BPF program took (struct
 * dwarf_sample), walked with the objects' call-frame information
 * (.eh_frame / .debug_frame) by elfutils' libdwfl. Each object's ELF and
 * CFI are read once and kept (libdwfl's modules). A frame with no CFI (JIT
 * code) is stepped over here, by its code's epilogue or its frame pointer,
 * each step checked (framestep.h), and libdwfl goes on from its caller.
 */
#ifndef FNPROF_UNWIND_H
#define FNPROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct unwinder;

struct maps_pace;

/*
 * An unwinder for process pid, its objects opened inside its root. gate:
 * NULL, or one of many (-a) on one thread: it takes its share of the fds
 * and modules all may hold, not all of them, and its costly re-reads of
 * the maps take turns with the others' on gate (procmaps.h). NULL when out
 * of memory.
 */
struct unwinder *unwinder_new(pid_t pid, struct maps_pace *gate);
void unwinder_free(struct unwinder *u);

struct dwarf_sample;

/* How the frames above the leaf were found: by CFI (libdwfl), by frame pointer, by the code's epilogue. */
struct unwind_counts {
	__u64 cfi, fp, epilogue;
};

/*
 * The frames of one sample into ips (leaf first: the interrupted ip, then
 * return addresses, as the kernel's stack maps hold them), up to max. s is
 * followed by its s->stack_len bytes of stack copied from rsp. Returns the
 * number of frames (at least 1 when s has an ip); *truncated tells whether
 * the walk stopped because it needed stack beyond the copy. counts: NULL,
 * or the frames found each way are added to it (none for a walk dropped).
 */
int unwinder_unwind(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max, bool *truncated,
		    struct unwind_counts *counts);

/*
 * -a: where it finds the mappings of a process gone before it first read
 * them (mapsnap.h; m outlives it). Before its first unwinder_unwind.
 */
struct mapsnap;
void unwinder_set_snapshots(struct unwinder *u, struct mapsnap *m);

/*
 * Reads the process's mappings and objects now, while it runs, rather than
 * at the first walk: a process whose first stack is unwound late (one of
 * several a thread serves) may be gone by then.
 */
void unwinder_prepare(struct unwinder *u);

/* Whether the unwinder has read the process's mappings once (after an unwinder_unwind): not if it was gone. */
bool unwinder_has_objects(const struct unwinder *u);

#endif /* FNPROF_UNWIND_H */
