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
	struct anon_range *anon;  /* in address order, as the maps list them */
	size_t nr_anon;
};

/*
 * The mappings of process pid, read whole. 0 or -errno (-ESRCH: no such
 * process, or one that has begun to exit: its mappings may be cut short).
 */
int procmaps_load(pid_t pid, struct procmaps **out);
void procmaps_free(struct procmaps *pm);

/*
 * Adds to pm the executable mappings old had and pm lacks, where nothing in
 * pm lies now, so that samples taken before they went keep their names:
 * - JIT code (ranges of no file), which a runtime tears down in the last
 *   milliseconds before it exits (V8 5 ms before its maps vanish, here); the
 *   perf map still names it;
 * - a library dlclose'd since (plug-ins), whose file still names it.
 * At most 4096 ranges of no file and 256 file mappings at a time (each
 * keeps its object loaded). 0, or -ENOMEM (pm then holds its own mappings,
 * and perhaps some of old's).
 */
int procmaps_keep_unmapped(struct procmaps *pm, const struct procmaps *old);

/* The mapping holding address addr, or NULL. */
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


#endif /* FNPROF_PROCMAPS_H */
