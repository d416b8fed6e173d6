/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profiles other than CPU sampling (--profile offcpu, mutex, heap): each
 * counts weighted stacks in the kernel; this module reads them, symbolizes,
 * and prints the top-functions table, JSON and pprof files of each.
 */
#ifndef FNPROF_PROFILES_H
#define FNPROF_PROFILES_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

/* The kinds, as --profile names them: bits of prof_conf.kinds. */
enum prof_kind {
	PROF_CPU,
	PROF_OFFCPU,
	PROF_MUTEX,
	PROF_HEAP,
	PROF_KIND_NR,
};

const char *prof_kind_name(enum prof_kind k);
/* The kind named s, or -EINVAL. */
int prof_kind_parse(const char *s);

/* What the profiles of one run need to know (not the whole command line). */
struct prof_conf {
	unsigned int kinds;        /* 1 << PROF_OFFCPU | ...; PROF_CPU is sample.c's */
	bool per_thread;           /* rows per thread */
	bool json;                 /* reports as JSON lines */
	unsigned int top;          /* rows per table */
	const char *pprof_path;    /* --pprof: the file, or the base of the files' names */
	__u64 offcpu_rate_ns;      /* --offcpu-rate */
	__u64 heap_rate;           /* --heap-rate, bytes */
	char **cmd;                /* launch mode: the command (its libraries are found before they map) */
};

/*
 * The --pprof file of kind k: path itself with one kind, else path with
 * ".KIND" inserted before the first '.' of its base name ("out.pb.gz" ->
 * "out.offcpu.pb.gz"; "out" -> "out.offcpu"). 0, or -ENAMETOOLONG.
 */
int prof_file_name(const char *path, enum prof_kind k, bool several, char *buf, size_t size);

struct profiles;

/* Loads and attaches the profiles of c->kinds for process pid. 0 or -errno (message printed). */
int profiles_start(const struct prof_conf *c, pid_t pid, struct profiles **out);

/* Launch mode, just before the command is let go: what happens from now on counts. */
void profiles_arm(struct profiles *p);

/* One report per profile for the interval just ended (interval_s seconds). 0 or -errno. */
int profiles_report(struct profiles *p, FILE *out, double interval_s, bool final);

/* The --pprof files of the whole run. 0 or -errno (message printed). */
int profiles_write_files(struct profiles *p);

/* Re-reads the target's mappings while it runs, for symbolizing after it exits. Safe with NULL. */
void profiles_refresh(struct profiles *p);

/* Detaches and frees; safe with NULL. */
void profiles_stop(struct profiles *p);

#endif /* FNPROF_PROFILES_H */
