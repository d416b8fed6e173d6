// SPDX-License-Identifier: GPL-2.0
/*
 * Mutex truth: 4 threads take one mutex in take_lock, hold it ~100 us in
 * hold_work and give it back in release_lock. Each measures the time it
 * spent in pthread_mutex_lock. The library calls are made one level below
 * the named functions (lock_call, unlock_call): glibc has no frame pointers,
 * so the direct caller of a glibc function is not on frame-pointer stacks.
 * Usage: mutex SECONDS           the contention
 *        mutex cond SECONDS      a condition variable signalled every ms instead
 * Prints "ready", then "truth mutex wait_ns=W" (cond: "truth cond waits=N").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define NR_THREADS 4

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double seconds;
static volatile unsigned long sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

NOINLINE void lock_call(void)
{
	pthread_mutex_lock(&mu);
	__asm__ volatile("");
}

NOINLINE void unlock_call(void)
{
	pthread_mutex_unlock(&mu);
	__asm__ volatile("");
}

NOINLINE unsigned long long take_lock(void)
{
	unsigned long long t0 = now_ns();

	lock_call();
	return now_ns() - t0;
}

NOINLINE void hold_work(void)
{
	unsigned long long end = now_ns() + 100000;
	unsigned long x = sink;

	while (now_ns() < end)
		x = x * 6364136223846793005ULL + 1;
	sink = x;
}

NOINLINE void release_lock(void)
{
	unlock_call();
	__asm__ volatile("");
}

static unsigned long long waited[NR_THREADS];

static void *contender(void *arg)
{
	long i = (long)arg;
	unsigned long long end = now_ns() + seconds * 1e9;

	while (now_ns() < end) {
		waited[i] += take_lock();
		hold_work();
		release_lock();
	}
	return NULL;
}

static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long long ticks, seen;
static int done;

NOINLINE void cond_wait_call(void)
{
	pthread_cond_wait(&cv, &mu);
	__asm__ volatile("");
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!done) {
		cond_wait_call();
		seen++;
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

NOINLINE void signal_call(void)
{
	pthread_cond_signal(&cv);
	__asm__ volatile("");
}

static int cond_mode(void)
{
	struct timespec ms = { 0, 1000000 };
	unsigned long long end = now_ns() + seconds * 1e9;
	pthread_t t;

	pthread_create(&t, NULL, cond_waiter, NULL);
	while (now_ns() < end) {
		nanosleep(&ms, NULL);
		/*
		 * Signalled after the unlock: a waiter woken while the mutex is still
		 * held contends for it (really: lock delay), and under load the
		 * signaller is often preempted between the two.
		 */
		pthread_mutex_lock(&mu);
		ticks++;
		pthread_mutex_unlock(&mu);
		signal_call();
	}
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	printf("truth cond waits=%llu\n", seen);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t[NR_THREADS];
	unsigned long long w = 0;
	long i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (argc == 3 && !strcmp(argv[1], "cond")) {
		seconds = atof(argv[2]);
		return cond_mode();
	}
	seconds = argc > 1 ? atof(argv[1]) : 1;
	for (i = 0; i < NR_THREADS; i++)
		pthread_create(&t[i], NULL, contender, (void *)i);
	for (i = 0; i < NR_THREADS; i++) {
		pthread_join(t[i], NULL);
		w += waited[i];
	}
	printf("truth mutex wait_ns=%llu\n", w);
	return 0;
}
