// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>

#include "format/flame.h"
#include "report/pictures.h"
#include "format/svg.h"

static int draw_flame(struct sampler *const *s, size_t n, struct svg *doc)
{
	char heading[256];
	struct flame *fl = sampler_flame(s, n, heading, sizeof(heading));
	int err;

	if (!fl)
		return -ENOMEM;
	err = flame_render(fl, doc, heading);
	flame_free(fl);
	return err;
}

int pictures_write(const char *path, struct sampler *const *s, size_t nr_s, struct heatmap *hm, pid_t pid,
		   double span_s)
{
	char title[128];
	struct svg doc;
	int err;

	err = svg_init(&doc);
	if (!err && nr_s)
		err = draw_flame(s, nr_s, &doc);
	if (!err && hm) {
		if (nr_s)
			doc.height += 12;
		snprintf(title, sizeof(title), "Latency over time: pid %d, %.2f s", pid, span_s);
		err = heatmap_render(hm, &doc, title);
	}
	if (nr_s > 1)
		snprintf(title, sizeof(title), "fnprof: %zu processes, %.2f s", nr_s, span_s);
	else
		snprintf(title, sizeof(title), "fnprof: pid %d, %.2f s", pid, span_s);
	if (!err)
		err = svg_write(&doc, path, title);
	svg_free(&doc);
	return err;
}
