// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>

#include <bpf/libbpf.h>

#include "base/log.h"

bool log_verbose;

__attribute__((format(printf, 2, 0)))
static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "fnprof: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Each level's body: its arguments on to vlog with its prefix (a `...` is passed on only as a va_list). */
#define VLOG(prefix, fmt) do { \
	va_list ap; \
	va_start(ap, fmt); \
	vlog(prefix, fmt, ap); \
	va_end(ap); \
} while (0)

void log_err(const char *fmt, ...)
{
	VLOG("", fmt);
}

void log_warn(const char *fmt, ...)
{
	VLOG("warning: ", fmt);
}

void log_info(const char *fmt, ...)
{
	VLOG("", fmt);
}

void log_debug(const char *fmt, ...)
{
	if (log_verbose)
		VLOG("debug: ", fmt);
}

__attribute__((format(printf, 2, 0)))
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!log_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
