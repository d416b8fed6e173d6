// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/budget.h"
#include "base/names.h"

const char names_over_budget[] = "[unknown (memory budget)]";

/* A name's cost: its bytes, malloc's header, and its two slots (the table is at most half full). */
static size_t cost(size_t len)
{
	return len + 1 + 16 + 2 * sizeof(char *);
}

void names_init(struct names *n, struct budget *b)
{
	memset(n, 0, sizeof(*n));
	n->b = b;
}

static void drop_all(struct names *n)
{
	size_t i;

	for (i = 0; i < n->cap; i++)
		free(n->slot[i]);
	free(n->slot);
	budget_give(n->b, BUDGET_NAMES, n->bytes);
	n->slot = NULL;
	n->nr = n->cap = n->bytes = 0;
}

void names_free(struct names *n)
{
	drop_all(n);
}

static size_t hash_str(const char *c)
{
	size_t h = 14695981039346656037ULL;

	for (; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	return h;
}

static int names_grow(struct names *n)
{
	size_t cap = n->cap ? 2 * n->cap : 256, i, h;
	char **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (i = 0; i < n->cap; i++) {
		if (!n->slot[i])
			continue;
		for (h = hash_str(n->slot[i]) & (cap - 1); slot[h]; h = (h + 1) & (cap - 1))
			;
		slot[h] = n->slot[i];
	}
	free(n->slot);
	n->slot = slot;
	n->cap = cap;
	return 0;
}

const char *names_intern(struct names *n, const char *s)
{
	size_t h, c;

	if (2 * (n->nr + 1) > n->cap && names_grow(n))
		return NULL;
	for (h = hash_str(s) & (n->cap - 1); n->slot[h]; h = (h + 1) & (n->cap - 1))
		if (!strcmp(n->slot[h], s))
			return n->slot[h];
	c = cost(strlen(s));
	if (!budget_take(n->b, BUDGET_NAMES, c)) {
		budget_refused(n->b, BUDGET_NAMES);
		return names_over_budget;
	}
	n->slot[h] = strdup(s);
	if (!n->slot[h]) {
		budget_give(n->b, BUDGET_NAMES, c);
		return NULL;
	}
	n->nr++;
	n->bytes += c;
	return n->slot[h];
}

bool names_full(const struct names *n)
{
	return n->bytes > budget_share(n->b, BUDGET_NAMES) / 4 * 3;
}

void names_renew(struct names *n)
{
	drop_all(n);
	n->gen++;
	budget_evicted(n->b, BUDGET_NAMES);
}
