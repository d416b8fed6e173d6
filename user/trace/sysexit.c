// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/log.h"
#include "target/procexit.h"
#include "trace/sysexit.h"
#include "trace/uprobes.h"

/* At most this many processes are listed in the report (the rest are counted in the map only). */
#define SYSEXIT_MAX_PROCS 4096

struct sysexit {
	int map_fd;
	sysexit_attach_fn attach;
	void *ctx;
	struct ring_buffer *asks;   /* the processes' questions wake the thread */
	pthread_t thread;
	bool started;
	volatile int stop;
	pthread_mutex_t lock;       /* procs: the thread adds, the reports copy */
	struct sysexit_proc *procs;
	size_t nr, cap;
	struct uprobe_set **sets;   /* the ret probes of each process that took them */
	pid_t *set_pids;            /* whose (0: the process has exited, the set is to close) */
	size_t nr_sets, cap_sets, cap_pids, nr_dead;
};

/*
 * Sets of exited processes closed together, once there are this many: each
 * close waits for a grace period, and waits begun at once overlap. Until
 * then a link holds its task's memory (a few KiB).
 */
#define DEAD_SETS_BATCH 32

static int on_ask(void *ctx, void *data, size_t size)
{
	(void)ctx, (void)data, (void)size;
	return 0;  /* a wake-up only: the questions are read from the map */
}

static void choose(struct sysexit *s);

/*
 * Answers as soon as a process asks, whatever the main loop is doing (a
 * report, a calibration round, a scrape): its calls are not timed until
 * then. Every 100 ms anyway, for the exited processes and the children that
 * took their parent's answer.
 */
static void *run(void *arg)
{
	struct sysexit *s = arg;

	while (!s->stop) {
		ring_buffer__poll(s->asks, 100);
		choose(s);
	}
	return NULL;
}

int sysexit_new(int map_fd, int asks_fd, sysexit_attach_fn attach, void *ctx, struct sysexit **out)
{
	struct sysexit *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->map_fd = map_fd;
	s->attach = attach;
	s->ctx = ctx;
	pthread_mutex_init(&s->lock, NULL);
	s->asks = ring_buffer__new(asks_fd, on_ask, NULL, NULL);
	err = s->asks ? -pthread_create(&s->thread, NULL, run, s) : -errno;
	s->started = !err;
	if (err) {
		sysexit_free(s);
		return err;
	}
	*out = s;
	return 0;
}

/* Ret probes in process pid, kept until the end. 0 or -errno. */
static int attach_rets(struct sysexit *s, pid_t pid)
{
	struct uprobe_set *set;
	int err;

	if (ARRAY_RESERVE(s->sets, s->nr_sets + 1, s->cap_sets) || ARRAY_RESERVE(s->set_pids, s->nr_sets + 1, s->cap_pids) ||
	    !(set = calloc(1, sizeof(*set))))
		return -ENOMEM;
	set->multi = true;
	set->quiet = true;
	err = s->attach(s->ctx, pid, set);
	if (err) {
		uprobes_free(set);
		free(set);
		return err;
	}
	s->set_pids[s->nr_sets] = pid;
	s->sets[s->nr_sets++] = set;
	return 0;
}

/* Closes the sets of exited processes (set_pids 0) together, and keeps the others. */
static void close_dead(struct sysexit *s)
{
	struct uprobe_set **dead = calloc(s->nr_dead, sizeof(*dead));
	size_t i, k = 0, n = 0;

	if (!dead)
		return;
	for (i = 0; i < s->nr_sets; i++) {
		if (!s->set_pids[i]) {
			dead[n++] = s->sets[i];
			continue;
		}
		s->set_pids[k] = s->set_pids[i];
		s->sets[k++] = s->sets[i];
	}
	s->nr_sets = k;
	uprobes_free_all(dead, n);
	for (i = 0; i < n; i++)
		free(dead[i]);
	free(dead);
	s->nr_dead = 0;
}

/* Process pid has exited: its ret probes are closed with the next batch. */
static void forget(struct sysexit *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nr_sets; i++)
		if (s->set_pids[i] == pid) {
			s->set_pids[i] = 0;
			s->nr_dead++;
		}
	if (s->nr_dead >= DEAD_SETS_BATCH)
		close_dead(s);
}

/* The process's entry in the list: its own (an exec asks again), or a new one; NULL when full. */
static struct sysexit_proc *entry_of(struct sysexit *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (s->nr >= SYSEXIT_MAX_PROCS || ARRAY_RESERVE(s->procs, s->nr + 1, s->cap))
		return NULL;
	return &s->procs[s->nr++];
}

/* Process pid, named comm when it asked, took ret probes for why (NULL: the uretprobe). */
static void remember(struct sysexit *s, pid_t pid, const char *comm, const char *why)
{
	struct sysexit_proc *p;

	pthread_mutex_lock(&s->lock);
	p = entry_of(s, pid);
	if (p) {
		*p = (struct sysexit_proc){ .pid = pid, .ret = why != NULL, .why = why };
		snprintf(p->comm, sizeof(p->comm), "%.*s", (int)sizeof(p->comm) - 1, comm);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Answers process pid, which asked with v (its exec_id kept: an exec since asks again). */
static void answer(struct sysexit *s, pid_t pid, struct exit_choice_val v)
{
	double t0 = monotonic_s(), t1;
	int err;
	const char *why = procexit_unsafe(pid, &err);

	t1 = monotonic_s();

	if (err) {
		log_debug("process %d: its exit is not chosen (%s): its calls are not timed", pid, strerror(-err));
		return;
	}
	/* Its ret probes are in before it is told to decline the return: none of its calls is left open. */
	if (why && (err = attach_rets(s, pid))) {
		log_debug("process %d (%s): no ret probes (%s): its calls are not timed", pid, why, strerror(-err));
		return;
	}
	v.choice = why ? EXIT_CHOICE_RET : EXIT_CHOICE_URET;
	v.listed = 1;
	if (bpf_map_update_elem(s->map_fd, &pid, &v, BPF_EXIST))
		return;
	remember(s, pid, v.comm, why);
	log_debug("process %d: %s%s (read in %.2f ms, answered in %.2f ms)", pid,
		  why ? "ret probes: a uretprobe is unsafe there: " : "uretprobe exits", why ? why : "",
		  (t1 - t0) * 1e3, (monotonic_s() - t0) * 1e3);
}

/* Answers every process that asked since, and forgets those that exited. */
static void choose(struct sysexit *s)
{
	struct exit_choice_val v;
	__u32 key, *prev = NULL;
	__u32 gone[64];
	size_t i, nr_gone = 0;

	while (!bpf_map_get_next_key(s->map_fd, prev, &key)) {
		prev = &key;
		if (bpf_map_lookup_elem(s->map_fd, &key, &v))
			continue;
		if (kill(key, 0) && errno == ESRCH) {
			if (nr_gone < sizeof(gone) / sizeof(gone[0]))
				gone[nr_gone++] = key;
		} else if (v.choice == EXIT_CHOICE_PENDING) {
			answer(s, key, v);
		} else if (!v.listed) {
			/* A fork child that took its parent's exit in the kernel. */
			v.listed = 1;
			if (!bpf_map_update_elem(s->map_fd, &key, &v, BPF_EXIST))
				remember(s, key, v.comm, v.choice == EXIT_CHOICE_RET ? "?" : NULL);
		}
	}
	/* After the walk: a deletion during it would restart it. */
	for (i = 0; i < nr_gone; i++) {
		bpf_map_delete_elem(s->map_fd, &gone[i]);
		forget(s, gone[i]);
	}
}

struct sysexit_proc *sysexit_procs(struct sysexit *s, size_t *nr)
{
	struct sysexit_proc *copy = NULL;

	*nr = 0;
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (s->nr && (copy = malloc(s->nr * sizeof(*copy)))) {
		memcpy(copy, s->procs, s->nr * sizeof(*copy));
		*nr = s->nr;
	}
	pthread_mutex_unlock(&s->lock);
	return copy;
}

void sysexit_stop(struct sysexit *s)
{
	if (!s || !s->started)
		return;
	s->stop = 1;
	pthread_join(s->thread, NULL);
	s->started = false;
}

void sysexit_free(struct sysexit *s)
{
	size_t i;

	if (!s)
		return;
	sysexit_stop(s);
	ring_buffer__free(s->asks);
	pthread_mutex_destroy(&s->lock);
	uprobes_free_all(s->sets, s->nr_sets);
	for (i = 0; i < s->nr_sets; i++)
		free(s->sets[i]);
	free(s->sets);
	free(s->set_pids);
	free(s->procs);
	free(s);
}
