// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* From libstdc++ (cxxabi.h is C++ only). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle(const char *name)
{
	int status = -1;
	char *d;

	if (strncmp(name, "_Z", 2))
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}

/* The '(' that opens the parameter list: the last one at template depth 0 that is not "operator()". */
static char *params_start(char *s)
{
	int depth = 0;
	char *p, *open = NULL;

	for (p = s; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth)
			depth--;
		else if (*p == '(' && !depth && !(p - s >= 8 && !strncmp(p - 8, "operator", 8)))
			return p;
	}
	return open;
}

char *demangle_base(const char *name)
{
	char *d = demangle(name), *p;

	if (d && (p = params_start(d)))
		*p = 0;
	return d;
}
