/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where fnprof's own start-up and shut-down go: each step's wall time and
 * the CPU time of the whole process (every thread) during it, printed with
 * -v. A step is timed from the previous mark (or steps_begin()) to its own.
 */
#ifndef FNPROF_STEPS_H
#define FNPROF_STEPS_H

#include <stdio.h>

/* Starts the clock: marks that follow time from here. */
void steps_begin(void);
/* Ends the step named name (a string literal: kept, not copied) now. */
void steps_mark(const char *name);
/* Not counted: the time since the last mark (waiting for the run to end). */
void steps_skip(void);
/* The steps marked so far: how many; step i's name and times into the others. */
int steps_count(void);
void steps_get(int i, const char **name, double *wall_ms, double *cpu_ms);
/* One line, "start-up: NAME W ms (cpu C ms), ...; total ...", to f. */
void steps_print(FILE *f);

#endif /* FNPROF_STEPS_H */
