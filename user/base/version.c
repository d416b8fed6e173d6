// SPDX-License-Identifier: GPL-2.0
#include <sys/utsname.h>

#include <bpf/libbpf.h>
#include <bpf/libbpf_version.h>

#include "base/version.h"

void version_print(FILE *out, bool verbose)
{
	struct utsname u;

	fprintf(out, "fnprof %s\n", FNPROF_VERSION);
	if (!verbose)
		return;
	/* The library loaded now may be newer than the headers fnprof was built with. */
	fprintf(out, "libbpf %s (built with %d.%d)\n", libbpf_version_string(), LIBBPF_MAJOR_VERSION,
		LIBBPF_MINOR_VERSION);
	if (!uname(&u))
		fprintf(out, "kernel %s %s %s\n", u.sysname, u.release, u.machine);
}
