// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"
#include "hist.h"
#include "log.h"
#include "procmaps.h"
#include "tracer.h"

/*
 * Empty functions, one per kind of probe site, written in assembly so that
 * their first instruction is exactly the kind being measured.
 */
__asm__(".text\n"
	".globl fnprof_calib_emulated\n.type fnprof_calib_emulated,@function\n"
	"fnprof_calib_emulated:\n\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"
	".size fnprof_calib_emulated, .-fnprof_calib_emulated\n"
	".globl fnprof_calib_stepped\n.type fnprof_calib_stepped,@function\n"
	"fnprof_calib_stepped:\n\tlea 0x1(%rdi),%rax\n\tret\n"
	".size fnprof_calib_stepped, .-fnprof_calib_stepped\n"
	".globl fnprof_calib_nop5\n.type fnprof_calib_nop5,@function\n"
	"fnprof_calib_nop5:\n\tnopl 0x0(%rax,%rax,1)\n\tret\n"
	".size fnprof_calib_nop5, .-fnprof_calib_nop5\n");

void fnprof_calib_emulated(void);
void fnprof_calib_stepped(void);
void fnprof_calib_nop5(void);

static void (*const calib_fn[SITE_NR])(void) = {
	[SITE_EMULATED] = fnprof_calib_emulated,
	[SITE_STEPPED] = fnprof_calib_stepped,
	[SITE_NOP5] = fnprof_calib_nop5,
};

#define CALIB_CALLS 1000

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ns per call of fn over n calls. */
static double time_calls(void (*fn)(void), unsigned int n)
{
	double t0 = now_ns();
	unsigned int i;

	for (i = 0; i < n; i++)
		fn();
	return (now_ns() - t0) / n;
}

int calib_self_probes(struct probe probes[SITE_NR], __u32 first_id)
{
	const struct mapping *m;
	struct procmaps *pm;
	int k, err;

	err = procmaps_load(getpid(), &pm);
	if (err)
		return err;
	for (k = 0; k < SITE_NR; k++) {
		m = procmaps_find(pm, (uintptr_t)calib_fn[k]);
		if (!m) {
			err = -ENOENT;
			break;
		}
		probes[k] = (struct probe){
			.name = (char *)"calibration", .object = strdup(m->path), .open_path = strdup(m->path),
			.main_exe = true, .offset = (uintptr_t)calib_fn[k] - m->start + m->pgoff,
			.id = first_id + k, .kind = k,
		};
	}
	procmaps_free(pm);
	return err;
}

int calibrate(struct tracer *t, struct calibration *c)
{
	double t0 = now_ns();
	struct fn_stats *st = calloc(1, sizeof(*st));
	int k, err = st ? 0 : -ENOMEM;

	memset(c, 0, sizeof(*c));
	c->calls = CALIB_CALLS;
	for (k = 0; k < SITE_NR && !err; k++) {
		/*
		 * Untraced, a call takes ~1 ns (one instruction and ret): what is
		 * measured, outside and inside the interval, is the probes' own time.
		 */
		time_calls(calib_fn[k], 50);  /* warm up */
		tracer_calibration_stats(t, k, st);
		c->cost_ns[k] = time_calls(calib_fn[k], CALIB_CALLS);
		err = tracer_calibration_stats(t, k, st);
		if (!err && st->calls < CALIB_CALLS)
			err = -EIO;
		if (err)
			break;
		c->bias_ns[k] = hist_percentile(st->hist, st->wall_min, st->wall_max, 50, 0);
		c->min_ns[k] = st->wall_min;
	}
	free(st);
	c->valid = !err;
	c->took_ms = (now_ns() - t0) / 1e6;
	if (err)
		log_warn("probe calibration failed (%s): figures include the probes' own time",
			 strerror(-err));
	return err;
}

void calibration_print(const struct calibration *c, FILE *f)
{
	char b[3][16];
	int k;

	fprintf(f, "probe calibration (%u calls per kind, %.0f ms):\n", c->calls, c->took_ms);
	fprintf(f, "  %-16s %12s %12s %14s\n", "ENTRY", "BIAS", "MIN", "COST/CALL");
	for (k = 0; k < SITE_NR; k++)
		fprintf(f, "  %-16s %12s %12s %14s\n", site_kind_name(k), fmt_ns(c->bias_ns[k], b[0], 16),
			fmt_ns(c->min_ns[k], b[1], 16), fmt_ns(c->cost_ns[k], b[2], 16));
	fprintf(f, "  BIAS: time the probes add inside the measured interval (subtracted from every call);\n"
		   "  COST/CALL: time they add to the traced program per call (the overhead).\n");
}
