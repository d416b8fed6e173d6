/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One path from counted stacks to what fnprof prints of them, for every
 * stack profile (CPU sampling, offcpu, mutex, heap): counts per stack ->
 * values since the last report -> symbolized frames -> rows per function
 * (self and total values) -> the table, JSON, folded stacks, pprof and the
 * flame graph. What differs per kind of profile is data: a struct prof_desc.
 * The callers read their own maps into struct stack_count and print the
 * lines around the table (their header, drops).
 */
#ifndef FNPROF_STACKROWS_H
#define FNPROF_STACKROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"
#include "format/pprof.h"
#include "stacks/prof_kind.h"

struct dwstacks;
struct flame;
struct json;
struct symbolizer;

/* A table column beside SELF% and TOTAL%. */
enum row_col_kind {
	COL_UNIT,   /* the row's total of the value, in its unit ("12.3ms", "8.0MiB"); "-" when unknown */
	COL_COUNT,  /* the row's self value, whole ("1234") */
	COL_CORES,  /* the row's self value over stack_rows.per_core ("0.98") */
};

struct row_col {
	const char *head;  /* NULL: the value's type ("delay") */
	int width;
	int value;
	enum row_col_kind kind;
};

/* What a profile's values mean, and how its stacks are read and shown. */
struct prof_desc {
	enum prof_kind kind;
	const char *what;                        /* "waits", "allocations": the events counted */
	int nr_values;
	struct pprof_type types[PROF_NR_VALUES]; /* pprof sample types, in prof_val order */
	bool fixed[PROF_NR_VALUES];              /* kept in 1/PROF_FP_ONE (counts) */
	bool snapshot[PROF_NR_VALUES];           /* a state now (in use), not a sum over an interval */
	int rank, second;                        /* the values the table ranks by and shows beside */
	const char *label_key;                   /* the pprof label, NULL if none */
	const char *labels[2];                   /* its values by prof_key.label */
	struct pprof_type period_type;
	const char *default_type;                /* what pprof shows first; NULL: the last type */
	/* The fields below are zero for the offcpu, mutex and heap profiles. */
	bool inlines;          /* inlined calls are frames of their own (folded, pprof; not the table's rows) */
	bool kstack_at_event;  /* kernel stacks are taken at a perf event (CPU), not in a probe: none of its frames atop */
	/* Rows rank by self, then total, and show only with a self value (CPU: where the time goes); else by total. */
	bool rank_self;
	bool kernel_rows;      /* the table shows kernel functions (CPU); else only the program's (kernel: JSON, pprof) */
	bool json_samples;     /* JSON rows as self_pct ... cpu_cores (CPU), else self and total objects by type */
	struct row_col cols[2];  /* head NULL and width 0: rank's and second's totals (COL_UNIT, 12 wide) */
};

/*
 * One counted stack, whatever the kind. pid 0: the process profiled. Stack
 * ids: below FNPROF_STACK_MAP_ENTRIES the stack map's, from DWSTACK_BASE
 * the unwound ones (dwstacks.h), kernel ones by hash with kstacks_fd;
 * negative: none (PROF_STACK_NO_WAKER: a waker not seen). caller: the heap's
 * return address kept apart (prof_key.caller), 0: none.
 */
struct stack_key {
	__u32 pid, tid, label;
	__s32 ustack, kstack;
	__u32 pad;              /* zero: keys compare as bytes */
	__u64 caller;
};

struct stack_count {
	struct stack_key key;
	double total[PROF_NR_VALUES];   /* since the start, as counted (the caller fills this) */
	double delta[PROF_NR_VALUES];   /* in the interval being reported */
	double out[PROF_NR_VALUES];     /* since the start, as reported (scaled to the run) */
};

/* A function's row (of one thread of one process): its values in the interval. */
struct stack_row {
	const char *func, *object;  /* the symbolizer's strings: one per function, compared as pointers */
	__u32 pid, tid;
	double self[PROF_NR_VALUES], total[PROF_NR_VALUES];
};

struct stack_rows {
	struct stack_row *v;
	size_t nr, cap;
	double sum[PROF_NR_VALUES];
	double by_label[2][PROF_NR_VALUES];
	double per_core;        /* COL_CORES: the value a core busy the whole interval counts; set by the caller */
	unsigned int unknown;   /* bit v: value v is not known (shown "-", null; left out of pprof) */
};

struct stackrows_conf {
	const struct prof_desc *desc;
	pid_t pid;                   /* the process profiled: its threads' names, key.pid 0 */
	struct symbolizer *sym;      /* its symbolizer (the caller's; outlives the stackrows) */
	/* The symbolizer of another process (key.pid != 0); NULL, or it returning NULL: sym. */
	struct symbolizer *(*sym_of)(void *ctx, __u32 pid);
	/*
	 * -a: the name of a process (key.pid); set, the rows of every process
	 * are one ranking with PID and COMM columns, JSON rows get "comm",
	 * folded stacks start with it and pprof samples carry the labels pid
	 * and comm. NULL: rows by process.
	 */
	const char *(*comm_of)(void *ctx, __u32 pid);
	void *ctx;
	/*
	 * -p P1,P2,...: the files hold these stacks among other processes':
	 * pprof samples labelled pid and comm, folded stacks start "comm-PID"
	 * (stackcollapse-perf.pl --pid), flame stacks sit under "comm (pid N)".
	 */
	bool name_process;
	int stacks_fd;               /* the stack map (FNPROF_STACK_MAP_ENTRIES) */
	int kstacks_fd;              /* kernel stacks kept by hash id (offcpu); -1: in stacks_fd */
	struct dwstacks *dw;         /* user stacks unwound in user space (ids >= DWSTACK_BASE); NULL: none */
	bool per_thread;             /* rows per thread, under a heading each */
	unsigned int top;            /* rows shown per thread */
};

struct stackrows;

/* 0, or -ENOMEM. The conf is copied; what it points to stays the caller's. */
int stackrows_new(const struct stackrows_conf *c, struct stackrows **out);
/* Safe with NULL. */
void stackrows_free(struct stackrows *r);

/* While the process runs: its name, and with per_thread its threads', for when they have exited. */
void stackrows_refresh(struct stackrows *r);

/*
 * The counts now, e[0..nr) (malloc'd; taken over, freed by the stackrows):
 * sorted, the values of a key given twice summed, each one's values since the last take (delta; over share, but for
 * snapshot values) and since the start (out; over run_share). The stacks of
 * the files and the flame graph are these from now on.
 */
void stackrows_take(struct stackrows *r, struct stack_count *e, size_t nr, double share, double run_share);

/* The counts since the start, as the last take left them. */
const struct stack_count *stackrows_counts(const struct stackrows *r, size_t *nr);

/*
 * The rows of the interval of the last take, by process, thread, then the
 * desc's ranking; sums and by-label sums of its values. 0 or -ENOMEM (t
 * then partly filled). Free t->v.
 */
int stackrows_rows(struct stackrows *r, struct stack_rows *t);
/*
 * As stackrows_rows, with the values since the start as the last take left
 * them (out: over the run's share; states as they are now): a run's total
 * after interval reports (-i).
 */
int stackrows_total_rows(struct stackrows *r, struct stack_rows *t);

/* A value in its unit for the table: "12.3ms", "8.0MiB", "1234". */
const char *stackrows_fmt(const struct pprof_type *t, double v, char *buf, size_t size);

/* The table's rows (thread headings with per_thread), names made safe for the terminal. */
void stackrows_table(struct stackrows *r, FILE *out, const struct stack_rows *t);

/* The JSON array "functions" of the rows. */
void stackrows_json(struct stackrows *r, struct json *j, const struct stack_rows *t);
/* A JSON object of values by type (null for unknown ones). */
void stackrows_json_values(struct stackrows *r, struct json *j, const char *key, const double *v,
			   unsigned int unknown);

/* Folded stacks of the counts since the start ("comm;root;...;leaf count"), written atomically. 0 or -errno. */
int stackrows_write_folded(struct stackrows *r, const char *path);
/* The same of n stackrows (a -p list's processes) in one file. */
int stackrows_write_folded_many(struct stackrows *const *r, size_t n, const char *path);

/*
 * The counts since the start into p (made with the desc's types, or for the
 * CPU profile pprof_new), the values not in unknown, the program's mapping
 * first. 0 or -errno.
 */
int stackrows_add_pprof(struct stackrows *r, struct pprof *p, unsigned int unknown);

/* Adds the counts since the start into p (as above), encodes it and writes it to path; frees p. 0 or -errno. */
int stackrows_write_pprof(struct stackrows *r, struct pprof *p, unsigned int unknown, const char *path);
/* The same of n stackrows (a -p list's processes) in one profile. */
int stackrows_write_pprof_many(struct stackrows *const *r, size_t n, struct pprof *p, unsigned int unknown,
			       const char *path);

/* The counts since the start into fl, root first, below the thread with per_thread. 0 or -ENOMEM. */
int stackrows_add_flame(struct stackrows *r, struct flame *fl);

/* The process's name, as last seen running ("[process]" if never). */
const char *stackrows_comm(const struct stackrows *r);

#endif /* FNPROF_STACKROWS_H */
