// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

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
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
