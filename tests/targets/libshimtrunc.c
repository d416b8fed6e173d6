// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for fnprof in tests/test_input.py: a file whose path holds
 * "fnprof-truncate" is cut to 64 bytes as soon as fnprof maps it, or after its
 * second read of it: a target truncating an object while fnprof parses it,
 * made deterministic.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int is_victim(int fd)
{
	char link[64], path[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, "fnprof-truncate") != NULL;
}

static void cut(int fd)
{
	char link[64];
	int w;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	w = open(link, O_WRONLY);
	if (w >= 0) {
		if (ftruncate(w, 64))
			perror("shim: ftruncate");
		close(w);
	}
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *(*real)(void *, size_t, int, int, int, off_t) =
		(void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	void *p = real(addr, len, prot, flags, fd, off);

	if (fd >= 0 && p != MAP_FAILED && is_victim(fd))
		cut(fd);
	return p;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t (*real)(int, void *, size_t, off_t) = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
	static int reads;
	ssize_t r = real(fd, buf, n, off);

	if (is_victim(fd) && ++reads == 2)
		cut(fd);
	return r;
}
