// SPDX-License-Identifier: GPL-2.0
/*
 * Calls a function of libtarget.so and a libc function a known number of times.
 * Usage: uselib N [loop]   (loop: print "ready", repeat until SIGTERM)
 *        uselib N exec PROG ARGS...   (then becomes PROG, in the same process)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned long lib_spin(unsigned int us);
extern unsigned long long lib_spin_wall_ns;

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	unsigned long i, n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100, calls = 0;
	int loop = argc > 2 && !strcmp(argv[2], "loop");

	signal(SIGTERM, on_stop);
	if (loop) {
		printf("ready\n");
		fflush(stdout);
	}
	do {
		for (i = 0; i < n && !stop; i++, calls++) {
			lib_spin(20);
			getppid();
		}
	} while (loop && !stop);
	printf("uselib done\n");
	fprintf(stderr, "truth lib_spin calls=%lu wall_avg_ns=%.1f\n", calls,
		calls ? (double)lib_spin_wall_ns / calls : 0.0);
	if (argc > 3 && !strcmp(argv[2], "exec")) {
		fflush(NULL);
		execv(argv[3], &argv[3]);
		perror("uselib: exec");
		return 1;
	}
	return 0;
}
