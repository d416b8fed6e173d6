// SPDX-License-Identifier: GPL-2.0
/*
 * A target that unloads a library it has run, as a program with plug-ins
 * does: dlopens argv[1] (libtarget.so), spins in its lib_spin for argv[2]
 * seconds, dlcloses it (and checks that it is no longer mapped), then spins
 * in its own code for argv[3] seconds. A profiler that names samples at the
 * end must still name the library's. Prints its truth, CPU time per phase:
 * "truth dlclose lib_ns=N own_ns=N unmapped=0|1".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spin.h"

static unsigned long long cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* Whether a mapping of a file whose path ends with name is left. */
static int mapped(const char *name)
{
	char line[4096];
	size_t len = strlen(name);
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = 0;
		found = n >= len && !strcmp(line + n - len, name);
	}
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	unsigned long (*lib_spin)(unsigned int us);
	void *h = argc > 3 ? dlopen(argv[1], RTLD_NOW) : NULL;
	const char *base = argc > 1 ? strrchr(argv[1], '/') : NULL;
	unsigned long long c0, c1, c2;
	double t0;

	if (!h || !(*(void **)&lib_spin = dlsym(h, "lib_spin"))) {
		fprintf(stderr, "usage: dlclose LIB SECONDS SECONDS_AFTER (%s)\n", dlerror());
		return 2;
	}
	base = base ? base + 1 : argv[1];
	c0 = cpu_ns();
	for (t0 = now(); now() - t0 < atof(argv[2]);)
		lib_spin(1000);
	c1 = cpu_ns();
	dlclose(h);
	own_spin(atof(argv[3]));
	c2 = cpu_ns();
	printf("truth dlclose lib_ns=%llu own_ns=%llu unmapped=%d\n", c1 - c0, c2 - c1, !mapped(base));
	return 0;
}
