/* SPDX-License-Identifier: GPL-2.0 */
/* Launch mode: start a command that waits until the probes are in place. */
#ifndef FNPROF_LAUNCH_H
#define FNPROF_LAUNCH_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

struct child {
	pid_t pid;
	int go_fd;          /* write end: a byte lets the child exec */
	bool released;
};

/*
 * Forks; the child waits on a pipe, then execs cmd (PATH search) with the
 * caller's stdin/stdout/stderr, as the invoking user under sudo. 0 or -errno.
 */
int launch_prepare(char **cmd, struct child *c);

/* Lets the child exec. */
int launch_release(struct child *c);

/* Kills a child that was never released (setup failed) and reaps it. */
void launch_abort(struct child *c);

/* The exit code a shell would give for a wait status (128+N for signal N). */
int launch_exit_code(int status);

#endif /* FNPROF_LAUNCH_H */
