/* SPDX-License-Identifier: GPL-2.0 */
/* Exits of a function, found by disassembling it (Capstone): where ret-mode probes go. */
#ifndef FNPROF_DISASM_H
#define FNPROF_DISASM_H

#include <stddef.h>
#include <linux/types.h>

#define MAX_EXITS 64

/*
 * The offsets, from the function's start, of the instructions that leave
 * it with the caller's frame restored: ret, and jmp to an address outside
 * the function (a tail call). code holds the function's size bytes, linked
 * at vaddr. Returns the number found (at most max), or -1 if the code does
 * not disassemble cleanly to its end (then no exit can be trusted).
 */
int find_exits(const unsigned char *code, size_t size, __u64 vaddr, __u64 *offs, int max);

#endif /* FNPROF_DISASM_H */
