// SPDX-License-Identifier: GPL-2.0
/* The pprof encoder, decoded again; the symbolizer on this very process. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "format/pprof.h"
#include "stacks/symbolize.h"
#include "unit.h"

static size_t gunzip(const unsigned char *in, size_t len, unsigned char *out, size_t cap)
{
	z_stream z = { .next_in = (unsigned char *)in, .avail_in = len, .next_out = out, .avail_out = cap };

	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return 0;
	inflate(&z, Z_FINISH);
	inflateEnd(&z);
	return z.total_out;
}

static uint64_t varint(const unsigned char **p, const unsigned char *end)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		unsigned char c = *(*p)++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
		shift += 7;
	}
	return v;
}

struct counts {
	int fields[16];
	char strings[8][32];
	int nr_strings;
};

/* The top-level fields of a Profile message, and its first string_table entries. */
static void walk(const unsigned char *p, const unsigned char *end, struct counts *c)
{
	while (p < end) {
		uint64_t key = varint(&p, end), len;

		if ((key & 7) == 0) {
			varint(&p, end);
		} else {
			len = varint(&p, end);
			if ((key >> 3) == 6 && c->nr_strings < 8)
				snprintf(c->strings[c->nr_strings++], 32, "%.*s", (int)len, p);
			p += len;
		}
		if ((key >> 3) < 16)
			c->fields[key >> 3]++;
	}
}

static void encodes_a_readable_profile(void)
{
	static unsigned char raw[65536];
	struct pprof *p = pprof_new(10000000, 2000000000);
	unsigned char *gz = NULL;
	struct counts c = {};
	__u64 locs[2];
	size_t len = 0, n;

	CHECK(p);
	locs[0] = pprof_location(p, 0x401000, "leaf", "/bin/x", 0x400000, 0x500000, 0);
	locs[1] = pprof_location(p, 0x402000, "root", "/bin/x", 0x400000, 0x500000, 0);
	CHECK(locs[0] == 1 && locs[1] == 2);
	CHECK(pprof_location(p, 0x401000, "leaf", "/bin/x", 0x400000, 0x500000, 0) == 1);
	CHECK(!pprof_sample(p, locs, 2, 5));
	CHECK(!pprof_sample(p, locs + 1, 1, 3));
	CHECK(!pprof_encode(p, &gz, &len));
	CHECK(gz[0] == 0x1f && gz[1] == 0x8b);
	n = gunzip(gz, len, raw, sizeof(raw));
	CHECK(n > 0);
	walk(raw, raw + n, &c);
	CHECK(c.fields[1] == 2);   /* sample_type: samples/count, cpu/nanoseconds */
	CHECK(c.fields[2] == 2);   /* two samples */
	CHECK(c.fields[3] == 1);   /* one mapping */
	CHECK(c.fields[4] == 2);   /* two locations */
	CHECK(c.fields[5] == 2);   /* two functions */
	CHECK(c.fields[11] == 1 && c.fields[12] == 1);  /* period type and period */
	CHECK(c.nr_strings > 3 && !strcmp(c.strings[0], ""));
	free(gz);
	pprof_free(p);
}

/* The number of Line entries of each Location (top-level field 4), into lines[]. Returns locations. */
static int location_lines(const unsigned char *p, const unsigned char *end, int *lines, int max)
{
	int n = 0;

	while (p < end) {
		uint64_t key = varint(&p, end), len;

		if ((key & 7) == 0) {
			varint(&p, end);
			continue;
		}
		len = varint(&p, end);
		if ((key >> 3) == 4 && n < max) {
			const unsigned char *q = p;

			lines[n] = 0;
			while (q < p + len) {
				uint64_t k = varint(&q, p + len);

				if ((k & 7) == 0) {
					varint(&q, p + len);
				} else {
					q += varint(&q, p + len);
					lines[n] += (k >> 3) == 4;
				}
			}
			n++;
		}
		p += len;
	}
	return n;
}

/* Inlined code: one location whose lines are the inlined function, then the one it is in. */
static void inlined_frames_are_lines_of_one_location(void)
{
	static unsigned char raw[65536];
	const char *chain[] = { "work", "burn_a" };
	struct pprof *p = pprof_new(10000000, 2000000000);
	unsigned char *gz = NULL;
	int lines[4] = {}, nr;
	__u64 loc[2];
	size_t len = 0, n;

	CHECK(p);
	loc[0] = pprof_location_inlined(p, 0x401000, chain, 2, "/bin/x", 0x400000, 0x500000, 0);
	loc[1] = pprof_location(p, 0x401000, "burn_a", "/bin/x", 0x400000, 0x500000, 0);
	CHECK(loc[0] && loc[1] && loc[0] != loc[1]);
	CHECK(pprof_location_inlined(p, 0x401000, chain, 2, "/bin/x", 0x400000, 0x500000, 0) == loc[0]);
	CHECK(!pprof_sample(p, loc, 1, 1) && !pprof_encode(p, &gz, &len));
	n = gz ? gunzip(gz, len, raw, sizeof(raw)) : 0;
	nr = location_lines(raw, raw + n, lines, 4);
	CHECK(nr == 2 && lines[0] == 2 && lines[1] == 1);
	free(gz);
	pprof_free(p);
}

/* The sample's fields: values (packed, field 2) and whether it has a label (field 3). */
static void walk_sample(const unsigned char *p, const unsigned char *end, __u64 *vals, int *nr, int *labels)
{
	while (p < end) {
		uint64_t key = varint(&p, end), len = varint(&p, end);
		const unsigned char *q = p;

		if ((key >> 3) == 2)
			while (q < p + len && *nr < 8)
				vals[(*nr)++] = varint(&q, p + len);
		*labels += (key >> 3) == 3;
		p += len;
	}
}

static void several_types_and_a_label(void)
{
	static const struct pprof_type t[] = { { "contentions", "count" }, { "delay", "nanoseconds" },
					       { "wait_contentions", "count" }, { "wait_delay", "nanoseconds" } };
	static unsigned char raw[65536];
	struct pprof *p = pprof_new_types(t, 4, t[0], 1, 1000);
	__u64 v[4] = { 3, 3000, 0, 7 }, got[8], loc;
	const unsigned char *q, *end;
	unsigned char *gz = NULL;
	struct counts c = {};
	int nr = 0, labels = 0;
	size_t len = 0, n;

	CHECK(p && !pprof_new_types(t, 5, t[0], 1, 0));
	pprof_default_type(p, "delay");
	loc = pprof_location(p, 0x401000, "unlock", "/bin/x", 0x400000, 0x500000, 0);
	CHECK(!pprof_sample_values(p, &loc, 1, v, "kind", "lock"));
	CHECK(!pprof_encode(p, &gz, &len));
	n = gunzip(gz, len, raw, sizeof(raw));
	walk(raw, raw + n, &c);
	CHECK(c.fields[1] == 4 && c.fields[2] == 1 && c.fields[14] == 1);
	for (q = raw, end = raw + n; q < end;) {  /* the one Sample message */
		uint64_t key = varint(&q, end), l = (key & 7) == 2 ? varint(&q, end) : 0;

		if ((key & 7) == 0)
			varint(&q, end);
		if ((key >> 3) == 2)
			walk_sample(q, q + l, got, &nr, &labels);
		q += l;
	}
	CHECK(nr == 4 && got[0] == 3 && got[1] == 3000 && got[2] == 0 && got[3] == 7 && labels == 1);
	free(gz);
	pprof_free(p);
}

__attribute__((noinline)) int unit_marker_function(int x);
__attribute__((noinline)) int unit_marker_function(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static void symbolizes_own_process(void)
{
	struct symbolizer *s = symbolizer_new(getpid(), 0);
	struct frame_info fi;

	CHECK(s);
	symbolize_user(s, (uintptr_t)unit_marker_function + 1, &fi);
	CHECK(fi.known && !strcmp(fi.func, "unit_marker_function"));
	CHECK(strstr(fi.object, "test_pprof"));
	symbolize_user(s, (uintptr_t)memcpy, &fi);
	CHECK(strstr(fi.object, "libc") || strstr(fi.object, "asan"));
	symbolize_user(s, 16, &fi);
	CHECK(!fi.known && !strcmp(fi.func, "[unknown]") && !strcmp(fi.object, "[unknown]"));
	symbolizer_free(s);
}

int main(void)
{
	RUN(encodes_a_readable_profile);
	RUN(inlined_frames_are_lines_of_one_location);
	RUN(symbolizes_own_process);
	RUN(several_types_and_a_label);
	UNIT_EXIT();
}
