/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inlined functions from DWARF (.debug_info of the object or of its
 * separate debug file): which inlined calls an address lies in, so that a
 * sampled stack shows them as frames of their own, "name (inlined)", as
 * perf does.
 */
#ifndef FNPROF_INLINES_H
#define FNPROF_INLINES_H

#include <sys/types.h>
#include <linux/types.h>

struct inlines;

/*
 * The DWARF of the object open at fd (taken: closed here; -1: none), else of
 * its debug file debug_file (as symtab.debug_file names it, inside the root
 * of pid; may be NULL). Read into memory at once, so that a file truncated
 * later changes nothing. NULL when neither has any: no inlined frames for
 * that object then.
 */
struct inlines *inlines_open(int fd, const char *debug_file, pid_t pid);
void inlines_close(struct inlines *in);

/*
 * The inlined calls holding link-time address vaddr, innermost first, as
 * "name (inlined)" into names (up to max). The strings live as long as in,
 * one string per name (they compare equal as pointers). Returns how many.
 */
int inlines_at(struct inlines *in, __u64 vaddr, const char **names, int max);

#endif /* FNPROF_INLINES_H */
