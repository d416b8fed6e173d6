/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Separate debug files of a stripped object, found where the debuggers look:
 * /usr/lib/debug/.build-id/xx/rest.debug (build-id checked), then the
 * .gnu_debuglink name (CRC checked) beside the object, in its .debug/ and
 * under /usr/lib/debug/<dir>/, all inside the target's root; then debuginfod
 * by build-id when DEBUGINFOD_URLS is set.
 */
#ifndef FNPROF_DEBUGINFO_H
#define FNPROF_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <libelf.h>

/* The module's settings, from the command line (the default: debuginfod where DEBUGINFOD_URLS is set). */
struct debuginfo_conf {
	bool no_debuginfod;   /* --no-debuginfod */
};

void debuginfo_configure(const struct debuginfo_conf *c);

/*
 * Opens the separate debug file of the object elf, whose path as the target
 * sees it is path, looked up inside the root of process pid (0: fnprof's own
 * root). found (size bytes) receives where it was found, for messages: the
 * path inside that root, or "debuginfod:<cache file>". Returns an fd
 * (the caller closes it), or -ENOENT when there is none.
 */
int debuginfo_open(Elf *elf, const char *path, pid_t pid, char *found, size_t size);

/* Opens again a debug file that debuginfo_open found (its "found" string). An fd or -errno. */
int debuginfo_reopen(const char *found, pid_t pid);

/* The object's GNU build-id as hex into buf (2 * 20 + 1 bytes suffice for SHA-1). false if none. */
bool debuginfo_build_id(Elf *elf, char *buf, size_t size);

#endif /* FNPROF_DEBUGINFO_H */
