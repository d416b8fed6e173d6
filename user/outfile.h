/* SPDX-License-Identifier: GPL-2.0 */
/* Output files written complete or not at all, never through a planted symlink. */
#ifndef FNPROF_OUTFILE_H
#define FNPROF_OUTFILE_H

#include <stddef.h>

/*
 * Writes data to a new temporary file beside path (O_EXCL, mode 0644), syncs
 * it and renames it over path: readers see the old file or the whole new one,
 * and a symlink at path is replaced, not followed. 0 or -errno.
 */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif /* FNPROF_OUTFILE_H */
