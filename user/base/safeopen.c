// SPDX-License-Identifier: GPL-2.0
/* Regular files only: O_PATH, fstat, then a reopen of the inode that was checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "base/safeopen.h"

/* An O_PATH fd: no open() of the file itself runs, so no device driver, no FIFO wait. */
static int open_path_only(int dirfd, const char *path, __u64 resolve)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = resolve };
	int fd;

	if (resolve)
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	else
		fd = openat(dirfd, path, O_PATH | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int open_regular(int dirfd, const char *path, __u64 resolve)
{
	char self[64];
	struct stat st;
	int pfd, fd;

	pfd = open_path_only(dirfd, path, resolve);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st) || !S_ISREG(st.st_mode)) {
		close(pfd);
		return -ENODEV;
	}
	/* The checked inode itself: the path may name another file by now. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	fd = fd < 0 ? -errno : fd;
	close(pfd);
	return fd;
}
