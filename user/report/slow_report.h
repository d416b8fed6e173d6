/* SPDX-License-Identifier: GPL-2.0 */
/* --slow in the tracing report: a section after the table, or the JSON keys slow_calls and slow_calls_dropped. */
#ifndef FNPROF_SLOW_REPORT_H
#define FNPROF_SLOW_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/json.h"
#include "target/probe.h"
#include "profile/slow.h"

/*
 * Which slow calls a printer takes (NULL: all): those of process pid, or
 * with pid 0 all but those of the nr_skip processes in skip (a -p list's
 * first process, head: its calls, and its fork children's).
 */
struct slow_pick {
	pid_t pid;
	const pid_t *skip;
	size_t nr_skip;
	pid_t head;        /* the process a pid 0 group is headed with */
};

/*
 * One block per slow call, its latest SLOW_SHOWN, oldest first; then how
 * many more there were. A -p list (nr_listed > 1, listed[0] the first): the
 * blocks of each process under a line of its own, the counts for all.
 */
void slow_print_table(const struct slow_view *v, const struct probe_list *pl, const pid_t *listed, size_t nr_listed,
		      FILE *f);

/*
 * slow_threshold_ns, slow_calls (a list of objects, oldest first; those k
 * picks), slow_calls_dropped, slow_blocked_stacks_lost (for all processes:
 * the kernel counts them together).
 */
void slow_print_json(const struct slow_view *v, const struct probe_list *pl, const struct slow_pick *k,
		     struct json *j);

/* The key slow_calls alone (a -p list's other processes': k picks one pid). */
void slow_print_json_calls(const struct slow_view *v, const struct probe_list *pl, const struct slow_pick *k,
			   struct json *j);

#endif /* FNPROF_SLOW_REPORT_H */
