/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening files whose path a target or a user chose (mapped objects,
 * /proc/PID/root paths, -f objects): only a regular file is ever opened for
 * reading, so that root never runs a device's open (a watchdog, a tty that
 * would become fnprof's controlling terminal) nor waits on a FIFO.
 */
#ifndef FNPROF_SAFEOPEN_H
#define FNPROF_SAFEOPEN_H

#include <linux/types.h>

/*
 * Opens path, relative to dirfd (AT_FDCWD, or a directory fd), for reading.
 * The path is first opened with O_PATH, which opens nothing behind it; only
 * if fstat says it is a regular file is that very inode reopened (through
 * /proc/self/fd/N) with O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK.
 * resolve: openat2's RESOLVE_* flags for the first step (RESOLVE_IN_ROOT to
 * stay inside a target's root), 0 for a plain openat.
 * Returns an fd the caller closes, or -errno: -ENODEV if the path names
 * anything but a regular file (FIFO, device, directory, socket).
 */
int open_regular(int dirfd, const char *path, __u64 resolve);

#endif /* FNPROF_SAFEOPEN_H */
