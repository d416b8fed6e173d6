/* SPDX-License-Identifier: GPL-2.0 */
/*
 * -a: the mappings of processes read the moment the kernel first samples
 * them (and again after each exec), kept after they exit, so that a process
 * of 30 ms, gone long before a report or an unwinder looks, still has them.
 * A thread of its own reads the sampler's ring buffer of new processes
 * (struct fnprof_proc_event) and reads each one's /proc/PID/maps at once.
 *
 * Thread-safe: the reader thread fills it, the symbolizers (main thread)
 * and the unwinders (dwstacks' thread) take copies. Bounded: at most
 * MAPSNAP_MAX processes' mappings held, MAPSNAP_MAX_BYTES in all (the
 * oldest read goes first, counted); an owner drops a process's once its
 * samples were reported.
 */
#ifndef FNPROF_MAPSNAP_H
#define FNPROF_MAPSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#define MAPSNAP_MAX 1024   /* processes whose mappings are held at once (a small one's: a few KiB) */
#define MAPSNAP_MAX_BYTES (64u << 20)   /* and their bytes: a process may map 60000 files */

struct mapsnap;
struct procmaps;

struct mapsnap_stats {
	__u64 read;       /* processes (or exec'd images) whose mappings were read at first sight */
	__u64 missed;     /* gone before they could be read */
	__u64 evicted;    /* mappings given up for the caps before their report (or never kept: over them alone) */
	size_t held;      /* held now */
	size_t bytes;     /* their size */
};

/* An empty store, its reader not started. NULL when out of memory. */
struct mapsnap *mapsnap_new(void);
/* Starts the reader on ring buffer rb_fd (proc_events). 0 or -errno. */
int mapsnap_start(struct mapsnap *m, int rb_fd);
/* Stops the reader and frees; safe with NULL. */
void mapsnap_free(struct mapsnap *m);

/* Reads pid's mappings now unless those of image exec_id are held. 0 or -errno (-ESRCH: gone). */
int mapsnap_take(struct mapsnap *m, pid_t pid, __u64 exec_id);

/* A copy of the mappings held for pid (the caller frees it). 0, -ENOENT (none held) or -ENOMEM. */
int mapsnap_get(struct mapsnap *m, pid_t pid, struct procmaps **out);

/* The exec generation of the image whose mappings are held for pid; 0 if none. */
__u64 mapsnap_exec_id(struct mapsnap *m, pid_t pid);

/* Drops what is held for pid (its samples were reported, and it exited). */
void mapsnap_forget(struct mapsnap *m, pid_t pid);

void mapsnap_stats(struct mapsnap *m, struct mapsnap_stats *out);

#endif /* FNPROF_MAPSNAP_H */
