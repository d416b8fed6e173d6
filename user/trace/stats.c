// SPDX-License-Identifier: GPL-2.0
#include <stddef.h>

#include "trace/stats.h"

_Static_assert(sizeof(struct fn_stats) % sizeof(__u64) == 0, "fn_stats_merge sums __u64 words");

void fn_stats_merge(struct fn_stats *a, const struct fn_stats *b)
{
	__u64 *aw = (__u64 *)a;
	const __u64 *bw = (const __u64 *)b;
	__u64 wall_min = a->wall_min, wall_max = a->wall_max;
	size_t i;

	/* Calls that entered but have not returned have no latency: only their count is merged. */
	if (!b->calls && !b->entered && !b->tail_hits)
		return;
	if (b->calls && (!a->calls || b->wall_min < wall_min))
		wall_min = b->wall_min;
	if (b->wall_max > wall_max)
		wall_max = b->wall_max;
	for (i = 0; i < sizeof(*a) / sizeof(__u64); i++)
		aw[i] += bw[i];
	a->wall_min = wall_min;
	a->wall_max = wall_max;
}
