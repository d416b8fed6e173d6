/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --call-graph dwarf: the samples' register and stack copies, read from the
 * BPF ring buffer by a thread of its own, unwound (unwind.h), and counted
 * per (thread, user stack, kernel stack) as the kernel counts frame-pointer
 * stacks. The unwound stacks get ids from DWSTACK_BASE up, apart from the
 * kernel stack map's.
 *
 * The other profiles (offcpu, mutex, heap) send struct prof_dwarf records
 * instead (dwstacks_start_prof): weighted values counted per (prof_key,
 * unwound stack), and stacks remembered by the ids the BPF programs gave
 * them (PROF_DW_ID, dw_id), for the heap's live map and the mutex's wakers:
 * an id is kept while such a map holds it (read every DWSTACK_PRUNE_S), and
 * dropped once two readings in a row found it in none.
 */
#ifndef FNPROF_DWSTACKS_H
#define FNPROF_DWSTACKS_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"

#define DWSTACK_BASE FNPROF_STACK_MAP_ENTRIES  /* ids below are the kernel stack map's */
#define DWSTACK_MAX 65536      /* distinct unwound stacks kept; beyond, a sample's user stack is lost */
#define DWSTACK_MAX_UNWINDERS 64  /* -a: processes with an unwinder (their objects' CFI) at once */
#define DWSTACK_PRUNE_S 2.0     /* ids no map holds are looked for this often (sooner when many came) */

struct dwstacks;

struct dwstack_count {
	struct sample_key key;
	__u64 count;
};

/* A profile's values per (key, stack): key.ustack is an unwound stack's id, or -1 (lost). */
struct dwstack_prof {
	struct prof_key key;
	struct prof_val val;
};

struct dwstack_stats {
	__u64 samples;      /* unwound */
	__u64 truncated;    /* the walk ran past the end of the stack copy */
	__u64 lost;         /* no room for one more distinct stack */
	__u64 ids_lost;     /* profiles: values sent for an id whose stack was forgotten (or never came) */
	__u64 ids_reused;   /* profiles: a stack sent under an id still held: that id's stack is no longer known */
	__u64 ids_held;     /* profiles: ids whose stacks are remembered now */
	double cpu_s;       /* CPU time the unwinding thread used */
	__u64 unwinders;    /* processes with an unwinder now */
	__u64 unwinders_evicted;  /* -a: unwinders given up at DWSTACK_MAX_UNWINDERS (re-made when sampled again) */
	__u64 fp_fallback;  /* -a: samples of a process gone before it could be unwound: frame-pointer stacks */
	__u64 sync_timeouts;  /* reports that did not wait for the unwinder, behind by over RB_SYNC_MAX_S */
	/* The frames above the leaves, by how they were found (unwind.h): CFI, frame pointer, code's epilogue. */
	__u64 frames_cfi, frames_fp, frames_epilogue;
};

/*
 * Starts the reading thread on ring buffer map rb_fd of process pid; pid 0:
 * of every process (-a), counted per process, each unwound with its own
 * unwinder (at most DWSTACK_MAX_UNWINDERS; an exited process's goes within
 * a second). 0 or -errno.
 */
int dwstacks_start(int rb_fd, pid_t pid, bool per_thread, struct dwstacks **out);
/* The map that holds a profile's ids: fd (-1: none), its key and value sizes, and where a value has its id. */
struct dwstacks_refs {
	int fd;
	__u32 key_size, value_size, id_off;
};

/*
 * The same for the struct prof_dwarf records of an offcpu, mutex or heap
 * profile (prof.bpf.h's pdw_rb). An id's stack is kept while refs' map
 * holds the id, and for a reading of the map or two after.
 */
int dwstacks_start_prof(int rb_fd, pid_t pid, const struct dwstacks_refs *refs, struct dwstacks **out);
/*
 * -a: where its unwinders find the mappings of processes gone before they
 * first read them, and each process's exec generation (mapsnap.h; m
 * outlives d). Called before any sample is sent (before the sampling
 * events are attached): the reading thread reads it without a lock.
 */
struct mapsnap;
void dwstacks_set_snapshots(struct dwstacks *d, struct mapsnap *m);

/* Stops the thread (after it read what is in the ring buffer) and frees; safe with NULL. */
void dwstacks_stop(struct dwstacks *d);

/*
 * Waits until the samples in the ring buffer now are counted, or
 * RB_SYNC_MAX_S passed (final: the run's last report, while the unwinder
 * gains; rbreader.h), counted in the statistics' sync_timeouts.
 */
void dwstacks_sync(struct dwstacks *d, bool final);

/* A copy of the counts so far (the caller frees *out). The number of entries. */
size_t dwstacks_counts(struct dwstacks *d, struct dwstack_count **out);

/* A copy of a profile's values so far, one entry per key (the caller frees *out). The number of entries. */
size_t dwstacks_prof_counts(struct dwstacks *d, struct dwstack_prof **out);

/* The unwound stack id that id (a dw_id) stands for; -1 when not known. */
__s32 dwstacks_by_id(struct dwstacks *d, __u64 id);

/* Asks the reading thread to drop the ids no map holds soon (after a report has read the map). */
void dwstacks_prune_soon(struct dwstacks *d);

/* The frames of stack id (>= DWSTACK_BASE) into ips, leaf first, up to max. -ENOENT if none. */
int dwstacks_stack(struct dwstacks *d, __s32 id, __u64 *ips, int max);

/*
 * The statistics as they were when the counts were last copied out
 * (dwstacks_counts, dwstacks_prof_counts): of the samples those counts
 * hold, not of the ones read since (the reader runs on while a report is
 * made, and under -a a report takes a while).
 */
void dwstacks_stats(struct dwstacks *d, struct dwstack_stats *out);

/*
 * The end of the unwinding line (its printer writes the rest): how the
 * frames above the leaves were found (CFI; frame pointer or the code's
 * epilogue where there is none: unwind.h), and the newline.
 */
void dwstacks_print_frames(const struct dwstack_stats *st, FILE *out);

struct json;

/*
 * What a profile's BPF side counted of its DWARF stacks, for the JSON
 * `unwind` object: the bytes copied per stack; events counted with a
 * frame-pointer stack instead of a copy (added to the unwinder's own
 * fp_fallback); the times the ring buffer was full. inuse_lost: heap, the
 * blocks in use whose stack is not known; NULL: no in-use view (key left out).
 */
struct dwstack_json {
	unsigned int stack_bytes;
	__u64 fp_fallback;
	__u64 ringbuf_full;
	const __u64 *inuse_lost;
};

/*
 * Writes the `unwind` object of every profile (CPU, offcpu, mutex, heap):
 * the same keys for all, 0 where a profile has nothing of the kind to count
 * (the CPU profile's ids, a single process's unwinders evicted).
 */
void dwstacks_json(struct dwstacks *d, struct json *j, const struct dwstack_json *x);

#endif /* FNPROF_DWSTACKS_H */
