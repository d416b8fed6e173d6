// SPDX-License-Identifier: GPL-2.0
/*
 * A tiny JIT: copies a spin loop into anonymous executable memory and runs it
 * for SECONDS, as a JIT compiler's code runs. With "write" it names its code
 * in /tmp/perf-PID.map as runtimes do (a stale name first, then the real one
 * for the same range: the later line must win); with "nowrite" the test
 * writes (or plants) the map itself; with "memfd" the code is in a memfd
 * mapped executable (as JITs that map their code twice do), named as with "write";
 * with "unmap", as "write", then the code is unmapped and the process lingers
 * 0.6 s before it exits (as V8 tears its code space down at exit, 5 ms there).
 * With "sled" (the map the test's, as nowrite) the code is 1 MiB of nops run
 * through, so that samples land on ever new addresses (ever new stacks).
 * With "frames" (named as with "write") main calls JIT code that keeps a
 * frame pointer (as Node's, HotSpot's with PreserveFramePointer): it spins,
 * then calls a trampoline as Python 3.12's -X perf makes them (no frame
 * pointer, no CFI), which calls back into C (c_spin): a walk from c_spin
 * goes from code with CFI through both kinds without, back to main's CFI.
 *
 * Usage: jit SECONDS write|nowrite|memfd|unmap|sled|frames
 * Prints "ready pid=PID code=ADDR size=SIZE" (its own pid: in a pid namespace,
 * the namespace's), then "truth jit loops=N" at the end.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CODE_SIZE 64

/* mov %rdi,%rax; 1: dec %rax; jnz 1b; ret; then int3 up to CODE_SIZE. */
static const unsigned char spin_code[] = { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3 };
/* jitfn_frame(n, tramp, fn): push %rbp; mov %rsp,%rbp; mov %rdi,%rax; 1: dec %rax; jnz 1b; call *%rsi; pop %rbp; ret */
static const unsigned char frame_code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48, 0xff,
					    0xc8, 0x75, 0xfb, 0xff, 0xd6, 0x5d, 0xc3 };
/* jitfn_tramp(n, tramp, fn), at TRAMP_OFF: sub $8,%rsp; call *%rdx; add $8,%rsp; ret (Python 3.12's, with %rdx) */
static const unsigned char tramp_code[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd2, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
#define TRAMP_OFF 32

/* Called from the JIT code: a frame with CFI above one without. A quarter of n: about the JIT loop's time. */
static __attribute__((noinline)) void c_spin(unsigned long n)
{
	volatile unsigned long i;

	for (i = 0; i < n / 4; i++)
		;
}

static int write_map(void *code, bool frames)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%lx %x stale_name\n", (unsigned long)code, CODE_SIZE);
	if (frames) {
		fprintf(f, "%lx %x jitfn_frame [compiled]\n", (unsigned long)code, TRAMP_OFF);
		fprintf(f, "%lx %x jitfn_tramp [compiled]\n", (unsigned long)code + TRAMP_OFF, CODE_SIZE - TRAMP_OFF);
	} else {
		fprintf(f, "%lx %x jitfn_spin [compiled]\n", (unsigned long)code, CODE_SIZE);
	}
	return fclose(f);
}

/* Executable code: an anonymous mapping, or a memfd's (with memfd), holding the spin loop (frames: frame_code). */
static unsigned char *map_code(int memfd, bool frames)
{
	unsigned char page[4096], *code;
	int fd = -1;

	memset(page, 0xcc, sizeof(page));
	if (frames) {
		memcpy(page, frame_code, sizeof(frame_code));
		memcpy(page + TRAMP_OFF, tramp_code, sizeof(tramp_code));
	} else
		memcpy(page, spin_code, sizeof(spin_code));
	if (memfd) {
		fd = memfd_create("jit", MFD_CLOEXEC);
		if (fd < 0 || write(fd, page, sizeof(page)) != sizeof(page))
			return NULL;
		code = mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
		close(fd);
		return code == MAP_FAILED ? NULL : code;
	}
	code = mmap(NULL, sizeof(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return NULL;
	memcpy(code, page, sizeof(page));
	return mprotect(code, sizeof(page), PROT_READ | PROT_EXEC) ? NULL : code;
}

#define SLED_SIZE (1 << 20)

/* 1 MiB of nops, then: dec %rdi; jnz <start>; ret. */
static unsigned char *map_sled(void)
{
	unsigned char *code = mmap(NULL, SLED_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static const unsigned char tail[] = { 0x48, 0xff, 0xcf, 0x0f, 0x85, 0, 0, 0, 0, 0xc3 };
	int rel = -(SLED_SIZE - 16 + 9);

	if (code == MAP_FAILED)
		return NULL;
	memset(code, 0x90, SLED_SIZE);
	memcpy(code + SLED_SIZE - 16, tail, sizeof(tail));
	memcpy(code + SLED_SIZE - 16 + 5, &rel, sizeof(rel));
	return mprotect(code, SLED_SIZE, PROT_READ | PROT_EXEC) ? NULL : code;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long loops = 0;
	unsigned char *code;
	bool sled, frames;
	double end;
	void (*spin)(unsigned long, void *, void (*)(unsigned long));

	if (argc != 3 || (strcmp(argv[2], "write") && strcmp(argv[2], "nowrite") && strcmp(argv[2], "memfd") &&
			  strcmp(argv[2], "unmap") && strcmp(argv[2], "sled") && strcmp(argv[2], "frames"))) {
		fprintf(stderr, "usage: jit SECONDS write|nowrite|memfd|unmap|sled|frames\n");
		return 2;
	}
	sled = !strcmp(argv[2], "sled");
	frames = !strcmp(argv[2], "frames");
	code = sled ? map_sled() : map_code(!strcmp(argv[2], "memfd"), frames);
	if (!code || (strcmp(argv[2], "nowrite") && !sled && write_map(code, frames))) {
		perror("jit");
		return 1;
	}
	/* The spin loops ignore all but their first argument: only frame_code calls on. */
	spin = (void (*)(unsigned long, void *, void (*)(unsigned long)))(void *)code;
	printf("ready pid=%d code=%lx size=%d\n", getpid(), (unsigned long)code, sled ? SLED_SIZE : CODE_SIZE);
	fflush(stdout);
	end = now_s() + atof(argv[1]);
	while (now_s() < end) {
		spin(sled ? 1 : 1000000, code + TRAMP_OFF, c_spin);
		loops++;
	}
	printf("truth jit loops=%lu\n", loops);
	if (!strcmp(argv[2], "unmap")) {
		struct timespec linger = { 0, 600000000 };

		fflush(stdout);
		munmap(code, 4096);
		nanosleep(&linger, NULL);
	}
	return 0;
}
