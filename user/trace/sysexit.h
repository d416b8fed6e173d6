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

/*
 * A chooser on the exit_choices map at map_fd, woken by the ring buffer at
 * asks_fd, answering on a thread of its own from now on (attach runs there;
 * it must be safe to call beside the caller's thread). Ret probes are
 * uprobe_multi links. 0 or -errno. Errors in answering are logged with -v: a
 * process that cannot be read stays unanswered (its calls are counted as
 * entered, in DROP_UNCHOSEN).
 */
int sysexit_new(int map_fd, int asks_fd, sysexit_attach_fn attach, void *ctx, struct sysexit **out);

/* The processes answered so far, in order: a copy for the caller to free (NULL and 0: none). */
struct sysexit_proc *sysexit_procs(struct sysexit *s, size_t *nr);

/* Stops answering (joins the thread); the ret probes stay until sysexit_free. NULL is fine. */
void sysexit_stop(struct sysexit *s);

/* Stops, takes the ret probes out and frees s (NULL is fine). */
void sysexit_free(struct sysexit *s);

#endif /* FNPROF_SYSEXIT_H */
