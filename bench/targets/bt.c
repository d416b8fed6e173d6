/*
 * Benchmark target. Prints the runtime address of the function under test, waits for one byte on
 * stdin (the tool attaches meanwhile), then calls the function N times and prints its own figures:
 *
 *   addr <hex address of FUNC in this process>
 *   result calls=N total_ns=T ns_per_call=T/N truth_avg=.. truth_p50=.. truth_p99=.. entry=XX
 *
 * truth_*: the latency the function measured of itself (clock_gettime at its start and end), for
 * spin and sleep; for nop there is nothing to measure inside a 2 ns function (truth_* = 0).
 * entry: the first byte of the function after the loop, as this process sees it (cc: the uprobe's int3;
 * e8: a call, the kernel's optimized uprobe on a 5-byte nop).
 *
 * usage: bt nop N | bt spin N NS | bt sleep N NS | bt work SECONDS NS  (work: spin calls for SECONDS)
 *        bt pair N | bt workload N [THREADS]
 *
 * workload: N calls of target_tiny (~2 ns: three stores) through a function pointer, in a tight loop:
 * a function shaped like neither fnprof's calibration functions nor the tests' targets; with THREADS,
 * that many threads make N calls each (calls= counts them all).
 *
 * pair: two tools at once, one on each of the twins target_nop and target_nop2 (both addresses are
 * printed). N calls of each, in alternating blocks of PAIR_BLOCK (a b b a a b ...), each block timed;
 * prints "pair blocks=B a=.. b=.. d=..": the median ns/call of a's and of b's blocks, and the median of
 * (a - b) over the block pairs. Both tools' probes then meet the same moments of a busy machine and
 * the same process, whose single-step cost differs from other processes'.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa, used))

static inline unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static unsigned long long *truth;

/* ~2 ns. The volatile store keeps the body (and, at -O2, makes it the first instruction). */
NOINLINE void target_nop(void)
{
	volatile long x = 0;
	(void)x;
}

/* target_nop's twin, for pair mode (noipa keeps the compiler from merging them). */
NOINLINE void target_nop2(void)
{
	volatile long x = 0;
	(void)x;
}

/* ~2 ns: three stores; with frame pointers push %rbp; mov %rsp,%rbp; three movs; pop %rbp; ret. */
NOINLINE void target_tiny(void)
{
	volatile long a = 1, b = 2, c = 3;
	(void)a, (void)b, (void)c;
}

/* Called through this: the compiler cannot inline or hoist it. */
static void (*volatile tiny_fn)(void) = target_tiny;

static void *tiny_loop(void *arg)
{
	unsigned long n = (unsigned long)arg;

	for (unsigned long i = 0; i < n; i++)
		tiny_fn();
	return NULL;
}

/* THREADS threads of n calls each: the calls made. */
static unsigned long tiny_threads(unsigned long n, unsigned long threads)
{
	pthread_t th[64];
	unsigned long k, started = 0;

	for (k = 0; k < threads && k < 64; k++)
		if (!pthread_create(&th[k], NULL, tiny_loop, (void *)n))
			started++;
	for (k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	return started * n;
}

/* Busy-waits NS ns and records how long it took, from inside. */
NOINLINE void target_spin(unsigned long long ns, unsigned long i)
{
	unsigned long long t0 = now_ns(), t;
	do
		t = now_ns();
	while (t - t0 < ns);
	if (truth)
		truth[i] = t - t0;
}

/* Sleeps NS ns (clock_nanosleep) and records how long it took, from inside. */
NOINLINE void target_sleep(unsigned long long ns, unsigned long i)
{
	unsigned long long t0 = now_ns(), t;
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	t = now_ns();
	if (truth)
		truth[i] = t - t0;
}

static int cmp(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return x < y ? -1 : x > y;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_d(double *v, unsigned long n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define PAIR_BLOCK 250

/* ns per call of one block of fn. */
static double block(void (*fn)(void))
{
	unsigned long long t0 = now_ns();
	for (int k = 0; k < PAIR_BLOCK; k++)
		fn();
	return (double)(now_ns() - t0) / PAIR_BLOCK;
}

static int pair(unsigned long n)
{
	unsigned long nb = n / PAIR_BLOCK, i;
	double *a = calloc(nb, sizeof(*a)), *b = calloc(nb, sizeof(*b)), *d = calloc(nb, sizeof(*d));
	char c;

	if (!nb || !a || !b || !d)
		return 2;
	printf("addr %lx\naddr %lx\n", (unsigned long)target_nop, (unsigned long)target_nop2);
	fflush(stdout);
	if (read(0, &c, 1) < 0)
		return 1;
	for (i = 0; i < nb; i++) {
		if (i & 1) {
			b[i] = block(target_nop2);
			a[i] = block(target_nop);
		} else {
			a[i] = block(target_nop);
			b[i] = block(target_nop2);
		}
		d[i] = a[i] - b[i];
	}
	printf("pair blocks=%lu a=%.1f b=%.1f d=%.1f\n", nb, median_d(a, nb), median_d(b, nb), median_d(d, nb));
	return 0;
}

static double pct(const unsigned long long *v, unsigned long n, double p)
{
	double r = p * (double)(n - 1);
	unsigned long k = (unsigned long)r;
	if (k + 1 >= n)
		return (double)v[n - 1];
	return (double)v[k] + (r - (double)k) * (double)(v[k + 1] - v[k]);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s nop N | spin N NS | sleep N NS | work SECONDS NS | pair N | workload N\n",
			argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	unsigned long n = strtoul(argv[2], NULL, 0);

	if (!strcmp(mode, "pair"))
		return pair(n);
	unsigned long long ns = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;
	void *fn = !strcmp(mode, "nop") ? (void *)target_nop
		 : !strcmp(mode, "workload") ? (void *)target_tiny
		 : !strcmp(mode, "sleep") ? (void *)target_sleep : (void *)target_spin;
	char c;

	if (strcmp(mode, "nop") && strcmp(mode, "work") && strcmp(mode, "workload"))
		truth = calloc(n, sizeof(*truth));
	printf("addr %lx\n", (unsigned long)fn);
	fflush(stdout);
	if (read(0, &c, 1) < 0)
		return 1;

	unsigned long long t0 = now_ns(), t1;
	unsigned long i = 0;
	if (!strcmp(mode, "nop")) {
		for (i = 0; i < n; i++)
			target_nop();
	} else if (!strcmp(mode, "workload") && ns > 1) {   /* ns: the THREADS argument here */
		i = tiny_threads(n, ns);
	} else if (!strcmp(mode, "workload")) {
		for (i = 0; i < n; i++)
			tiny_fn();
	} else if (!strcmp(mode, "spin")) {
		for (i = 0; i < n; i++)
			target_spin(ns, i);
	} else if (!strcmp(mode, "sleep")) {
		for (i = 0; i < n; i++)
			target_sleep(ns, i);
	} else if (!strcmp(mode, "work")) {  /* n = seconds */
		unsigned long long end = t0 + n * 1000000000ull;
		for (i = 0; now_ns() < end; i++)
			target_spin(ns, 0);
	} else {
		fprintf(stderr, "bad mode %s\n", mode);
		return 2;
	}
	t1 = now_ns();

	double avg = 0, p50 = 0, p99 = 0;
	if (truth && i) {
		unsigned long long sum = 0;
		for (unsigned long k = 0; k < i; k++)
			sum += truth[k];
		qsort(truth, i, sizeof(*truth), cmp);
		avg = (double)sum / (double)i;
		p50 = pct(truth, i, 0.50);
		p99 = pct(truth, i, 0.99);
	}
	printf("result calls=%lu total_ns=%llu ns_per_call=%.3f truth_avg=%.1f truth_p50=%.1f truth_p99=%.1f "
	       "entry=%02x\n", i, t1 - t0, (double)(t1 - t0) / (double)i, avg, p50, p99,
	       *(volatile unsigned char *)fn);
	return 0;
}
