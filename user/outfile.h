/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output files written complete or not at all, never through a planted
 * symlink, never over a file that was there before: fnprof runs as root,
 * and replacing someone's file (its mode reset to 0644) is harm.
 */
#ifndef FNPROF_OUTFILE_H
#define FNPROF_OUTFILE_H

#include <stddef.h>

/*
 * Checks, before a run, that path does not exist (a symlink counts),
 * so that fnprof stops before tracing, not after. 0 or -EEXIST.
 */
int outfile_claim(const char *path);

/*
 * Writes data to a new temporary file beside path (O_EXCL, mode 0644), syncs
 * it and renames it to path: readers see nothing or the whole file. The
 * rename replaces only a file this run wrote there before; anything else at
 * path (a file, a symlink made since the claim) makes -EEXIST. 0 or -errno.
 */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif /* FNPROF_OUTFILE_H */
