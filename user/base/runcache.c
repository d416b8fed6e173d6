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
#include "base/version.h"

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

/* The key of what into key[RUNCACHE_KEY_LEN], NUL-padded: false if this boot's id is not known. */
static bool make_key(char *key, const char *what)
{
	char boot[64];

	memset(key, 0, RUNCACHE_KEY_LEN);
	runcache_boot_id(boot, sizeof(boot));
	if (!boot[0])
		return false;
	snprintf(key, RUNCACHE_KEY_LEN, "%s %s %s", boot, FNPROF_VERSION, what);
	return true;
}

bool runcache_read_keyed(const char *name, const char *what, void *data, size_t len)
{
	char want[RUNCACHE_KEY_LEN];
	char *buf = malloc(RUNCACHE_KEY_LEN + len + 1);
	int fd = buf && make_key(want, what) ? runcache_open(name) : -ENOENT;
	bool ok = false;

	if (fd >= 0) {
		/* One byte more than wanted: a longer file is another layout. */
		ok = read(fd, buf, RUNCACHE_KEY_LEN + len + 1) == (ssize_t)(RUNCACHE_KEY_LEN + len) &&
		     !memcmp(buf, want, RUNCACHE_KEY_LEN);
		close(fd);
	}
	if (ok)
		memcpy(data, buf + RUNCACHE_KEY_LEN, len);
	free(buf);
	return ok;
}

int runcache_write_keyed(const char *name, const char *what, const void *data, size_t len)
{
	char *buf = malloc(RUNCACHE_KEY_LEN + len);
	int err = buf ? 0 : -ENOMEM;

	if (!err && !make_key(buf, what))
		err = -ENOENT;
	if (!err) {
		memcpy(buf + RUNCACHE_KEY_LEN, data, len);
		err = runcache_write(name, buf, RUNCACHE_KEY_LEN + len);
	}
	free(buf);
	return err;
}
