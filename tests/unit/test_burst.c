// SPDX-License-Identifier: GPL-2.0
/*
 * The --max-overhead budget account (burst_settle, burst_account,
 * burst_total_fraction) fed with constructed readings: the target's CPU
 * time, the calls in the tracer's buffer and their probe time, the calls
 * that hit the probes while they did not count. No tracer, no timing.
 */
#include <math.h>

#include "trace/burst.h"
#include "unit.h"

#define MS 1000000.0
#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-6 * (fabs((double)(b)) + 1))
/* The account aims this far under the budget (burst.c's MARGIN). */
#define MARGIN 0.7

static struct burst start(void)
{
	return (struct burst){ .budget = 0.05, .on = true, .cpu0 = 1000 * MS, .cpu_start = 1000 * MS };
}

/* A burst: 10 ms of the target's CPU, 1 ms of it in 1000 calls' probes; then 90 ms off, 100 calls uncounted. */
static void burst_then_pause(struct burst *b)
{
	burst_settle(b, 1010 * MS, 1000, 1 * MS, 0);
	b->on = false;
	burst_settle(b, 1100 * MS, 1000, 1 * MS, 100);
}

static void counted_calls_spend(void)
{
	struct burst b = start();

	burst_settle(&b, 1010 * MS, 1000, 1 * MS, 0);
	CHECK(b.calls_all == 1000 && NEAR(b.probe_counted, 1 * MS) && NEAR(b.probe_all, 1 * MS));
	CHECK(NEAR(b.work_on, 9 * MS));               /* the target's own work: CPU less probes */
	CHECK(NEAR(b.burst_cpu, 10 * MS) && NEAR(b.burst_probe, 1 * MS));
	/* 5% of 9 ms (with the margin) does not pay for 1 ms: in debt. */
	CHECK(NEAR(burst_account(&b), MARGIN * 0.05 * 9 * MS - 1 * MS));
	CHECK(burst_account(&b) < 0);
}

/* Calls that hit the probes while paused cost the average counted call, and are the target's loss, not work. */
static void uncounted_calls_spend_too(void)
{
	struct burst b = start();

	burst_then_pause(&b);
	CHECK(NEAR(b.uncounted_ns, 100 * 1000.0) && NEAR(b.detach_cost, 100 * 1000.0));
	CHECK(NEAR(b.probe_all, 1.1 * MS));
	CHECK(NEAR(b.off_cpu, 90 * MS - 0.1 * MS));
	CHECK(NEAR(b.work_on, 9 * MS));               /* off-time work is not traced work */
	/* The pause's work earned the budget back. */
	CHECK(NEAR(burst_account(&b), MARGIN * 0.05 * (100 * MS - 1.1 * MS) - 1.1 * MS));
	CHECK(burst_account(&b) > 0);
}

/* Extrapolation is by work: traced work over all work, not attached time over wall time. */
static void fraction_by_work(void)
{
	struct burst b = start();
	struct burst_share sh;

	burst_total_share(&b, &sh);
	CHECK(sh.fraction == 1);         /* no work yet: nothing to extrapolate */
	burst_then_pause(&b);
	burst_total_share(&b, &sh);
	CHECK(NEAR(sh.fraction, 9 * MS / (100 * MS - 1.1 * MS)));
	CHECK(isnan(sh.lo) && isnan(sh.hi));   /* no burst rated: the error is not known */
}

/*
 * Issue 23: the range of an estimate is a 99.73% interval of the bursts' mean
 * call rate: three standard errors, by Student's t for the bursts there are.
 */
static void range_from_burst_rates(void)
{
	struct burst b = start();
	struct burst_share sh;
	/* One slow burst: half the calls. */
	static const __u64 calls[] = { 1000, 1000, 1000, 1000, 1000, 1000, 1000, 500 };
	double err;
	size_t i;

	for (i = 0; i < 8; i++) {
		b.burst_cpu = 20 * MS;
		b.burst_probe = 0;
		b.burst_calls = calls[i];
		burst_rate(&b);
		CHECK(b.nr_rated == (int)i + 1 && (i < 2 ? isnan(burst_rate_error(&b)) : !isnan(burst_rate_error(&b))));
	}
	/*
	 * Rates 50 (7 times) and 25 a ms of work (equal weights): mean 46.875,
	 * sample sd 8.839, SE 3.125; t for 7 degrees of freedom 4.53 (not 3).
	 */
	err = burst_rate_error(&b);
	CHECK(NEAR(err, 4.53 * 3.125 / 46.875));
	b.burst_cpu = 1 * MS;   /* too little work to rate */
	burst_rate(&b);
	CHECK(b.nr_rated == 8);
	burst_then_pause(&b);
	burst_total_share(&b, &sh);
	CHECK(NEAR(sh.lo, sh.fraction / (1 + err)) && NEAR(sh.hi, sh.fraction / (1 - err)));
}

/* New calls are priced at the buffer's current price per call; calls the buffer lost are not negative. */
static void price_moves_with_the_buffer(void)
{
	struct burst b = start();

	burst_settle(&b, 1010 * MS, 1000, 1 * MS, 0);
	burst_settle(&b, 1020 * MS, 2000, 3 * MS, 0); /* re-measured: 1.5 us per call now */
	CHECK(NEAR(b.probe_counted, 1 * MS + 1.5 * MS) && b.calls_all == 2000);
	burst_settle(&b, 1030 * MS, 10, 0.01 * MS, 0); /* drained: fewer calls than before */
	CHECK(b.calls_all == 2000 && NEAR(b.probe_counted, 2.5 * MS));
	CHECK(NEAR(b.work_on, 9 * MS + 8.5 * MS + 10 * MS));
}

int main(void)
{
	RUN(counted_calls_spend);
	RUN(uncounted_calls_spend_too);
	RUN(fraction_by_work);
	RUN(range_from_burst_rates);
	RUN(price_moves_with_the_buffer);
	UNIT_EXIT();
}
