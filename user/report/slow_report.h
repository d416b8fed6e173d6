/* SPDX-License-Identifier: GPL-2.0 */
/* --slow in the tracing report: a section after the table, or the JSON keys slow_calls and slow_calls_dropped. */
#ifndef FNPROF_SLOW_REPORT_H
#define FNPROF_SLOW_REPORT_H

#include <stdio.h>

#include "base/json.h"
#include "target/probe.h"
#include "profile/slow.h"

/* One block per slow call, its latest SLOW_SHOWN, oldest first; then how many more there were. */
void slow_print_table(const struct slow_view *v, const struct probe_list *pl, FILE *f);

/* slow_threshold_ns, slow_calls (a list of objects, oldest first), slow_calls_dropped, slow_blocked_stacks_lost. */
void slow_print_json(const struct slow_view *v, const struct probe_list *pl, struct json *j);

#endif /* FNPROF_SLOW_REPORT_H */
