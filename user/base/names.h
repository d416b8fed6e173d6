/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interned strings (functions, inlined calls, objects): one copy each, so
 * that they compare as pointers, held under a budget (BUDGET_NAMES: a
 * process that keeps naming new code must not grow fnprof without end).
 * names_renew drops them all at once and starts a new generation: whoever
 * keeps pointers to them checks names_gen before using them again.
 */
#ifndef FNPROF_NAMES_H
#define FNPROF_NAMES_H

#include <stdbool.h>
#include <stddef.h>

struct budget;

/* Open addressing, at most half full; cap a power of two. */
struct names {
	char **slot;
	size_t nr, cap;
	size_t bytes;          /* taken from the budget */
	unsigned int gen;
	struct budget *b;
};

/* What a name over the budget is shown as (one static string: it compares as a pointer too). */
extern const char names_over_budget[];

void names_init(struct names *n, struct budget *b);
/* Frees the strings and gives their bytes back. */
void names_free(struct names *n);

/* The one copy of s: NULL when out of memory, names_over_budget when over the budget (counted). */
const char *names_intern(struct names *n, const char *s);

/* Whether the names hold over three quarters of their share: time to renew them. */
bool names_full(const struct names *n);

/* Drops every name (counted as an eviction) and starts a new generation. */
void names_renew(struct names *n);

#endif /* FNPROF_NAMES_H */
