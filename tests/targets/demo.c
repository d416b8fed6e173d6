// SPDX-License-Identifier: GPL-2.0
/*
 * The demo: a small "service" that parses records (CPU work), checksums them
 * (more CPU work, nested inside parsing), and waits for input (off-CPU).
 * Usage: demo SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

NOINLINE unsigned int checksum(const char *buf, size_t len)
{
	unsigned int h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)buf[i]) * 16777619u;
	return h;
}

NOINLINE unsigned int parse_record(char *buf, size_t len, unsigned int seed)
{
	unsigned int h = 0;
	size_t i;
	int r;

	for (r = 0; r < 20; r++) {
		for (i = 0; i < len; i++)
			buf[i] = 'a' + (seed + i * 7 + r) % 26;
		h ^= checksum(buf, len);
	}
	return h;
}

NOINLINE void wait_for_input(unsigned int us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	struct timespec t0, t;
	unsigned int h = 0, n = 0;
	char buf[4096];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		h ^= parse_record(buf, 256 + n % 2048, n);
		if (n % 4 == 0)
			wait_for_input(2000);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("demo: %u records, digest %08x\n", n, h);
	return 0;
}
