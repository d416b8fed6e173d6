/* SPDX-License-Identifier: GPL-2.0 */
/* Per-call counters (-e): event names, per-CPU perf counters, what this machine can count. */
#ifndef FNPROF_EVENTS_H
#define FNPROF_EVENTS_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "fnprof.h"

#define MAX_EVENTS 16

/* Where an event's per-call count comes from. */
enum event_source {
	SRC_COUNTER,      /* a perf counter read by the probes (slot in the BPF counter array) */
	SRC_CSW,          /* context switches, from sched_switch (exact, voluntary + involuntary) */
	SRC_MIGRATIONS,   /* CPU migrations, from sched_switch */
	SRC_ONCPU,        /* task-clock: the on-CPU time the tracer measures anyway */
};

struct event {
	char name[32];
	__u32 type;
	__u64 config;
	enum event_source src;
	int slot;           /* SRC_COUNTER: index into fn_stats.ctr */
	bool available;
	char why[160];      /* why not available */
};

struct events {
	struct event ev[MAX_EVENTS];
	size_t nr;
	int nr_slots;       /* perf counters the BPF side reads */
	int nr_cpus;
	int *fds;           /* [slot * nr_cpus + cpu], -1 where not open */
};

/* Parses "-e cycles,page-faults,r01c2". 0, or -EINVAL after a message. */
int events_parse(const char *list, struct events *evs);

/*
 * Opens the counters on every CPU. Unavailable events are reported once, on
 * stderr, and dropped; 0 if at least one event can be counted, else -ENODEV
 * (or -ENOMEM).
 */
int events_open(struct events *evs, int nr_cpus);
void events_close(struct events *evs);

/* --list-events: every known event, and whether and why not it can be counted here. */
int events_list(FILE *f);

/* The event named, or NULL. */
const struct event *events_find(const struct events *evs, const char *name);

#endif /* FNPROF_EVENTS_H */
