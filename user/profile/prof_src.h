/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One profile's kernel side as profiles.c reads it: the description of its
 * values (struct prof_desc, stackrows.h) and the maps its BPF object fills
 * (prof.bpf.h). offcpu.c, mutex.c and heap.c each make one.
 */
#ifndef FNPROF_PROF_SRC_H
#define FNPROF_PROF_SRC_H

#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>  /* getpid, in PROF_SET_RODATA */
#include <linux/types.h>

#include "fnprof.h"
#include "stacks/prof_kind.h"
#include "stacks/stackrows.h"   /* struct prof_desc */

/* --max-overhead: the share of the target's work the probes saw, for the report to scale by. */
struct prof_duty {
	double share, run_share;  /* since the last report, and over the run, in (0, 1] */
	double budget_pct;        /* --max-overhead */
	double cost_pct;          /* the probes' estimated cost over the run, % of the target's own work */
	bool work_unknown;        /* the target's own work could not be told from the probes' cost */
	unsigned int bursts;
	const char *snapshot_lost; /* why the snapshot values (in use) are unknown; NULL: they are known */
};

struct dwstacks;

struct prof_src {
	const struct prof_desc *desc;
	/*
	 * --call-graph dwarf: the unwound stacks and their values (read with the
	 * counts map's); stack ids from DWSTACK_BASE up, and the stacks of the
	 * live map's dw_ids (key.ustack PROF_DW_ID). NULL with frame pointers.
	 * The loader's stop frees it.
	 */
	struct dwstacks *dw;
	int stacks_fd, counts_fd, drops_fd;
	int live_fd;          /* heap: sampled pointers (-> struct prof_live) adding to values 2, 3; else -1 */
	int kstacks_fd;       /* offcpu: kernel stacks by hash id (any __s32 >= 0); -1: in stacks_fd */
	int procs_fd;         /* -a: the processes seen (tgid -> struct proc_seen, proctab.h); -1: one process */
	__u64 period;         /* pprof period: the rate */
	char note[128];       /* the report's first line adds this ("rate 100 us") */
	double event_cost_ns; /* what the probes add to the target per event seen, measured; 0: not known */
	double free_cost_ns;  /* heap: the same per free seen (PDROP_FREED) */
	void *priv;
	void (*arm)(struct prof_src *s);   /* NULL if nothing to do */
	/* NULL, or false: the probes saw everything; else the share they saw (taking it starts a new interval). */
	bool (*duty)(struct prof_src *s, struct prof_duty *out);
	void (*stop)(struct prof_src *s);
};

/* What every profile's object takes from c and pid before load (their skeletons are of different types). */
#define PROF_SET_RODATA(skel, c, pid)					\
	do {								\
		(skel)->rodata->target_tgid = (pid);			\
		(skel)->rodata->all_procs = (c)->all;			\
		(skel)->rodata->self_tgid = getpid();			\
		(skel)->rodata->per_thread = (c)->per_thread;		\
		(skel)->rodata->dwarf = (c)->dwarf;			\
		(skel)->rodata->stack_bytes = (c)->stack_bytes;		\
	} while (0)

/* Each loads its BPF object and attaches it to process pid. 0 or -errno (message printed). */
int offcpu_start(const struct prof_conf *c, pid_t pid, struct prof_src *out);
int mutex_start(const struct prof_conf *c, pid_t pid, struct prof_src *out);
int heap_start(const struct prof_conf *c, pid_t pid, struct prof_src *out);

#endif /* FNPROF_PROF_SRC_H */
