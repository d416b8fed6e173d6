// SPDX-License-Identifier: GPL-2.0
/*
 * Functions that leave through a tail call (a jmp with their frame popped),
 * for --exit=ret: their time goes on in the callee until it returns. The
 * driver times each call of the traced function itself, callee included,
 * and prints the ground truth to stderr as
 *   truth NAME calls=N wall_avg_ns=X
 *
 * Usage: tailcall MODE US N
 *   c US N         N calls of c_tail(US): spins 10 us, then `return callee(US)`, which gcc -O2
 *                  makes a jmp
 *   direct US N    N calls of tail_direct(US): the same in assembly (a jmp whatever the compiler)
 *   chain US N     N calls of tail_chain(US): spins 10 us, jmp hop, which jmps to callee
 *   both US N      N calls of tail_both(US): calls callee(20) normally, then jmp callee; and
 *                  between them callee(20) from the driver (another caller, not traced)
 *   indirect US N  N calls of tail_indirect(US): spins 10 us, then jmp *%rax to callee
 *   other US N     N calls of callee(US) from the driver only (what a tail probe costs them)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Busy for us microseconds of wall time. */
NOINLINE void spin_for(unsigned int us)
{
	unsigned long long end = clock_ns() + us * 1000ULL;

	while (clock_ns() < end)
		;
}

/* The tail callee: not a tail caller itself (the asm after the call keeps it out of tail position). */
NOINLINE void callee(unsigned int us)
{
	spin_for(us);
	__asm__ volatile("" ::: "memory");
}

/* `int f(x) { prep(); return heavy(x); }`: gcc -O2 ends it with jmp callee. */
NOINLINE void c_tail(unsigned int us)
{
	spin_for(10);
	callee(us);
}

void tail_direct(unsigned int us);
void tail_chain(unsigned int us);
void hop(unsigned int us);
void tail_both(unsigned int us);
void tail_indirect(unsigned int us);

/* Where tail_indirect jumps: read from memory, so that the jmp is indirect. */
void (*volatile indirect_target)(unsigned int) = callee;

#define FN(name, body) ".globl " #name "\n.type " #name ",@function\n" #name ":\n" body ".size " #name ", .-" #name "\n"

/* push/pop %rbx around the prologue's call: the stack is as at entry again at the jmp. */
__asm__(".text\n"
	FN(tail_direct, "\tpush %rbx\n\tmov %edi,%ebx\n\tmov $10,%edi\n\tcall spin_for\n\tmov %ebx,%edi\n"
			"\tpop %rbx\n\tjmp callee\n")
	FN(tail_chain, "\tpush %rbx\n\tmov %edi,%ebx\n\tmov $10,%edi\n\tcall spin_for\n\tmov %ebx,%edi\n"
		       "\tpop %rbx\n\tjmp hop\n")
	FN(hop, "\tnop\n\tjmp callee\n")
	FN(tail_both, "\tpush %rbx\n\tmov %edi,%ebx\n\tmov $20,%edi\n\tcall callee\n\tmov %ebx,%edi\n"
		      "\tpop %rbx\n\tjmp callee\n")
	FN(tail_indirect, "\tpush %rbx\n\tmov %edi,%ebx\n\tmov $10,%edi\n\tcall spin_for\n\tmov %ebx,%edi\n"
			  "\tpop %rbx\n\tmov indirect_target(%rip),%rax\n\tjmp *%rax\n"));

int main(int argc, char **argv)
{
	static const struct {
		const char *mode, *name;
		void (*fn)(unsigned int);
	} modes[] = {
		{ "c", "c_tail", c_tail },
		{ "direct", "tail_direct", tail_direct },
		{ "chain", "tail_chain", tail_chain },
		{ "both", "tail_both", tail_both },
		{ "indirect", "tail_indirect", tail_indirect },
		{ "other", "callee", callee },
	};
	unsigned long long sum = 0, w0;
	unsigned int us;
	long i, n, k;

	if (argc != 4) {
		fprintf(stderr, "usage: tailcall c|direct|chain|both|indirect|other US N\n");
		return 2;
	}
	us = strtoul(argv[2], NULL, 10);
	n = strtol(argv[3], NULL, 10);
	for (k = 0; k < (long)(sizeof(modes) / sizeof(modes[0])); k++)
		if (!strcmp(argv[1], modes[k].mode))
			break;
	if (k == sizeof(modes) / sizeof(modes[0])) {
		fprintf(stderr, "tailcall: unknown mode %s\n", argv[1]);
		return 2;
	}
	for (i = 0; i < n; i++) {
		w0 = clock_ns();
		modes[k].fn(us);
		sum += clock_ns() - w0;
		/* both: the callee from another caller, between the traced calls. */
		if (k == 3)
			callee(20);
	}
	printf("%ld calls of %s\n", n, modes[k].name);
	fprintf(stderr, "truth %s calls=%ld wall_avg_ns=%.1f\n", modes[k].name, n, n ? (double)sum / n : 0.0);
	return 0;
}
