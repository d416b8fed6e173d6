// SPDX-License-Identifier: GPL-2.0
/*
 * Code that trips return probes, measuring its own truth (stderr lines
 * `truth NAME calls=N wall_avg_ns=X`); stdout holds results that must not
 * change under tracing.
 *
 * Usage: reliab MODE ARGS...
 *   longjmp JUMPS DEPTH N  JUMPS times: rec() recursing DEPTH deep, then longjmp out of all of
 *                          it; then N calls of after() (20 us each)
 *   deep N DEPTH US        N calls of deep_rec(DEPTH): each level recurses, then spins US us;
 *                          truth: the outermost 64 levels' wall time
 *   tail N                 N calls of tail_caller(): spins 30 us, then tail-calls (jmp)
 *                          tail_callee(), which spins 20 us
 *   exits N                N rounds of calls to assembly functions with unusual exits:
 *                          many_rets (101 ret instructions), cold_ret (a ret in its .cold
 *                          part), ind_tail (an indirect tail call, jmp *%rax), jt (a jump table
 *                          at entry stack height: not an exit)
 *   threads T CALLS        T threads one after the other, each CALLS calls of busy(), 2 ms
 *                          of untraced work, then stuck(), which ends its thread
 *                          (pthread_exit) mid-call
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void spin(unsigned long long ns)
{
	unsigned long long end = now_ns() + ns;

	while (now_ns() < end)
		;
}

/* --- longjmp out of deep recursion ------------------------------------- */

static jmp_buf env;
static volatile int jump = 1;

NOINLINE void rec(int n)
{
	if (n <= 1) {
		if (jump)
			longjmp(env, 1);
		return;
	}
	rec(n - 1);
	__asm__ volatile("" ::: "memory");   /* not a tail call */
}

static unsigned long long after_wall;

NOINLINE void after(void)
{
	unsigned long long t0 = now_ns();

	spin(20000);
	after_wall += now_ns() - t0;
}

static NOINLINE int jump_out(int jumps, int depth)
{
	volatile int done = 0;

	while (done < jumps) {
		if (!setjmp(env))
			rec(depth);
		done++;
	}
	return done;
}

static void run_longjmp(int jumps, int depth, int n)
{
	int i, done = jump_out(jumps, depth);
	unsigned long long outer = 0, t;

	/*
	 * outer: the calls as their caller sees them, probes and all, and any
	 * preemption in the function's first and last instructions, which
	 * after_wall leaves out: a tracer's figure lies between the two.
	 */
	for (i = 0; i < n; i++) {
		t = now_ns();
		after();
		outer += now_ns() - t;
	}
	printf("jumps %d calls %d\n", (int)done, n);
	fprintf(stderr, "truth after calls=%d wall_avg_ns=%.0f outer_avg_ns=%.0f\n", n, (double)after_wall / n,
		(double)outer / n);
}

/* --- recursion deeper than 64 ------------------------------------------ */

static unsigned long long deep_wall, deep_calls;
static int deep_top;

NOINLINE int deep_rec(int d, unsigned long long ns)
{
	unsigned long long t0 = now_ns();
	int r = d;

	if (d > 1)
		r += deep_rec(d - 1, ns);
	spin(ns);   /* after the callee: a frame closed by a deeper return would miss it */
	/* The outermost 64 levels: the ones fnprof can time. */
	if (deep_top - d < 64) {
		deep_wall += now_ns() - t0;
		deep_calls++;
	}
	return r;
}

static void run_deep(int n, int depth, int us)
{
	long sum = 0;
	int i;

	deep_top = depth;
	for (i = 0; i < n; i++)
		sum += deep_rec(depth, us * 1000ULL);
	printf("sum %ld\n", sum);
	fprintf(stderr, "truth deep_rec calls=%llu wall_avg_ns=%.0f\n", deep_calls, (double)deep_wall / deep_calls);
}

/* --- tail calls ---------------------------------------------------------- */

/* Each function's own measure of its wall time: the caller's ends with its callee's. */
static unsigned long long caller_wall, callee_wall;

NOINLINE int tail_callee(int x)
{
	unsigned long long t0 = now_ns();

	spin(20000);
	callee_wall += now_ns() - t0;
	return x + 1;
}

NOINLINE int tail_caller(int x)
{
	unsigned long long t0 = now_ns();

	spin(30000);
	caller_wall += now_ns() - t0;
	return tail_callee(x * 2);   /* a sibling call: gcc -O2 makes it a jmp */
}

static void run_tail(int n)
{
	long sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += tail_caller(i);
	printf("sum %ld\n", sum);
	fprintf(stderr, "truth tail_caller calls=%d wall_avg_ns=%.0f\n", n, (double)(caller_wall + callee_wall) / n);
	fprintf(stderr, "truth tail_callee calls=%d wall_avg_ns=%.0f\n", n, (double)callee_wall / n);
}

/* --- unusual exits, in assembly so that the compiler cannot rearrange them -- */

int many_rets(int k);
int cold_ret(int k);
int ind_tail(int (*f)(int), int x);
int jt(int k);

/* One block of many_rets: returns k if the argument is k. */
#define RET_IF(k) "	cmp $" #k ", %edi\n	jne 1f\n	mov %edi, %eax\n	pop %rbp\n	ret\n1:\n"
#define RET_IF10(d) RET_IF(d##0) RET_IF(d##1) RET_IF(d##2) RET_IF(d##3) RET_IF(d##4) \
		    RET_IF(d##5) RET_IF(d##6) RET_IF(d##7) RET_IF(d##8) RET_IF(d##9)

__asm__(
	".text\n"
	".globl many_rets\n.type many_rets, @function\n"
	"many_rets:\n"
	"	push %rbp\n	mov %rsp, %rbp\n"
	RET_IF10() RET_IF10(1) RET_IF10(2) RET_IF10(3) RET_IF10(4)
	RET_IF10(5) RET_IF10(6) RET_IF10(7) RET_IF10(8) RET_IF10(9)
	"	mov $-1, %eax\n	pop %rbp\n	ret\n"
	".size many_rets, .-many_rets\n"

	/* Its odd arguments return from the part gcc would split off as cold. */
	".globl cold_ret\n.type cold_ret, @function\n"
	"cold_ret:\n"
	"	push %rbp\n	mov %rsp, %rbp\n	test $1, %edi\n	jne cold_ret.cold\n"
	"	xor %eax, %eax\n	pop %rbp\n	ret\n"
	".size cold_ret, .-cold_ret\n"
	".section .text.unlikely, \"ax\", @progbits\n"
	".type cold_ret.cold, @function\n"
	"cold_ret.cold:\n"
	"	mov %edi, %eax\n	pop %rbp\n	ret\n"
	".size cold_ret.cold, .-cold_ret.cold\n"
	".text\n"

	/* f(x) through a register, with the frame already torn down. */
	".globl ind_tail\n.type ind_tail, @function\n"
	"ind_tail:\n"
	"	push %rbp\n	mov %rsp, %rbp\n	mov %rdi, %rax\n	mov %esi, %edi\n"
	"	pop %rbp\n	jmp *%rax\n"
	".size ind_tail, .-ind_tail\n"

	/* A switch through a jump table, at the entry's stack height: the jmp stays inside. */
	".globl jt\n.type jt, @function\n"
	"jt:\n"
	"	mov %edi, %edi\n	cmp $3, %edi\n	ja 5f\n	lea 9f(%rip), %rdx\n"
	"	movslq (%rdx,%rdi,4), %rax\n	add %rdx, %rax\n	jmp *%rax\n"
	"1:	mov $10, %eax\n	ret\n"
	"2:	mov $20, %eax\n	ret\n"
	"3:	mov $30, %eax\n	ret\n"
	"4:	mov $40, %eax\n	ret\n"
	"5:	mov $-1, %eax\n	ret\n"
	".size jt, .-jt\n"
	".section .rodata\n	.p2align 2\n"
	"9:	.long 1b-9b, 2b-9b, 3b-9b, 4b-9b\n"
	".text\n");

NOINLINE int plus_one(int x)
{
	return x + 1;
}

static void run_exits(int n)
{
	long sum = 0;
	int i;

	for (i = 0; i < n; i++) {
		sum += many_rets(i % 101);
		sum += cold_ret(i);
		sum += ind_tail(plus_one, i);
		sum += jt(i % 5);
	}
	printf("sum %ld\n", sum);
	fprintf(stderr, "truth exits calls=%d\n", n);
}

/* --- threads that end inside a traced call --------------------------------- */

static int busy_calls;

NOINLINE int busy(int x)
{
	return x * 3 + 1;
}

NOINLINE void stuck(void)
{
	spin(5000);
	pthread_exit(NULL);
}

static void *thread_main(void *arg)
{
	volatile int s = 0;
	int i;

	(void)arg;
	for (i = 0; i < busy_calls; i++)
		s += busy(i);
	spin(2000000);   /* untraced work: the run lasts long enough for several bursts */
	stuck();
	return NULL;
}

static void run_threads(int t, int calls)
{
	pthread_t th;
	int i;

	busy_calls = calls;
	for (i = 0; i < t; i++) {
		if (pthread_create(&th, NULL, thread_main, NULL))
			exit(1);
		pthread_join(th, NULL);
	}
	printf("threads %d\n", t);
	fprintf(stderr, "truth stuck calls=%d\n", t);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int a = argc > 2 ? atoi(argv[2]) : 0, b = argc > 3 ? atoi(argv[3]) : 0, c = argc > 4 ? atoi(argv[4]) : 0;

	if (!strcmp(mode, "longjmp"))
		run_longjmp(a, b, c);
	else if (!strcmp(mode, "deep"))
		run_deep(a, b, c);
	else if (!strcmp(mode, "tail"))
		run_tail(a);
	else if (!strcmp(mode, "exits"))
		run_exits(a);
	else if (!strcmp(mode, "threads"))
		run_threads(a, b);
	else {
		fprintf(stderr, "usage: reliab longjmp|deep|tail|exits|threads ARGS\n");
		return 2;
	}
	return 0;
}
