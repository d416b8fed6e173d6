/* SPDX-License-Identifier: GPL-2.0 */
/* --svg: the run's pictures in one self-contained SVG file. */
#ifndef FNPROF_PICTURES_H
#define FNPROF_PICTURES_H

#include <stddef.h>
#include <sys/types.h>

#include "report/heatmap.h"
#include "profile/sample.h"

/*
 * Writes path (a new file, renamed into place): the flame graph of the
 * samples of nr_s samplers (none, one, or a -p list's: one graph, each
 * process under its own frame), above the latency heatmaps of hm (may be
 * NULL). pid and span_s name the run. 0 or -errno; the caller reports.
 */
int pictures_write(const char *path, struct sampler *const *s, size_t nr_s, struct heatmap *hm, pid_t pid,
		   double span_s);

#endif /* FNPROF_PICTURES_H */
