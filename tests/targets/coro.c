// SPDX-License-Identifier: GPL-2.0
/*
 * Stack switching: two coroutines (swapcontext), each calling step() in a
 * loop; step() yields to the other coroutine from inside, so both stacks
 * hold a live step() frame at once. step() measures its own wall time:
 *   truth step calls=N wall_avg_ns=X
 * Usage: coro N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))

static ucontext_t main_ctx, ctx[2];
static char stacks[2][64 * 1024];
static unsigned long n, sum[2], calls;
static unsigned long long wall_ns;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

NOINLINE void yield_to(int from, int to)
{
	swapcontext(&ctx[from], &ctx[to]);
}

/* A leaf (it calls nothing): in a program that switches stacks, still no uretprobe (issue 22). */
NOINLINE unsigned long scramble(int me, unsigned long i)
{
	return i * 2654435761UL + me;
}

/* Suspended in the middle, with its frame live on this coroutine's stack. */
NOINLINE unsigned long step(int me, unsigned long i)
{
	unsigned long long t0 = now_ns();
	unsigned long v = scramble(me, i);

	yield_to(me, !me);
	calls++;
	wall_ns += now_ns() - t0;
	return v >> 3;
}

static void body(int me)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		sum[me] += step(me, i);
	/* The other one is suspended inside step(): let it finish its last call. */
	swapcontext(&ctx[me], &ctx[!me]);
}

int main(int argc, char **argv)
{
	int k;

	n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
	for (k = 0; k < 2; k++) {
		getcontext(&ctx[k]);
		ctx[k].uc_stack.ss_sp = stacks[k];
		ctx[k].uc_stack.ss_size = sizeof(stacks[k]);
		ctx[k].uc_link = &main_ctx;
		makecontext(&ctx[k], (void (*)(void))body, 1, k);
	}
	swapcontext(&main_ctx, &ctx[0]);
	printf("sums %lu %lu\n", sum[0], sum[1]);
	fprintf(stderr, "truth step calls=%lu wall_avg_ns=%.1f\n", calls, (double)wall_ns / calls);
	return 0;
}
