// SPDX-License-Identifier: GPL-2.0
/*
 * Functions that leave through a tail call (a jmp with their frame popped),
 * for --exit=ret: their time goes on in the callee until it returns. The
 * driver times each call of the traced function itself, callee included,
 * and prints the ground truth to stderr as
 *   truth NAME calls=N wall_avg_ns=X cpu_avg_ns=Y
 * (Y: the thread's CPU time, which a loaded machine's waits for a CPU leave out)
 *
 * Usage: tailcall MODE US N
 *   c US N         N calls of c_tail(US): spins 10 us, then `return callee(US)`, which gcc -O2
 *                  makes a jmp
 *   direct US N    N calls of tail_direct(US): the same in assembly (a jmp whatever the compiler)
 *   chain US N     N calls of tail_chain(US): spins 10 us, jmp hop, which jmps to callee
 *   both US N      N calls of tail_both(US): calls callee(20) normally, then jmp callee; and
 *                  between them callee(20) from the driver (another caller, not traced)
 *   indirect US N  N calls of tail_indirect(US): spins 10 us, then jmp *%rax to callee
 *   abandon US N   N calls of tail_abandon(US): spins 10 us, then jmp callee; every other one
 *                  leaves by longjmp before its jmp, and the driver then spins 500 us and calls
 *                  callee(20) at the same stack pointer, from the same call site (truth: the
 *                  calls that completed; abandoned=the others)
 *   late US N      the same with tail_late, which jmps to late_callee(US): every other one
 *                  leaves by longjmp from late_callee, after the jmp; the driver then calls
 *                  late_callee(20) at the same stack pointer, from another call site
 *   caller M N     N calls of hits_caller(M): spins 100 us and calls callee(0) M times (callee
 *                  being the tail callee of tail_direct, also called each round); its own
 *                  CPU time (cpu_avg_ns: a loaded machine's waits for a CPU, which the probes
 *                  prolong, are left out), and untraced_cpu_avg_ns: less what each callee
 *                  call took beyond the callee's own CPU clock (the probe on its ret)
 *   cboth US N     N calls of c_both(US): spins 10 us, calls callee(0) 20 times, then
 *                  `return callee(US)` (a jmp); CPU times as for caller
 *   other US N     N calls of callee(US) from the driver only (what a tail probe costs them)
 *   short 0 N      N calls of tail_short: a loop of SHORT_LOOPS, then jmp short_callee, the
 *                  same loop (tens of ns in all); truth: as many calls of an untraced copy of
 *                  the two, timed in batches between the traced ones (the clock's own time is
 *                  more than the calls')
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long clock_of(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static unsigned long long clock_ns(void)
{
	return clock_of(CLOCK_MONOTONIC);
}

/* The thread's CPU time: what the probes cost it, without the waits for a CPU of a loaded machine. */
static unsigned long long cpu_ns(void)
{
	return clock_of(CLOCK_THREAD_CPUTIME_ID);
}

/* Busy for us microseconds of wall time. */
NOINLINE void spin_for(unsigned int us)
{
	unsigned long long end = clock_ns() + us * 1000ULL;

	while (clock_ns() < end)
		;
}

/* The last callee call's CPU time by its own clock: what a call took beyond it is the probes'. */
static volatile unsigned long long callee_ns;

/* The tail callee: not a tail caller itself (the store after the call keeps it out of tail position). */
NOINLINE void callee(unsigned int us)
{
	unsigned long long t0 = cpu_ns();

	spin_for(us);
	callee_ns = cpu_ns() - t0;
}

/*
 * A copy of callee that no probe is on (it stores elsewhere, so that the
 * compiler does not fold the two): what a call takes beyond its own clock
 * untraced (the clocks' system calls, ~1 us here).
 */
static volatile unsigned long long callee_ref_ns;

NOINLINE void callee_ref(unsigned int us)
{
	unsigned long long t0 = cpu_ns();

	spin_for(us);
	callee_ref_ns = cpu_ns() - t0;
}

/* CPU time spent in callee calls beyond their own clocks (the probe on its ret), summed; and in callee_ref's. */
static unsigned long long beyond_ns, base_ns;

/* callee(us), and the CPU time it took beyond its own clock added to beyond_ns. */
static inline void callee_timed(unsigned int us)
{
	unsigned long long a = cpu_ns();

	callee(us);
	beyond_ns += cpu_ns() - a - callee_ns;
}

static void callee_ref_timed(unsigned int m)
{
	unsigned long long a;

	while (m--) {
		a = cpu_ns();
		callee_ref(0);
		base_ns += cpu_ns() - a - callee_ref_ns;
	}
}

#define HITS_SPIN_US 100

/* A traced caller of the tail callee: its own CPU time, and beyond_ns for what the probes took of it. */
static unsigned long long caller_ns;

NOINLINE void hits_caller(unsigned int m)
{
	unsigned long long c0 = cpu_ns();
	unsigned int j;

	spin_for(HITS_SPIN_US);
	for (j = 0; j < m; j++)
		callee_timed(0);
	caller_ns += cpu_ns() - c0;
}

#define CBOTH_INNER 20

/* Calls the tail callee normally, then tail-calls it. */
NOINLINE void c_both(unsigned int us)
{
	unsigned int j;

	spin_for(10);
	for (j = 0; j < CBOTH_INNER; j++)
		callee_timed(0);
	callee(us);
}

/* Where the driver takes up again when a traced call is abandoned (abandon, late). */
static jmp_buf escape_env;
static volatile int escape;

/* Spins us, then, when asked, leaves by longjmp: the calls above the driver are abandoned. */
NOINLINE void maybe_escape(unsigned int us)
{
	spin_for(us);
	if (escape)
		longjmp(escape_env, 1);
}

/* tail_late's tail callee: may leave by longjmp, after the caller's jmp. */
NOINLINE void late_callee(unsigned int us)
{
	maybe_escape(us);
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
void tail_abandon(unsigned int us);
void tail_late(unsigned int us);
void call_fn(void (*fn)(unsigned int), unsigned int us);
void call_fn2(void (*fn)(unsigned int), unsigned int us);

/* Where tail_indirect jumps: read from memory, so that the jmp is indirect. */
void (*volatile indirect_target)(unsigned int) = callee;

#define FN(name, body) ".globl " #name "\n.type " #name ",@function\n" #name ":\n" body ".size " #name ", .-" #name "\n"

/*
 * tail_short and short_callee: a short loop each (the entry's push %rbp for
 * an emulated probe); their copies with _ref untraced, for the truth.
 */
void tail_short(void);
void tail_short_ref(void);
#define SHORT_LOOPS "64"
#define SHORT_LOOP "\tmov $" SHORT_LOOPS ",%ecx\n1:\tdec %ecx\n\tjnz 1b\n"
#define SHORT_FN(name, callee) \
	FN(name, "\tpush %rbp\n\tmov %rsp,%rbp\n" SHORT_LOOP "\tpop %rbp\n\tjmp " callee "\n") \
	FN(callee, SHORT_LOOP "\tret\n")

__asm__(".text\n"
	SHORT_FN(tail_short, "short_callee")
	SHORT_FN(tail_short_ref, "short_callee_ref"));

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
			  "\tpop %rbx\n\tmov indirect_target(%rip),%rax\n\tjmp *%rax\n")
	FN(tail_abandon, "\tpush %rbx\n\tmov %edi,%ebx\n\tmov $10,%edi\n\tcall maybe_escape\n\tmov %ebx,%edi\n"
			 "\tpop %rbx\n\tjmp callee\n")
	FN(tail_late, "\tpush %rbx\n\tmov %edi,%ebx\n\tmov $10,%edi\n\tcall spin_for\n\tmov %ebx,%edi\n"
		      "\tpop %rbx\n\tjmp late_callee\n")
	/* fn(us), from one call site; call_fn2 the same from another, at the same stack pointer. */
	FN(call_fn, "\tpush %rbx\n\tmov %rdi,%rax\n\tmov %esi,%edi\n\tcall *%rax\n\tpop %rbx\n\tret\n")
	FN(call_fn2, "\tpush %rbx\n\tmov %rdi,%rax\n\tmov %esi,%edi\n\tcall *%rax\n\tpop %rbx\n\tret\n"));

/*
 * abandon, late: every other traced call is abandoned by longjmp (before its
 * tail jmp, or after it, in the callee); the driver then spins 500 us and
 * calls the callee at the stack pointer the traced call had.
 */
static void run_escapes(bool late, unsigned int us, long n)
{
	static volatile long i, done;
	static volatile unsigned long long sum, w0, cpu, c0;

	for (i = 0; i < n; i++) {
		escape = i & 1;
		w0 = clock_ns();
		c0 = cpu_ns();
		if (!setjmp(escape_env)) {
			call_fn(late ? tail_late : tail_abandon, us);
			cpu += cpu_ns() - c0;
			sum += clock_ns() - w0;
			done++;
		}
		escape = 0;
		spin_for(500);
		if (late)
			call_fn2(late_callee, 20);
		else
			call_fn(callee, 20);
	}
	printf("%ld calls of %s\n", n, late ? "tail_late" : "tail_abandon");
	fprintf(stderr, "truth %s calls=%ld wall_avg_ns=%.1f cpu_avg_ns=%.1f abandoned=%ld\n",
		late ? "tail_late" : "tail_abandon", (long)done, done ? (double)sum / done : 0.0,
		done ? (double)cpu / done : 0.0, n - done);
}

/* caller, cboth: the traced calls' CPU time, and less what the callee's probe took of it inside them. */
static void run_hits(bool caller, unsigned int arg, long n)
{
	unsigned long long sum = 0, w0;
	long i;

	for (i = 0; i < n; i++) {
		/* As many untraced: the untraced cost beyond the clocks, out of what the probes took. */
		callee_ref_timed(caller ? arg : CBOTH_INNER);
		if (caller) {
			hits_caller(arg);
			tail_direct(20);
			continue;
		}
		w0 = cpu_ns();
		c_both(arg);
		sum += cpu_ns() - w0;
	}
	sum = caller ? caller_ns : sum;
	beyond_ns = beyond_ns > base_ns ? beyond_ns - base_ns : 0;
	printf("%ld calls of %s\n", n, caller ? "hits_caller" : "c_both");
	fprintf(stderr, "truth %s calls=%ld cpu_avg_ns=%.1f untraced_cpu_avg_ns=%.1f beyond_cpu_avg_ns=%.1f\n",
		caller ? "hits_caller" : "c_both", n, n ? (double)sum / n : 0.0,
		n ? (double)(sum - beyond_ns) / n : 0.0, n ? (double)beyond_ns / n : 0.0);
}

#define SHORT_BATCH 200

/*
 * short: tail_short's calls, and between their batches as many of its
 * untraced copy, timed a batch at a time: the truth, per call.
 */
static void run_short(long n)
{
	unsigned long long sum = 0, w0;
	long i, j;

	for (i = 0; i < n; i += SHORT_BATCH) {
		w0 = clock_ns();
		for (j = 0; j < SHORT_BATCH; j++)
			tail_short_ref();
		sum += clock_ns() - w0;
		for (j = 0; j < SHORT_BATCH; j++)
			tail_short();
	}
	n = (n + SHORT_BATCH - 1) / SHORT_BATCH * SHORT_BATCH;
	printf("%ld calls of tail_short\n", n);
	fprintf(stderr, "truth tail_short calls=%ld wall_avg_ns=%.1f\n", n, n ? (double)sum / n : 0.0);
}

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
	unsigned long long sum = 0, cpu = 0, w0, c0;
	unsigned int us;
	long i, n, k;

	if (argc != 4) {
		fprintf(stderr, "usage: tailcall c|direct|chain|both|indirect|other|abandon|late|caller|cboth|short US N\n");
		return 2;
	}
	us = strtoul(argv[2], NULL, 10);
	n = strtol(argv[3], NULL, 10);
	if (!strcmp(argv[1], "abandon") || !strcmp(argv[1], "late")) {
		run_escapes(!strcmp(argv[1], "late"), us, n);
		return 0;
	}
	if (!strcmp(argv[1], "short")) {
		run_short(n);
		return 0;
	}
	if (!strcmp(argv[1], "caller") || !strcmp(argv[1], "cboth")) {
		run_hits(!strcmp(argv[1], "caller"), us, n);
		return 0;
	}
	for (k = 0; k < (long)(sizeof(modes) / sizeof(modes[0])); k++)
		if (!strcmp(argv[1], modes[k].mode))
			break;
	if (k == sizeof(modes) / sizeof(modes[0])) {
		fprintf(stderr, "tailcall: unknown mode %s\n", argv[1]);
		return 2;
	}
	for (i = 0; i < n; i++) {
		w0 = clock_ns();
		c0 = cpu_ns();
		modes[k].fn(us);
		cpu += cpu_ns() - c0;
		sum += clock_ns() - w0;
		/* both: the callee from another caller, between the traced calls. */
		if (k == 3)
			callee(20);
	}
	printf("%ld calls of %s\n", n, modes[k].name);
	fprintf(stderr, "truth %s calls=%ld wall_avg_ns=%.1f cpu_avg_ns=%.1f\n", modes[k].name, n,
		n ? (double)sum / n : 0.0, n ? (double)cpu / n : 0.0);
	return 0;
}
