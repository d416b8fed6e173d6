/* SPDX-License-Identifier: GPL-2.0 */
/* System-wide uprobe sessions: which processes took which exit (trace/sysexit.h), as the reports show it. */
#ifndef FNPROF_SYSEXITS_H
#define FNPROF_SYSEXITS_H

#include <stddef.h>
#include <stdio.h>

#include "base/json.h"
#include "trace/sysexit.h"

/*
 * Two lines to f: the processes that took the session's return (a
 * uretprobe, no step) and those that kept ret probes, with why; nothing
 * when n is 0.
 */
void sysexits_print_table(const struct sysexit_proc *procs, size_t n, FILE *f);

/* "exits_per_process": [{"pid", "comm", "exit": "uretprobe"|"ret", "why"}], nothing when n is 0. */
void sysexits_print_json(const struct sysexit_proc *procs, size_t n, struct json *j);

#endif /* FNPROF_SYSEXITS_H */
