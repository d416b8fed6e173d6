/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a probe is: one traced function's site in an object file, how its
 * entry and its return are seen. Made by resolve.c, attached by the tracer,
 * priced by the calibration, named by the printers.
 */
#ifndef FNPROF_PROBE_H
#define FNPROF_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* How the return of a traced function is seen. */
enum exit_mode {
	EXIT_AUTO,        /* ret where a uretprobe is unsafe (C++, Rust, Go), else uretprobe */
	EXIT_URETPROBE,   /* the kernel's return probe: one probe, but it rewrites the return address */
	EXIT_RET,         /* uprobes on the function's ret instructions, found by disassembly */
	EXIT_NONE,        /* --entry-only: calls and rates, no latency */
};

/*
 * How the kernel handles a uprobe on the instruction of the entry probe's
 * site: it decides what the probe costs inside the measured interval. The
 * newest kernels emulate push, nop, jcc, jmp and call in the trap (no single
 * step); each is a kind of its own since each is priced on its own. What
 * the running kernel emulates is found on it (target/insnprobe.h): an
 * instruction it steps is SITE_STEPPED there.
 */
enum site_kind {
	SITE_EMULATED,   /* push %reg: emulated in the trap, no single step */
	SITE_STEPPED,    /* any other instruction: executed out of line, single-stepped */
	SITE_NOP5,       /* 5-byte nop: optimized into a call on recent kernels */
	SITE_PAIR,       /* single-stepped, and so is the next instruction: a second probe there
			  * times each call's first step, and the call is read without its steps */
	SITE_PAIR_RET,   /* the same, the next instruction being the function's ret */
	SITE_JCC,        /* conditional jump (rel8, rel32): emulated */
	SITE_JMP,        /* jmp rel8, rel32: emulated */
	SITE_CALL,       /* call rel32: emulated */
	SITE_NOP,        /* a nop other than the 5-byte one: emulated */
	SITE_NR,
};

/* Whether a site of kind k has a twin probe. */
static inline bool site_paired(enum site_kind k)
{
	return k == SITE_PAIR || k == SITE_PAIR_RET;
}

/* Static names, "?" for values out of range. */
const char *site_kind_name(enum site_kind k);
const char *exit_mode_name(enum exit_mode m);

/*
 * EXIT_RET: a probe beyond the function's own ret instructions, where a call
 * of it may end after a tail call (resolve.c follows them).
 */
struct tail_site {
	__u64 offset;     /* file offset, in the function's object */
	bool in_callee;   /* in a function it tail-calls: it fires on that one's other calls too */
	bool untimed;     /* a tail jump to a function not known (indirect, PLT): the call ends there */
	bool jump;        /* the function's own tail jump to a callee it follows: the call goes on there */
};

struct probe {
	char *name;       /* function */
	char *object;     /* object path as the target sees it */
	char *open_path;  /* path fnprof opens and attaches to (inside the target's root) */
	bool main_exe;    /* in the main executable (shown without an object prefix) */
	__u64 addr;       /* link-time virtual address */
	__u64 size;
	__u64 offset;     /* file offset of the function's start */
	__u32 entry_skip; /* bytes after offset where its entry probe and uretprobe go (arch_entry_skip) */
	__u32 pair_off;   /* SITE_PAIR*: bytes after offset where the twin probe goes (arch_pair_offset) */
	bool pair_ret;    /* the twin is on the function's ret (SITE_PAIR_RET) */
	__u32 id;         /* index: the BPF attach cookie */
	enum site_kind kind;
	__s32 branch_delta;   /* SITE_JCC, SITE_JMP, SITE_CALL: where it lands when taken, from the site; else 0 */
	enum exit_mode exit;  /* EXIT_URETPROBE, EXIT_RET or EXIT_NONE: how its return is seen */
	const char *exit_why; /* why that mode (auto) */
	/*
	 * System-wide, EXIT_URETPROBE: entered by a uprobe session, whose
	 * return is that uretprobe in the processes where it is safe; the
	 * others decline it and get ret probes (exits) of their own.
	 */
	bool session;
	__u64 *exits;     /* EXIT_RET: file offsets of its ret / tail-call instructions */
	int nr_exits;
	struct tail_site *tails;  /* EXIT_RET: the sites past the rets (tail calls), or NULL */
	int nr_tails;
	bool follows_tails;       /* some are in callees: its frame lives on through a tail call */
	/*
	 * A Go function: its calls are kept per goroutine (the running one is in
	 * r14), closed at its ret wherever the goroutine runs; on/off-CPU time
	 * unknown, cpu_unknown says why.
	 */
	bool go;
	const char *cpu_unknown;
};

/* Whether the entry probe of p sits on one of its followed tail jmps (FNPROF_COOKIE_ENTRY_JMP). */
bool probe_jmp_at_entry(const struct probe *p);

#define MAX_HELD_FDS 64

struct probe_list {
	struct probe *probes;
	size_t nr;
	bool switches_stacks;        /* the program runs code on stacks of its own (coroutines, sigaltstack) */
	char *go_exit_path;          /* with Go functions: the object holding runtime.goexit1, or NULL */
	__u64 go_exit_offset;        /* its file offset: where a goroutine ends */
	/* --slow: runtime.gopark's and runtime.execute's offsets there (a park's start and end); 0: not found. */
	__u64 go_park_offset, go_run_offset;
	int held_fds[MAX_HELD_FDS];  /* objects opened inside the target's root: open_path names them */
	size_t nr_held;
};

/* "name" for the main executable, "libc.so.6:malloc" for others, made safe for a terminal. */
const char *probe_display_name(const struct probe *p, char *buf, size_t size);

/* Frees the probes' strings and exits, closes the held descriptors; pl is empty after. */
void probe_list_free(struct probe_list *pl);

#endif /* FNPROF_PROBE_H */
