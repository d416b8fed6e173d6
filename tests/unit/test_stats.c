// SPDX-License-Identifier: GPL-2.0
/* fn_stats_merge: every field summed, except the extremes. */
#include <string.h>

#include "trace/stats.h"
#include "unit.h"

static struct fn_stats a, b;

static void fill(struct fn_stats *s, __u64 calls, __u64 min, __u64 max, __u64 v)
{
	memset(s, 0, sizeof(*s));
	s->calls = calls;
	s->wall_min = min;
	s->wall_max = max;
	s->wall_sum = s->desc_calls = s->sys_sum = v;
	s->ctr[FNPROF_MAX_EVENTS - 1] = s->ctr_scaled[0] = v;
	s->hist[0] = s->hist[FNPROF_HIST_BUCKETS - 1] = v;
}

static void sums_and_extremes(void)
{
	fill(&a, 2, 100, 900, 10);
	fill(&b, 3, 50, 700, 5);
	fn_stats_merge(&a, &b);
	CHECK(a.calls == 5 && a.wall_min == 50 && a.wall_max == 900);
	CHECK(a.wall_sum == 15 && a.desc_calls == 15 && a.sys_sum == 15);
	CHECK(a.ctr[FNPROF_MAX_EVENTS - 1] == 15 && a.ctr_scaled[0] == 15);
	CHECK(a.hist[0] == 15 && a.hist[FNPROF_HIST_BUCKETS - 1] == 15);
}

/* An empty aggregate's zero minimum is no minimum; an aggregate without calls adds nothing. */
static void empty_sides(void)
{
	memset(&a, 0, sizeof(a));
	fill(&b, 3, 50, 700, 5);
	fn_stats_merge(&a, &b);
	CHECK(a.calls == 3 && a.wall_min == 50 && a.wall_max == 700 && a.wall_sum == 5);
	memset(&b, 0, sizeof(b));
	b.wall_sum = 99;
	fn_stats_merge(&a, &b);
	CHECK(a.calls == 3 && a.wall_min == 50 && a.wall_sum == 5);
}

int main(void)
{
	RUN(sums_and_extremes);
	RUN(empty_sides);
	UNIT_EXIT();
}
