// SPDX-License-Identifier: GPL-2.0
/*
 * Maps the file argv[1] at a fixed address below the executable (the first
 * line of /proc/PID/maps), then calls tick() every millisecond until SIGTERM.
 * A mapped file with the executable's inode number on another file system
 * must not be taken for the executable.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	stop = sig;
}

__attribute__((noinline)) unsigned long tick(unsigned long x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

int main(int argc, char **argv)
{
	unsigned long n = 0, sum = 0;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0 || mmap((void *)0x10000000, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0) == MAP_FAILED) {
		perror("mapfile");
		return 1;
	}
	signal(SIGTERM, on_stop);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		sum += tick(n++);
		usleep(1000);
	}
	printf("stopped %lu %lu\n", n, sum);
	return 0;
}
