/* SPDX-License-Identifier: GPL-2.0 */
/* Launch mode: start a command that waits until the probes are in place. */
#ifndef FNPROF_LAUNCH_H
#define FNPROF_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

/*
 * The signal dispositions and mask fnprof started with, for the command to
 * start with too; and its RLIMIT_NOFILE, which fnprof raises for itself.
 */
struct launch_signals {
	sigset_t mask;
	bool ignored[NSIG];
	struct rlimit nofile;
};

/* Records them: call before fnprof installs its own handlers and raises its limit. */
void launch_save_signals(struct launch_signals *s);

/* Who the command runs as: under sudo, the invoking user. */
struct run_as {
	bool drop;          /* false: as fnprof (root without sudo, or sudo from root) */
	uid_t uid;
	gid_t gid;
	gid_t *groups;      /* that user's supplementary groups */
	int nr_groups;
	char *name, *home;  /* for USER, LOGNAME and HOME */
};

struct child {
	pid_t pid;
	int go_fd;          /* write end: a byte lets the child exec */
	bool released;
	bool following;     /* ptraced until it execs the program to trace */
	pid_t program;      /* following: the process stopped at its latest exec (pid, or a fork child's) */
	pid_t traced[16];   /* following: the processes ptrace follows (the command, its fork children) */
	size_t nr_traced;
	bool exited;        /* following: the command exited (reaped: status) before its fork child exec'd */
	int status;
	struct launch_signals sigs;
	struct run_as user;
};

/*
 * Forks; the child waits on a pipe, then execs cmd (PATH search) with the
 * caller's stdin/stdout/stderr and the signal dispositions and mask of sigs,
 * as the invoking user under sudo (SUDO_UID, SUDO_GID: an unparsable one or
 * an unknown user is an error, never a command run as root). 0 or -errno
 * (after a message for a bad SUDO_UID or SUDO_GID).
 */
int launch_prepare(char **cmd, const struct launch_signals *sigs, struct child *c);

/* Frees what launch_prepare looked up (the child is left alone). */
void launch_free(struct child *c);

/* Lets the child exec. */
int launch_release(struct child *c);

/*
 * Following a script through exec: the command may be a shebang script or a
 * wrapper that execs the real program (env, nice, sh -c), or forks a child
 * that does (timeout, a shell's command before its last), and the probes
 * belong to the program that finally runs. launch_follow_start traces the
 * child (ptrace: exec and fork events, up to 16 processes) and releases it;
 * each launch_follow_next lets them run to the next exec of any of them and
 * returns 0 with that one (c->program) stopped there, right after the exec
 * (its new program mapped, nothing of it run yet; c->exited when the command
 * itself exited meanwhile, as `sh -c 'prog &'` does), or -ESRCH with the
 * command's wait status when it and every process it forked exited first.
 * launch_follow_stop lets them all go on untraced. 0 or -errno.
 */
int launch_follow_start(struct child *c);
int launch_follow_next(struct child *c, int *status);
int launch_follow_stop(struct child *c);
/* Lets c->program go on untraced, when it is a fork child of the command that runs another program. */
void launch_follow_release(struct child *c);

/* Whether the file at path is a script, not an ELF program: it runs through an interpreter. */
bool launch_is_script(const char *path);

/* Kills a child that was never released (setup failed) and reaps it. */
void launch_abort(struct child *c);

/* The exit code a shell would give for a wait status (128+N for signal N). */
int launch_exit_code(int status);

#endif /* FNPROF_LAUNCH_H */
