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

#include "array.h"
#include "outfile.h"

/* The paths this run has written: only those may be replaced (an interval's file by the next). */
static struct {
	char **paths;
	size_t nr, cap;
} written;

static bool was_written(const char *path)
{
	size_t i;

	for (i = 0; i < written.nr; i++)
		if (!strcmp(written.paths[i], path))
			return true;
	return false;
}

static void note_written(const char *path)
{
	if (was_written(path) || ARRAY_RESERVE(written.paths, written.nr + 1, written.cap))
		return;
	written.paths[written.nr] = strdup(path);
	written.nr += written.paths[written.nr] != NULL;
}

int outfile_claim(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? -EEXIST : 0;
}

/* tmp to path: over path only when this run wrote it; else never over anything. */
static int put_in_place(const char *tmp, const char *path)
{
	if (was_written(path))
		return rename(tmp, path) ? -errno : 0;
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE))
		return -errno;
	note_written(path);
	return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX];
	const char *p = data;
	int fd, err = 0;
	ssize_t n;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);  /* O_CREAT | O_EXCL: a name nobody else had */
	if (fd < 0)
		return -errno;
	while (len && !err) {
		n = write(fd, p, len);
		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n > 0)
			p += n, len -= n;
	}
	if (!err && (fchmod(fd, 0644) || fsync(fd)))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err)
		err = put_in_place(tmp, path);
	if (err)
		unlink(tmp);
	return err;
}
