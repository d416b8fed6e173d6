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
 * function's ret instructions (--exit=ret) rather than a uretprobe, and on a
 * paired entry's twin when it is on the ret (stepped-pair-ret).
 */
#define FNPROF_COOKIE_AT_RET (1U << 31)
/* On an entry probe: --entry-only, count the call and keep no frame. */
#define FNPROF_COOKIE_ENTRY_ONLY (1U << 30)
/* On fnprof's own calibration probes: counted even while the target's are paused. */
#define FNPROF_COOKIE_SELF (1U << 29)
/* On the entry probe of a function whose return is a uretprobe: its frame may be tail-called from. */
#define FNPROF_COOKIE_URET (1U << 28)
/*
 * Above the 32 bits (the cookie is a __u64; the programs that read only these
 * flags keep it whole): on a ret-mode exit probe past the function's own rets
 * (fn_exit_tail), one in a function it tail-calls, that fires on that
 * function's other calls too, which it leaves alone...
 */
#define FNPROF_COOKIE_TAIL (1ULL << 32)
/* ... one on a tail jump to a function not known (indirect, PLT): the call ends there, untimed beyond ... */
#define FNPROF_COOKIE_UNTIMED (1ULL << 33)
/* ... and on the entry probe of a function with exits in its callees: its frame lives on through the jmp. */
#define FNPROF_COOKIE_TAILS (1ULL << 34)
/*
 * On a followed tail jmp of the function itself (fn_exit_tail): its call
 * goes on in the callee from here, so the probes in the callee may close
 * its frame; until then they are the callee's other calls (a frame at the
 * same stack pointer is one abandoned by an exception or longjmp).
 */
#define FNPROF_COOKIE_JMP (1ULL << 35)
/*
 * On the entry probe of a function whose entry probe sits on that jmp (its
 * first instruction the kernel emulates: `add $1,%edi; jmp g`): the entry
 * marks the frame itself, in the one trap, and no jmp probe is attached.
 */
#define FNPROF_COOKIE_ENTRY_JMP (1ULL << 36)
/*
 * A ret probe of a session-entered function, in a process that declined
 * the session's return: a return without its entry there is of a call made
 * while its exit was chosen (counted in DROP_UNCHOSEN), not an orphan.
 */
#define FNPROF_COOKIE_SESSION_RET (1ULL << 37)
#define FNPROF_COOKIE_SLOT_SHIFT 20
#define FNPROF_COOKIE_SLOT_MASK 0xffU     /* slots 0..255 */
#define FNPROF_COOKIE_ID_MASK 0xfffffU    /* function ids 0..2^20-1 */
#define FNPROF_MAX_FUNCS (FNPROF_COOKIE_ID_MASK + 1)
/* The compat trace object's answer for a probed address user space did not fill in (bpf/compat.bpf.h). */
#define FNPROF_COOKIE_NONE (1ULL << 63)

/* The compat trace object's key of a probe's cookie: the process and the probed address in it. */
struct probe_addr {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

/* Its fallback's: the object's GNU build-id (zero-padded, as the kernel gives it) and the file offset. */
struct probe_file {
	__u8 build_id[20];
	__u32 pad;
	__u64 offset;
};

/* Slots whose calls while paused are counted apart (-p P1,P2,...'s processes: at most 64). */
#define FNPROF_PAUSED_SLOTS 64

/* Perf counters read per call (-e): at most this many at once. */
#define FNPROF_MAX_EVENTS 8

/*
 * Deepest nesting of traced calls kept per thread. The kernel itself stops
 * delivering uretprobes beyond 64 pending returns per task
 * (MAX_URETPROBE_DEPTH), so a deeper stack could not be matched anyway.
 */
#define FNPROF_MAX_DEPTH 64

/* Events that were not measured, each counted and shown in the report. */
enum fnprof_drop {
	DROP_DEPTH,        /* nesting deeper than FNPROF_MAX_DEPTH: not timed */
	DROP_NO_STATE,     /* task storage could not be allocated */
	DROP_ORPHAN_RET,   /* return without a matching entry (attached mid-call) */
	DROP_ABANDONED,    /* frame left by longjmp/unwinding, discarded at a later return */
	DROP_NO_STATS,     /* function id out of range (should never happen) */
	DROP_CTR_READ,     /* a perf counter could not be read (counts of that call incomplete) */
	DROP_FORK_LOST,    /* --follow-forks: a fork child not followed (no statistics slot left) */
	DROP_POOL_LOST,    /* a thread state not given back to the pool (the kernel refused the push) */
	DROP_GO_NOT_G,     /* Go: a traced call not on a goroutine's stack (r14 is no g there) */
	DROP_GO_STACKS,    /* Go: no room for another goroutine's open calls */
	DROP_DETACHED,     /* burst mode: a frame open when the probes were detached (its return unseen) */
	DROP_SWITCH_IN,    /* a switch back in not seen: the time off the CPU before it read as on-CPU */
	DROP_NO_COOKIE,    /* compat object: an entry at an address user space had not filled in (bpf/compat.bpf.h) */
	DROP_UNCHOSEN,     /* system-wide sessions: a call made while the exit of its process was chosen */
	DROP_NR,
};

/* A task's name as the kernel keeps it (TASK_COMM_LEN), its terminating NUL included. */
#define FNPROF_COMM_LEN 16

/*
 * A BPF ring buffer's size is a power of two and a multiple of the page
 * size: one page, the smallest, is what an object declares for a ring
 * buffer that user space sizes before load.
 */
#define FNPROF_RB_MIN 4096
#define FNPROF_RB_SIZE_OK(n) ((n) >= FNPROF_RB_MIN && ((n) & ((n) - 1)) == 0)

/*
 * System-wide probes entered by a uprobe session (Linux 6.13+): how the
 * calls of one process end, as user space chose for its program. Until it
 * has, the process's calls are not timed (DROP_UNCHOSEN).
 */
enum exit_choice {
	EXIT_CHOICE_PENDING,  /* the process asked, user space is choosing */
	EXIT_CHOICE_URET,     /* the session's return probe: a hijacked return address, no single step */
	EXIT_CHOICE_RET,      /* return declined: probes on the ret instructions, in that process only */
};

/* The exit chosen for process tgid (the key), for the program it runs (exec_id). */
struct exit_choice_val {
	__u64 exec_id;       /* task_struct.self_exec_id when it asked: an exec asks again */
	__u32 choice;        /* enum exit_choice */
	__u32 listed;        /* user space has it in its list of the processes and their exits */
	char comm[FNPROF_COMM_LEN];  /* its name when it asked (or took its parent's exit) */
};

/* --follow-forks: a fork child of a traced process, and where its statistics go. */
struct proc_info {
	__u32 slot;          /* 1..nr_slots-1 */
	__u32 ppid;          /* the traced process it was forked from */
	__u64 fork_ns;       /* CLOCK_MONOTONIC at the fork (system-wide: at its first call) */
	/* System-wide --by: read at its first call, for labels after it has exited. */
	__u64 comm[FNPROF_COMM_LEN / 8];
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
	__u64 tail_untimed;  /* calls that ended at a tail jump to a function not known (not timed beyond) */
	__u64 tail_hits;     /* hits of its exit probes in callees that were other calls of those: their cost */
	/*
	 * Such hits (of any traced function's probes in callees) on the thread
	 * while these calls were open, at any depth: their cost is inside them...
	 */
	__u64 tail_hits_inside;
	__u64 tail_hits_self;  /* ... and those outside their traced callees' calls: in their self time */
	__u64 tail_jmp_calls;  /* calls that took a followed tail jmp (its probe marked them) */
	/*
	 * Hits of the probes on followed tail jmps (an emulated jmp each) while
	 * these calls were open, their own jmps included: their cost is inside
	 * them...
	 */
	__u64 tail_jmps_inside;
	__u64 tail_jmps_self;  /* ... and those outside their traced callees' calls: in their self time */
	/*
	 * System-wide sessions: calls closed by the ret probes of a process that
	 * declined the session's return. Their bias was made the uretprobe's
	 * (session_ret_shift_ns); each cost its process the ret exit's extra.
	 */
	__u64 ret_exit_calls;
	__u64 ctr[FNPROF_MAX_EVENTS];        /* counter totals, callees included */
	__u64 ctr_self[FNPROF_MAX_EVENTS];   /* minus traced callees */
	__u64 ctr_scaled[FNPROF_MAX_EVENTS]; /* calls whose count was scaled (multiplexed counter) */
	__u64 hist[FNPROF_HIST_BUCKETS];
};

/* --- Sampling (profile.bpf.c) --------------------------------------------- */

#define FNPROF_STACK_DEPTH 127   /* PERF_MAX_STACK_DEPTH */
/*
 * The stack maps' size (profile.bpf.c, prof.bpf.h): their ids are below it,
 * and user space numbers the stacks it unwinds itself from it on (dwstacks.h).
 */
#define FNPROF_STACK_MAP_ENTRIES 16384
/* The counts maps' size (profile.bpf.c, prof.bpf.h): keys beyond are dropped, counted (*DROP_COUNTS_FULL). */
#define FNPROF_COUNTS_ENTRIES 65536

/* Samples are counted per (process, thread, user stack, kernel stack). */
struct sample_key {
	__u32 tid;          /* 0 unless --per-thread */
	__s32 ustack;       /* stack map ids; negative: none */
	__s32 kstack;
	__u32 pid;          /* -a: the process (tgid); 0 for one target */
};

/* -a: the processes sampled, by tgid, with their name as the sample saw it (they may exit before a report). */
#define FNPROF_MAX_PROCS_SEEN 8192
struct proc_seen {
	char comm[FNPROF_COMM_LEN];  /* the process's (its group leader's) name, as of its last exec */
	/*
	 * Its exec generation: the kernel's self_exec_id, which each exec
	 * bumps (and a fork copies): a change means a new image, name and
	 * mappings (perf's COMM event with PERF_RECORD_MISC_COMM_EXEC).
	 */
	__u64 exec_id;
};

/*
 * -a: a process first sampled, or sampled again after an exec: user space
 * reads its mappings at once (a process of 30 ms is gone by the next
 * look), woken for each (once per process image, not per sample).
 */
struct fnprof_proc_event {
	__u32 pid;          /* tgid */
	__u32 pad;
	__u64 exec_id;      /* as proc_seen's */
};
#define FNPROF_PROC_EVENTS_RB (256 << 10)
_Static_assert(FNPROF_RB_SIZE_OK(FNPROF_PROC_EVENTS_RB), "a ring buffer's size: a power of two, at least a page");

enum sample_drop {
	SDROP_USTACK,       /* user stack lost: stack map full or hash collision */
	SDROP_KSTACK,       /* kernel stack lost, same reasons */
	SDROP_COUNTS_FULL,  /* the counts map was full: sample not counted */
	SDROP_RINGBUF,      /* --call-graph dwarf: the ring buffer was full, sample not counted */
	SDROP_PROC_EVENTS,  /* -a: a new process not told at once (its buffer full): mappings read at the next look */
	SDROP_NR,
};

/*
 * --call-graph dwarf: per sample, the user registers and the top of the user
 * stack go to user space, which unwinds them with the objects' CFI (perf's
 * way). Registers in DWARF order for x86-64: rax rdx rcx rbx rsi rdi rbp rsp
 * r8..r15, then the return address column (rip).
 */
#define FNPROF_REG_SP 7
#define FNPROF_REG_IP 16
#define FNPROF_NR_REGS (FNPROF_REG_IP + 1)
#define FNPROF_MAX_STACK_COPY 65536   /* --call-graph dwarf,SIZE: at most this */
#define FNPROF_DEFAULT_STACK_COPY 16384  /* and without SIZE: a multiple of 8, at most the above */
#define FNPROF_MAX_RETS 16            /* pending uretprobe returns carried per sample */
/*
 * Room after a stack copy of at most N bytes (ustack.bpf.h reads a page at
 * a time): a page-sized read at any offset below N stays in the buffer.
 */
#define FNPROF_STACK_SLACK 4096
/* --call-graph dwarf: the samples' ring buffer, at least (sample.c makes it larger for many CPUs). */
#define FNPROF_SAMPLES_RB_MIN (4 << 20)
_Static_assert(FNPROF_RB_SIZE_OK(FNPROF_SAMPLES_RB_MIN), "a ring buffer's size: a power of two, at least a page");

struct dwarf_sample {
	__u32 tid;          /* the thread (always set: unwinding needs it) */
	__s32 kstack;       /* kernel stack map id; negative: none */
	__u32 pid;          /* its process (tgid) */
	/*
	 * -a: the user stack's frame-pointer walk, a stack map id (negative:
	 * none), for a process gone before user space could read its mappings
	 * to unwind the copy (its reader behind on a busy machine). Else unused.
	 */
	__s32 ufp;
	__u64 regs[FNPROF_NR_REGS];
	/*
	 * A uretprobe replaces the return address on the stack with its
	 * trampoline's: where (ret_slot) and what it was (ret_addr), innermost
	 * first, from the thread's pending returns, so the walk goes on past it.
	 */
	__u64 ret_slot[FNPROF_MAX_RETS];
	__u64 ret_addr[FNPROF_MAX_RETS];
	__u32 nr_rets;
	__u32 stack_len;    /* bytes of stack copied from regs[FNPROF_REG_SP] up, which follow */
};

/* --- Other profiles: offcpu, mutex, heap (offcpu/mutex/heap.bpf.c) --------- */

/* A weighted stack: per (thread, label, user stack, kernel stack). */
struct prof_key {
	__u32 tid;          /* 0 unless --per-thread */
	__u32 label;        /* the profile's label value (PROF_OFFCPU_*, PROF_MUTEX_*); 0 for heap */
	__s32 ustack;       /* stack map ids; negative: none */
	__s32 kstack;
	/*
	 * heap: the return address at [sp] when the probe fired on the allocator's
	 * first instruction; a frame-pointer walk from there skips the caller. 0: none.
	 */
	__u64 caller;
	__u32 pid;          /* -a: the process (tgid); 0: the one profiled */
	__u32 pad;          /* zero: keys compare as bytes */
};

/* The values of one stack, in the order of the profile's pprof sample types. */
#define PROF_NR_VALUES 4
struct prof_val {
	__u64 v[PROF_NR_VALUES];
};

/* Counts are kept in 1/1024 so that scaled samples (weights like rate/delay) stay exact enough. */
#define PROF_FP_SHIFT 10
#define PROF_FP_ONE (1ULL << PROF_FP_SHIFT)

/* mutex: the stack id of a waker that was not seen (a timeout, a wake from the kernel at thread exit). */
#define PROF_STACK_NO_WAKER (-1000)

enum prof_offcpu_label {
	PROF_OFFCPU_BLOCKED,   /* switched out asleep: I/O, locks, sleeps */
	PROF_OFFCPU_RUNQ,      /* preempted while runnable: waiting for a CPU */
};

/* Mutex: the waiter's futex operation tells a lock (value 2, PI locks) from other waits. */
enum prof_mutex_label {
	PROF_MUTEX_LOCK,       /* a lock's slow path: glibc waits with value 2, or a PI lock */
	PROF_MUTEX_WAIT,       /* any other futex wait: condition variables, semaphores, joins */
};

/*
 * heap: x/(1-e^-x) at x = i / PROF_HEAP_WSTEPS, in 1/PROF_HEAP_WONE, interpolated
 * between; from x = PROF_HEAP_WTAB / PROF_HEAP_WSTEPS on it is x (e^-x < 1e-7).
 */
#define PROF_HEAP_WSHIFT 16
#define PROF_HEAP_WONE (1ULL << PROF_HEAP_WSHIFT)
#define PROF_HEAP_WSTEPS 64
#define PROF_HEAP_WTAB (16 * PROF_HEAP_WSTEPS + 1)
/* Exponential intervals drawn by user space: -ln(U) * rate, picked at random by the probes. */
#define PROF_HEAP_EXPO 4096

/* heap: a sampled allocation not yet freed. */
struct prof_live {
	struct prof_key key;  /* --call-graph dwarf: key.ustack PROF_DW_ID, its stack by dw_id */
	__u64 objects;      /* its weight in 1/1024 objects */
	__u64 bytes;        /* its weight in bytes */
	__u64 dw_id;        /* the id its stack was sent under (pdw_send); 0: none */
};

/* mutex: the last waker of a futex word. */
struct prof_waker {
	struct prof_key key;  /* as prof_live's */
	__u64 dw_id;
};

/* Events of the other profiles, each counted; [PDROP_NR] in a per-CPU array. */
enum prof_drop {
	PDROP_USTACK,       /* user stack lost: stack map full or hash collision */
	PDROP_KSTACK,       /* kernel stack lost, same reasons */
	PDROP_COUNTS_FULL,  /* the counts map was full: the event not counted */
	PDROP_STATE,        /* no per-thread state (offcpu, mutex) or live map full (heap: not in inuse) */
	PDROP_NO_WAKER,     /* mutex: a wait whose waker was not seen (charged to "[waker unknown]") */
	PDROP_SEEN,         /* events seen (switches in, futex waits, allocations) */
	PDROP_KEPT,         /* of them sampled and counted */
	PDROP_FREED,        /* heap: frees (and reallocs' old blocks) seen */
	PDROP_DW_FP,        /* --call-graph dwarf: counted with the frame-pointer stack instead (no copy) */
	PDROP_RINGBUF,      /* of those, because the ring buffer to user space was full */
	PDROP_NR,
};

/*
 * --call-graph dwarf for offcpu, mutex and heap: an event's key and values
 * with the user registers and stack copy (PDW_STACK), or the values of a
 * stack sent before under an id (PDW_BY_ID: a mutex's waker). User space
 * unwinds the copy and counts the values per (key, unwound stack); it
 * remembers the stack of an event sent with an id for as long as the heap's
 * live map or the mutex's wakers hold the id (their dw_id, with
 * prof_key.ustack PROF_DW_ID in place of a stack map id). An id is
 * cpu << PROF_DW_SEQ_BITS | sequence number on that CPU, from 1: 64 bits,
 * so that no id is given twice in a run (2^48 per CPU), however long a
 * leaked block keeps its id.
 */
enum prof_dw_op {
	PDW_STACK,
	PDW_BY_ID,
};

#define PROF_DW_ID 0x40000000     /* prof_key.ustack: the stack is the one sent under dw_id */
#define PROF_DW_SEQ_BITS 48

struct prof_dwarf {
	/*
	 * ustack: PDW_BY_ID: PROF_DW_ID; else unused. caller: PDW_STACK: 0, or
	 * an address to put before the unwound stack's leaf (heap: the
	 * allocator's, whose frame had returned when the copy was taken).
	 */
	struct prof_key key;
	struct prof_val val;      /* all zero: nothing to count (only the stack to remember) */
	__u32 op;                 /* PDW_* */
	__u32 pad;
	__u64 id;                 /* PDW_STACK: 0, or the id to remember its stack by; PDW_BY_ID: the id */
	struct dwarf_sample user; /* PDW_STACK: followed by its stack_len bytes */
};

/* --- Slow calls (--slow: trace.bpf.c, slow.bpf.h) ------------------------- */

#define FNPROF_SLOW_KDEPTH 48     /* kernel frames kept of a blocked stack */
#define FNPROF_SLOW_STACK 8192    /* user stack bytes copied for each of a slow call's stacks */

/*
 * One stack of a slow call: kernel frames (innermost first, as bpf_get_stack
 * gives them), then the user registers and stack copy to unwind (DWARF).
 */
struct slow_stack {
	__u32 nr_kips;
	__u32 pad;
	__u64 kips[FNPROF_SLOW_KDEPTH];
	struct dwarf_sample user;          /* followed by its stack_len bytes: */
	__u8 bytes[FNPROF_SLOW_STACK + FNPROF_STACK_SLACK];
};

/* The entry stack was taken at the function's ret instruction: its own frame is in it. */
#define SLOW_AT_RET 1U
/* `blocked` holds the stack of the call's longest block. */
#define SLOW_BLOCKED 2U
/*
 * Go: the stacks' kips hold user addresses, leaf first (a frame-pointer walk
 * in the probe, no stack copy); `blocked` is the longest park's, block_ns its
 * time (runtime.gopark to runtime.execute), wait_reason its waitReason; the
 * on-CPU/run-queue/blocked split is unknown (goroutines switch in user space).
 */
#define SLOW_GO 4U

/* A call of a traced function that took --slow or longer, sent at its return. */
struct slow_call {
	__u64 wall_ns, oncpu_ns, runq_ns, blocked_ns;
	__u64 block_ns;      /* the longest block of the call (its stack: blocked); 0: it never blocked */
	__u64 end_ns;        /* CLOCK_MONOTONIC at the return */
	__u64 fn_ip;         /* the function's address: the entry stack's innermost frame */
	__u32 id, pid, tid;
	__u32 flags;         /* SLOW_* */
	__u32 wait_reason;   /* SLOW_GO: the longest park's waitReason (runtime.gopark's argument) */
	__u32 pad;
	/* The caller's stack as at entry: taken at the return, where the callers' frames are unchanged. */
	struct slow_stack entry;
	struct slow_stack blocked;
};

/* Slow calls not kept, and stacks not taken; [SLOWDROP_NR] in a per-CPU array. */
enum slow_drop {
	SLOWDROP_RATE,       /* over the rate limit (slow calls sent per second) */
	SLOWDROP_RINGBUF,    /* the ring buffer to user space was full */
	SLOWDROP_NO_BLOCK,   /* sent without the longest block's stack: no capture slot was free */
	SLOWDROP_SEEN,       /* slow calls seen, kept or not */
	SLOWDROP_NR,
};

#endif /* FNPROF_H */
