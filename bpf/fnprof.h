/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one header shared by the BPF programs and user space: what user space
 * reads or writes (cookie bits, the statistics' layout and key, drop
 * reasons, sampling keys), limits and enums. Only __u32/__u64 typed fields,
 * so both sides see the same layout. What only the BPF side reads (thread
 * states, frames) is in bpf/trace.bpf.h.
 */
#ifndef FNPROF_H
#define FNPROF_H

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
/* On the entry probe of a function whose return is a uretprobe: its frame may be tail-called from. */
#define FNPROF_COOKIE_URET (1U << 28)
#define FNPROF_COOKIE_SLOT_SHIFT 20
#define FNPROF_COOKIE_SLOT_MASK 0xffU     /* slots 0..255 */
#define FNPROF_COOKIE_ID_MASK 0xfffffU    /* function ids 0..2^20-1 */
#define FNPROF_MAX_FUNCS (FNPROF_COOKIE_ID_MASK + 1)

/* Perf counters read per call (-e): at most this many at once. */
#define FNPROF_MAX_EVENTS 8

/* Events that were not measured, each counted and shown in the report. */
enum fnprof_drop {
	DROP_DEPTH,        /* nesting deeper than FNPROF_MAX_DEPTH (trace.bpf.h): not timed */
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

/*
 * The stats map's key of function id (of nr_funcs, the calibration's
 * included) of the process in slot (of nr_slots), in buffer half 0 or 1:
 * [half][slot][id].
 */
static inline __attribute__((always_inline)) __u32 fnprof_stats_key(__u32 half, __u32 nr_slots, __u32 slot,
								    __u32 nr_funcs, __u32 id)
{
	return (half * nr_slots + slot) * nr_funcs + id;
}

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
	__u64 entered;       /* calls that entered, whether or not their return was seen */
	__u64 ctr[FNPROF_MAX_EVENTS];        /* counter totals, callees included */
	__u64 ctr_self[FNPROF_MAX_EVENTS];   /* minus traced callees */
	__u64 ctr_scaled[FNPROF_MAX_EVENTS]; /* calls whose count was scaled (multiplexed counter) */
	__u64 hist[FNPROF_HIST_BUCKETS];
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
