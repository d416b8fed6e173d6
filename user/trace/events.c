// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trace/events.h"
#include "base/log.h"

struct known_event {
	const char *name, *alias;
	__u32 type;
	__u64 config;
	enum event_source src;
	const char *desc;
};

static const struct known_event known[] = {
	{ "cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, SRC_COUNTER, "CPU cycles" },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, SRC_COUNTER, "instructions retired" },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, SRC_COUNTER, "mispredicted branches" },
	{ "branch-instructions", "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, SRC_COUNTER, "branches retired" },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, SRC_COUNTER, "last-level cache misses" },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, SRC_COUNTER, "last-level cache accesses" },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, SRC_COUNTER, "page faults, minor and major" },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, SRC_COUNTER, "page faults served without I/O" },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, SRC_COUNTER, "page faults that needed I/O" },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, SRC_CSW, "context switches (from sched_switch)" },
	{ "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, SRC_MIGRATIONS, "CPU migrations (from sched_switch)" },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, SRC_ONCPU, "on-CPU time, ns (from sched_switch)" },
};

#define NR_KNOWN (sizeof(known) / sizeof(known[0]))

/* rNNNN: a raw PMU event code in hex, as perf accepts it. */
static bool parse_raw(const char *name, __u64 *config)
{
	char *end;

	if (name[0] != 'r' || !name[1])
		return false;
	errno = 0;
	*config = strtoull(name + 1, &end, 16);
	return !errno && !*end;
}

static int add_event(struct events *evs, const char *name)
{
	struct event *e;
	__u64 raw;
	size_t i;

	if (events_find(evs, name))
		return 0;
	if (evs->nr == MAX_EVENTS) {
		log_err("too many events in -e (at most %d)", MAX_EVENTS);
		return -EINVAL;
	}
	e = &evs->ev[evs->nr];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	for (i = 0; i < NR_KNOWN; i++) {
		if (!strcmp(name, known[i].name) || (known[i].alias && !strcmp(name, known[i].alias))) {
			snprintf(e->name, sizeof(e->name), "%s", known[i].name);
			e->type = known[i].type;
			e->config = known[i].config;
			e->src = known[i].src;
			break;
		}
	}
	if (i == NR_KNOWN) {
		if (!parse_raw(name, &raw)) {
			log_err("unknown event '%s' (see fnprof --list-events)", name);
			return -EINVAL;
		}
		e->type = PERF_TYPE_RAW;
		e->config = raw;
		e->src = SRC_COUNTER;
	}
	evs->nr++;
	return 0;
}

int events_parse(const char *list, struct events *evs)
{
	char buf[512], *tok, *save = NULL;
	int err = 0;

	memset(evs, 0, sizeof(*evs));
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save))
		err = add_event(evs, tok);
	if (!err && !evs->nr) {
		log_err("-e needs at least one event name");
		err = -EINVAL;
	}
	return err;
}

const struct event *events_find(const struct events *evs, const char *name)
{
	size_t i;

	for (i = 0; i < evs->nr; i++)
		if (!strcmp(evs->ev[i].name, name))
			return &evs->ev[i];
	return NULL;
}

static int perf_open(__u32 type, __u64 config, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = type, .config = config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void explain(struct event *e, int err)
{
	const char *why;

	if (e->type == PERF_TYPE_HARDWARE || e->type == PERF_TYPE_RAW)
		why = err == ENOENT || err == EOPNOTSUPP || err == ENODEV
			      ? "no hardware PMU on this machine (virtual machines often have none)"
			      : "the PMU refused it";
	else
		why = "the kernel refused it";
	snprintf(e->why, sizeof(e->why), "%s: perf_event_open: %s", why, strerror(err));
}

/* Opens event e on every online CPU; false (and why) if it cannot be counted. */
static bool open_on_all_cpus(struct events *evs, struct event *e, int *fds)
{
	int cpu, opened = 0, err = 0;

	for (cpu = 0; cpu < evs->nr_cpus; cpu++) {
		fds[cpu] = perf_open(e->type, e->config, cpu);
		if (fds[cpu] >= 0)
			opened++;
		else if (errno != ENODEV)  /* ENODEV: CPU offline */
			err = errno;
	}
	if (opened && !err)
		return true;
	for (cpu = 0; cpu < evs->nr_cpus; cpu++)
		if (fds[cpu] >= 0)
			close(fds[cpu]);
	explain(e, err ? err : ENODEV);
	return false;
}

static void report_unavailable(const struct events *evs)
{
	size_t i;

	for (i = 0; i < evs->nr; i++)
		if (!evs->ev[i].available)
			log_warn("cannot count %s: %s", evs->ev[i].name, evs->ev[i].why);
}

int events_open(struct events *evs, int nr_cpus)
{
	size_t i, usable = 0;

	evs->nr_cpus = nr_cpus;
	evs->fds = malloc(MAX_EVENTS * nr_cpus * sizeof(int));
	if (!evs->fds)
		return -ENOMEM;
	for (i = 0; i < evs->nr; i++) {
		struct event *e = &evs->ev[i];

		if (e->src != SRC_COUNTER) {
			e->available = true;
		} else if (evs->nr_slots < FNPROF_MAX_EVENTS &&
			   open_on_all_cpus(evs, e, &evs->fds[evs->nr_slots * nr_cpus])) {
			e->available = true;
			e->slot = evs->nr_slots++;
		} else if (evs->nr_slots == FNPROF_MAX_EVENTS) {
			snprintf(e->why, sizeof(e->why), "at most %d perf counters at once", FNPROF_MAX_EVENTS);
		}
		usable += e->available;
	}
	report_unavailable(evs);
	if (!usable) {
		log_err("none of the requested events can be counted on this machine");
		return -ENODEV;
	}
	return 0;
}

void events_close(struct events *evs)
{
	int i;

	for (i = 0; evs->fds && i < evs->nr_slots * evs->nr_cpus; i++)
		if (evs->fds[i] >= 0)
			close(evs->fds[i]);
	free(evs->fds);
	evs->fds = NULL;
}

int events_list(FILE *f)
{
	size_t i;

	fprintf(f, "%-20s %-10s %-11s %s\n", "EVENT", "KIND", "AVAILABLE", "WHAT / WHY NOT");
	for (i = 0; i < NR_KNOWN; i++) {
		struct event e = { .type = known[i].type, .config = known[i].config };
		int fd = known[i].src == SRC_COUNTER ? perf_open(e.type, e.config, 0) : 0;
		bool ok = fd >= 0;

		if (fd > 0)
			close(fd);
		else if (fd < 0)
			explain(&e, errno);
		fprintf(f, "%-20s %-10s %-11s %s\n", known[i].name,
			known[i].type == PERF_TYPE_HARDWARE ? "hardware" : "software", ok ? "yes" : "no",
			ok ? known[i].desc : e.why);
	}
	fprintf(f, "%-20s %-10s %-11s %s\n", "rNNNN", "raw", "-", "a raw PMU event code in hex, as perf takes it");
	return 0;
}
