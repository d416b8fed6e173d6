// SPDX-License-Identifier: GPL-2.0
/* Log-linear buckets, percentiles and duration formatting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/hist.h"
#include "unit.h"

/* Every value falls into the bucket whose [lo, hi) holds it; buckets tile the range. */
static void bucket_bounds_hold_values(void)
{
	__u64 v;
	unsigned int b;

	for (v = 0; v < (1ULL << 41); v = v < 4096 ? v + 1 : v + v / 97 + 1) {
		b = hist_bucket_of(v);
		CHECK(b < FNPROF_HIST_BUCKETS);
		if (b == FNPROF_HIST_BUCKETS - 1)
			continue;
		CHECK(hist_bucket_lo(b) <= v && v < hist_bucket_hi(b));
	}
	for (b = 0; b + 1 < FNPROF_HIST_BUCKETS; b++)
		CHECK(hist_bucket_hi(b) == hist_bucket_lo(b + 1));
}

/* The bucket of v as the definition says, floor(log2(v)) from the compiler's count of leading zeros. */
static unsigned int ref_bucket(__u64 v)
{
	unsigned int e;

	if (v < FNPROF_HIST_SUB)
		return v;
	e = 63 - __builtin_clzll(v);
	if (e >= FNPROF_HIST_MAX_POW)
		return FNPROF_HIST_BUCKETS - 1;
	return FNPROF_HIST_SUB + (e - FNPROF_HIST_SUB_BITS) * FNPROF_HIST_SUB +
	       ((v >> (e - FNPROF_HIST_SUB_BITS)) & (FNPROF_HIST_SUB - 1));
}

/* Around every power of two, and a spread of values between: the branch-free log2 (bits.bpf.h) is exact. */
static void bucket_matches_definition(void)
{
	__u64 v, x = 88172645463325252ULL;
	int k, i;

	for (k = 0; k < 64; k++)
		for (v = (1ULL << k) - (k > 0); v <= (1ULL << k) + 1 && v; v++)
			CHECK(hist_bucket_of(v) == ref_bucket(v));
	CHECK(hist_bucket_of(~0ULL) == ref_bucket(~0ULL));
	for (i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;   /* xorshift64 */
		v = x >> (x & 63);
		CHECK(hist_bucket_of(v) == ref_bucket(v));
	}
}

/* A bucket is at most 1/32 of its lower bound wide: the resolution percentiles rely on. */
static void bucket_width_is_relative(void)
{
	unsigned int b;

	for (b = FNPROF_HIST_SUB; b + 1 < FNPROF_HIST_BUCKETS; b++)
		CHECK((hist_bucket_hi(b) - hist_bucket_lo(b)) * 32 <= hist_bucket_lo(b));
}

static void fill(__u64 *hist, const __u64 *vals, size_t n)
{
	size_t i;

	memset(hist, 0, FNPROF_HIST_BUCKETS * sizeof(*hist));
	for (i = 0; i < n; i++)
		hist[hist_bucket_of(vals[i])]++;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Percentiles of spread-out samples are within 3% of the exact ones. */
static void percentiles_within_3_percent(void)
{
	static __u64 vals[20000], hist[FNPROF_HIST_BUCKETS];
	double ps[] = { 50, 90, 99 };
	size_t i, k;

	srand(42);
	for (i = 0; i < 20000; i++)  /* ~1 ms with a long tail */
		vals[i] = 1000000 + rand() % 100000 + (i % 100 == 0 ? rand() % 5000000 : 0);
	fill(hist, vals, 20000);
	qsort(vals, 20000, sizeof(*vals), cmp_u64);
	for (k = 0; k < 3; k++) {
		double exact = vals[(size_t)(ps[k] / 100 * 20000) - 1];
		double got = hist_percentile(hist, vals[0], vals[19999], ps[k], 0);

		CHECK(fabs(got - exact) / exact < 0.03);
	}
}

/* A constant value: every percentile is that value (clamped to min/max). */
static void constant_value_is_exact(void)
{
	static __u64 hist[FNPROF_HIST_BUCKETS];
	__u64 v = 1234567;

	fill(hist, &v, 1);
	CHECK(hist_percentile(hist, v, v, 50, 0) == v);
	CHECK(hist_percentile(hist, v, v, 99, 0) == v);
	CHECK(hist_percentile(hist, v, v, 99, 1000) == v - 1000);
}

static void empty_histogram_is_zero(void)
{
	static __u64 hist[FNPROF_HIST_BUCKETS];

	CHECK(hist_percentile(hist, 0, 0, 50, 0) == 0);
}

static void formats_units(void)
{
	char b[16];

	CHECK(!strcmp(fmt_ns(812, b, sizeof(b)), "812ns"));
	CHECK(!strcmp(fmt_ns(56100, b, sizeof(b)), "56.1us"));
	CHECK(!strcmp(fmt_ns(1500, b, sizeof(b)), "1.50us"));
	CHECK(!strcmp(fmt_ns(1000000, b, sizeof(b)), "1.00ms"));
	CHECK(!strcmp(fmt_ns(2.5e9, b, sizeof(b)), "2.50s"));
	CHECK(!strcmp(fmt_ns(-1, b, sizeof(b)), "-"));
}

/* The printed histogram has bcc's "lo -> hi : count |****|" rows. */
static void prints_log2_layout(void)
{
	static __u64 hist[FNPROF_HIST_BUCKETS];
	__u64 vals[] = { 50000, 51000, 52000, 100000 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fill(hist, vals, 4);
	hist_print_log2(f, hist, 0);
	fclose(f);
	CHECK(strstr(buf, "usecs"));
	CHECK(strstr(buf, "32 -> 63"));
	CHECK(strstr(buf, ": 3 "));
	CHECK(strstr(buf, "|****************************************|"));
	free(buf);
}

int main(void)
{
	RUN(bucket_bounds_hold_values);
	RUN(bucket_matches_definition);
	RUN(bucket_width_is_relative);
	RUN(percentiles_within_3_percent);
	RUN(constant_value_is_exact);
	RUN(empty_histogram_is_zero);
	RUN(formats_units);
	RUN(prints_log2_layout);
	UNIT_EXIT();
}
