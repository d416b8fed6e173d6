/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names of JIT code from the perf map its runtime writes: /tmp/perf-PID.map
 * (Node's --perf-basic-prof, Java's perf-map-agent or DumpPerfMapAtExit,
 * Python 3.12's -X perf), one line per piece of code, "START SIZE name" with
 * START and SIZE in hex. PID is the process's pid in its own pid namespace
 * and /tmp its own, under /proc/PID/root. The file is the target's: read only
 * if it is a regular file owned by the target's user, never through a link
 * out of its root, at most PERFMAP_MAX_BYTES, lines of at most
 * PERFMAP_MAX_LINE bytes (longer or malformed ones are skipped), at most
 * PERFMAP_MAX_SYMS of them. Where lines overlap, the later one wins (code
 * moved or compiled again): the earlier one ends where the later starts.
 *
 * A file is read once however many processes name it (hard links of one
 * file: one device and inode), into a struct perfmaps that they share, and
 * held under its budget (BUDGET_PERFMAPS: the text read, names pointing
 * into it, and the table of ranges). A file that does not fit makes room by
 * evicting files no lookup used for PERFMAP_IDLE_S (read again when needed
 * and there is room), else it is not read (said once per process); both
 * counted in the budget.
 */
#ifndef FNPROF_PERFMAP_H
#define FNPROF_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#define PERFMAP_MAX_MIB 64
#define PERFMAP_MAX_BYTES (PERFMAP_MAX_MIB * 1048576u)
#define PERFMAP_MAX_LINE 4096
#define PERFMAP_MAX_SYMS (1u << 20)
#define PERFMAP_RECHECK_MS 200  /* a lookup that finds nothing looks at the file again at most this often */
#define PERFMAP_IDLE_S 10.0     /* a file no lookup used for this long may be evicted for another */

struct budget;
struct perfmap;
struct perfmaps;

/* The files read, shared by the perf maps made with it, held under budget b (which outlives it). */
struct perfmaps *perfmaps_new(struct budget *b);
/* After every perfmap made with it is freed. Safe with NULL. */
void perfmaps_free(struct perfmaps *c);
/* How many files it holds now. */
size_t perfmaps_nr(const struct perfmaps *c);

/*
 * The perf map of process pid (as fnprof sees it), its file shared in c
 * (which outlives it); nothing is read yet. NULL when out of memory.
 */
struct perfmap *perfmap_new(pid_t pid, struct perfmaps *c);
void perfmap_free(struct perfmap *pm);

/*
 * Reads what is new in the file: the lines appended since the last read, or
 * all of it when it was replaced or rewritten. Without force, only if the
 * last look is PERFMAP_RECHECK_MS old. What was read stays when the file is
 * gone (the process exited) or refused (said once, with why).
 */
void perfmap_refresh(struct perfmap *pm, bool force);

/*
 * The name of the code at addr, or NULL; when none, looks at the file again
 * first (perfmap_refresh(pm, false)). The string lives until the next refresh.
 */
const char *perfmap_lookup(struct perfmap *pm, __u64 addr);

/* How many pieces of code are named now. */
size_t perfmap_nr(const struct perfmap *pm);

/*
 * Adds the complete lines of buf[0..len) to the names, as if appended to the
 * file: for the unit test (a perfmap of pid 0, whose text is its own, under
 * the budget). Returns the bytes used (up to the last newline); 0 when
 * over the budget or out of memory.
 */
size_t perfmap_add_text(struct perfmap *pm, const char *buf, size_t len);

#endif /* FNPROF_PERFMAP_H */
