/* SPDX-License-Identifier: GPL-2.0 */
/* Turns -f patterns into probe sites: object, function, file offset. */
#ifndef FNPROF_RESOLVE_H
#define FNPROF_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "target/probe.h"

/* What to resolve. */
struct resolve_conf {
	const char *const *funcs;  /* -f patterns: NAME, LIB:NAME, /path:NAME, globs */
	size_t nr_funcs;
	char *const *cmd;          /* the command about to be launched, or NULL (attach mode) */
	enum exit_mode exit_mode;  /* --exit, --entry-only: EXIT_AUTO chooses per function */
	bool system_wide;          /* no process: the objects as the host sees them (pid is 0) */
	bool counters;             /* -e: per-thread counts, which Go functions cannot have */
	bool step_pair;            /* single-stepped entries paired with a twin probe where they can be */
	bool reads_args;           /* the entry programs read the argument registers (the heap profile's):
				    * an entry probe moved past instructions moves past none that write them */
	const char *followed;      /* a script followed through exec: /proc/PID/exe of the child, stopped
				    * right after it exec'd the program to trace (its main executable), or NULL */
};

/*
 * Resolves conf->funcs for process pid (attach mode) or for the command
 * conf->cmd about to be launched (pid is its pid; its libraries are not mapped
 * yet, so they are found through DT_NEEDED). 0, or -errno after the error
 * was printed.
 */
int resolve_probes(const struct resolve_conf *conf, pid_t pid, struct probe_list *out);

/*
 * Whether the program at exe (real_path: its name) is the one to trace when
 * following a script: it has a function for every -f NAME of the main
 * executable; with only LIB:NAME patterns, any program but a wrapper.
 */
bool resolve_program_fits(const struct resolve_conf *conf, const char *exe, const char *real_path);

/*
 * Whether the program at path (or the file it links to) is a wrapper: a
 * shell, or a program that sets something up and runs the command it is
 * given (env, nice, taskset, timeout...), to follow to the program it runs.
 */
bool resolve_is_wrapper(const char *path);

/* Splits "LIB:NAME" / "/path:NAME" / "NAME" (a C++ "a::b" is a name). obj is NULL for NAME. */
void split_func_spec(const char *spec, char *obj, size_t obj_size, const char **name);

/* The file execvp would run for cmd (PATH search), into buf. 0 or -ENOENT. */
int find_in_path(const char *cmd, char *buf, size_t size);

#endif /* FNPROF_RESOLVE_H */
