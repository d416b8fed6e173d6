/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What each of fnprof's modes needs of the kernel's BPF, which no fallback
 * replaces (helpers, map types, instructions), with the first kernel that
 * has each, in one table (kneeds.c). Checked on the running kernel before
 * anything is loaded, so that a mode the kernel cannot run is refused alone,
 * in one line naming what it lacks, instead of the verifier's bare
 * "Invalid argument" after the set-up. What a mode can do without (sampling
 * on 5.10: bpf/ustack.bpf.h) is the BPF programs' business, not listed here.
 */
#ifndef FNPROF_KNEEDS_H
#define FNPROF_KNEEDS_H

#include <stdbool.h>
#include <stddef.h>

/* Something a mode needs: bit (1U << KNEED_x) of a kneed set. */
enum kneed {
	KNEED_RINGBUF,          /* BPF_MAP_TYPE_RINGBUF */
	KNEED_TASK_STORAGE,     /* BPF_MAP_TYPE_TASK_STORAGE */
	KNEED_TASK_BTF,         /* bpf_get_current_task_btf */
	KNEED_ATOMICS,          /* BPF_FETCH atomics: fetch-add, cmpxchg, atomic or */
	KNEED_TASK_PT_REGS,     /* bpf_task_pt_regs */
	KNEED_ATTACH_COOKIE,    /* bpf_get_attach_cookie */
	KNEED_LOOP,             /* bpf_loop */
	KNEED_SWITCH_STATE,     /* sched_switch's prev_state argument (tp_btf) */
	KNEED_NR,
};

/* The modes, as the kernel sees them: bit (1U << KMODE_x) of a mode set. */
enum kmode {
	KMODE_TRACE,            /* -f, --slow, --calibrate: trace.bpf.o */
	KMODE_SAMPLE,           /* --sample, -a: profile.bpf.o */
	KMODE_OFFCPU,           /* --profile offcpu */
	KMODE_MUTEX,            /* --profile mutex */
	KMODE_HEAP,             /* --profile heap */
	KMODE_TRACE_COMPAT,     /* KMODE_TRACE on a kernel that lacks some of its needs: trace_compat.bpf.o */
	KMODE_NR,
};

/* Need n's name ("bpf_loop") and the first kernel that has it ("5.17"). */
const char *kneeds_name(enum kneed n);
const char *kneeds_since(enum kneed n);

/* The kneed set mode needs. */
unsigned int kneeds_of(enum kmode mode);

/*
 * Of want (a kneed set), those the running kernel has, and in *unknown
 * those it could not be asked about (no privilege, say: every one unknown,
 * none refused; the load will tell). libbpf's probes: a small program or map each, ~0.2 ms in
 * all once the kernel's BPF is warm; a tracepoint's arguments are read from
 * the kernel's BTF (~10 ms more, the offcpu profile's only).
 */
unsigned int kneeds_probe(unsigned int want, unsigned int *unknown);

/*
 * The first mode of modes (a mode set) that needs what has (a kneed set)
 * lacks, or -1 when none does; with its line in msg (without the
 * "fnprof: " prefix): what it lacks, newest first, with the first kernel of
 * each, and release (the running kernel's).
 */
int kneeds_refusal(unsigned int modes, unsigned int has, const char *release, char *msg, size_t size);

/*
 * Whether tracing takes the compat trace object (bpf/compat.bpf.h): the
 * kernel lacks some of what the full one needs (FNPROF_TRACE_COMPAT=1:
 * taken anyway, for the tests). Probed once. Into *lack (if not NULL), what
 * it lacks of the full one's needs (a kneed set).
 */
bool kneeds_trace_compat(unsigned int *lack);

/*
 * Appends to msg (size bytes) the needs of lack (a kneed set), newest
 * first: "bpf_loop (Linux 5.17), bpf_get_attach_cookie (5.15)".
 */
void kneeds_list(unsigned int lack, char *msg, size_t size);

/*
 * With the compat trace object, why it cannot tell a call's time on and off
 * the CPU: "this kernel (5.10.0-32-cloud-amd64) lacks bpf_task_pt_regs
 * (Linux 5.15), task storage maps (5.11)..." (sched_switch's bookkeeping).
 */
const char *kneeds_compat_sched_why(void);

/*
 * Probes what modes need; 0, or -ENOTSUP after printing why one of them
 * cannot run here. Tracing that takes the compat object is checked for
 * what that one needs.
 */
int kneeds_check(unsigned int modes);

#endif /* FNPROF_KNEEDS_H */
