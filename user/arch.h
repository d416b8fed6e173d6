/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What fnprof assumes of the machine's architecture, in one place: each
 * architecture implements this header in user/arch_ARCH.c (the Makefile's
 * ARCH picks it), with bpf/arch.bpf.h and vmlinux/ARCH/vmlinux.h for the
 * BPF side.
 */
#ifndef FNPROF_ARCH_H
#define FNPROF_ARCH_H

#include <stddef.h>
#include <linux/types.h>

#include "probe.h"

/* The kind of probe site that a function's first bytes make (insn: len bytes of its code). */
enum site_kind site_kind_of(const unsigned char *insn, size_t len);

#define MAX_EXITS 64

/*
 * Exits of a function, found by disassembling it (Capstone): where ret-mode
 * probes go. The offsets, from the function's start, of the instructions
 * that leave it with the caller's frame restored: ret, and jmp to an address
 * outside the function (a tail call). code holds the function's size bytes,
 * linked at vaddr. Returns the number found (at most max), or -1 if the code
 * does not disassemble cleanly to its end (then no exit can be trusted).
 */
int find_exits(const unsigned char *code, size_t size, __u64 vaddr, __u64 *offs, int max);

/*
 * fnprof's own empty functions for the calibration, written in assembly so
 * that the first instruction is exactly the kind measured: a push (emulated
 * by the kernel), an instruction that is single-stepped, a 5-byte nop. The
 * last two start like the first; they measure the exit modes other than the
 * uretprobe, and arch_calib_ret_offset is where fnprof_calib_ret's return
 * instruction is.
 */
void fnprof_calib_emulated(void);
void fnprof_calib_stepped(void);
void fnprof_calib_nop5(void);
void fnprof_calib_ret(void);
void fnprof_calib_entry_only(void);
extern const unsigned int arch_calib_ret_offset;

/* The system's library directories for this architecture, ':'-separated, searched first. */
extern const char arch_lib_dirs[];

#endif /* FNPROF_ARCH_H */
