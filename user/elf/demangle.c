// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "elf/demangle.h"
#include "base/log.h"

/*
 * libstdc++'s __cxa_demangle (cxxabi.h is C++ only), loaded at the first
 * C++ name: linked, libstdc++ cost 0.3 ms of every start, C programs'
 * included.
 */
static char *(*cxa_demangle)(const char *mangled, char *buf, size_t *len, int *status);

static void load_demangler(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

	if (h)
		*(void **)&cxa_demangle = dlsym(h, "__cxa_demangle");
	if (!cxa_demangle)
		log_warn("cannot load libstdc++.so.6's demangler (%s): C++ names are shown mangled",
			 h ? "no __cxa_demangle" : dlerror());
}

char *demangle(const char *name)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int status = -1;
	char *d;

	if (strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&once, load_demangler);
	if (!cxa_demangle)
		return NULL;
	d = cxa_demangle(name, NULL, NULL, &status);
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
