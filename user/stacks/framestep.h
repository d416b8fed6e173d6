/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The caller of a frame that has no CFI (JIT code: perf-map regions,
 * anonymous executable memory), for the DWARF unwinder (unwind.h), which
 * goes back to CFI for the frames above. Two ways, the exact one first:
 *  - the code's epilogue: when the code from the frame's address to its
 *    `ret` is straight stack arithmetic (add $N,%rsp, pop, leave), what it
 *    pops is known exactly, the return address too (Python 3.12's -X perf
 *    trampolines: `add $8,%rsp; ret` after their call, no frame pointer);
 *  - the frame pointer: the return address at [rbp+8], the caller's rbp at
 *    [rbp] (Node, HotSpot with PreserveFramePointer, JIT code that pushes rbp).
 * Each step is checked: the frame (rbp or the slots read) inside the stack
 * copy at or above the stack pointer, the caller's stack pointer above the
 * callee's (so a chain of steps rises), the return address in executable
 * memory. Registers in DWARF numbering (fnprof.h).
 */
#ifndef FNPROF_FRAMESTEP_H
#define FNPROF_FRAMESTEP_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define FS_NR_REGS 17          /* DWARF x86-64: rax..r15, then the return address column */
#define FS_REG_BP 6
#define FS_REG_SP 7
#define FS_REG_IP 16
#define FS_MAX_POPS 8          /* an epilogue of more pops is not decoded */

/* A frame's registers; mask: bit r set when regs[r] is known. */
struct fs_regs {
	__u64 regs[FS_NR_REGS];
	__u32 mask;
};

/* What the code from an address to its ret does (framestep_decode). */
struct fs_epilogue {
	bool ok;                   /* straight to a ret: the rest applies */
	bool from_bp;              /* starts with leave: the stack pointer is rbp's first */
	__u32 ret_off;             /* the return address at base + ret_off (base: rsp, or rbp with leave) */
	__u8 nr_pops;
	__u8 pop_reg[FS_MAX_POPS]; /* the register popped (DWARF number) ... */
	__u32 pop_off[FS_MAX_POPS];/* ... from base + this */
};

/* Decodes the len bytes of code at a frame's address. Always fills *e; e->ok tells whether it applies. */
void framestep_decode(const unsigned char *code, size_t len, struct fs_epilogue *e);

enum fs_method { FS_NONE, FS_EPILOGUE, FS_FP };

/* Reads the word at addr from the stack copy (false: not in it); tells whether addr is executable. */
struct fs_mem {
	bool (*read)(void *ctx, __u64 addr, __u64 *val);
	bool (*exec)(void *ctx, __u64 addr);
	void *ctx;
};

/*
 * One step from frame r (its ip, sp and, for the frame pointer, bp known)
 * to its caller, into *out: by e when e is non-NULL and e->ok, else by the
 * frame pointer. out holds the ip, sp, and the callee-saved registers known
 * (after a frame-pointer step only rbp: the others are unknown to the
 * caller's CFI). The method used, FS_NONE when neither gives a caller that
 * passes the checks.
 */
enum fs_method framestep(const struct fs_regs *r, const struct fs_epilogue *e, const struct fs_mem *m,
			 struct fs_regs *out);

#endif /* FNPROF_FRAMESTEP_H */
