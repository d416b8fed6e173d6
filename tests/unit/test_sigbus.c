// SPDX-License-Identifier: GPL-2.0
/* The SIGBUS guard on a real mapping of a real file that is truncated under it. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "base/sigbus.h"
#include "unit.h"

#define LEN (4 * 4096)

/* A file of LEN bytes of 0xab, mapped, then cut to 64 bytes: *map is its mapping. */
static int mapped_then_truncated(const unsigned char **map)
{
	char path[] = "/tmp/fnprof-sigbus-XXXXXX";
	unsigned char buf[LEN];
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	memset(buf, 0xab, sizeof(buf));
	if (write(fd, buf, sizeof(buf)) != sizeof(buf))
		return -1;
	*map = mmap(NULL, LEN, PROT_READ, MAP_PRIVATE, fd, 0);
	if (*map == MAP_FAILED || ftruncate(fd, 64))
		return -1;
	return fd;
}

/* A read past the new end, guarded: zeros and a fault counted, not a dead process. */
static void truncated_read_guarded(void)
{
	const unsigned char *map;
	int fd = mapped_then_truncated(&map);
	unsigned long mark;
	unsigned char first, far;

	CHECK(fd >= 0);
	CHECK(sigbus_guard_init() == 0);
	mark = sigbus_guard_begin();
	first = map[0];
	far = map[3 * 4096 + 7];
	CHECK(sigbus_guard_end(mark));
	CHECK(first == 0xab && far == 0);
	/* A region without a fault says none. */
	mark = sigbus_guard_begin();
	far = map[3 * 4096 + 8];
	CHECK(!sigbus_guard_end(mark) && far == 0);
	munmap((void *)map, LEN);
	close(fd);
}

/* Outside a guarded region, SIGBUS still kills (in a child): fnprof's own bugs are not hidden. */
static void unguarded_read_still_kills(void)
{
	const unsigned char *map;
	int fd = mapped_then_truncated(&map), status = 0;
	pid_t child;

	CHECK(fd >= 0 && sigbus_guard_init() == 0);
	child = fork();
	if (child == 0)
		_exit(map[2 * 4096]);
	CHECK(child > 0 && waitpid(child, &status, 0) == child);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	munmap((void *)map, LEN);
	close(fd);
}

int main(void)
{
	RUN(truncated_read_guarded);
	RUN(unguarded_read_still_kills);
	UNIT_EXIT();
}
