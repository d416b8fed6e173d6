/* SPDX-License-Identifier: GPL-2.0 */
/* The one error helper and message style: "fnprof: what failed, on what: why". */
#ifndef FNPROF_LOG_H
#define FNPROF_LOG_H

#include <stdbool.h>

/* Exit codes, documented in the README. */
enum fnprof_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,     /* could not trace: attach, load, target or permission problems */
	EXIT_USAGE = 2,    /* bad command line */
};

extern bool log_verbose;

void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A constant's digits in a string literal (its macro must be a plain number):
 * a fixed message names the very constant the code uses, not a copy of it.
 */
#define LOG_STR_(x) #x
#define LOG_STR(x) LOG_STR_(x)

/* Routes libbpf's own messages: shown only with -v. */
void log_setup_libbpf(void);

#endif /* FNPROF_LOG_H */
