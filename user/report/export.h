/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --listen: what fnprof serves while it traces. GET /metrics (Prometheus
 * text, or OpenMetrics when the Accept header asks for it) and GET
 * /debug/pprof/profile?seconds=N (a CPU profile of the traced process, the
 * pprof of --pprof; system-wide, of the processes that map a traced file,
 * or of the one &pid=PID names; with -a or a -p list, of every process,
 * each sample labelled pid and comm). Nothing served changes what is traced.
 */
#ifndef FNPROF_EXPORT_H
#define FNPROF_EXPORT_H

#include <stdbool.h>
#include <sys/types.h>

#include "report/metrics.h"
#include "report/report.h"

struct export_conf {
	const char *listen;          /* ADDR:PORT */
	enum metrics_by by;          /* --by */
	unsigned int max_series;     /* --max-series */
	unsigned int freq_hz;        /* sampling frequency of the profiles served */
	bool dwarf;                  /* and how their user stacks are walked (sampler_conf) */
	unsigned int stack_bytes;
	pid_t pid;                   /* the process profiled; 0: system-wide, ?pid= says which */
	/*
	 * -p P1,P2,...: every process (pids[0] == pid), at most EXPORT_LIST_MAX:
	 * the metrics labelled pid (unless --by says otherwise), a profile of
	 * them all (each sample labelled pid and comm), ?pid= one of them.
	 */
	const pid_t *pids;
	size_t nr_pids;
	bool all;                    /* -a: every process profiled at once, each sample labelled pid and comm */
	size_t max_memory;           /* --max-memory, per profile served (sampler_conf) */
	const struct probe_list *pl; /* the traced functions (must outlive the export) */
};

/* Most processes of a -p list a profile served takes. */
#define EXPORT_LIST_MAX 64

struct export;

/* Starts serving (the address bound is printed). 0, or -errno after a message. */
int export_start(const struct export_conf *conf, struct export **out);

/*
 * Adds one drained interval (a report of its figures: stats in nr_procs
 * blocks, procs naming each block's process, drops, calibration).
 */
void export_add(struct export *e, const struct report *r);

/* Stops serving; safe with NULL. */
void export_stop(struct export *e);

#endif /* FNPROF_EXPORT_H */
