/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one header shared by the BPF programs and user space: map keys and
 * values, limits and enums. Only __u32/__u64 typed fields, so both sides see
 * the same layout.
 */
#ifndef FNPROF_H
#define FNPROF_H

/*
 * Deepest nesting of traced calls kept per thread. The kernel itself stops
 * delivering uretprobes beyond 64 pending returns per task
 * (MAX_URETPROBE_DEPTH), so a deeper stack could not be matched anyway.
 */
#define FNPROF_MAX_DEPTH 64

/*
 * Log-linear latency histogram: values below 2^SUB_BITS ns get a bucket each;
 * above, every power of two is split into 2^SUB_BITS linear sub-buckets, so
 * a bucket is at most 1/32 of its value wide (percentile error < 1.6% with
 * interpolation). The top bucket catches everything from 2^MAX_POW ns (~18 min).
 */
#define FNPROF_HIST_SUB_BITS 5
#define FNPROF_HIST_SUB (1 << FNPROF_HIST_SUB_BITS)
#define FNPROF_HIST_MAX_POW 40
#define FNPROF_HIST_BUCKETS \
	(FNPROF_HIST_SUB + (FNPROF_HIST_MAX_POW - FNPROF_HIST_SUB_BITS) * FNPROF_HIST_SUB)

/*
 * Attach cookie: the function id, the statistics slot of the process the
 * probe is in (--follow-forks), and flags: this bit on the probes placed on a
 * function's ret instructions (--exit=ret) rather than a uretprobe.
 */
#define FNPROF_COOKIE_AT_RET (1U << 31)
/* On an entry probe: --entry-only, count the call and keep no frame. */
#define FNPROF_COOKIE_ENTRY_ONLY (1U << 30)
/* On fnprof's own calibration probes: counted even while the target's are paused. */
#define FNPROF_COOKIE_SELF (1U << 29)
#define FNPROF_COOKIE_SLOT_SHIFT 20
#define FNPROF_COOKIE_SLOT_MASK 0xffU     /* slots 0..255 */
#define FNPROF_COOKIE_ID_MASK 0xfffffU    /* function ids 0..2^20-1 */
#define FNPROF_MAX_FUNCS (FNPROF_COOKIE_ID_MASK + 1)

/* Perf counters read per call (-e): at most this many at once. */
#define FNPROF_MAX_EVENTS 8

/* Events that were not measured, each counted and shown in the report. */
enum fnprof_drop {
	DROP_DEPTH,        /* nesting deeper than FNPROF_MAX_DEPTH: the kernel drops the return */
	DROP_NO_STATE,     /* task storage could not be allocated */
	DROP_ORPHAN_RET,   /* return without a matching entry (attached mid-call) */
	DROP_ABANDONED,    /* frame left by longjmp/unwinding, discarded at a later return */
	DROP_NO_STATS,     /* function id out of range (should never happen) */
	DROP_CTR_READ,     /* a perf counter could not be read (counts of that call incomplete) */
	DROP_FORK_LOST,    /* --follow-forks: a fork child not followed (no statistics slot left) */
	DROP_POOL_LOST,    /* a thread state not given back to the pool (the kernel refused the push) */
	DROP_NR,
};

/* --follow-forks: a fork child of a traced process, and where its statistics go. */
struct proc_info {
	__u32 slot;          /* 1..nr_slots-1 */
	__u32 ppid;          /* the traced process it was forked from */
	__u64 fork_ns;       /* CLOCK_MONOTONIC at the fork (system-wide: at its first call) */
	/* System-wide --by: read at its first call, for labels after it has exited. */
	__u64 comm[2];       /* TASK_COMM_LEN bytes */
	__u64 cgroup_id;     /* its cgroup v2's id (the directory's inode number) */
};

/* Per-function aggregate, per CPU, in one of two interval buffers. */
struct fn_stats {
	__u64 calls;
	__u64 wall_sum;      /* ns, entry to return */
	__u64 wall_min;
	__u64 wall_max;
	__u64 runq_sum;      /* ns switched out while runnable (preempted) */
	__u64 blocked_sum;   /* ns switched out while sleeping (I/O, locks, sleep) */
	__u64 self_sum;      /* wall minus the wall of traced callees */
	__u64 outer_wall;    /* wall of outermost activations only (no recursion double count) */
	__u64 outer_oncpu;   /* on-CPU of outermost activations only: the CPU% input */
	__u64 preempted;     /* calls that waited on the run queue at least once */
	__u64 migrated;      /* calls that returned on another CPU than they entered */
	__u64 vcsw;          /* voluntary context switches inside calls (blocked) */
	__u64 ivcsw;         /* involuntary ones (preempted while runnable) */
	__u64 migrations;    /* CPU changes inside calls */
	__u64 outer_calls;   /* calls that were outermost activations */
	__u64 child_calls;   /* traced calls made directly from these calls */
	__u64 desc_calls;    /* traced calls made from these calls at any depth */
	__u64 sys_sum;       /* on-CPU ns inside system calls (with -e) */
	__u64 ctr[FNPROF_MAX_EVENTS];        /* counter totals, callees included */
	__u64 ctr_self[FNPROF_MAX_EVENTS];   /* minus traced callees */
	__u64 ctr_scaled[FNPROF_MAX_EVENTS]; /* calls whose count was scaled (multiplexed counter) */
	__u64 hist[FNPROF_HIST_BUCKETS];
};

/* One active traced call on a thread's stack. */
struct fn_frame {
	__u64 start_ns;
	__u64 runq0;         /* thread's runq_cum at entry */
	__u64 blocked0;      /* thread's blocked_cum at entry */
	__u64 child_wall;    /* wall of traced calls made from this one */
	__u64 sp;            /* stack pointer at entry: identifies the frame */
	__u64 ip;            /* the function's address (where the entry probe is) */
	__u64 probe_off0;    /* thread's probe_off_cum at entry */
	__u32 id;            /* function id (from the attach cookie) */
	__u32 cpu;           /* CPU at entry */
	__u32 outer;         /* 1 if no activation of the same function is below */
	__u32 slot;          /* statistics slot of the process (from the attach cookie) */
	__u32 scaled0;       /* thread's scaled_seq at entry */
	__u64 vcsw0, ivcsw0, mig0, sys0;
	__u64 child_calls;   /* traced calls returned directly into this one */
	__u64 desc_calls;    /* and at any depth: their probe cost is inside this call */
};

/* A frame's perf counts (-e), kept apart from the frames: most runs have none. */
struct ctr_frame {
	__u64 ctr0[FNPROF_MAX_EVENTS];       /* thread's ctr_cum at entry */
	__u64 child_ctr[FNPROF_MAX_EVENTS];  /* counts of traced calls made from this one */
};

struct thread_ctrs {
	struct ctr_frame frames[FNPROF_MAX_DEPTH];   /* parallel to thread_state's */
};

/* Last reading of one perf counter on the thread's CPU. */
struct ctr_reading {
	__u64 counter, enabled, running;
};

/* A thread's entry in the pool of thread states (task storage). */
struct thread_ref {
	__u32 idx1;          /* its index in the pool + 1; 0: none */
	__u32 refused;       /* once found the pool empty: returns without a frame are of those calls */
};

/*
 * Per CPU: the thread running on it, as sched_switch switched it in: the
 * address of its user registers (the uprobe programs' context, which tells
 * the thread without a helper call) and its pool index + 1, 0 if none yet.
 */
struct cpu_thread {
	__u64 regs;
	__u32 idx1;
	__u32 pad;
};

/* Per-thread state, in a pool indexed by thread_ref. */
struct thread_state {
	__u32 depth;         /* frames in use, at most FNPROF_MAX_DEPTH */
	__u32 out_runnable;  /* state when last switched out */
	__u64 out_ns;        /* when last switched out inside a traced call, 0 if running */
	__u64 runq_cum;      /* ns spent runnable-but-not-running inside traced calls */
	__u64 blocked_cum;   /* ns spent blocked inside traced calls */
	__u64 vcsw_cum, ivcsw_cum, mig_cum;  /* switches and migrations inside traced calls */
	__u32 out_cpu;       /* CPU it was switched out from */
	__u32 scaled_seq;    /* bumped whenever a counter delta had to be scaled */
	__u32 gen;           /* probe generation the frames belong to */
	__u32 out_probe;     /* switched out in an entry probe's own return path (see on_switch) */
	__u32 idx;           /* its index in the pool (and in that of counter frames) */
	__u32 pad;
	__u64 probe_off_cum; /* ns switched out in entry probes' return paths: not the calls' time */
	__u64 sys_cum;       /* on-CPU ns in system calls inside traced calls */
	__u64 sys_start;     /* when the current system call began, 0 if none */
	__u64 sys_off0;      /* runq_cum + blocked_cum then */
	__u64 ctr_cum[FNPROF_MAX_EVENTS];    /* counts while running inside traced calls */
	struct ctr_reading ctr_last[FNPROF_MAX_EVENTS];
	struct fn_frame frames[FNPROF_MAX_DEPTH];
};

/* --- Sampling (profile.bpf.c) --------------------------------------------- */

#define FNPROF_STACK_DEPTH 127   /* PERF_MAX_STACK_DEPTH */

/* Samples are counted per (thread, user stack, kernel stack). */
struct sample_key {
	__u32 tid;          /* 0 unless --per-thread */
	__s32 ustack;       /* stack map ids; negative: none */
	__s32 kstack;
	__u32 pad;
};

enum sample_drop {
	SDROP_USTACK,       /* user stack lost: stack map full or hash collision */
	SDROP_KSTACK,       /* kernel stack lost, same reasons */
	SDROP_COUNTS_FULL,  /* the counts map was full: sample not counted */
	SDROP_NR,
};

#endif /* FNPROF_H */
