// SPDX-License-Identifier: GPL-2.0
/*
 * Maps the ELF file argv[1] executable N times (argv[2]), each copy whole and
 * apart from the next (a gap of address space between them), as a process
 * that dlopens or JITs many objects does: every copy is an object of its own
 * to an unwinder. With a directory for argv[1], its files 00000, 00001, ...
 * instead, one mapping each (hardlinks of one library: one file by many
 * names; copies: as many files). Then burns CPU in spin() until SIGTERM, so
 * that a sampler has stacks to unwind. Prints "ready N" once mapped.
 */
#include <fcntl.h>
#include <stdbool.h>
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

/* The file fd whole, executable, at addr. */
static bool map_at(char *addr, int fd)
{
	struct stat st;

	return !fstat(fd, &st) && (size_t)st.st_size <= STRIDE &&
	       mmap(addr, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) != MAP_FAILED;
}

/* n copies of the file at path, or of the files path/00000..., executable, STRIDE apart. How many were mapped. */
static long map_copies(const char *path, long n)
{
	char *area = mmap(NULL, n * STRIDE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char name[4096];
	struct stat st;
	long i;
	int fd = -1;
	bool dir = !stat(path, &st) && S_ISDIR(st.st_mode);

	for (i = 0; area != MAP_FAILED && i < n; i++) {
		if (dir || fd < 0) {
			snprintf(name, sizeof(name), dir ? "%s/%05ld" : "%s", path, i);
			fd = open(name, O_RDONLY);
		}
		if (fd < 0 || !map_at(area + i * STRIDE, fd))
			break;
		if (dir)
			close(fd);
	}
	if (!dir && fd >= 0)
		close(fd);
	return i;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0, mapped;
	unsigned long sum = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: manymaps FILE.so|DIR N\n");
		return 1;
	}
	mapped = map_copies(argv[1], n);
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
