// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/runcache.h"

void runcache_boot_id(char *buf, size_t size)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, size, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
}

#ifdef FNPROF_TEST_HOOKS
const char *runcache_dir(void)
{
	const char *d = getenv("FNPROF_TEST_RUNCACHE_DIR");

	return d && *d ? d : RUNCACHE_DIR;
}
#else
const char *runcache_dir(void)
{
	return RUNCACHE_DIR;
}
#endif

/* A file or folder of the cache that only we may have written. */
static bool ours(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & 022);
}

int runcache_open(const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", runcache_dir(), name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !ours(&st)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int runcache_write(const char *name, const void *data, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	const char *dir = runcache_dir();
	int fd, err = 0;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || !ours(&st))
		return -EPERM;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) - 16)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%.*s.%d", (int)sizeof(path) - 16, path, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
