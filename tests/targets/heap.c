// SPDX-License-Identifier: GPL-2.0
/*
 * Heap truth: alloc_big allocates 4 KiB blocks and alloc_small 64 B blocks,
 * three times as many bytes in the first, all freed; keep_live allocates 8
 * MiB in 256 KiB blocks and keeps them until the end. Also one
 * posix_memalign, calloc and realloc path, freed.
 * Usage: heap MIB [HOLD_S [thread]]: MIB mebibytes through the two sites,
 * then HOLD_S seconds (default 0) with the 8 MiB still live before it frees
 * them. With "thread", all that is done by a thread started 0.5 s after
 * "ready" (time for fnprof to attach with -p).
 * Prints "ready" first, then "truth heap big=B small=S live=L calls=N".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile char sink;
static unsigned long long big_bytes, small_bytes, calls;

NOINLINE void *alloc_big(void)
{
	char *p = malloc(4096);

	p[0] = 1;
	big_bytes += 4096;
	calls++;
	return p;
}

NOINLINE void *alloc_small(void)
{
	char *p = malloc(64);

	p[0] = 1;
	small_bytes += 64;
	calls++;
	return p;
}

#define KEEP_BLOCK (256 << 10)
#define KEEP_NR 32

static void *kept[KEEP_NR];

NOINLINE void keep_live(void)
{
	int i;

	for (i = 0; i < KEEP_NR; i++) {
		kept[i] = malloc(KEEP_BLOCK);
		memset(kept[i], 1, 64);
	}
	calls += KEEP_NR;
}

/* One round: 3 x 4 KiB in alloc_big, 64 x 64 B in alloc_small: 12 KiB to 4 KiB. */
NOINLINE void round_trip(void)
{
	void *b[3], *s[64];
	int i;

	for (i = 0; i < 3; i++)
		b[i] = alloc_big();
	for (i = 0; i < 64; i++)
		s[i] = alloc_small();
	for (i = 0; i < 3; i++)
		free(b[i]);
	for (i = 0; i < 64; i++)
		free(s[i]);
}

/* The other entry points: each block freed, so they add nothing in use. */
NOINLINE void other_paths(void)
{
	void *p = NULL;
	char *q = calloc(4, 16), *r = realloc(NULL, 32), *a;

	/* Blocks that are used: the compiler may drop an allocation freed unused. */
	sink = q[1];
	if (!posix_memalign(&p, 64, 128))
		free(p);
	r = realloc(r, 4096);
	r[4095] = 1;
	a = aligned_alloc(64, 256);
	a[255] = 1;
	__asm__ volatile("" : : "r"(a), "r"(q) : "memory");  /* they escape: no allocation is elided */
	sink = a[255] + r[4095];
	free(q);
	free(r);
	free(a);
}

static double mib;

static void *work(void *arg)
{
	unsigned long long rounds = mib * (1 << 20) / (16 << 10), i;

	(void)arg;
	keep_live();
	for (i = 0; i < rounds; i++)
		round_trip();
	other_paths();
	printf("truth heap big=%llu small=%llu live=%d calls=%llu\n", big_bytes, small_bytes, KEEP_BLOCK * KEEP_NR,
	       calls);
	return NULL;
}

int main(int argc, char **argv)
{
	double hold = argc > 2 ? atof(argv[2]) : 0;
	struct timespec ts = { (time_t)hold, (long)((hold - (time_t)hold) * 1e9) }, half = { 0, 500000000 };
	pthread_t t;
	int i;

	mib = argc > 1 ? atof(argv[1]) : 64;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (argc > 3 && !strcmp(argv[3], "thread")) {
		nanosleep(&half, NULL);
		pthread_create(&t, NULL, work, NULL);
		pthread_join(t, NULL);
	} else {
		work(NULL);
	}
	nanosleep(&ts, NULL);
	for (i = 0; i < KEEP_NR; i++)
		free(kept[i]);
	return 0;
}
