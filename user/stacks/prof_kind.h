/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profiles a run can take (--profile), their names and files, and the
 * configuration they share: what opts.c, profiles.c and each kind's loader
 * agree on.
 */
#ifndef FNPROF_PROF_KIND_H
#define FNPROF_PROF_KIND_H

#include <stdbool.h>
#include <stddef.h>
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
	double max_overhead_pct;   /* --max-overhead, for the heap profile's probes; 0: none */
	bool dwarf;                /* --call-graph dwarf/auto: user stacks copied for kept events and unwound */
	unsigned int stack_bytes;  /* with dwarf: bytes of user stack copied per event (8..FNPROF_MAX_STACK_COPY, x8) */
	size_t max_memory;         /* --max-memory: what the target makes the symbolizer hold (budget.h); 0: default */
	bool all;                  /* -a: every process but fnprof (pid 0), rows with PID and COMM (offcpu, mutex) */
	unsigned int share;        /* -p P1,P2,...: profiles of that many processes side by side (prof_share_maps) */
};

/*
 * The --pprof file of kind k: path itself with one kind, else path with
 * ".KIND" inserted before the first '.' of its base name ("out.pb.gz" ->
 * "out.offcpu.pb.gz"; "out" -> "out.offcpu"). 0, or -ENAMETOOLONG.
 */
int prof_file_name(const char *path, enum prof_kind k, bool several, char *buf, size_t size);

#endif /* FNPROF_PROF_KIND_H */
