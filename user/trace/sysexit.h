/* SPDX-License-Identifier: GPL-2.0 */
/*
 * System-wide exits chosen per process (uprobe sessions, Linux 6.13+): a
 * process's first call of a session-entered function asks (fn_session
 * marks it pending in the exit_choices map and wakes fnprof); this module
 * reads its program (target/procexit.h) and answers: the session's return
 * (a uretprobe, no single step) where a hijacked return address is safe,
 * else ret probes attached in that process alone, before the answer.
 */
#ifndef FNPROF_SYSEXIT_H
#define FNPROF_SYSEXIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "fnprof.h"

struct sysexit;
struct uprobe_set;

/* One process that was answered: which exit its calls take, and why. */
struct sysexit_proc {
	pid_t pid;
	char comm[FNPROF_COMM_LEN];
	bool ret;          /* ret probes (unsafe for a uretprobe); else the session's return */
	const char *why;   /* ret: what makes a uretprobe unsafe there (static) */
};

/* Attaches the ret probes of every session-entered function in process pid into set: 0 or -errno. */
typedef int (*sysexit_attach_fn)(void *ctx, pid_t pid, struct uprobe_set *set);

/* A chooser on the exit_choices map at map_fd; sets are uprobe_multi links. 0 or -ENOMEM. */
int sysexit_new(int map_fd, sysexit_attach_fn attach, void *ctx, struct sysexit **out);

/*
 * Answers every process that asked since, and forgets those that exited
 * (their entries are taken out of the map). Errors are logged with -v: a
 * process that cannot be read stays unanswered (its calls counted in
 * DROP_UNCHOSEN).
 */
void sysexit_choose(struct sysexit *s);

/* The processes answered so far, in order; the array stays the chooser's. */
const struct sysexit_proc *sysexit_procs(const struct sysexit *s, size_t *nr);

/* Takes the ret probes out and frees s (NULL is fine). */
void sysexit_free(struct sysexit *s);

#endif /* FNPROF_SYSEXIT_H */
