/* SPDX-License-Identifier: GPL-2.0 */
/*
 * -a: the processes a whole-machine sampler saw. Per process: its name as
 * of its last exec (kept after it exits) and a symbolizer (sharing the
 * objects' symbols and the names with the others), made from the mappings
 * read when the process was first sampled if it is gone before (mapsnap.h);
 * stackrows.h keeps the stacks.
 *
 * Bounds: at most PROCTAB_MAX_SYMBOLIZERS processes hold a symbolizer (the
 * least recently sampled gives its up: re-read if it is sampled again, an
 * exited one's from its mappings read at first sight); a process that exited gives its
 * symbolizer up after the next report (its stacks were symbolized there);
 * at most PROCTAB_MAX_PROCS are known (exited ones forgotten first). Each is
 * counted (proctab_stats) and the reports show them.
 */
#ifndef FNPROF_PROCTAB_H
#define FNPROF_PROCTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"
#include "target/mapsnap.h"

#define PROCTAB_MAX_PROCS FNPROF_MAX_PROCS_SEEN   /* as many as the kernel's table of processes seen */
#define PROCTAB_MAX_SYMBOLIZERS 512   /* processes with their mappings and symbols held at once */

struct proctab;
struct symbolizer;

struct proctab_stats {
	size_t procs;             /* known now */
	size_t symbolizers;       /* holding a symbolizer now */
	size_t objects;           /* distinct object files whose symbols are held */
	__u64 exited;             /* seen exiting, or gone when first read */
	__u64 evicted;            /* symbolizers given up for the cap while the process ran or before its report */
	__u64 forgotten;          /* processes forgotten for the cap on known ones */
	__u64 execs;              /* exec'd since first seen: named anew, mappings read anew */
	struct mapsnap_stats maps;  /* the mappings read at first sight (proctab_set_snapshots), else zeros */
};

/*
 * The processes' symbolizers are parent's children (symbolize.h): they share
 * its names and objects, so parent must outlive the table. NULL when out of
 * memory.
 */
struct proctab *proctab_new(struct symbolizer *parent);
void proctab_free(struct proctab *t);

/*
 * Where the processes' symbolizers find the mappings of one gone before
 * they first read them (mapsnap.h, read when it was first sampled); a
 * process's are dropped there once it exited and its samples were
 * reported. m must outlive t. Before the first scan.
 */
void proctab_set_snapshots(struct proctab *t, struct mapsnap *m);

/*
 * Learns the processes in the kernel's map (map_fd: tgid -> struct
 * proc_seen): a new one's name, mappings and symbols are read now, while
 * it runs; the mappings of the others are re-read once a second; exits are
 * noted. Call it often (every 250 ms).
 */
void proctab_scan(struct proctab *t, int map_fd);

/* The name of process pid as of its last exec seen, "[unknown]" if never seen. */
const char *proctab_comm(struct proctab *t, pid_t pid);

/* The symbolizer of process pid, made now if it holds none. NULL when out of memory. */
struct symbolizer *proctab_symbolizer(struct proctab *t, pid_t pid);

/* After a report: processes that exited give their symbolizers up. */
void proctab_release_exited(struct proctab *t);

void proctab_stats(const struct proctab *t, struct proctab_stats *out);

/* The stats as a report's line ("processes: ..."), and as its JSON object "processes". */
void proctab_print_stats(const struct proctab *t, FILE *out);
struct json;
void proctab_json_stats(const struct proctab *t, struct json *j);

#endif /* FNPROF_PROCTAB_H */
