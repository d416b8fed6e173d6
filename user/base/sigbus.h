/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Surviving a file that shrinks under a library's mapping. libdwfl maps
 * the target's objects (elf_begin with ELF_C_READ_MMAP_PRIVATE, no option
 * to read them instead); a target that truncates one makes the next read
 * of a page beyond the new end a SIGBUS. Inside a guarded region such a
 * fault maps a page of zeros there instead, counts, and the code goes on;
 * the caller then throws away what it read and says so. Outside one, a
 * SIGBUS kills fnprof as it always would (a bug of fnprof's own).
 */
#ifndef FNPROF_SIGBUS_H
#define FNPROF_SIGBUS_H

#include <stdbool.h>

/* Installs the handler (once, for the process). 0 or -errno. */
int sigbus_guard_init(void);

/* Opens a guarded region on the calling thread (they nest); returns a mark for sigbus_guard_end. */
unsigned long sigbus_guard_begin(void);

/* Closes the region opened with mark: true when a mapped file shrank under a read since. */
bool sigbus_guard_end(unsigned long mark);

#endif /* FNPROF_SIGBUS_H */
