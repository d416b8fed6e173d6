// SPDX-License-Identifier: GPL-2.0
/*
 * longjmp past traced frames: leaf() jumps back to main's setjmp from three
 * traced levels down, every other call. Prints a result that must not change.
 * Usage: jump N
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf env;

NOINLINE int leaf(int i)
{
	if (i % 2)
		longjmp(env, i);
	return i;
}

NOINLINE int mid(int i)
{
	int r = leaf(i);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

NOINLINE int top(int i)
{
	int r = mid(i);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	volatile int jumps = 0;
	volatile long sum = 0;
	volatile int i;

	for (i = 0; i < n; i++) {
		if (setjmp(env)) {
			jumps++;
			continue;
		}
		sum += top(i);
	}
	printf("sum %ld jumps %d\n", (long)sum, (int)jumps);
	return 0;
}
