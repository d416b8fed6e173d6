/* SPDX-License-Identifier: GPL-2.0 */
/* fnprof's version: the one place it is written (the Makefile reads it from here too). */
#ifndef FNPROF_VERSION_H
#define FNPROF_VERSION_H

#include <stdbool.h>
#include <stdio.h>

#define FNPROF_VERSION "0.9.0"

/*
 * "fnprof X.Y.Z" on out; verbose adds the libbpf fnprof runs with (and was
 * built against) and the running kernel, what a bug report needs.
 */
void version_print(FILE *out, bool verbose);

#endif /* FNPROF_VERSION_H */
