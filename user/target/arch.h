/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What fnprof assumes of the machine's architecture, in one place: each
 * architecture implements this header in user/arch_ARCH.c (the Makefile's
 * ARCH picks it), with bpf/arch.bpf.h and vmlinux/ARCH/vmlinux.h for the
 * BPF side.
 */
#ifndef FNPROF_ARCH_H
#define FNPROF_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "target/probe.h"

/* What the running kernel does with a uprobe on an instruction (kfeatures.c finds it). */
enum insn_how {
	INSN_UNKNOWN,     /* not found (the probe could not run, or the hit was not seen) */
	INSN_REFUSED,     /* the attach fails */
	INSN_STEPPED,     /* single-stepped out of line */
	INSN_EMULATED,    /* emulated in the trap */
	INSN_OPTIMIZED,   /* replaced by a call after the first hit (the 5-byte nop) */
};

/*
 * The instruction forms whose handling changed from one kernel to another,
 * each with a function of fnprof's own that starts with it (for the probe):
 * name ("emulates push %rbp", what the kernel does to it without a single
 * step), the first kernel that does ("none"), and
 * whether every kernel fnprof runs on does (what is assumed when the probe
 * cannot run).
 */
struct arch_insn {
	const char *name;
	void (*fn)(void);
	const char *since;
	bool old;
};
#define ARCH_INSNS_MAX 16
extern const struct arch_insn arch_insns[];
extern const unsigned int arch_nr_insns;

/* What the running kernel was found to do with each form of arch_insns (probed false: nothing found). */
struct uprobe_insns {
	bool probed;
	enum insn_how how[ARCH_INSNS_MAX];
};

/*
 * The kind of probe site that a function's first bytes make (insn: len
 * bytes of its code) on the kernel u describes: an instruction it does not
 * emulate is SITE_STEPPED. u NULL: as on the newest kernel.
 */
enum site_kind site_kind_of(const unsigned char *insn, size_t len, const struct uprobe_insns *u);

/*
 * Where the branch at insn (a jcc, jmp or call with a relative target, a
 * site of kind SITE_JCC, SITE_JMP or SITE_CALL where the kernel emulates it)
 * goes when taken, in bytes from insn; 0 for any other instruction.
 */
__s32 arch_branch_delta(const unsigned char *insn, size_t len);

/* More exits than this in one function: fnprof counts its calls only (a uprobe per exit). */
#define MAX_EXITS 4096

/* One piece of a function's code: its body, or the cold part gcc split off (NAME.cold). */
struct code_part {
	const unsigned char *code;
	size_t size;
	__u64 vaddr;              /* where it is linked */
};

/*
 * A function's code (parts[0] is its entry part, whole), for the questions
 * below: disassembled (Capstone) on the first one that needs it, once. The
 * parts' bytes stay the caller's and must outlive it. NULL on allocation
 * failure or more than 8 parts.
 */
struct arch_code;
struct arch_code *arch_code_new(const struct code_part *parts, size_t nr);
void arch_code_free(struct arch_code *a);

/*
 * Exits of a function, found by disassembling it (Capstone): where ret-mode
 * probes go. The addresses of the instructions that leave the function a
 * with the caller's frame restored: every ret, a jmp to an address outside the parts made with the stack as
 * at entry (a tail call; one made inside the frame goes to an unnamed part
 * of the function), and an indirect jmp (`jmp *%rax`, `jmp *8(%rdi)`) made
 * with the stack as at entry that is not a switch's jump table. The stack
 * height is followed along the branches from the entry. Returns how many,
 * every one of them, with *addrs (malloc'd, the caller frees) holding them;
 * or -EINVAL if the code does not disassemble cleanly to its end (then no
 * exit can be trusted), -ENOMEM on allocation failure (*addrs NULL either way).
 */
int find_exits(struct arch_code *a, __u64 **addrs);

/* What one of those exits is: a ret, a direct jmp (a tail call to a known address), an indirect jmp. */
enum arch_exit_kind {
	ARCH_EXIT_RET,
	ARCH_EXIT_JMP,
	ARCH_EXIT_JMP_IND,
};

/* The kind of the exit find_exits found at addr; for ARCH_EXIT_JMP, *target is where it goes. */
enum arch_exit_kind arch_exit_kind(struct arch_code *a, __u64 addr, __u64 *target);

/*
 * Whether the function calls nothing: no call, no jmp out of its parts (a
 * tail call), no indirect jmp but a switch's. false when its code does not
 * decode cleanly.
 */
bool arch_is_leaf(struct arch_code *a);

/* Reads up to len bytes of the object at link-time address vaddr into buf: how many (0: none). */
typedef size_t (*arch_read_fn)(void *ctx, __u64 vaddr, void *buf, size_t len);

/*
 * Bytes at the start of a function that its entry probe may skip, so that
 * the probe lands on an instruction the kernel u describes emulates or
 * optimizes (push, nop, jcc, jmp, call, as site_kind_of says) instead of one
 * it must single-step (about ten times the cost, as the calibration
 * measures): the first such instruction of the entry block, when every
 * instruction before it goes straight on, leaves the stack pointer, the
 * caller's frame and r14 alone (Go's `cmp 0x10(%r14),%rsp` before its
 * `jbe`; `test %rdi,%rdi` before a `je`; an endbr64), and no branch of the
 * function can land on those bytes: direct jumps and calls of every part
 * (the cold one too), the entries of its jump tables (read through read),
 * and no indirect jmp other than a table's or a tail call. With keep_args,
 * nor may they write an argument register (a probe that reads the call's
 * arguments). 0 when none, or when the code does not decode cleanly.
 */
size_t arch_entry_skip(struct arch_code *a, bool keep_args, const struct uprobe_insns *u, arch_read_fn read,
		       void *ctx);
/*
 * Where a single-stepped entry's twin goes (SITE_PAIR): the instruction
 * after the one at site (the entry probe's place), when the site's goes on
 * to it, the kernel single-steps it too, and no branch of the function goes
 * there. Its probe times the first step of every call, in the target, at
 * that moment: the call's second step is taken to cost the same. Offset
 * from the function's start, or 0; *on_ret: the twin is on a ret (whose
 * step costs otherwise: SITE_PAIR_RET).
 */
size_t arch_pair_offset(const unsigned char *code, size_t len, __u64 vaddr, size_t site,
			const struct uprobe_insns *u, bool *on_ret);

/*
 * fnprof's own empty functions for the calibration, written in assembly so
 * that the first instruction is exactly the kind measured: a push (emulated
 * by the kernel), an instruction that is single-stepped, a 5-byte nop, a jcc,
 * a jmp, a call and another nop (emulated too). The
 * last two start like the first; they measure the exit modes other than the
 * uretprobe, and arch_calib_ret_offset is where fnprof_calib_ret's return
 * instruction is.
 */
void fnprof_calib_emulated(void);
void fnprof_calib_stepped(void);
void fnprof_calib_pair(void);
void fnprof_calib_pair_ret(void);
void fnprof_calib_nop5(void);
void fnprof_calib_jcc(void);
void fnprof_calib_jmp(void);
void fnprof_calib_call(void);
void fnprof_calib_nop(void);
void fnprof_calib_ret(void);
void fnprof_calib_entry_only(void);
extern const unsigned int arch_calib_ret_offset;
/*
 * A call through a followed tail jmp: fnprof_calib_tail_jmp starts like the
 * others and ends with a jmp, at arch_calib_jmp_offset, to
 * fnprof_calib_tail_callee, whose first instruction is its ret.
 */
void fnprof_calib_tail_jmp(void);
void fnprof_calib_tail_callee(void);
extern const unsigned int arch_calib_jmp_offset;

/* What the kernel's system call functions are named with (BTF, kallsyms): "__x64_sys_". */
extern const char arch_syscall_prefix[];

/* The system's library directories for this architecture, ':'-separated, searched first. */
extern const char arch_lib_dirs[];

#endif /* FNPROF_ARCH_H */
