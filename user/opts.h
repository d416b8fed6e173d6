/* SPDX-License-Identifier: GPL-2.0 */
/* Command line: one getopt_long parser, range checks, cross-checks. */
#ifndef FNPROF_OPTS_H
#define FNPROF_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"
#include "report/metrics.h"
#include "target/probe.h"

#define MAX_FUNC_SPECS 256
#define MAX_PIDS 64   /* -p P1,P2,...: 1 + TRACER_MORE_MAX */

/* --max-series default: per-function label values kept apart before folding into "other". */
#define DEFAULT_MAX_SERIES 100

/* How sampled user stacks are walked (--call-graph). */
enum call_graph {
	CG_AUTO,   /* dwarf (its walk follows frame pointers where an object has no CFI) */
	CG_FP,     /* frame pointers, in the kernel: cheap, but broken by -fomit-frame-pointer code */
	CG_DWARF,  /* stack copies unwound in user space with the objects' CFI (libdw) */
};

#define DEFAULT_STACK_BYTES FNPROF_DEFAULT_STACK_COPY
_Static_assert(DEFAULT_STACK_BYTES % 8 == 0 && DEFAULT_STACK_BYTES <= FNPROF_MAX_STACK_COPY,
	       "the default stack copy is a size --call-graph dwarf,SIZE takes");

struct opts {
	pid_t pid;                 /* -p; 0 when launching a command, or system-wide */
	pid_t pids[MAX_PIDS];      /* -p P1,P2,...: pids[0] is pid; each reported on its own */
	size_t nr_pids;
	bool system_wide;          /* neither -p nor a command: every process mapping the -f objects */
	bool all;                  /* -a: sample every process (no -p, no command, no -f) */
	bool follow_forks;         /* --follow-forks: trace fork children too, each on its own */
	unsigned int max_threads;  /* --max-threads: threads holding a thread state at once (0: default) */
	char **cmd;                /* after "--": command to launch, NULL-terminated */
	const char *funcs[MAX_FUNC_SPECS]; /* -f patterns: NAME, LIB:NAME, /path:NAME, globs */
	size_t nr_funcs;
	double duration_s;         /* -d; 0 = until Ctrl-C or target exit */
	double interval_s;         /* -i; 0 = one report at the end */
	bool hist;                 /* --hist */
	bool json;                 /* --json */
	bool list;                 /* --list: show what -f matches, attach nothing */
	const char *output;        /* -o FILE: the report goes there instead of stderr */
	bool verbose;              /* -v */
	bool version;              /* --version: print it (with -v: libbpf's and the kernel's too) */
	bool calibrate;            /* --calibrate: print the probe calibration and exit */
	bool raw;                  /* --raw: no probe-bias correction */
	bool step_single;          /* --stepped=single: no twin probes for single-stepped entries */
	double max_overhead_pct;   /* --max-overhead: 0 = trace every call (with the heap profile too: half of it) */
	double heap_overhead_pct;  /* the heap profile's share of --max-overhead; 0 = none */
	enum exit_mode exit_mode;  /* --exit, --entry-only */
	unsigned long long slow_ns; /* --slow: calls this long or longer are reported one by one; 0: none */
	/* sampling (issue: sampling profiler) */
	bool sample;               /* --sample, or implied when no -f is given */
	unsigned int freq_hz;      /* -F */
	const char *pprof_path;    /* --pprof FILE */
	const char *folded_path;   /* --folded FILE */
	const char *svg_path;      /* --svg FILE: flame graph (sampling), latency heatmaps (-f) */
	bool per_thread;           /* --per-thread */
	unsigned int top;          /* -n/--top: rows in the sampling table */
	enum call_graph call_graph;  /* --call-graph fp|dwarf[,SIZE]|auto */
	unsigned int stack_bytes;  /* --call-graph dwarf,SIZE: user stack copied per sample */
	bool no_debuginfod;        /* --no-debuginfod */
	/* other profiles (issue 16): offcpu, mutex, heap */
	unsigned int profiles;     /* --profile: 1 << PROF_* bits (profiles.h); 0: cpu when no -f */
	unsigned long long offcpu_rate_ns;  /* --offcpu-rate */
	unsigned long long heap_rate;       /* --heap-rate, bytes */
	const char *pprof_base;    /* --pprof as given: the other profiles' files are named from it */
	char cpu_pprof[4096];      /* the CPU profile's pprof file when several profiles write theirs */
	/* counters (issue: per-call counters) */
	const char *events;        /* -e LIST */
	bool list_events;          /* --list-events */
	/* fleet export (issue: Prometheus metrics, pprof over HTTP) */
	const char *listen;        /* --listen ADDR:PORT: serve /metrics and /debug/pprof/profile */
	enum metrics_by by;        /* --by pid|comm|cgroup: a label per process */
	unsigned int max_series;   /* --max-series: label values kept apart (the rest: "other") */
	size_t max_memory;         /* --max-memory: what the targets make fnprof hold (budget.h), bytes */
};

/*
 * Parses argv into o. Returns -1 when the run should go on, otherwise the
 * exit code to return at once (0 after --help, EXIT_USAGE on errors).
 */
int opts_parse(int argc, char **argv, struct opts *o);

/* Parses a non-negative number of seconds ("10", "0.5"). 0 or -EINVAL. */
int parse_seconds(const char *s, double *out);

/*
 * Parses a non-negative duration into nanoseconds: a number ("1.5") with a
 * unit, ns, us, ms, s or m ("500us", "2m"); a bare number counts bare_ns
 * each. 0; -ENOENT for a bare number when bare_ns is 0 (a unit is needed);
 * -EINVAL otherwise.
 */
int parse_duration(const char *s, double bare_ns, double *out_ns);

#endif /* FNPROF_OPTS_H */
