/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The run's target: the process it watches (given with -p, or the command
 * it launched) and the program the probes are for. A command that is a
 * script or a wrapper is followed through exec to the program to trace; a
 * target that execs another program later ends the run, since its probes
 * were on the old program's file. Messages are printed here; the return
 * convention is each function's.
 */
#ifndef FNPROF_FOLLOW_H
#define FNPROF_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "target/launch.h"

/* The process traced, none system-wide or with -a (pid 0). run.c sets it up; follow.c follows it. */
struct run_target {
	char **cmd;                 /* the command launched, NULL-terminated; NULL with -p */
	size_t nr_pids;             /* -p P1,P2,...: how many (the others are the tracer's) */
	const pid_t *pids;          /* -p P1,P2,...: all of them (the opts'), pids[0] is pid */
	pid_t pid;                  /* the process watched: -p's first, the command, or the program followed to */
	int pidfd;                  /* pid's, to poll for its exit and signal it; -1: none yet */
	struct child child;
	struct launch_signals sigs; /* as fnprof started: the command gets them back */
	char followed[64];          /* a script followed through exec: /proc/PID/exe of the program traced */
	dev_t exe_dev;              /* the program being traced, to notice an exec */
	ino_t exe_ino;
	bool exe_seen;              /* pid ran it once: an exec after that ends the run */
	bool exited;                /* pid exited; --follow-forks: the run goes on while fork children live */
	bool gone;                  /* the run ends: pid (and its traced children) exited, or pid exec'd */
	bool child_reaped;          /* the command's wait status is child_status */
	int child_status;
	/* pid's CPU time (a reaped command's: its rusage): at the start, at the last report, now */
	__u64 cpu_start, cpu_last, cpu_now;
	bool cpu_known;
};

/* The program traced: the one a script was followed to, the command, or the process's. */
void follow_program_path(const struct run_target *t, char *path, size_t size);

/* The program the probes are for: what /proc/PID/exe must stay (follow_exec_away). */
void follow_remember_exe(struct run_target *t);

/* Whether the command is a script or wrapper to follow to its program (with nr_funcs functions to trace). */
bool follow_needed(const struct run_target *t, size_t nr_funcs);

/*
 * Whether launching the command stops it at an exec: a script or wrapper's
 * (follow_needed), or with the compat trace object any command's, whose
 * probes' addresses are read from the program's mappings (bpf/compat.bpf.h),
 * which exist once it has exec'd.
 */
bool follow_to_exec(const struct run_target *t, size_t nr_funcs);

/*
 * Launch mode with a script or a wrapper (a shebang script, env, nice,
 * sh -c, timeout): the command runs, traced with ptrace, up to the exec of
 * the program with the functions (funcs, -f's patterns), and waits there
 * while the probes go in; t->followed and t->pid name that program.
 * 0, or EXIT_FAIL (said).
 */
int follow_to_program(struct run_target *t, const char *const *funcs, size_t nr_funcs);

/*
 * Whether pid exec'd another program than the one remembered (said; t->gone
 * set): the probes are on the old program's file, so the run ends there. A
 * launched command counts as started once its own program shows.
 */
bool follow_exec_away(struct run_target *t);

#endif /* FNPROF_FOLLOW_H */
