// SPDX-License-Identifier: GPL-2.0
/*
 * A target with known behaviour that measures itself. Deterministic results
 * go to stdout (so output with and without tracing can be compared); the
 * ground truth measured inside each function goes to stderr as
 *   truth NAME calls=N wall_avg_ns=X cpu_avg_ns=Y
 *
 * Usage: work MODE ARGS...
 *   spin US N          N calls of spin_us(US)
 *   stepspin US N      N calls of spin_stepped(US): spin_us behind two single-stepped instructions
 *   sleep US N         N calls of sleep_us(US)
 *   count N            N calls of tiny(), prints their sum
 *   count5 N           N calls of tiny_nop5() (first instruction a 5-byte nop), prints their sum
 *   recurse DEPTH N    N calls of recurse(DEPTH)
 *   nest N             N calls of outer(), which spins 50 us and calls inner() (100 us)
 *   gate N             prints "ready", waits for a line on stdin, then as nest N (to attach first)
 *   gated MODE ARGS    prints "ready", waits for a line on stdin, then as MODE ARGS
 *   threads T N        T threads, each N calls of spin_us(20)
 *   waves W T N        W waves, one after the other, of T threads each making N calls of spin_us(20)
 *   loop               prints "ready", then spin_us(50) + sleep_us(1000) until SIGTERM/SIGINT
 *   pages P N          N calls of touch_pages(P): maps P fresh pages, touches each, unmaps
 *   hammer P           touch_pages(P) in a loop until killed (a noisy neighbour, not traced)
 *   nestpages P N      N calls of pages_outer(P): touches 16 pages itself, then touch_pages(P)
 *   reads N            N calls of read_zero(): 16 reads of 64 KiB from /dev/zero (mostly kernel time)
 *   rate N US [push]   N times: about US microseconds of untraced work, then one call of tiny()
 *                      (tiny_push() with "push": an emulated first instruction, not single-stepped),
 *                      interleaved with as much work again without calls (see run_rate)
 *   exec MS PROG ARGS  spin_us(50) for MS milliseconds, then exec PROG ARGS
 *   fork MS            spin_us(50) for MS milliseconds in a parent and a forked child
 *   forktree MS DELAY [detach]
 *                      a child forked at once, which after DELAY ms forks a grandchild, which
 *                      waits DELAY ms: each spins MS ms (spin_us(50)) after its wait; with detach
 *                      the parent exits without waiting for them
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

#define MAX_SAMPLES 200000

struct truth {
	const char *name;
	unsigned long calls;
	unsigned long long wall_ns, cpu_ns;
	unsigned long long *samples;  /* each call's wall time, for percentiles */
};

static struct truth t_spin = { .name = "spin_us" }, t_sleep = { .name = "sleep_us" }, t_outer = { .name = "outer" },
		    t_inner = { .name = "inner" }, t_recurse = { .name = "recurse" };
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t stop;

static unsigned long long clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void record(struct truth *t, unsigned long long w0, unsigned long long c0)
{
	/*
	 * CPU clock first: it is a system call, where a pending preemption takes
	 * place, and that wait belongs inside the measured wall interval.
	 */
	unsigned long long c = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	unsigned long long w = clock_ns(CLOCK_MONOTONIC) - w0;

	pthread_mutex_lock(&truth_lock);
	if (!t->samples)
		t->samples = calloc(MAX_SAMPLES, sizeof(*t->samples));
	if (t->samples && t->calls < MAX_SAMPLES)
		t->samples[t->calls] = w;
	t->calls++;
	t->wall_ns += w;
	t->cpu_ns += c;
	pthread_mutex_unlock(&truth_lock);
}

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static void print_truth(const struct truth *t)
{
	unsigned long n = t->calls < MAX_SAMPLES ? t->calls : MAX_SAMPLES;

	if (!t->calls)
		return;
	qsort(t->samples, n, sizeof(*t->samples), cmp_ull);
	/* p98 and p99.5 too: where a p99 lies when the calls are measured a little differently. */
	fprintf(stderr, "truth %s calls=%lu wall_avg_ns=%.1f cpu_avg_ns=%.1f p50_ns=%llu p99_ns=%llu min_ns=%llu "
		"p98_ns=%llu p995_ns=%llu pid=%d\n", t->name, t->calls, (double)t->wall_ns / t->calls,
		(double)t->cpu_ns / t->calls, t->samples[n / 2], t->samples[n * 99 / 100], t->samples[0],
		t->samples[n * 98 / 100], t->samples[n * 995 / 1000], (int)getpid());
}

/* Busy for us microseconds of wall time. */
NOINLINE void spin_us(unsigned int us)
{
	unsigned long long w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (clock_ns(CLOCK_MONOTONIC) - w0 < us * 1000ULL)
		;
	record(&t_spin, w0, c0);
}

/*
 * spin_us behind two instructions the kernel single-steps (mov, lea): a
 * stepped-pair entry, its twin on the lea; then the stack pointer moves, which ends the entry
 * block before any instruction the kernel emulates (the jmp). It tail-calls spin_us.
 */
void spin_stepped(unsigned int us);
__asm__(".text\n.globl spin_stepped\n.type spin_stepped,@function\nspin_stepped:\n"
	"\tmov %edi,%eax\n\tlea 0(%rax),%edi\n\tsub $8,%rsp\n\tadd $8,%rsp\n\tjmp spin_us\n"
	".size spin_stepped, .-spin_stepped\n");

NOINLINE void sleep_us(unsigned int us)
{
	unsigned long long w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L };

	nanosleep(&ts, NULL);
	record(&t_sleep, w0, c0);
}

NOINLINE unsigned long tiny(unsigned long x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

/* The same with a frame set up, so that its first instruction is push %rbp (emulated by uprobes). */
__attribute__((noinline, optimize("no-omit-frame-pointer"))) unsigned long tiny_push(unsigned long x)
{
	__asm__ volatile("push %%rbp\n\tmov %%rsp,%%rbp\n\tpop %%rbp" ::: "memory");
	return x * 3 + 1;
}

/*
 * The same, first instruction a 5-byte nop: the kernel turns its probe into a
 * call to a trampoline that enters through a syscall (no trap at all).
 */
unsigned long tiny_nop5(unsigned long x);
__asm__(".text\n"
	".globl tiny_nop5\n"
	".type tiny_nop5, @function\n"
	"tiny_nop5:\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"\tlea 1(%rdi,%rdi,2), %rax\n"
	"\tret\n"
	".size tiny_nop5, .-tiny_nop5\n");

NOINLINE unsigned long recurse(unsigned int depth)
{
	unsigned long r;

	if (!depth)
		return 1;
	r = recurse(depth - 1) + 1;
	__asm__ volatile("" : "+r"(r));
	return r;
}

NOINLINE void inner(void)
{
	unsigned long long w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (clock_ns(CLOCK_MONOTONIC) - w0 < 100000ULL)
		;
	record(&t_inner, w0, c0);
}

NOINLINE void outer(void)
{
	unsigned long long w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (clock_ns(CLOCK_MONOTONIC) - w0 < 50000ULL)
		;
	inner();
	record(&t_outer, w0, c0);
}

static unsigned long faults_seen, pages_touched;

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* Touches n fresh pages: n minor page faults, as the thread's own rusage confirms. */
NOINLINE void touch_pages(unsigned int n)
{
	long page = sysconf(_SC_PAGESIZE), f0 = minflt();
	char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int i;

	if (p == MAP_FAILED)
		return;
	for (i = 0; i < n; i++)
		p[i * page] = 1;
	munmap(p, n * page);
	faults_seen += minflt() - f0;
	pages_touched += n;
}

NOINLINE void pages_outer(unsigned int n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i;

	if (p == MAP_FAILED)
		return;
	for (i = 0; i < 16; i++)
		p[i * page] = 1;
	touch_pages(n);
	munmap(p, 16 * page);
}

static int zero_fd = -1;

/* Time in read(2): the kernel clears 1 MiB per call. */
NOINLINE unsigned long read_zero(void)
{
	static char buf[65536];
	unsigned long sum = 0;
	int i;

	for (i = 0; i < 16; i++)
		sum += read(zero_fd, buf, sizeof(buf));
	return sum;
}

/*
 * Work between traced calls, in a function nobody traces: a fixed number of
 * loop iterations (about us microseconds here), so that the work, and the CPU
 * time it takes, does not depend on preemption the way a wall-clock spin does.
 */
#define LOOPS_PER_US 3600
NOINLINE void busy_us(unsigned int us)
{
	unsigned long i;

	for (i = 0; i < us * LOOPS_PER_US; i++)
		__asm__ volatile("" : "+r"(i));
}

static unsigned long threads_n;

static void *thread_main(void *arg)
{
	unsigned long i;

	for (i = 0; i < threads_n; i++)
		spin_us(20);
	return arg;
}

static void run_threads(int nr, unsigned long n)
{
	pthread_t th[64];
	int i;

	threads_n = n;
	for (i = 0; i < nr && i < 64; i++)
		pthread_create(&th[i], NULL, thread_main, NULL);
	for (i = 0; i < nr && i < 64; i++)
		pthread_join(th[i], NULL);
	printf("threads %d x %lu calls done\n", nr, n);
}

/* Threads that come and go: each wave's threads have exited before the next wave starts. */
static void run_waves(int waves, int nr, unsigned long n)
{
	int w;

	for (w = 0; w < waves; w++)
		run_threads(nr, n);
}

static void on_stop(int sig)
{
	stop = sig;
}

static void run_loop(void)
{
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		spin_us(50);
		sleep_us(1000);
	}
	printf("stopped\n");
}

/*
 * n calls of fn, each after us microseconds of untraced work, in blocks of
 * about 2 ms; each block is followed by the same work without calls, timed
 * apart: the untraced reference, measured in the same run and under the same
 * load as the traced part (CPU time, which preemption does not inflate).
 * The whole run's slowdown is (calls_cpu_ns + ref_cpu_ns) / (2 ref_cpu_ns) - 1.
 */
static void run_rate(unsigned long n, unsigned int us, unsigned long (*fn)(unsigned long))
{
	unsigned long long t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	unsigned long long c1, c2, c3, calls_ns = 0, ref_ns = 0;
	unsigned long i = 0, j, k, block = us && us < 2000 ? 2000 / us : 1, sum = 0;

	while (i < n) {
		c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (j = 0; j < block && i < n; j++, i++) {
			busy_us(us);
			sum += fn(i);
		}
		c2 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (k = 0; k < j; k++)
			busy_us(us);
		c3 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		calls_ns += c2 - c1;
		ref_ns += c3 - c2;
	}
	fprintf(stderr, "truth rate calls=%lu elapsed_ns=%llu cpu_ns=%llu calls_cpu_ns=%llu ref_cpu_ns=%llu\n", n,
		clock_ns(CLOCK_MONOTONIC) - t0, clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0, calls_ns, ref_ns);
	printf("rate sum %lu\n", sum);
}

static unsigned long arg(int argc, char **argv, int i)
{
	if (i >= argc) {
		fprintf(stderr, "work: missing argument %d\n", i);
		exit(2);
	}
	return strtoul(argv[i], NULL, 10);
}

int main(int argc, char **argv)
{
	unsigned long i, n, sum = 0;
	const char *mode = argc > 1 ? argv[1] : "";
	char wait[16];

	/* gated MODE ARGS: as MODE, once a line came on stdin (for -p: probes in place first). */
	if (!strcmp(mode, "gated")) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(wait, sizeof(wait), stdin))
			return 1;
		argc--, argv++;
		mode = argc > 1 ? argv[1] : "";
	}
	if (!strcmp(mode, "spin")) {
		for (i = 0, n = arg(argc, argv, 3); i < n; i++)
			spin_us(arg(argc, argv, 2));
	} else if (!strcmp(mode, "stepspin")) {
		for (i = 0, n = arg(argc, argv, 3); i < n; i++)
			spin_stepped(arg(argc, argv, 2));
	} else if (!strcmp(mode, "sleep")) {
		for (i = 0, n = arg(argc, argv, 3); i < n; i++)
			sleep_us(arg(argc, argv, 2));
	} else if (!strcmp(mode, "count")) {
		for (i = 0, n = arg(argc, argv, 2); i < n; i++)
			sum += tiny(i) + tiny_push(i);
		printf("count %lu sum %lu\n", n, sum);
	} else if (!strcmp(mode, "count5")) {
		for (i = 0, n = arg(argc, argv, 2); i < n; i++)
			sum += tiny_nop5(i);
		printf("count5 %lu sum %lu\n", n, sum);
	} else if (!strcmp(mode, "recurse")) {
		for (i = 0, n = arg(argc, argv, 3); i < n; i++)
			sum += recurse(arg(argc, argv, 2));
		printf("recurse sum %lu\n", sum);
	} else if (!strcmp(mode, "nest") || !strcmp(mode, "gate")) {
		char line[16];

		if (!strcmp(mode, "gate")) {
			printf("ready\n");
			fflush(stdout);
			if (!fgets(line, sizeof(line), stdin))
				return 1;
		}
		for (i = 0, n = arg(argc, argv, 2); i < n; i++)
			outer();
	} else if (!strcmp(mode, "threads")) {
		run_threads(arg(argc, argv, 2), arg(argc, argv, 3));
	} else if (!strcmp(mode, "waves")) {
		run_waves(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4));
	} else if (!strcmp(mode, "loop")) {
		run_loop();
	} else if (!strcmp(mode, "pages")) {
		for (i = 0, n = arg(argc, argv, 3); i < n; i++)
			touch_pages(arg(argc, argv, 2));
		fprintf(stderr, "truth touch_pages calls=%lu pages_per_call=%lu faults_per_call=%.2f\n", n,
			arg(argc, argv, 2), (double)faults_seen / n);
	} else if (!strcmp(mode, "nestpages")) {
		for (i = 0, n = arg(argc, argv, 3); i < n; i++)
			pages_outer(arg(argc, argv, 2));
	} else if (!strcmp(mode, "reads")) {
		zero_fd = open("/dev/zero", O_RDONLY);
		for (i = 0, n = arg(argc, argv, 2); i < n; i++)
			sum += read_zero();
		printf("read %lu bytes\n", sum);
	} else if (!strcmp(mode, "rate")) {
		run_rate(arg(argc, argv, 2), arg(argc, argv, 3),
			 argc > 4 && !strcmp(argv[4], "push") ? tiny_push : tiny);
	} else if (!strcmp(mode, "exec") || !strcmp(mode, "fork")) {
		unsigned long long t0 = clock_ns(CLOCK_MONOTONIC);
		pid_t child = !strcmp(mode, "fork") ? fork() : -1;

		while (clock_ns(CLOCK_MONOTONIC) - t0 < arg(argc, argv, 2) * 1000000ULL)
			spin_us(50);
		if (!strcmp(mode, "exec")) {
			print_truth(&t_spin);
			execv(argv[3], &argv[3]);
			return 127;
		}
		if (child > 0)
			waitpid(child, NULL, 0);
		printf("%s spun\n", child ? "parent" : "child");
	} else if (!strcmp(mode, "forktree")) {
		unsigned long ms = arg(argc, argv, 2), delay = arg(argc, argv, 3);
		bool detach = argc > 4 && !strcmp(argv[4], "detach");
		pid_t child = fork(), grandchild = -1;
		unsigned long long t0;

		if (!child) {
			usleep(delay * 1000);
			grandchild = fork();
			if (!grandchild)
				usleep(delay * 1000);
		}
		for (t0 = clock_ns(CLOCK_MONOTONIC); clock_ns(CLOCK_MONOTONIC) - t0 < ms * 1000000ULL;)
			spin_us(50);
		if (grandchild > 0)
			waitpid(grandchild, NULL, 0);
		if (child > 0 && !detach)
			waitpid(child, NULL, 0);
		printf("%s spun\n", child ? "parent" : grandchild ? "child" : "grandchild");
	} else if (!strcmp(mode, "hammer")) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			touch_pages(arg(argc, argv, 2));
	} else {
		fprintf(stderr, "usage: work spin|sleep|count|recurse|nest|threads|waves|loop|pages|hammer ARGS\n");
		return 2;
	}
	print_truth(&t_spin);
	print_truth(&t_sleep);
	print_truth(&t_outer);
	print_truth(&t_inner);
	print_truth(&t_recurse);
	return 0;
}
