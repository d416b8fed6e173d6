/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output files (-o, --pprof, --folded, --svg and the other profiles'
 * pprof files), created new, before the run, and written complete or not at
 * all. fnprof runs as root: never over a file that was there before (its
 * mode reset to 0644), never through a symlink another user planted (a link
 * in their directory that points into a root-only one).
 *
 * Paths are resolved one component at a time, the kernel following no link:
 * a symbolic link root owns is followed (/var/run -> /run); a link of
 * another user (the invoking user under sudo too: sudoers may restrict the
 * paths it names) only into a directory that user may write anyway (theirs,
 * /tmp). Anything else is refused with -ENOLINK.
 */
#ifndef FNPROF_OUTFILE_H
#define FNPROF_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether path means standard output: "-", "/dev/stdout". */
bool outfile_is_stdout(const char *path);

/*
 * Creates path new for writing (a report written as the run goes: -o);
 * standard output for "-" and "/dev/stdout". Returns an fd the caller
 * closes, or -errno: -EEXIST when path exists (a symlink counts), -ENOLINK
 * when a link on the way may not be followed (outfile_strerror says which).
 */
int outfile_create(const char *path);

/*
 * Claims path before the run: creates it new and empty (so a directory that
 * is missing or not writable shows before tracing, not after), to be
 * replaced by write_file_atomic. 0 or -errno as outfile_create.
 */
int outfile_claim(const char *path);

/*
 * Writes data to a new temporary file beside path (mode 0644), syncs it and
 * renames it to path: readers see nothing or the whole file. The rename
 * replaces only the file this run claimed or wrote there; anything else at
 * path makes -EEXIST. 0 or -errno.
 */
int write_file_atomic(const char *path, const void *data, size_t len);

/* Removes the claimed files never written (a run that failed or stopped early): no empty file left. */
void outfile_drop_unwritten(void);

/* What err (from the functions above) means for path, for a message: names a refused link. */
const char *outfile_strerror(int err);

#endif /* FNPROF_OUTFILE_H */
