/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What only trace.bpf.c reads: the per-thread states and the frames of the
 * traced calls on a thread's stack. User space sizes their maps from the
 * object (bpf_map__value_size) and never reads them.
 */
#ifndef FNPROF_TRACE_BPF_H
#define FNPROF_TRACE_BPF_H

#include "fnprof.h"

/* One active traced call on a thread's stack. */
struct fn_frame {
	__u64 start_ns;
	__u64 runq0;         /* thread's runq_cum at entry */
	__u64 blocked0;      /* thread's blocked_cum at entry */
	__u64 child_wall;    /* wall of traced calls made from this one */
	__u64 sp;            /* stack pointer at entry: identifies the frame */
	__u64 ip;            /* the function's address (where the entry probe is) */
	/*
	 * ns switched out in the return path of this call's entry probe: not its
	 * time. Its callers keep it in theirs, off the CPU: untraced, the
	 * preemption would have come as it fell due, in their code. Of it, on
	 * the run queue (the rest blocked): both are in the thread's runq_cum
	 * and blocked_cum, which this call's reading takes it out of.
	 */
	__u64 probe_off;
	__u64 probe_off_runq;
	__u32 id;            /* function id (from the attach cookie) */
	__u32 cpu;           /* CPU at entry */
	__u32 outer;         /* 1 if no activation of the same function is below */
	__u32 slot;          /* statistics slot of the process (from the attach cookie) */
	__u32 scaled0;       /* thread's scaled_seq at entry */
	__u32 flags;         /* FRAME_* */
	__u64 vcsw0, ivcsw0, mig0, sys0;
	__u64 child_calls;   /* traced calls returned directly into this one */
	__u64 desc_calls;    /* and at any depth: their probe cost is inside this call */
	__u64 tail_hits0;    /* thread's tail_hits_cum at entry */
	__u64 child_tail_hits;  /* of those since, the ones inside traced calls made from this one */
	__u64 tail_jmps0;    /* thread's tail_jmps_cum at entry */
	__u64 child_tail_jmps;  /* the same for the followed tail jmps' probes */
	__u64 ret_addr;      /* FRAME_IN_TAIL: the return address of the call (at sp) */
};

/*
 * The frame's return is a uretprobe: the kernel keeps it pending through a
 * tail call (jmp), so a call entered at the same stack pointer may be its
 * tail callee rather than a sign that it is gone.
 */
#define FRAME_URET 1U
/*
 * Its tail callee has returned: its own return comes at once (the kernel
 * runs the pending uretprobes of one return address together), so a probe
 * that finds this frame still on top knows it is dead.
 */
#define FRAME_TAIL_DONE 2U
/* Its entry's twin probe (fn_mid) has timed the first step: start_ns is moved (see fn_mid). */
#define FRAME_PAIRED 4U
/*
 * That twin is on the function's ret (stepped-pair-ret): once it has fired,
 * the function's own code is done, and until the return probe the thread is
 * in the probes' paths only (see in_entry_probe()).
 */
#define FRAME_PAIR_AT_RET 8U
/*
 * What a paired call's reading carries besides the function: the twin
 * probes' difference is around -0.5 us here (the uretprobe's set-up is in
 * the first interval only), and a stall in the first interval makes it more
 * negative still; the calibration's stepped-pair case measures the sum.
 */
#define PAIR_OFFSET_NS 6000
/*
 * A ret-mode frame whose function has taken a followed tail jump (its
 * probe on the jmp saw it, at the frame's stack pointer): the call goes on
 * in the callee, whose exit probes may close it. Without it, a callee's
 * return at the frame's stack pointer is another call of the callee, and
 * the frame one abandoned (an exception or longjmp through it).
 */
#define FRAME_IN_TAIL 32U
/* ... marked so by its entry probe, which sits on that jmp (FNPROF_COOKIE_ENTRY_JMP): no hit of its own. */
#define FRAME_JMP_AT_ENTRY 64U
/* Entered by a session whose process declined its return: its own ret probes close it (ret_exit_calls). */
#define FRAME_SESSION_RET 128U

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
	__u32 hidden;        /* fnprof-test only: switches back in counted towards hide_switch_in (sched.bpf.h) */
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
	__u64 ret_ip;        /* where the last uretprobe'd call returned to (its caller), when, */
	__u64 ret_ns;
	__u64 ret_sp;        /* and its stack pointer at entry: the slot of that return address */
	__u32 idx;           /* its index in the pool (and in that of counter frames) */
	__u32 over;          /* calls entered above the deepest frame (counted as DROP_DEPTH) not yet returned */
	__u64 sys_cum;       /* on-CPU ns in system calls inside traced calls */
	__u64 sys_start;     /* when the current system call began, 0 if none */
	__u64 sys_off0;      /* runq_cum + blocked_cum then */
	/* Then the scheduler's count of the thread's runs and its run queue's clock (see switched_in_late). */
	__u64 out_pcount, out_clock;
	/*
	 * Hits of exit probes in tail-called functions that closed no call
	 * (other calls of those functions): each costs the calls open on the
	 * thread at the time a probe hit (a single-stepped ret, ~10 us here).
	 */
	__u64 tail_hits_cum;
	/*
	 * Hits of the probes on traced functions' followed tail jmps (each an
	 * emulated jmp, ~1 us here): each is inside the calls open on the
	 * thread, its own function's included.
	 */
	__u64 tail_jmps_cum;
	/*
	 * The last trap at a probed ret (its address, stack pointer and time;
	 * TRAP_*): several probes on one ret (a traced
	 * function's own, another's past its tail jmp) share one trap and one
	 * step, which is paid once.
	 */
	__u64 trap_ip, trap_sp, trap_ns;
	__u64 trap_first;    /* the cookie of the trap's first probe: its next hit is the next trap */
	__u64 trap_hits;     /* tail_hits_cum just after the hit it counted (TRAP_HIT) */
	__u64 trap_hit_cookie;  /* the cookie of the probe that counted it: its function's tail_hits */
	__u32 trap_flags;
	__u32 trap_pad;
	__u64 ctr_cum[FNPROF_MAX_EVENTS];    /* counts while running inside traced calls */
	struct ctr_reading ctr_last[FNPROF_MAX_EVENTS];
	struct fn_frame frames[FNPROF_MAX_DEPTH];
};

#endif /* FNPROF_TRACE_BPF_H */
