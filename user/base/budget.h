/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the targets can make fnprof hold, in one total (--max-memory): the
 * perf maps it reads (perfmap.h) and the names its frames point to
 * (names.h). Each kind has a share of the total (half each), so that one
 * kind filled by a hostile process leaves the other its room. A holder asks
 * before it keeps bytes (budget_take) and gives them back (budget_give); a
 * refusal is counted, and the holder evicts what it holds or does without,
 * and counts that too (budget_evicted). Not thread-safe: one budget per
 * tree of symbolizers (symbolize.h), used by one thread.
 */
#ifndef FNPROF_BUDGET_H
#define FNPROF_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#define BUDGET_DEFAULT (256u << 20)   /* --max-memory's default, bytes */
#define BUDGET_MIN (1u << 20)

enum budget_kind {
	BUDGET_PERFMAPS,  /* the perf maps' text and their table of code ranges */
	BUDGET_NAMES,     /* interned names: functions, inlined calls, objects */
	BUDGET_KINDS,
};

struct budget {
	size_t limit;                   /* the total, bytes */
	size_t held[BUDGET_KINDS];      /* now */
	size_t peak[BUDGET_KINDS];
	__u64 refused[BUDGET_KINDS];    /* takes refused: something not kept */
	__u64 evicted[BUDGET_KINDS];    /* things dropped to make room (a perf map, a generation of names) */
};

void budget_init(struct budget *b, size_t limit);

/* A kind's share of the total, bytes. */
size_t budget_share(const struct budget *b, enum budget_kind k);

/* Keeps bytes of kind k if its share has room: true; false if not (the caller counts a refusal where it is one). */
bool budget_take(struct budget *b, enum budget_kind k, size_t bytes);
void budget_give(struct budget *b, enum budget_kind k, size_t bytes);

/* Whether bytes more would fit in kind k's share now (nothing counted). */
bool budget_fits(const struct budget *b, enum budget_kind k, size_t bytes);

/* Counts something not kept for want of room, and something dropped to make room. */
void budget_refused(struct budget *b, enum budget_kind k);
void budget_evicted(struct budget *b, enum budget_kind k);

/* Whether the budget bit: anything refused or evicted. */
bool budget_bit(const struct budget *b);

/*
 * The report's line, once the budget bit ("memory: ..."): what is held,
 * the peaks, what was refused and evicted, and the option that raises it.
 * And its JSON object "memory" (always).
 */
void budget_print(const struct budget *b, FILE *out);
struct json;
void budget_json(const struct budget *b, struct json *j);

#endif /* FNPROF_BUDGET_H */
