// SPDX-License-Identifier: GPL-2.0
/*
 * Maps the ELF file argv[1] executable N times (argv[2]), each copy whole and
 * apart from the next (a gap of address space between them), as a process
 * that dlopens or JITs many objects does: every copy is an object of its own
 * to an unwinder. Then burns CPU in spin() until SIGTERM, so that a sampler
 * has stacks to unwind. Prints "ready N" once mapped.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STRIDE (1UL << 20)   /* more than the object spans: no copy's range overlaps the next */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	stop = sig;
}

__attribute__((noinline)) unsigned long spin(unsigned long x)
{
	int i;

	for (i = 0; i < 100000; i++)
		__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

/* n copies of the file fd (len bytes) executable, STRIDE apart. How many were mapped. */
static long map_copies(int fd, size_t len, long n)
{
	char *area = mmap(NULL, n * STRIDE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	long i;

	if (area == MAP_FAILED || len > STRIDE)
		return 0;
	for (i = 0; i < n; i++)
		if (mmap(area + i * STRIDE, len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
			break;
	return i;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0, mapped;
	unsigned long sum = 0;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || n <= 0) {
		fprintf(stderr, "usage: manymaps FILE.so N\n");
		return 1;
	}
	mapped = map_copies(fd, st.st_size, n);
	close(fd);
	if (mapped != n) {
		perror("manymaps: mmap");
		return 1;
	}
	signal(SIGTERM, on_stop);
	printf("ready %ld\n", mapped);
	fflush(stdout);
	while (!stop)
		sum += spin(sum);
	printf("stopped %lu\n", sum);
	return 0;
}
