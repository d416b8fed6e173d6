// SPDX-License-Identifier: GPL-2.0
/*
 * A service-like target for the --listen tests: N calls of fleet_call(US),
 * which sleeps US microseconds, timed by the target itself; then the ground
 * truth on stderr, and (with "linger") it waits for SIGTERM, so that a
 * scraper sees the last figures before the process goes away:
 *   truth fleet_call calls=N p50_ns=X wall_avg_ns=Y
 *
 * With "gate" it waits for a line on stdin before the calls (so that a probe
 * attached with -p sees every one).
 *
 * Built twice: tests/bin/fleet2 (FLEET_PAD) has fleet_call at another offset,
 * an "upgrade" of tests/bin/fleet.
 *
 * Usage: fleet N US [linger] [gate]
 */
#define _GNU_SOURCE
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

#ifdef FLEET_PAD
/* The "upgraded" build (tests/bin/fleet2): code before fleet_call moves it to another offset. */
NOINLINE unsigned long long fleet_pad(unsigned long long x)
{
	for (int i = 0; i < 64; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL + (x >> 7);
	return x;
}
#endif

/* The traced function: its own wall time is the truth. */
NOINLINE unsigned long long fleet_call(unsigned int us)
{
	unsigned long long t0 = now_ns();
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L };

	nanosleep(&ts, NULL);
	return now_ns() - t0;
}

static int cmp(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static int has_flag(int argc, char **argv, const char *flag)
{
	int i;

	for (i = 3; i < argc; i++)
		if (!strcmp(argv[i], flag))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	char line[64];
	unsigned long n, i;
	unsigned int us;
	unsigned long long *w, sum = 0;
	sigset_t set;
	int sig;

	if (argc < 3)
		return 2;
	n = strtoul(argv[1], NULL, 10);
	us = strtoul(argv[2], NULL, 10);
	w = calloc(n ? n : 1, sizeof(*w));
	if (!w)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	if (has_flag(argc, argv, "gate") && !fgets(line, sizeof(line), stdin))
		return 1;
	for (i = 0; i < n; i++) {
		w[i] = fleet_call(us);
		sum += w[i];
	}
	qsort(w, n, sizeof(*w), cmp);
	fprintf(stderr, "truth fleet_call calls=%lu p50_ns=%llu wall_avg_ns=%llu\n", n, n ? w[(n - 1) / 2] : 0,
		n ? sum / n : 0);
	printf("done\n");
	fflush(stdout);
	if (has_flag(argc, argv, "linger"))
		sigwait(&set, &sig);
	free(w);
	return 0;
}
