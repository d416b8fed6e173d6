// SPDX-License-Identifier: GPL-2.0
/*
 * Interned names under their budget: one copy each, a name past the budget
 * shown as the marker and counted, a renewal that gives everything back.
 */
#include <stdio.h>
#include <string.h>

#include "base/budget.h"
#include "base/names.h"
#include "unit.h"

static void one_copy_each(void)
{
	struct budget b;
	struct names n;
	char buf[16];
	const char *a;

	budget_init(&b, BUDGET_DEFAULT);
	names_init(&n, &b);
	snprintf(buf, sizeof(buf), "main");
	a = names_intern(&n, buf);
	CHECK(a && a != buf && !strcmp(a, "main") && names_intern(&n, "main") == a);
	CHECK(names_intern(&n, "other") != a && n.nr == 2 && b.held[BUDGET_NAMES] == n.bytes);
	names_free(&n);
	CHECK(b.held[BUDGET_NAMES] == 0);
}

/* Past the names' share: the marker, counted; a renewal drops them all and makes room again. */
static void over_the_budget_then_renewed(void)
{
	struct budget b;
	struct names n;
	char name[4001];
	const char *s = NULL;
	unsigned int gen;
	int i;

	budget_init(&b, BUDGET_MIN);
	names_init(&n, &b);
	memset(name, 'y', sizeof(name) - 1);   /* 4000 bytes: about 128 fit the names' half of 1 MiB */
	name[sizeof(name) - 1] = 0;
	for (i = 0; i < 1000 && s != names_over_budget; i++) {
		char head[9];

		snprintf(head, sizeof(head), "%08d", i);   /* a new name each time: its first bytes differ */
		memcpy(name, head, 8);
		s = names_intern(&n, name);
	}
	CHECK(s == names_over_budget && b.refused[BUDGET_NAMES] == 1);
	CHECK(b.held[BUDGET_NAMES] <= budget_share(&b, BUDGET_NAMES) && names_full(&n));
	gen = n.gen;
	names_renew(&n);
	CHECK(n.gen != gen && n.nr == 0 && b.held[BUDGET_NAMES] == 0 && b.evicted[BUDGET_NAMES] == 1);
	CHECK(names_intern(&n, name) != names_over_budget && !names_full(&n));
	names_free(&n);
}

int main(void)
{
	RUN(one_copy_each);
	RUN(over_the_budget_then_renewed);
	UNIT_EXIT();
}
