// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark target. Waits for SIGUSR1 (the tracer is attached by then), runs
 * its loop, prints what it measured itself, and exits.
 *   loop call N          N calls of f(), a ~2 ns function; prints ns per call (the loop's own)
 *   loop spin US N       N calls of spin(US); prints the average wall time measured inside
 *   loop sleep US N      N calls of nap(US); likewise
 * How f() starts depends on the build: -DENTRY_PUSH (push %rbp, emulated by uprobes),
 * -DENTRY_NOP5 (a 5-byte nop), or plain -O2 (an instruction that is single-stepped).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#if defined(ENTRY_PUSH)
NOINLINE unsigned long f(unsigned long x)
{
	__asm__ volatile("push %%rbp\n\tmov %%rsp,%%rbp\n\tpop %%rbp" ::: "memory");
	return x * 3 + 1;
}
#elif defined(ENTRY_NOP5)
__asm__(".text\n.globl f\n.type f,@function\nf:\n\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tlea 0x1(%rdi,%rdi,2),%rax\n\tret\n"
	".size f, .-f\n");
unsigned long f(unsigned long x);
#else
NOINLINE unsigned long f(unsigned long x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}
#endif

static unsigned long long spent_ns;

NOINLINE void spin(unsigned int us)
{
	unsigned long long t0 = now_ns();

	while (now_ns() - t0 < us * 1000ULL)
		;
	spent_ns += now_ns() - t0;
}

NOINLINE void nap(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000L };
	unsigned long long t0 = now_ns();

	nanosleep(&ts, NULL);
	spent_ns += now_ns() - t0;
}

static void on_usr1(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	unsigned long i, n = strtoul(argv[argc - 1], NULL, 10), sum = 0;
	unsigned int us = argc > 3 ? atoi(argv[2]) : 0;
	unsigned long long t0;
	sigset_t set;

	if (argc < 3) {
		fprintf(stderr, "usage: loop call N | spin US N | sleep US N\n");
		return 2;
	}
	/* Wait for the go signal without missing one sent early. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (getenv("BENCH_WAIT"))
		sigwaitinfo(&set, NULL);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		if (!strcmp(argv[1], "call"))
			sum += f(i);
		else if (!strcmp(argv[1], "spin"))
			spin(us);
		else
			nap(us);
	}
	t0 = now_ns() - t0;
	printf("ns_per_call=%.1f inside_avg_ns=%.1f sum=%lu\n", (double)t0 / n, (double)spent_ns / n, sum);
	return 0;
}
