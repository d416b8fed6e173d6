// SPDX-License-Identifier: GPL-2.0
#include <string.h>

#include "base/budget.h"
#include "base/json.h"

/* Percent of the total per kind. */
static const unsigned int share_pct[BUDGET_KINDS] = {
	[BUDGET_PERFMAPS] = 50,
	[BUDGET_NAMES] = 50,
};

static const char *const kind_key[BUDGET_KINDS] = {
	[BUDGET_PERFMAPS] = "perf_maps",
	[BUDGET_NAMES] = "names",
};

void budget_init(struct budget *b, size_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
}

size_t budget_share(const struct budget *b, enum budget_kind k)
{
	return b->limit / 100 * share_pct[k];
}

bool budget_fits(const struct budget *b, enum budget_kind k, size_t bytes)
{
	size_t share = budget_share(b, k);

	return bytes <= share && b->held[k] <= share - bytes;
}

bool budget_take(struct budget *b, enum budget_kind k, size_t bytes)
{
	if (!budget_fits(b, k, bytes))
		return false;
	b->held[k] += bytes;
	if (b->held[k] > b->peak[k])
		b->peak[k] = b->held[k];
	return true;
}

void budget_give(struct budget *b, enum budget_kind k, size_t bytes)
{
	b->held[k] -= bytes < b->held[k] ? bytes : b->held[k];
}

void budget_refused(struct budget *b, enum budget_kind k)
{
	b->refused[k]++;
}

void budget_evicted(struct budget *b, enum budget_kind k)
{
	b->evicted[k]++;
}

bool budget_bit(const struct budget *b)
{
	int k;

	for (k = 0; k < BUDGET_KINDS; k++)
		if (b->refused[k] || b->evicted[k])
			return true;
	return false;
}

static double mib(size_t bytes)
{
	return bytes / 1048576.0;
}

void budget_print(const struct budget *b, FILE *out)
{
	if (!budget_bit(b))
		return;
	fprintf(out, "memory: the budget for what the targets make fnprof hold bit (--max-memory %.0fM, half each): "
		     "perf maps %.1f MiB held (peak %.1f), %llu not read for want of room, %llu evicted; names %.1f MiB "
		     "held (peak %.1f), %llu shown \"[unknown (memory budget)]\", all dropped and named again %llu times\n",
		mib(b->limit), mib(b->held[BUDGET_PERFMAPS]), mib(b->peak[BUDGET_PERFMAPS]),
		(unsigned long long)b->refused[BUDGET_PERFMAPS], (unsigned long long)b->evicted[BUDGET_PERFMAPS],
		mib(b->held[BUDGET_NAMES]), mib(b->peak[BUDGET_NAMES]), (unsigned long long)b->refused[BUDGET_NAMES],
		(unsigned long long)b->evicted[BUDGET_NAMES]);
}

void budget_json(const struct budget *b, struct json *j)
{
	int k;

	json_obj_begin(j, "memory");
	json_u64(j, "limit", b->limit);
	for (k = 0; k < BUDGET_KINDS; k++) {
		json_obj_begin(j, kind_key[k]);
		json_u64(j, "held", b->held[k]);
		json_u64(j, "peak", b->peak[k]);
		json_u64(j, "refused", b->refused[k]);
		json_u64(j, "evicted", b->evicted[k]);
		json_obj_end(j);
	}
	json_obj_end(j);
}
