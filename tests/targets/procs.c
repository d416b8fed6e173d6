// SPDX-License-Identifier: GPL-2.0
/*
 * Many processes for -a (whole-machine sampling): BUSY children that spin in
 * procs_spin() all the time, LIGHT children that spin 200 us every 100 ms in
 * procs_tick(), IDLE children that sleep. Each sets its own name (comm):
 * "pbusyK", "plightK", "pidleK". The parent prints one line per child, then
 * "ready", and after SECONDS (or at SIGTERM) ends them and prints each one's
 * CPU time, from the kernel's accounting (wait4's rusage):
 *   child pid=P comm=C kind=busy|light|idle
 *   truth pid=P comm=C cpu_ns=N
 *
 * Usage: procs BUSY LIGHT IDLE SECONDS
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))  /* noipa: not dropped as a pure call whose result goes nowhere */

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE unsigned long long procs_spin(unsigned long long x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL + (x >> 11);
	return x;
}

NOINLINE unsigned long long procs_tick(unsigned long long x)
{
	double end = now_s() + 200e-6;

	while (now_s() < end)
		x = x * 6364136223846793005ULL + 1 + (x >> 11);
	return x;
}

static void child(const char *kind, int k)
{
	char name[16];
	unsigned long long x = k;
	struct timespec tick = { 0, 100000000L };

	snprintf(name, sizeof(name), "p%s%d", kind, k);
	prctl(PR_SET_NAME, name);
	for (;;) {
		if (kind[0] == 'b') {
			x = procs_spin(x);
		} else if (kind[0] == 'l') {
			x = procs_tick(x);
			nanosleep(&tick, NULL);
		} else {
			pause();
		}
	}
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "busy", "light", "idle" };
	pid_t pids[4096];
	char comm[4096][16];
	int n = 0, i, k, count[3];
	struct rusage ru;
	double end;

	if (argc != 5) {
		fprintf(stderr, "usage: procs BUSY LIGHT IDLE SECONDS\n");
		return 2;
	}
	for (k = 0; k < 3; k++)
		count[k] = atoi(argv[1 + k]);
	if (count[0] + count[1] + count[2] > 4096)
		return 2;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	for (k = 0; k < 3; k++) {
		for (i = 0; i < count[k]; i++, n++) {
			pids[n] = fork();
			if (!pids[n]) {
				signal(SIGTERM, SIG_DFL);
				child(kinds[k], i);
			}
			snprintf(comm[n], sizeof(comm[n]), "p%s%d", kinds[k], i);
			printf("child pid=%d comm=%s kind=%s\n", pids[n], comm[n], kinds[k]);
		}
	}
	printf("ready\n");
	fflush(stdout);
	end = now_s() + atof(argv[4]);
	while (!stop && now_s() < end)
		usleep(20000);
	for (i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < n; i++) {
		if (wait4(pids[i], NULL, 0, &ru) != pids[i])
			continue;
		printf("truth pid=%d comm=%s cpu_ns=%llu\n", pids[i], comm[i],
		       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
			       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL);
	}
	return 0;
}
