// SPDX-License-Identifier: GPL-2.0
/* The profiles' names, as --profile takes them, and their --pprof files' names. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "stacks/prof_kind.h"

static const char *const kind_names[PROF_KIND_NR] = { "cpu", "offcpu", "mutex", "heap" };

const char *prof_kind_name(enum prof_kind k)
{
	return k < PROF_KIND_NR ? kind_names[k] : "?";
}

int prof_kind_parse(const char *s)
{
	int k;

	for (k = 0; k < PROF_KIND_NR; k++)
		if (!strcmp(s, kind_names[k]))
			return k;
	return -EINVAL;
}

int prof_file_name(const char *path, enum prof_kind k, bool several, char *buf, size_t size)
{
	const char *base = strrchr(path, '/'), *dot;
	int n;

	base = base ? base + 1 : path;
	dot = strchr(base, '.');
	if (!several)
		n = snprintf(buf, size, "%s", path);
	else if (!dot || dot == base)  /* no extension, or a hidden file's leading dot */
		n = snprintf(buf, size, "%s.%s", path, prof_kind_name(k));
	else
		n = snprintf(buf, size, "%.*s.%s%s", (int)(dot - path), path, prof_kind_name(k), dot);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
