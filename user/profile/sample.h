/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sampling CPU profiler: a perf_event program (cpu-clock per CPU, or cycles
 * where a PMU exists) counts samples per (user stack, kernel stack) of the
 * target process in the kernel; user space symbolizes and prints.
 */
#ifndef FNPROF_SAMPLE_H
#define FNPROF_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct sampler;

/* How a sampler samples and reports. */
struct sampler_conf {
	unsigned int freq_hz;      /* samples per second per CPU (-F) */
	bool per_thread;           /* --per-thread: counts per thread */
	unsigned int top;          /* rows in the table */
	bool json;                 /* one JSON line per report instead of the table */
	const char *pprof_path;    /* --pprof FILE, or NULL */
	const char *folded_path;   /* --folded FILE, or NULL */
	bool dwarf;                /* --call-graph dwarf/auto: user stacks copied and unwound in user space */
	unsigned int stack_bytes;  /* with dwarf: bytes of user stack copied per sample (8..FNPROF_MAX_STACK_COPY, x8) */
	bool all;                  /* -a: every process but fnprof (pid 0), rows per process (proctab.h) */
	size_t max_memory;         /* --max-memory: what the targets make it hold (budget.h); 0: the default */
	/*
	 * -p P1,P2,...: how many samplers run side by side (0 or 1: one). Each
	 * gets that share of the stack and counts maps, so that the kernel
	 * memory of a list is one sampler's; a map full is counted as a drop.
	 */
	unsigned int share;
};

/* Loads and attaches the sampler for process pid (0 with conf->all) at conf->freq_hz. 0 or -errno (message printed). */
int sampler_start(const struct sampler_conf *conf, pid_t pid, struct sampler **out);

/*
 * Prints the report for the interval just ended (table, or one JSON line with
 * conf->json) to out. interval_s: seconds the interval covered. final: last
 * call; after earlier reports (-i), the run's total follows ("total": true).
 * Called while the target may already have exited. 0 or -ENOMEM.
 */
int sampler_report(struct sampler *s, FILE *out, double interval_s, bool final);

/* Writes the --pprof / --folded files from all samples of the run. 0 or -errno. */
int sampler_write_files(struct sampler *s);

/* Most samplers one file holds (a -p list's). */
#define SAMPLER_MANY_MAX 64

/*
 * The same of n samplers (a -p list's, at most SAMPLER_MANY_MAX), to the
 * first one's paths: one file each, with every process's samples
 * (stackrows_conf.name_process). 0 or -errno (message printed).
 */
int sampler_write_files_many(struct sampler *const *s, size_t n);

/*
 * Instead of reports: every sample so far into a profile being built
 * (pprof.h, made with pprof_new at this sampler's period), so that the
 * samples of several samplers (processes) make one profile. 0 or -errno.
 */
struct pprof;
int sampler_pprof_add(struct sampler *s, struct pprof *p);

struct flame;

/*
 * All samples of the run of n samplers (one, or a -p list's, each process
 * a frame under the root) as a flame graph (kinds: the program, libraries,
 * kernel, unknown), with the line to head it in heading. NULL: no memory.
 */
struct flame *sampler_flame(struct sampler *const *s, size_t n, char *heading, size_t size);

/* Re-reads the target's mappings while it runs, for symbolizing after it exits. */
void sampler_refresh(struct sampler *s);

/* Detaches and frees; safe with NULL. */
void sampler_stop(struct sampler *s);

#endif /* FNPROF_SAMPLE_H */
