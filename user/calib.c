// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "calib.h"
#include "hist.h"
#include "log.h"
#include "procmaps.h"
#include "tracer.h"

/*
 * Empty functions written in assembly, so that their first instruction is
 * exactly the kind being measured. The last two, like the first, start with
 * push %rbp; they measure the exit modes other than the uretprobe.
 */
#define CALIB_FN(name, body) \
	".globl " #name "\n.type " #name ",@function\n" #name ":\n" body ".size " #name ", .-" #name "\n"
#define PUSH_POP_RET "\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"

__asm__(".text\n"
	CALIB_FN(fnprof_calib_emulated, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_stepped, "\tlea 0x1(%rdi),%rax\n\tret\n")
	CALIB_FN(fnprof_calib_nop5, "\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tret\n")
	CALIB_FN(fnprof_calib_ret, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_entry_only, PUSH_POP_RET));

void fnprof_calib_emulated(void);
void fnprof_calib_stepped(void);
void fnprof_calib_nop5(void);
void fnprof_calib_ret(void);
void fnprof_calib_entry_only(void);

static const struct {
	void (*fn)(void);
	enum site_kind kind;
	enum exit_mode exit;
	const char *name;
} cases[CAL_NR] = {
	[CAL_EMULATED] = { fnprof_calib_emulated, SITE_EMULATED, EXIT_URETPROBE, "emulated" },
	[CAL_STEPPED] = { fnprof_calib_stepped, SITE_STEPPED, EXIT_URETPROBE, "single-stepped" },
	[CAL_NOP5] = { fnprof_calib_nop5, SITE_NOP5, EXIT_URETPROBE, "nop5" },
	[CAL_RET] = { fnprof_calib_ret, SITE_EMULATED, EXIT_RET, "ret-exit" },
	[CAL_ENTRY_ONLY] = { fnprof_calib_entry_only, SITE_EMULATED, EXIT_NONE, "entry-only" },
};

/* The ret of PUSH_POP_RET: 1 + 3 + 1 bytes in. */
#define PUSH_POP_RET_RET_OFF 5

#define CALIB_CALLS 1000
/*
 * Each case's calls are made in rounds, the cases in turn, so that they are
 * spread over the whole calibration (~30 ms): on a virtual machine the
 * probes' time changes from one moment to the next (a single step costs
 * ~9 us for a while, then ~13 us), and one case's calls made in one go
 * would all catch the same moment.
 */
#define CALIB_ROUNDS 10

/* ns per call of fn over n calls. */
static double time_calls(void (*fn)(void), unsigned int n)
{
	double t0 = monotonic_s();
	unsigned int i;

	for (i = 0; i < n; i++)
		fn();
	return (monotonic_s() - t0) * 1e9 / n;
}

int calib_self_probes(struct probe probes[CAL_NR], __u32 first_id)
{
	const struct mapping *m;
	struct procmaps *pm;
	int k, err;

	memset(probes, 0, CAL_NR * sizeof(*probes));
	err = procmaps_load(getpid(), &pm);
	if (err)
		return err;
	for (k = 0; k < CAL_NR && !err; k++) {
		struct probe *p = &probes[k];

		m = procmaps_find(pm, (uintptr_t)cases[k].fn);
		if (!m) {
			err = -ENOENT;
			break;
		}
		*p = (struct probe){
			.name = (char *)"calibration", .object = strdup(m->path), .open_path = strdup(m->path),
			.main_exe = true, .offset = (uintptr_t)cases[k].fn - m->start + m->pgoff,
			.id = first_id + k, .kind = cases[k].kind, .exit = cases[k].exit,
		};
		if (p->exit == EXIT_RET) {
			p->exits = malloc(sizeof(*p->exits));
			p->nr_exits = p->exits ? 1 : 0;
			if (p->exits)
				p->exits[0] = p->offset + PUSH_POP_RET_RET_OFF;
		}
		if (!p->object || !p->open_path || (p->exit == EXIT_RET && !p->exits))
			err = -ENOMEM;
	}
	procmaps_free(pm);
	return err;
}

void calib_free_probes(struct probe probes[CAL_NR])
{
	int k;

	for (k = 0; k < CAL_NR; k++) {
		free(probes[k].object);
		free(probes[k].open_path);
		free(probes[k].exits);
	}
}

/* The figures of every case from the calls pooled so far. */
static void calib_figures(struct calibration *c)
{
	const struct fn_stats *st;
	int k;

	for (k = 0; k < CAL_NR; k++) {
		st = &c->pooled[k];
		c->cost_ns[k] = c->time_ns[k] / (c->calls ? c->calls : 1);
		if (cases[k].exit == EXIT_NONE || !st->calls)
			continue;
		c->bias_ns[k] = hist_percentile(st->hist, st->wall_min, st->wall_max, 50, 0);
		c->mean_ns[k] = hist_trimmed_mean(st->hist, 99);
		c->min_ns[k] = st->wall_min;
	}
}

/* One calibration's calls, pooled into c. */
static int calib_run(struct tracer *t, struct calibration *c)
{
	struct fn_stats *st = calloc(1, sizeof(*st));
	int r, k, err = st ? 0 : -ENOMEM;

	for (k = 0; k < CAL_NR && !err; k++)
		time_calls(cases[k].fn, 50);  /* warm up */
	for (r = 0; r < CALIB_ROUNDS && !err; r++) {
		for (k = 0; k < CAL_NR && !err; k++) {
			/*
			 * Untraced, a call takes ~1 ns (a few instructions and ret): what is
			 * measured, outside and inside the interval, is the probes' own time.
			 */
			err = tracer_calibration_stats(t, k, st);  /* clears what came before */
			c->time_ns[k] += time_calls(cases[k].fn, CALIB_CALLS / CALIB_ROUNDS) * (CALIB_CALLS / CALIB_ROUNDS);
			if (!err)
				err = tracer_calibration_stats(t, k, st);
			if (!err && st->calls < CALIB_CALLS / CALIB_ROUNDS)
				err = -EIO;
			if (!err)
				fn_stats_merge(&c->pooled[k], st);
		}
	}
	free(st);
	if (!err) {
		c->calls += CALIB_CALLS;
		c->runs++;
		calib_figures(c);
	}
	return err;
}

int calibrate(struct tracer *t, struct calibration *c)
{
	double t0 = monotonic_s();
	int err;

	memset(c, 0, sizeof(*c));
	err = calib_run(t, c);
	c->valid = !err;
	c->took_ms = (monotonic_s() - t0) * 1e3;
	if (err)
		log_warn("probe calibration failed (%s): figures include the probes' own time",
			 strerror(-err));
	return err;
}

int calibrate_again(struct tracer *t, struct calibration *c)
{
	struct calibration more = *c;
	double t0 = monotonic_s();
	int err;

	if (!c->valid)
		return -EINVAL;
	/* On failure c keeps what it had: a calibration that worked. */
	err = calib_run(t, &more);
	if (!err) {
		more.took_ms += (monotonic_s() - t0) * 1e3;
		*c = more;
	}
	return err;
}

/* Exit modes other than the uretprobe: their difference from it, measured on an emulated entry. */
static double exit_delta(const double *v, enum exit_mode m)
{
	if (m == EXIT_RET)
		return v[CAL_RET] - v[CAL_EMULATED];
	if (m == EXIT_NONE)
		return v[CAL_ENTRY_ONLY] - v[CAL_EMULATED];
	return 0;
}

static double bias_of(const double *v, const struct probe *p)
{
	double b = v[p->kind] + exit_delta(v, p->exit);

	return p->exit == EXIT_NONE || b < 0 ? 0 : b;
}

double calib_bias(const struct calibration *c, const struct probe *p)
{
	return bias_of(c->mean_ns, p);
}

double calib_bias_median(const struct calibration *c, const struct probe *p)
{
	return bias_of(c->bias_ns, p);
}

double calib_cost(const struct calibration *c, const struct probe *p)
{
	double v = c->cost_ns[p->kind] + exit_delta(c->cost_ns, p->exit);

	return v < 0 ? 0 : v;
}

const char *calib_case_name(enum calib_case k)
{
	return k < CAL_NR ? cases[k].name : "?";
}

void calibration_print(const struct calibration *c, FILE *f)
{
	char b[4][16];
	int k;

	fprintf(f, "probe calibration (%u calls per case in %u rounds, %.0f ms):\n", c->calls,
		c->runs * CALIB_ROUNDS, c->took_ms);
	fprintf(f, "  %-16s %-10s %10s %10s %10s %12s\n", "ENTRY", "EXIT", "BIAS", "MEAN", "MIN", "COST/CALL");
	for (k = 0; k < CAL_NR; k++)
		fprintf(f, "  %-16s %-10s %10s %10s %10s %12s\n", site_kind_name(cases[k].kind),
			exit_mode_name(cases[k].exit), fmt_ns(cases[k].exit == EXIT_NONE ? -1 : c->bias_ns[k], b[0], 16),
			fmt_ns(cases[k].exit == EXIT_NONE ? -1 : c->mean_ns[k], b[3], 16),
			fmt_ns(cases[k].exit == EXIT_NONE ? -1 : c->min_ns[k], b[1], 16),
			fmt_ns(c->cost_ns[k], b[2], 16));
	fprintf(f, "  BIAS: time the probes add inside the measured interval, median (subtracted from percentiles);\n"
		   "  MEAN: its mean over the fastest 99%% (subtracted from sums and averages);\n"
		   "  COST/CALL: time they add to the traced program per call (the overhead).\n");
}
