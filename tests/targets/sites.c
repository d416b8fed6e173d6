// SPDX-License-Identifier: GPL-2.0
/*
 * Entry probe sites (issue 22): functions whose first instruction the kernel
 * single-steps and whose entry block holds one it emulates, some with a
 * branch that lands in between, where the probe must not go.
 *
 * Usage: sites MODE N   N calls of the mode's function(s); prints "truth MODE calls=N"
 *   tiny    site_jcc_tiny(i): xor; test; je -- the probe on the je, a 2 ns function
 *   loop    site_loop(3): mov; 1: sub; jne 1b -- the jne lands on the sub, before the jne
 *   table   site_table(i % 2): a switch whose case 1 lands on the cmp before the ja
 *   tableok site_table_ok(i % 2): the same switch, every case after the ja
 *   far     site_jcc_far(0): xor; test; je -- the je taken, to a ret 32 bytes on (a 2 ns function)
 *   nopw    site_nopw_push(i): nopw 0x0(%rax,%rax,1); push %rbp -- the probe on the nop where the
 *           kernel emulates it (6.16 on), else on the push (issue 34)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FN(name) ".globl " #name "\n.type " #name ",@function\n" #name ":\n"
#define END(name) ".size " #name ", .-" #name "\n"

long site_jcc_tiny(long x);
long site_loop(long x);
long site_table(long x);
long site_table_ok(long x);
long site_jcc_far(long x);
long site_nopw_push(long x);

__asm__(".text\n"
	FN(site_jcc_tiny) "\txor %eax,%eax\n\ttest %rdi,%rdi\n\tje 1f\n\tlea 1(%rdi),%rax\n1:\tret\n" END(site_jcc_tiny)
	FN(site_jcc_far) "\txor %eax,%eax\n\ttest %rdi,%rdi\n\tje 1f\n\tlea 1(%rdi),%rax\n\t.fill 32,1,0x90\n1:\tret\n"
	END(site_jcc_far)
	FN(site_nopw_push) "\t.byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n\tpush %rbp\n\tmov %rsp,%rbp\n"
	"\tlea 1(%rdi),%rax\n\tpop %rbp\n\tret\n" END(site_nopw_push)
	FN(site_loop) "\tmov %rdi,%rax\n1:\tsub $1,%rax\n\tjne 1b\n\tret\n" END(site_loop)
	/* case 0: the ret; case 1: the cmp again, with %eax an address now (> 2): out by the ja. */
	FN(site_table) "\tmov %edi,%eax\n2:\tcmp $2,%eax\n\tja 9f\n\tlea site_cases(%rip),%rdx\n"
	"\tmovslq (%rdx,%rax,4),%rax\n\tadd %rdx,%rax\n\tjmp *%rax\n9:\tret\n" END(site_table)
	".section .rodata\n.p2align 2\nsite_cases:\n\t.long 9b - site_cases\n\t.long 2b - site_cases\n"
	"\t.long 9b - site_cases\n.text\n"
	FN(site_table_ok) "\tmov %edi,%eax\n\tcmp $2,%eax\n\tja 9f\n\tlea site_cases_ok(%rip),%rdx\n"
	"\tmovslq (%rdx,%rax,4),%rax\n\tadd %rdx,%rax\n\tjmp *%rax\n8:\txor %eax,%eax\n9:\tret\n" END(site_table_ok)
	".section .rodata\n.p2align 2\nsite_cases_ok:\n\t.long 9b - site_cases_ok\n\t.long 8b - site_cases_ok\n"
	"\t.long 9b - site_cases_ok\n.text\n");

int main(int argc, char **argv)
{
	long (*fn)(long) = NULL;
	unsigned long i, n = argc == 3 ? strtoul(argv[2], NULL, 10) : 0;
	long sum = 0;

	if (argc == 3 && !strcmp(argv[1], "tiny"))
		fn = site_jcc_tiny;
	else if (argc == 3 && !strcmp(argv[1], "loop"))
		fn = site_loop;
	else if (argc == 3 && !strcmp(argv[1], "table"))
		fn = site_table;
	else if (argc == 3 && !strcmp(argv[1], "tableok"))
		fn = site_table_ok;
	else if (argc == 3 && !strcmp(argv[1], "far"))
		fn = site_jcc_far;
	else if (argc == 3 && !strcmp(argv[1], "nopw"))
		fn = site_nopw_push;
	if (!fn || !n) {
		fprintf(stderr, "usage: sites tiny|loop|table|tableok|far|nopw N\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		sum += fn(fn == site_loop ? 3 : fn == site_jcc_tiny ? (long)i : fn == site_jcc_far ? 0 : (long)(i % 2)) &
		       0xfff;  /* no address bits */
	printf("sum %ld\n", sum);
	fprintf(stderr, "truth %s calls=%lu\n", argv[1], n);
	return 0;
}
