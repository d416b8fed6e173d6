// SPDX-License-Identifier: GPL-2.0
/*
 * Heap truth: alloc_big allocates 4 KiB blocks and alloc_small 64 B blocks,
 * three times as many bytes in the first, all freed; keep_live allocates 8
 * MiB in 256 KiB blocks and keeps them until the end. Also one
 * posix_memalign, calloc and realloc path, freed.
 * Usage: heap MIB [HOLD_S [thread]]: MIB mebibytes through the two sites,
 * then HOLD_S seconds (default 0) with the 8 MiB still live before it frees
 * them. With "thread", all that is done by a thread started once fnprof,
 * attached with -p after "ready", has its probes in: malloc's and free's
 * code changed (a fixed delay is too short for a start-up on a busy
 * machine, and a thread started while the probes go in sees some of them).
 * Prints "ready" first, then "truth heap big=B small=S live=L calls=N".
 *
 * heap rate SECONDS SPIN_US: the cost of the heap profile's probes, for
 * --max-overhead. Blocks of round_trip() and SPIN_US of work alternate with
 * blocks of the same work alone, each timed in thread CPU time: their ratio
 * before any probe (1 s, then "ready") and after malloc's first byte has
 * become a breakpoint (then keep_live(), and SECONDS of blocks; both in the
 * thread's CPU time, however busy the machine) gives the
 * slowdown. Prints "truth heap_rate slowdown=F big=B small=S live=L
 * probed=P blocks=N r0=R r1=R f0=US f1=US": B and S allocated after the
 * breakpoint, P the share of blocks that ran with malloc's breakpoint in, R
 * the ratio of the blocks' CPU times before and after, US the CPU time of a
 * round's frees before and after (us): free's probe apart from malloc's.
 */
#include <pthread.h>
#include <stdbool.h>
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

static double cpu_s(void);

/* The CPU time spent in round_trip()'s frees: what free's probe alone costs, apart from malloc's. */
static double free_s;

/* One round: 3 x 4 KiB in alloc_big, 64 x 64 B in alloc_small: 12 KiB to 4 KiB. */
NOINLINE void round_trip(void)
{
	void *b[3], *s[64];
	double t;
	int i;

	for (i = 0; i < 3; i++)
		b[i] = alloc_big();
	for (i = 0; i < 64; i++)
		s[i] = alloc_small();
	t = cpu_s();
	for (i = 0; i < 3; i++)
		free(b[i]);
	for (i = 0; i < 64; i++)
		free(s[i]);
	free_s += cpu_s() - t;
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

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin_us(double us)
{
	double end = cpu_s() + us / 1e6;

	while (cpu_s() < end)
		;
}

/* The CPU time of blocks with allocations (a) and without (b), alternating, for seconds. */
struct blocks {
	double a, b, free;
	unsigned long n, probed;
};

static void run_blocks(struct blocks *r, double seconds, double spin, const volatile unsigned char *entry,
		       unsigned char orig)
{
	/* Seconds of this thread's CPU time: as many blocks (as large a sample) on a busy machine. */
	double end = cpu_s() + seconds, t;

	free_s = 0;
	while (cpu_s() < end) {
		bool in = *entry != orig;

		t = cpu_s();
		round_trip();
		spin_us(spin);
		r->a += cpu_s() - t;
		t = cpu_s();
		spin_us(spin);
		r->b += cpu_s() - t;
		r->n++;
		r->probed += in && *entry != orig;
	}
	r->free = free_s;
}

#define FREE_BYTES 8

static bool changed(const volatile unsigned char *code, const unsigned char *orig)
{
	int i;

	for (i = 0; i < FREE_BYTES; i++)
		if (code[i] != orig[i])
			return true;
	return false;
}

/*
 * Waits (30 s at most) until the heap profile's probes are in: free's go in
 * after the allocations', so once one of its first bytes and malloc's first
 * byte have changed, all are in.
 */
static void wait_probes(const volatile unsigned char *entry, unsigned char orig,
			const volatile unsigned char *free_code, const unsigned char *free_orig)
{
	struct timespec ms = { 0, 1000000 };
	double deadline = mono_s() + 30;

	/* Asleep, not spinning: fnprof starts up on the same CPUs. */
	while ((*entry == orig || !changed(free_code, free_orig)) && mono_s() < deadline)
		nanosleep(&ms, NULL);
}

static int rate_mode(double seconds, double spin)
{
	/* malloc's first byte: a uprobe makes it a breakpoint in this process's view of libc. */
	const volatile unsigned char *entry = (const volatile unsigned char *)(void *)malloc;
	const volatile unsigned char *free_code = (const volatile unsigned char *)(void *)free;
	unsigned char orig = *entry, free_orig[FREE_BYTES];
	struct blocks ref = {}, run = {};
	double r0;
	int i;

	for (i = 0; i < FREE_BYTES; i++)
		free_orig[i] = free_code[i];
	setvbuf(stdout, NULL, _IOLBF, 0);
	run_blocks(&ref, 1, spin, entry, orig);
	printf("ready\n");
	wait_probes(entry, orig, free_code, free_orig);
	big_bytes = small_bytes = 0;
	keep_live();
	run_blocks(&run, seconds, spin, entry, orig);
	r0 = ref.a / ref.b;
	printf("truth heap_rate slowdown=%.5f big=%llu small=%llu live=%d probed=%.4f blocks=%lu r0=%.4f r1=%.4f "
	       "f0=%.3f f1=%.3f\n",
	       (run.a + run.b) / (r0 * run.b + run.b) - 1, big_bytes, small_bytes, KEEP_BLOCK * KEEP_NR,
	       run.n ? (double)run.probed / run.n : 0, run.n, r0, run.a / run.b, 1e6 * ref.free / ref.n,
	       run.n ? 1e6 * run.free / run.n : 0);
	for (i = 0; i < KEEP_NR; i++)
		free(kept[i]);
	return 0;
}

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
	struct timespec ts = { (time_t)hold, (long)((hold - (time_t)hold) * 1e9) };
	const volatile unsigned char *entry = (const volatile unsigned char *)(void *)malloc;
	const volatile unsigned char *free_code = (const volatile unsigned char *)(void *)free;
	unsigned char orig = *entry, free_orig[FREE_BYTES];
	pthread_t t;
	int i;

	for (i = 0; i < FREE_BYTES; i++)
		free_orig[i] = free_code[i];

	if (argc > 3 && !strcmp(argv[1], "rate"))
		return rate_mode(atof(argv[2]), atof(argv[3]));
	mib = argc > 1 ? atof(argv[1]) : 64;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (argc > 3 && !strcmp(argv[3], "thread")) {
		wait_probes(entry, orig, free_code, free_orig);
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
