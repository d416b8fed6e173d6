// SPDX-License-Identifier: GPL-2.0
/*
 * One function per kind of entry probe site (user/probe.c's site kinds), each a few instructions of
 * assembly so that the compiler cannot change which kind it is, for the VM matrix's "sites" check.
 * Usage: sitekinds N   N calls of each; prints "truth sitekinds calls=N" on stderr.
 *   k_push   push %rbp first: emulated
 *   k_step   a first instruction the kernel single-steps, then one it emulates
 *   k_pair   two single-stepped instructions, then the rest
 *   k_ret    one single-stepped instruction, then ret
 *   k_nop5   a 5-byte nop first (nopl 0x0(%rax,%rax,1))
 *   k_nopw   nopw 0x0(%rax,%rax,1); push %rbp: whether a 6-byte nop is emulated depends on the kernel
 *   k_jcc    xor; test; je
 *   k_jmp    jmp first
 *   k_call   call first
 *   k_loop   mov; 1: sub; jne 1b: the jne lands before the first emulated instruction: single-stepped
 */
#include <stdio.h>
#include <stdlib.h>

#define FN(name) ".globl " #name "\n.type " #name ",@function\n.p2align 4\n" #name ":\n"
#define END(name) ".size " #name ", .-" #name "\n"

long k_push(long x), k_step(long x), k_pair(long x), k_ret(long x), k_nop5(long x), k_nopw(long x),
	k_jcc(long x), k_jmp(long x), k_call(long x), k_loop(long x);

__asm__(".text\n"
	FN(k_push) "\tpush %rbp\n\tmov %rsp,%rbp\n\tlea 1(%rdi),%rax\n\tpop %rbp\n\tret\n" END(k_push)
	FN(k_step) "\tmov %rdi,%rax\n\tpush %rbp\n\tlea 1(%rax),%rax\n\tpop %rbp\n\tret\n" END(k_step)
	FN(k_pair) "\tmov %rdi,%rax\n\tadd $1,%rax\n\tadd $2,%rax\n\tadd $3,%rax\n\tret\n" END(k_pair)
	FN(k_ret) "\tlea 1(%rdi),%rax\n\tret\n" END(k_ret)
	FN(k_nop5) "\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\tlea 1(%rdi,%rdi,2),%rax\n\tret\n" END(k_nop5)
	FN(k_loop) "\tmov %rdi,%rax\n1:\tsub $1,%rax\n\tjne 1b\n\tret\n" END(k_loop)
	FN(k_nopw) "\tnopw 0x0(%rax,%rax,1)\n\tpush %rbp\n\tmov %rsp,%rbp\n\tlea 1(%rdi),%rax\n\tpop %rbp\n\tret\n"
	END(k_nopw)
	FN(k_jcc) "\txor %eax,%eax\n\ttest %rdi,%rdi\n\tje 1f\n\tlea 1(%rdi),%rax\n1:\tret\n" END(k_jcc)
	FN(k_jmp) "\tjmp 1f\n\tud2\n1:\tlea 1(%rdi),%rax\n\tret\n" END(k_jmp)
	FN(k_call) "\tcall k_ret\n\tret\n" END(k_call));

int main(int argc, char **argv)
{
	long (*const fns[])(long) = { k_push, k_step, k_pair, k_ret, k_nop5, k_nopw, k_jcc, k_jmp, k_call, k_loop };
	unsigned long i, k, n = argc == 2 ? strtoul(argv[1], NULL, 10) : 0;
	long sum = 0;

	if (!n) {
		fprintf(stderr, "usage: sitekinds N\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		for (k = 0; k < sizeof(fns) / sizeof(fns[0]); k++)
			sum += fns[k]((long)(i % 8) + 1);  /* k_loop loops x times */
	printf("sum %ld\n", sum);
	fprintf(stderr, "truth sitekinds calls=%lu\n", n);
	return 0;
}
