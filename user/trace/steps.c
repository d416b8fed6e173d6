// SPDX-License-Identifier: GPL-2.0
#include <sys/resource.h>

#include "base/clock.h"
#include "trace/steps.h"

#define MAX_STEPS 24

static struct {
	const char *name[MAX_STEPS];
	double wall_ms[MAX_STEPS], cpu_ms[MAX_STEPS];
	int nr;
	double wall0, cpu0;   /* at the previous mark */
} st;

static double process_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

void steps_begin(void)
{
	st.nr = 0;
	st.wall0 = monotonic_s() * 1e3;
	st.cpu0 = process_cpu_ms();
}

void steps_skip(void)
{
	st.wall0 = monotonic_s() * 1e3;
	st.cpu0 = process_cpu_ms();
}

void steps_mark(const char *name)
{
	double wall = monotonic_s() * 1e3, cpu = process_cpu_ms();

	if (st.nr < MAX_STEPS && st.wall0) {
		st.name[st.nr] = name;
		st.wall_ms[st.nr] = wall - st.wall0;
		st.cpu_ms[st.nr++] = cpu - st.cpu0;
	}
	st.wall0 = wall;
	st.cpu0 = cpu;
}

int steps_count(void)
{
	return st.nr;
}

void steps_get(int i, const char **name, double *wall_ms, double *cpu_ms)
{
	*name = st.name[i];
	*wall_ms = st.wall_ms[i];
	*cpu_ms = st.cpu_ms[i];
}

void steps_print(FILE *f)
{
	double wall = 0, cpu = 0;
	int i;

	if (!st.nr)
		return;
	fprintf(f, "fnprof: steps:");
	for (i = 0; i < st.nr; i++) {
		fprintf(f, "%s %s %.1f ms (cpu %.1f)", i ? "," : "", st.name[i], st.wall_ms[i], st.cpu_ms[i]);
		wall += st.wall_ms[i];
		cpu += st.cpu_ms[i];
	}
	fprintf(f, "; total %.1f ms (cpu %.1f)\n", wall, cpu);
}
