/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's file mappings, from /proc/PID/maps, and the ranges of its
 * executable memory that no file backs (JIT code).
 */
#ifndef FNPROF_PROCMAPS_H
#define FNPROF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct mapping {
	__u64 start, end, pgoff;
	__u64 inode;
	unsigned int dev_major, dev_minor;
	bool exec;
	bool kept;   /* unmapped since, kept from an earlier reading (procmaps_keep_unmapped) */
	char *path;  /* as the target sees it: resolve under /proc/PID/root */
};

/* An executable mapping of no file: anonymous or "[anon:NAME]" (where JIT compilers put code). */
struct anon_range {
	__u64 start, end;
};

struct procmaps {
	pid_t pid;
	struct mapping *maps;
	size_t nr;
	size_t nr_kept;           /* the last nr_kept of maps were kept from before: not in address order */
	struct anon_range *anon;  /* in address order, as the maps list them */
	size_t nr_anon;
};

/*
 * The mappings of process pid, read whole. 0 or -errno (-ESRCH: no such
 * process, or one that has begun to exit: its mappings may be cut short).
 */
int procmaps_load(pid_t pid, struct procmaps **out);
void procmaps_free(struct procmaps *pm);
/* A copy of pm, its own. 0 or -ENOMEM. */
int procmaps_dup(const struct procmaps *pm, struct procmaps **out);

/* At most this many ranges of no file kept from before: a runtime that maps and unmaps code for hours. */
#define PROCMAPS_KEPT_MAX 4096
/* And of files: each keeps its object's symbols and DWARF loaded (plug-ins loaded and unloaded for hours). */
#define PROCMAPS_KEPT_FILES_MAX 256

/*
 * Adds to pm the executable mappings old had and pm lacks, where nothing in
 * pm lies now, so that samples taken before they went keep their names:
 * - JIT code (ranges of no file), which a runtime tears down in the last
 *   milliseconds before it exits (V8 5 ms before its maps vanish, here); the
 *   perf map still names it;
 * - a library dlclose'd since (plug-ins), whose file still names it.
 * At most PROCMAPS_KEPT_MAX ranges of no file and PROCMAPS_KEPT_FILES_MAX
 * file mappings at a time. 0, or -ENOMEM (pm then holds its own mappings,
 * and perhaps some of old's).
 */
int procmaps_keep_unmapped(struct procmaps *pm, const struct procmaps *old);

/* The mapping holding address addr, or NULL: a binary search (a target may map 60000 files). */
const struct mapping *procmaps_find(const struct procmaps *pm, __u64 addr);

/* The executable memory of no file that holds addr, or NULL. */
const struct anon_range *procmaps_find_anon(const struct procmaps *pm, __u64 addr);

/*
 * Path of the mapped object that name designates: an absolute path as the
 * target sees it, a file name ("libc.so.6"), or a short name ("libc",
 * "libfoo") matching "libc.so*" / "libc-*". NULL if no mapping matches.
 */
const char *procmaps_find_object(const struct procmaps *pm, const char *name);

/* The first mapping of the file at path, or NULL. */
const struct mapping *procmaps_find_path(const struct procmaps *pm, const char *path);

/* Whether the base name of path designates the short library name. */
bool lib_name_matches(const char *path, const char *name);

/*
 * A path to the very file mapped at path, immune to what has been renamed,
 * replaced or symlinked there since: "/proc/PID/map_files/START-END" of its
 * first mapping. 0, or -ENOENT when nothing is mapped from path.
 */
int procmaps_file_path(const struct procmaps *pm, const char *path, char *buf, size_t size);

/*
 * How often a process's maps may be read again on demand (a walk that
 * failed, an address in no mapping, a refresh): whatever the demand, at
 * most a tenth of the reader's time, for a read takes 0.1 ms at 30 lines
 * and 0.3 s at 60000. After a read that cost MAPS_PACE_FREE_S of CPU or
 * more, the next waits ten times as long as it took; after a cheaper one
 * (a few hundred mappings), only min_gap_s, as before. CPU time, not wall:
 * a busy machine does not make a small process's maps look big.
 *
 * A thread that reads the maps of many processes (-a) gives them a gate:
 * their costly reads take turns on it, so that ten such processes take a
 * tenth of its time together, not each.
 */
#define MAPS_PACE_FREE_S 0.001
struct maps_pace {
	double next;   /* monotonic seconds: no read before */
	double cpu0;   /* the reading thread's CPU time when the read began */
	bool costly;   /* the last read cost MAPS_PACE_FREE_S or more */
};

/* Whether a read is due now; gate: the one its costly reads share, or NULL. */
bool maps_pace_due(const struct maps_pace *p, const struct maps_pace *gate);
/* A read begins, on this thread. */
void maps_pace_begin(struct maps_pace *p);
/* The read begun has ended: the next is due min_gap_s from now, or later after a costly one (gate too). */
void maps_pace_end(struct maps_pace *p, double min_gap_s, struct maps_pace *gate);

#endif /* FNPROF_PROCMAPS_H */
