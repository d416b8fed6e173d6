/* SPDX-License-Identifier: GPL-2.0 */
/* --svg: the run's pictures in one self-contained SVG file. */
#ifndef FNPROF_PICTURES_H
#define FNPROF_PICTURES_H

#include <stddef.h>
#include <sys/types.h>

#include "report/heatmap.h"
#include "profile/sample.h"

/* What the pictures are of. */
struct pictures_conf {
	struct sampler *const *samplers;  /* none, one, or a -p list's: one graph, each process under its own frame */
	size_t nr_samplers;
	struct heatmap *const *heat;      /* none, one, or a -p list's: one block each, under its process's pid */
	size_t nr_heat;
	const pid_t *pids;                /* heat[k]'s process, the run's first ([0]) */
	double span_s;                    /* the run's length */
};

/*
 * Writes path (a new file, renamed into place): the flame graph above the
 * latency heatmaps. 0 or -errno; the caller reports.
 */
int pictures_write(const char *path, const struct pictures_conf *c);

#endif /* FNPROF_PICTURES_H */
