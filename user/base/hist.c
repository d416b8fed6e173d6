// SPDX-License-Identifier: GPL-2.0
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/hist.h"
#include "bits.bpf.h"

unsigned int hist_bucket_of(__u64 ns)
{
	return hist_bucket(ns);
}

__u64 hist_bucket_lo(unsigned int b)
{
	unsigned int e, sub;

	if (b < FNPROF_HIST_SUB)
		return b;
	e = (b - FNPROF_HIST_SUB) / FNPROF_HIST_SUB + FNPROF_HIST_SUB_BITS;
	sub = (b - FNPROF_HIST_SUB) % FNPROF_HIST_SUB;
	return (1ULL << e) + ((__u64)sub << (e - FNPROF_HIST_SUB_BITS));
}

__u64 hist_bucket_hi(unsigned int b)
{
	if (b + 1 >= FNPROF_HIST_BUCKETS)
		return 1ULL << FNPROF_HIST_MAX_POW;
	return hist_bucket_lo(b + 1);
}

static double shifted(double v, __u64 bias_ns)
{
	return v > bias_ns ? v - bias_ns : 0;
}

double hist_percentile(const __u64 *hist, __u64 min, __u64 max, double p, __u64 bias_ns)
{
	__u64 total = 0, cum = 0;
	double rank, v = 0, lo, hi;
	unsigned int b;

	for (b = 0; b < FNPROF_HIST_BUCKETS; b++)
		total += hist[b];
	if (!total)
		return 0;
	rank = p / 100.0 * total;
	for (b = 0; b < FNPROF_HIST_BUCKETS; b++) {
		if (!hist[b] || cum + hist[b] < rank) {
			cum += hist[b];
			continue;
		}
		/* Values spread evenly over the bucket: interpolate the rank inside it. */
		lo = hist_bucket_lo(b);
		hi = hist_bucket_hi(b);
		v = lo + (hi - lo) * ((rank - cum) / (double)hist[b]);
		break;
	}
	if (v < min)
		v = min;
	if (max && v > max)
		v = max;
	return shifted(v, bias_ns);
}

double hist_trimmed_mean(const __u64 *hist, double p)
{
	double keep, sum = 0, n = 0, take;
	__u64 total = 0;
	unsigned int b;

	for (b = 0; b < FNPROF_HIST_BUCKETS; b++)
		total += hist[b];
	keep = p / 100.0 * total;
	for (b = 0; b < FNPROF_HIST_BUCKETS && n < keep; b++) {
		take = hist[b] < keep - n ? hist[b] : keep - n;
		sum += take * (hist_bucket_lo(b) + hist_bucket_hi(b)) / 2.0;
		n += take;
	}
	return n ? sum / n : 0;
}

static void print_stars(FILE *f, __u64 val, __u64 max, int width)
{
	int i, n = max ? (int)(val * width / max) : 0;

	for (i = 0; i < width; i++)
		fputc(i < n ? '*' : ' ', f);
}

void hist_print_log2(FILE *f, const __u64 *hist, __u64 bias_ns)
{
	__u64 slots[64] = {}, max = 0, div = 1;
	int b, hi_slot = -1, lo_slot = 64, s;
	const char *unit = "nsecs";
	double top = 0;

	for (b = 0; b < FNPROF_HIST_BUCKETS; b++)
		if (hist[b])
			top = shifted(hist_bucket_lo(b), bias_ns);
	if (top >= 10e6) {
		unit = "msecs";
		div = 1000000;
	} else if (top >= 10e3) {
		unit = "usecs";
		div = 1000;
	}
	for (b = 0; b < FNPROF_HIST_BUCKETS; b++) {
		/* The bucket's midpoint decides its power-of-two row. */
		__u64 mid = shifted((hist_bucket_lo(b) + hist_bucket_hi(b)) / 2, bias_ns) / div;

		if (!hist[b])
			continue;
		s = mid ? 64 - __builtin_clzll(mid) : 0;
		slots[s] += hist[b];
		hi_slot = s > hi_slot ? s : hi_slot;
		lo_slot = s < lo_slot ? s : lo_slot;
	}
	if (hi_slot < 0)
		return;
	for (s = 0; s <= hi_slot; s++)
		max = slots[s] > max ? slots[s] : max;
	fprintf(f, "%24s : count    distribution\n", unit);
	for (s = lo_slot > 0 ? lo_slot - 1 : 0; s <= hi_slot; s++) {
		__u64 low = s ? 1ULL << (s - 1) : 0, high = (1ULL << s) - 1;

		fprintf(f, "%10llu -> %-10llu : %-8llu |", (unsigned long long)low,
			(unsigned long long)high, (unsigned long long)slots[s]);
		print_stars(f, slots[s], max, 40);
		fputs("|\n", f);
	}
}

const char *fmt_ns(double ns, char *buf, size_t size)
{
	if (ns < 0 || !isfinite(ns))
		snprintf(buf, size, "-");
	else if (ns < 1000)
		snprintf(buf, size, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.*fus", ns < 1e4 ? 2 : 1, ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.*fms", ns < 1e7 ? 2 : 1, ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", ns / 1e9);
	return buf;
}
