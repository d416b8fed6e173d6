/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The trace object's two builds (issue 34): trace.bpf.o for kernels with
 * everything it uses, and trace_compat.bpf.o (-DFNPROF_COMPAT) for kernels
 * from 5.10 on, which lack bpf_loop (5.17), the attach cookie (5.15), task
 * storage (5.11) and the fetching atomics (5.12). Each primitive that differs
 * is here, once; both builds have the same maps, programs and globals, so
 * that user space opens either through one skeleton (the Makefile checks).
 *
 * What the compat build leaves out (sched_switch's bookkeeping: on/off-CPU
 * split, counters, --slow's blocks; Go; tail calls) is not loaded there,
 * and user space says it is unknown, or refuses it, naming what is missing.
 */
#ifndef FNPROF_COMPAT_BPF_H
#define FNPROF_COMPAT_BPF_H

#include "fnprof.h"

/*
 * bpf_loop(n, fn, ctx, 0); in the compat build a loop of at most max
 * steps, which the 5.10 verifier walks: max must stay small (64 frames).
 */
#ifdef FNPROF_COMPAT
#define FNPROF_LOOP(n, max, fn, ctx)					\
	({								\
		__u32 __n = (n), __i;					\
		typeof(ctx) __c = (ctx);				\
		for (__i = 0; __i < (max) && __i < __n; __i++)		\
			if (fn(__i, __c))				\
				break;					\
	})
#else
#define FNPROF_LOOP(n, max, fn, ctx) bpf_loop(n, fn, ctx, 0)
#endif

/*
 * Per-thread data: task storage, or in the compat build a hash by thread
 * id, bounded (user space sizes it as the pool of thread states); a thread
 * that finds it full is counted (DROP_NO_STATE), and its entry goes at its
 * exit (sched_process_exit).
 */
#ifdef FNPROF_COMPAT
#define THREAD_MAP(name, value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH);			\
		__uint(max_entries, 1);	/* set by user space */		\
		__type(key, __u32);					\
		__type(value, value_type);				\
	} name SEC(".maps")
#else
#define THREAD_MAP(name, value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);		\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
		__type(key, int);					\
		__type(value, value_type);				\
	} name SEC(".maps")
#endif

/*
 * The compat build's attach cookies: (process, probed address) -> the
 * cookie its probe would have had, filled by user space from the process's
 * mappings before the probe goes in. Unused (one entry) in the full build.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);	/* set by user space */
	__type(key, struct probe_addr);
	__type(value, __u64);
} probe_cookies SEC(".maps");

/*
 * And where the process maps the probe's object only later (the libraries
 * of a command stopped at its exec, dlopen): (build-id, file offset) ->
 * its cookie in slot 0, filled by user space from the object's file. The
 * kernel tells a user address's build-id and offset (bpf_get_stack,
 * BPF_F_USER_BUILD_ID, 4.18); the answer goes into probe_cookies for the
 * calls after. Unused (one entry) in the full build.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);	/* set by user space */
	__type(key, struct probe_file);
	__type(value, __u64);
} probe_files SEC(".maps");

#endif /* FNPROF_COMPAT_BPF_H */
