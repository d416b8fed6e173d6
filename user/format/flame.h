/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Flame graphs: sampled stacks merged into a tree of frames (root first),
 * drawn into an SVG document with widths proportional to samples. Frames
 * with a share below FLAME_MIN_SHARE, and all but the FLAME_MAX_FRAMES
 * widest, are merged into one box per parent that says how many it holds.
 */
#ifndef FNPROF_FLAME_H
#define FNPROF_FLAME_H

#include <linux/types.h>

#include "format/svg.h"

#define FLAME_MAX_FRAMES 4000
#define FLAME_MIN_SHARE 0.0005     /* 0.05% of the samples: 0.6 px of the drawing */

/* What a frame's code is, for its colour. */
enum flame_kind {
	FLAME_USER,      /* the program's own executable */
	FLAME_LIB,       /* a shared object (the vDSO too) */
	FLAME_KERNEL,
	FLAME_UNKNOWN,   /* no mapping, or the stack was lost */
	FLAME_ROOT,      /* the process, or a thread with --per-thread */
};

struct flame_frame {
	const char *name;
	const char *object;   /* path, "[kernel.kallsyms]", ... */
	enum flame_kind kind;
};

struct flame;

/* An empty graph whose root frame is named root (e.g. "demo (pid 42)"). NULL: no memory. */
struct flame *flame_new(const char *root);
void flame_free(struct flame *fl);

/* One stack seen count times: n frames, root first (below the graph's root). 0 or -ENOMEM. */
int flame_add(struct flame *fl, const struct flame_frame *fr, int n, __u64 count);

/*
 * Draws the graph at doc->height (heading, controls, frames, the details
 * and search lines) and adds its height. heading: the picture's first line.
 * Every frame is a <g class="fr" data-n="SAMPLES"> holding a <title> (name,
 * object, samples, percent), a <rect> and, when it fits, a <text> label;
 * the frames sit in <g id="flame">, which the document's script reads.
 * 0 or -ENOMEM.
 */
int flame_render(struct flame *fl, struct svg *doc, const char *heading);

#endif /* FNPROF_FLAME_H */
