/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The profiles other than CPU sampling (--profile offcpu, mutex, heap): each
 * counts weighted stacks in the kernel; this module reads them, symbolizes,
 * and prints the top-functions table, JSON and pprof files of each.
 */
#ifndef FNPROF_PROFILES_H
#define FNPROF_PROFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#include "stacks/prof_kind.h"

struct profiles;

/* Loads and attaches the profiles of c->kinds for process pid. 0 or -errno (message printed). */
int profiles_start(const struct prof_conf *c, pid_t pid, struct profiles **out);

/* Launch mode, just before the command is let go: what happens from now on counts. */
void profiles_arm(struct profiles *p);

/*
 * One report per profile for the interval just ended (interval_s seconds);
 * with final after earlier reports (-i), each profile's total follows its
 * last interval ("total": true). 0 or -errno.
 */
int profiles_report(struct profiles *p, FILE *out, double interval_s, bool final);

/* The --pprof files of the whole run. 0 or -errno (message printed). */
int profiles_write_files(struct profiles *p);

/* Most profiles one file holds (a -p list's). */
#define PROFILES_MANY_MAX 64

/*
 * The same of n (a -p list's, at most PROFILES_MANY_MAX), to the first's
 * path: one file per kind, with every process's samples labelled pid and
 * comm. 0 or -errno (message printed).
 */
int profiles_write_files_many(struct profiles *const *ps, size_t n);

/* Re-reads the target's mappings while it runs, for symbolizing after it exits. Safe with NULL. */
void profiles_refresh(struct profiles *p);

/* Detaches and frees; safe with NULL. */
void profiles_stop(struct profiles *p);

#endif /* FNPROF_PROFILES_H */
