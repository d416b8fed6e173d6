// SPDX-License-Identifier: GPL-2.0
/*
 * The calibration's figures from constructed pooled calls (calib_figures),
 * and what they make of a function's probes (bias, cost, the cost bounded
 * by what its calls show). No probes, no timing.
 */
#include <math.h>
#include <string.h>

#include "trace/calib.h"
#include "base/hist.h"
#include "unit.h"

/* 1000 calls per case: 500 of 100 ns, 490 of 120 ns, 10 slow ones of 5 us; (k+1) x 100 ns each in all. */
static void pool(struct calibration *c)
{
	int k;

	memset(c, 0, sizeof(*c));
	c->calls = 1000;
	c->cases = CALIB_ALL;
	for (k = 0; k < CAL_NR; k++) {
		struct fn_stats *s = &c->pooled[k];

		s->calls = 1000;
		s->wall_min = 100;
		s->wall_max = 5000;
		s->hist[hist_bucket_of(100)] = 500;
		s->hist[hist_bucket_of(120)] = 490;
		s->hist[hist_bucket_of(5000)] = 10;
		/* the single-stepping cases make half as many calls */
		c->time_ns[k] = (k == CAL_PAIR || k == CAL_PAIR_RET ? 200.0 : k == CAL_STEPPED || k == CAL_RET ||
				 k == CAL_TAIL_JMP ? 500.0 :
				 1000.0) * (k + 1) * 100;
	}
}

static void figures_per_case(void)
{
	struct calibration c;
	int k;

	pool(&c);
	calib_figures(&c);
	for (k = 0; k < CAL_NR; k++) {
		CHECK(c.cost_ns[k] == (k + 1) * 100.0);   /* whole time per call */
		if (k == CAL_ENTRY_ONLY)
			continue;
		CHECK(c.min_ns[k] == 100);
		/* The median lies in the 100 ns bucket (half the calls), within its width. */
		CHECK(c.bias_ns[k] >= 100 && c.bias_ns[k] <= 104);
		/* The mean of the fastest 99% leaves the 5 us calls out: ~110 ns (bucket middles). */
		CHECK(fabs(c.mean_ns[k] - (500 * 100 + 490 * 120) / 990.0) < 3);
	}
	/* No exit probe: no interval, no bias. */
	CHECK(c.bias_ns[CAL_ENTRY_ONLY] == 0 && c.mean_ns[CAL_ENTRY_ONLY] == 0);
}

/* A case whose calls were not seen keeps its figures (no division by zero). */
static void case_without_calls(void)
{
	struct calibration c;

	pool(&c);
	memset(&c.pooled[CAL_NOP5], 0, sizeof(c.pooled[CAL_NOP5]));
	c.bias_ns[CAL_NOP5] = 7;
	calib_figures(&c);
	CHECK(c.bias_ns[CAL_NOP5] == 7);
	c.calls = 0;
	calib_figures(&c);
	CHECK(isfinite(c.cost_ns[CAL_EMULATED]));
}

/* A case left out of the calibration has no figures (NaN: null in JSON), not zeros. */
static void case_not_measured(void)
{
	struct calibration c;
	char buf[2048] = "";
	FILE *f;

	pool(&c);
	c.cases = 1U << CAL_EMULATED | 1U << CAL_RET;
	calib_figures(&c);
	CHECK(c.cost_ns[CAL_EMULATED] == 100 && c.cost_ns[CAL_RET] == (CAL_RET + 1) * 100);
	CHECK(isnan(c.cost_ns[CAL_STEPPED]) && isnan(c.bias_ns[CAL_STEPPED]) && isnan(c.mean_ns[CAL_NOP5]));
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	calibration_print(&c, f);
	fclose(f);
	CHECK(strstr(buf, "emulated") && strstr(buf, " ret ") && !strstr(buf, "single-stepped") && !strstr(buf, "nop5"));
}

/* A probe's bias and cost: its entry kind's, plus its exit mode's difference from a uretprobe. */
static void bias_and_cost_by_exit_mode(void)
{
	struct calibration c = { .valid = true };
	struct probe p = { .kind = SITE_STEPPED, .exit = EXIT_URETPROBE };

	c.mean_ns[CAL_EMULATED] = 100;
	c.mean_ns[CAL_STEPPED] = 400;
	c.mean_ns[CAL_RET] = 150;
	c.bias_ns[CAL_STEPPED] = 380;
	c.cost_ns[CAL_EMULATED] = 300;
	c.cost_ns[CAL_STEPPED] = 900;
	c.cost_ns[CAL_RET] = 500;
	c.cost_ns[CAL_ENTRY_ONLY] = 200;
	CHECK(calib_bias(&c, &p) == 400 && calib_bias_median(&c, &p) == 380 && calib_cost(&c, &p) == 900);
	p.exit = EXIT_RET;                   /* + (ret - emulated) */
	CHECK(calib_bias(&c, &p) == 450 && calib_cost(&c, &p) == 1100);
	p.exit = EXIT_NONE;                  /* no interval; cost + (entry-only - emulated) */
	CHECK(calib_bias(&c, &p) == 0 && calib_cost(&c, &p) == 800);
	CHECK(calib_cases_of(&p) == (1U << CAL_STEPPED | 1U << CAL_ENTRY_ONLY | 1U << CAL_EMULATED));
}

/* The range of the bias: the rounds' medians of the entry's case, plus the exit mode's difference. */
static void bias_range(void)
{
	struct calibration c = { .valid = true };
	struct probe p = { .kind = SITE_STEPPED, .exit = EXIT_URETPROBE };
	double lo, hi;

	c.round_lo[CAL_STEPPED] = 9000;
	c.round_hi[CAL_STEPPED] = 13000;
	c.bias_ns[CAL_EMULATED] = 600;
	c.bias_ns[CAL_RET] = 700;
	calib_bias_range(&c, &p, &lo, &hi);
	CHECK(lo == 9000 && hi == 13000);
	p.exit = EXIT_RET;
	calib_bias_range(&c, &p, &lo, &hi);
	CHECK(lo == 9100 && hi == 13100);
	p.exit = EXIT_NONE;
	calib_bias_range(&c, &p, &lo, &hi);
	CHECK(isnan(lo) && isnan(hi));
	p.exit = EXIT_URETPROBE;
	c.round_lo[CAL_STEPPED] = c.round_hi[CAL_STEPPED] = NAN;   /* not measured */
	calib_bias_range(&c, &p, &lo, &hi);
	CHECK(isnan(lo) && isnan(hi));
}

/* The cost is capped by the calls' whole measured time plus the part outside it. */
static void cost_bounded_by_calls(void)
{
	struct calibration c = { .valid = true };
	struct probe p = { .kind = SITE_EMULATED, .exit = EXIT_URETPROBE };
	struct fn_stats s = { .calls = 10, .wall_sum = 1000 };

	c.mean_ns[CAL_EMULATED] = 100;
	c.cost_ns[CAL_EMULATED] = 5000;      /* measured in a slow moment */
	c.costs[CAL_EMULATED][0] = 300;      /* the first calibration: 200 ns outside the interval */
	CHECK(calib_cost_seen(&c, &p, &s) == 100 + 200);
	s.wall_sum = 100000;                 /* slow calls: the calibrated cost stands */
	CHECK(calib_cost_seen(&c, &p, &s) == 5000);
}

/*
 * A followed tail jmp's hit: the tail-jmp case's mean bias less the
 * ret-exit case's, 0 below it or when either is not measured; its range
 * from the tail-jmp case's rounds less the ret-exit median, holding the price.
 */
static void jmp_hit_price(void)
{
	struct calibration c = { .valid = true };
	struct probe p = { .kind = SITE_EMULATED, .exit = EXIT_RET, .follows_tails = true };
	double lo, hi;

	c.cases = 1U << CAL_RET | 1U << CAL_TAIL_JMP;
	c.mean_ns[CAL_RET] = 660;
	c.mean_ns[CAL_TAIL_JMP] = 1140;
	c.bias_ns[CAL_RET] = 640;
	c.round_lo[CAL_TAIL_JMP] = 1000;
	c.round_hi[CAL_TAIL_JMP] = 1400;
	c.cost_ns[CAL_ENTRY_ONLY] = 800;     /* the old price: the entry-only case's cost */
	CHECK(calib_jmp_hit_cost(&c) == 480);
	calib_jmp_hit_range(&c, &lo, &hi);
	CHECK(lo == 360 && hi == 760);
	c.round_hi[CAL_TAIL_JMP] = 1100;     /* the rounds' medians below the mean's price */
	calib_jmp_hit_range(&c, &lo, &hi);
	CHECK(lo == 360 && hi == 480);
	c.round_lo[CAL_TAIL_JMP] = c.round_hi[CAL_TAIL_JMP] = NAN;
	calib_jmp_hit_range(&c, &lo, &hi);
	CHECK(lo == 480 && hi == 480);
	c.mean_ns[CAL_TAIL_JMP] = 600;       /* noise: never negative */
	CHECK(calib_jmp_hit_cost(&c) == 0);
	c.mean_ns[CAL_TAIL_JMP] = 1140;
	c.cases = 1U << CAL_TAIL_JMP;        /* no ret-exit case to take off */
	CHECK(calib_jmp_hit_cost(&c) == 0);
	c.cases = 1U << CAL_RET;
	calib_jmp_hit_range(&c, &lo, &hi);
	CHECK(calib_jmp_hit_cost(&c) == 0 && lo == 0 && hi == 0);
	/* Calibrated only where some function follows tail calls. */
	CHECK(calib_cases_of(&p) & 1U << CAL_TAIL_JMP);
	p.follows_tails = false;
	CHECK(!(calib_cases_of(&p) & 1U << CAL_TAIL_JMP));
}

/* The tail-jmp case's probe has the sites of a traced tail caller: its jmp, then its callee's ret. */
static void tail_jmp_probe_sites(void)
{
	struct probe p[CAL_NR];
	const struct probe *t = &p[CAL_TAIL_JMP];

	CHECK(calib_self_probes(p, 7) == 0);
	CHECK(t->exit == EXIT_RET && t->nr_exits == 0 && t->follows_tails && t->nr_tails == 2 && t->id == 7 + CAL_TAIL_JMP);
	if (t->nr_tails == 2) {
		CHECK(t->tails[0].jump && !t->tails[0].in_callee && !t->tails[0].untimed);
		CHECK(!t->tails[1].jump && t->tails[1].in_callee && !t->tails[1].untimed);
		CHECK(t->tails[0].offset > t->offset && t->tails[1].offset > t->tails[0].offset);
	}
	CHECK(p[CAL_RET].nr_exits == 1 && !p[CAL_RET].nr_tails);
	CHECK(!strcmp(calib_case_name(CAL_TAIL_JMP), "tail-jmp"));
	calib_free_probes(p);
}

int main(void)
{
	RUN(figures_per_case);
	RUN(case_without_calls);
	RUN(case_not_measured);
	RUN(bias_and_cost_by_exit_mode);
	RUN(cost_bounded_by_calls);
	RUN(bias_range);
	RUN(jmp_hit_price);
	RUN(tail_jmp_probe_sites);
	UNIT_EXIT();
}
