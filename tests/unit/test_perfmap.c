// SPDX-License-Identifier: GPL-2.0
/*
 * The perf-map reader's parsing and lookup, on text given to it directly:
 * the formats runtimes write, lines that supersede earlier ones, and lines
 * it must skip (malformed, too long, zero-sized, wrapping past the top).
 */
#include <string.h>

#include "base/budget.h"
#include "stacks/perfmap.h"
#include "unit.h"

static struct budget budget;
static struct perfmaps *files;

static struct perfmap *map_of(const char *text)
{
	struct perfmap *pm = perfmap_new(0, files);

	if (pm)
		perfmap_add_text(pm, text, strlen(text));
	return pm;
}

static int same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static void formats_runtimes_write(void)
{
	struct perfmap *pm = map_of("7fa7ea7c6180 180 JS:*fib /tmp/busy.js:1:13\n"
				    "0x1000 0x10 Interpreted:main\r\n"
				    "2000\t20\tLjava/lang/String;::hashCode\n");

	CHECK(pm && perfmap_nr(pm) == 3);
	CHECK(same(perfmap_lookup(pm, 0x7fa7ea7c6180), "JS:*fib /tmp/busy.js:1:13"));
	CHECK(same(perfmap_lookup(pm, 0x7fa7ea7c62ff), "JS:*fib /tmp/busy.js:1:13"));
	CHECK(!perfmap_lookup(pm, 0x7fa7ea7c6300));
	CHECK(same(perfmap_lookup(pm, 0x100f), "Interpreted:main"));
	CHECK(same(perfmap_lookup(pm, 0x2000), "Ljava/lang/String;::hashCode"));
	CHECK(!perfmap_lookup(pm, 0xfff));
	perfmap_free(pm);
}

static void later_lines_win(void)
{
	/* Same range again, a range inside an older one, one overlapping its end. */
	struct perfmap *pm = map_of("1000 100 old\n1000 100 new\n2000 100 big\n2040 10 inner\n"
				    "3000 100 first\n3080 100 second\n");

	CHECK(pm);
	CHECK(same(perfmap_lookup(pm, 0x1050), "new"));
	CHECK(same(perfmap_lookup(pm, 0x2000), "big"));
	CHECK(same(perfmap_lookup(pm, 0x2045), "inner"));
	CHECK(same(perfmap_lookup(pm, 0x307f), "first"));
	CHECK(same(perfmap_lookup(pm, 0x3080), "second"));
	/* Appended later, as a runtime appends: supersedes what was read before. */
	perfmap_add_text(pm, "1000 100 newest\n", 16);
	CHECK(same(perfmap_lookup(pm, 0x1000), "newest"));
	perfmap_free(pm);
}

static void bad_lines_are_skipped(void)
{
	char line[PERFMAP_MAX_LINE + 64];
	struct perfmap *pm = map_of("zzz 10 nohex\n1000 0 zerosize\nffffffffffffff00 1000 wraps\n"
				    "1000 10\n1000\n\n1000 10 \n12345678901234567 10 toolong\n"
				    "5000 10 good\nno newline at the end 6000 10 tail");

	CHECK(pm && perfmap_nr(pm) == 1);
	CHECK(same(perfmap_lookup(pm, 0x5000), "good"));
	CHECK(!perfmap_lookup(pm, 0x1000) && !perfmap_lookup(pm, 0x6000));
	memset(line, 'a', sizeof(line));
	memcpy(line, "7000 10 ", 8);
	line[sizeof(line) - 1] = '\n';
	CHECK(perfmap_add_text(pm, line, sizeof(line)) == sizeof(line));
	CHECK(!perfmap_lookup(pm, 0x7000) && perfmap_nr(pm) == 1);
	perfmap_free(pm);
}

static void a_nul_in_a_name_is_refused(void)
{
	static const char text[] = "1000 10 a\0b\n2000 10 ok\n";
	struct perfmap *pm = perfmap_new(0, files);

	CHECK(pm);
	perfmap_add_text(pm, text, sizeof(text) - 1);
	CHECK(!perfmap_lookup(pm, 0x1000) && same(perfmap_lookup(pm, 0x2000), "ok"));
	perfmap_free(pm);
}

/* The text and table are held under the budget, and given back when the map goes. */
static void held_under_the_budget(void)
{
	struct perfmap *pm = map_of("1000 10 one\n2000 10 two\n");
	size_t held = budget.held[BUDGET_PERFMAPS];

	CHECK(pm && held > 0 && same(perfmap_lookup(pm, 0x2005), "two"));
	perfmap_free(pm);
	CHECK(budget.held[BUDGET_PERFMAPS] == 0);
}

/* Text that does not fit the perf maps' share is not read: nothing named, nothing held. */
static void over_the_budget_is_not_read(void)
{
	static char text[1 << 20];   /* twice the perf maps' share of a 1 MiB budget */
	struct budget small;
	struct perfmaps *c;
	struct perfmap *pm;
	size_t n = 0, i;

	budget_init(&small, BUDGET_MIN);
	c = perfmaps_new(&small);
	pm = c ? perfmap_new(0, c) : NULL;
	CHECK(pm);
	for (i = 0; n + 64 < sizeof(text); i++)
		n += snprintf(text + n, sizeof(text) - n, "%zx 1 f_%zu\n", 0x1000 + i, i);
	CHECK(perfmap_add_text(pm, text, strlen(text)) == 0 && !perfmap_lookup(pm, 0x1000));
	CHECK(small.held[BUDGET_PERFMAPS] == 0);
	CHECK(perfmap_add_text(pm, "1000 10 fits\n", 13) == 13 && same(perfmap_lookup(pm, 0x1000), "fits"));
	perfmap_free(pm);
	perfmaps_free(c);
}

/*
 * Text that adds no name (a line's first half, written in two writes; bad
 * lines) is not kept: what a runtime appends this way at every look cost
 * the budget a chunk each time, until the file was evicted.
 */
static void text_without_names_not_held(void)
{
	struct perfmap *pm = map_of("1000 10 one\n");
	size_t held = 0;
	int i;

	/* After the first round (the table may grow once for the line counted), nothing more is held. */
	for (i = 0; pm && i < 100; i++) {
		if (perfmap_add_text(pm, "2000 10 tw", 10) != 0 || perfmap_add_text(pm, "not a line\n", 11) != 11)
			break;
		if (!i)
			held = budget.held[BUDGET_PERFMAPS];
	}
	CHECK(pm && i == 100 && budget.held[BUDGET_PERFMAPS] == held);
	CHECK(pm && perfmap_add_text(pm, "2000 10 two\n", 12) == 12 && same(perfmap_lookup(pm, 0x2005), "two"));
	perfmap_free(pm);
}

int main(void)
{
	budget_init(&budget, BUDGET_DEFAULT);
	files = perfmaps_new(&budget);
	RUN(formats_runtimes_write);
	RUN(later_lines_win);
	RUN(bad_lines_are_skipped);
	RUN(a_nul_in_a_name_is_refused);
	RUN(held_under_the_budget);
	RUN(over_the_budget_is_not_read);
	RUN(text_without_names_not_held);
	perfmaps_free(files);
	UNIT_EXIT();
}
