/* SPDX-License-Identifier: GPL-2.0 */
/* Exits of a function, found by disassembling it (Capstone): where ret-mode probes go. */
#ifndef FNPROF_DISASM_H
#define FNPROF_DISASM_H

#include <stddef.h>
#include <linux/types.h>

/* More exits than this in one function: fnprof counts its calls only (a uprobe per exit). */
#define MAX_EXITS 4096

/* One piece of a function's code: its body, or the cold part gcc split off (NAME.cold). */
struct code_part {
	const unsigned char *code;
	size_t size;
	__u64 vaddr;              /* where it is linked */
};

/*
 * The addresses of the instructions that leave the function made of
 * parts[0..nr) (parts[0] is its entry) with the caller's frame restored:
 * every ret, a jmp to an address outside the parts made with the stack as
 * at entry (a tail call; one made inside the frame goes to an unnamed part
 * of the function), and an
 * indirect jmp (`jmp *%rax`, `jmp *8(%rdi)`) made with the stack as at entry
 * that is not a switch's jump table. The stack height is followed along the
 * branches from the entry. Returns how many, every one of them, with *addrs
 * (malloc'd, the caller frees) holding them; or -1 if the code does not
 * disassemble cleanly to its end (then no exit can be trusted) or on
 * allocation failure (*addrs NULL either way).
 */
int find_exits(const struct code_part *parts, size_t nr, __u64 **addrs);

#endif /* FNPROF_DISASM_H */
