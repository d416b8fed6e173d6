/* SPDX-License-Identifier: GPL-2.0 */
/* A minimal unit-test runner: each case prints "ok NAME" or "FAIL NAME: why". */
#ifndef FNPROF_UNIT_H
#define FNPROF_UNIT_H

#include <stdio.h>
#include <stdlib.h>

static int unit_failed;
static const char *unit_case;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			printf("FAIL %s: %s:%d: %s\n", unit_case, __FILE__, __LINE__, #cond); \
			unit_failed = 1;                                          \
			return;                                                  \
		}                                                                \
	} while (0)

#define RUN(fn)                                                                  \
	do {                                                                     \
		int before = unit_failed;                                      \
		unit_failed = 0;                                                 \
		unit_case = #fn;                                                 \
		fn();                                                            \
		if (!unit_failed)                                                \
			printf("ok %s\n", #fn);                                  \
		unit_failed |= before;                                           \
	} while (0)

#define UNIT_EXIT() return unit_failed ? EXIT_FAILURE : EXIT_SUCCESS

#endif /* FNPROF_UNIT_H */
