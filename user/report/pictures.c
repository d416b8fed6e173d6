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

int pictures_write(const char *path, const struct pictures_conf *c)
{
	size_t k, n = c->nr_samplers > c->nr_heat ? c->nr_samplers : c->nr_heat;
	char title[128];
	struct svg doc;
	int err;

	err = svg_init(&doc);
	if (!err && c->nr_samplers)
		err = draw_flame(c->samplers, c->nr_samplers, &doc);
	for (k = 0; !err && k < c->nr_heat; k++) {
		if (c->nr_samplers || k)
			doc.height += 12;
		snprintf(title, sizeof(title), "Latency over time: pid %d, %.2f s", c->pids[k], c->span_s);
		err = heatmap_render(c->heat[k], &doc, title);
	}
	if (n > 1)
		snprintf(title, sizeof(title), "fnprof: %zu processes, %.2f s", n, c->span_s);
	else
		snprintf(title, sizeof(title), "fnprof: pid %d, %.2f s", c->pids[0], c->span_s);
	if (!err)
		err = svg_write(&doc, path, title);
	svg_free(&doc);
	return err;
}
