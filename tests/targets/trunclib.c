// SPDX-License-Identifier: GPL-2.0
/*
 * A target that truncates a library it has run: dlopens argv[1] (a copy of
 * libtarget.so, with DWARF), spins in its lib_spin for argv[2] seconds,
 * cuts the file to 64 bytes, says "truncated", then spins in its own code
 * for argv[3] seconds. The library's code is never run again (its pages are
 * gone with the truncation); a profiler that mapped the file must not die.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

int main(int argc, char **argv)
{
	unsigned long (*lib_spin)(unsigned int us);
	void *h = argc > 2 ? dlopen(argv[1], RTLD_NOW) : NULL;
	double t0, secs = argc > 2 ? atof(argv[2]) : 0, after = argc > 3 ? atof(argv[3]) : 0;

	if (!h || !(*(void **)&lib_spin = dlsym(h, "lib_spin"))) {
		fprintf(stderr, "usage: trunclib LIB SECONDS [SECONDS_AFTER] (%s)\n", dlerror());
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	for (t0 = now(); now() - t0 < secs;)
		lib_spin(1000);
	if (truncate(argv[1], 64)) {
		perror("truncate");
		return 1;
	}
	printf("truncated\n");
	fflush(stdout);
	own_spin(after);
	_exit(0);  /* not exit(): the library's destructors are in the pages that are gone */
}
