// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "elf/symbols.h"
#include "target/procexit.h"
#include "target/procmaps.h"

/* Whether process pid maps a C++ runtime (a library may throw through a C program's frames). -errno if unread. */
static int maps_cxx(pid_t pid)
{
	char path[64], line[PATH_MAX + 128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *obj = strchr(line, '/');

		if (obj) {
			obj[strcspn(obj, "\n")] = 0;
			found = lib_name_matches(obj, "libstdc++");
		}
	}
	fclose(f);
	return found;
}

/*
 * Programs already read, by file: their markers, so that the processes of
 * one program (a shell's children, a server's workers) are answered without
 * reading it again. Round robin beyond PROGRAMS_MAX.
 */
#define PROGRAMS_MAX 256

static struct program {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;   /* a file rewritten in place is read again */
	struct symtab markers;
} programs[PROGRAMS_MAX];
static size_t nr_programs, next_program;

/* The markers of the program at exe (/proc/PID/exe): from the cache, or read and kept. 0 or -errno. */
static int program_markers(const char *exe, struct symtab *m)
{
	struct program *p;
	struct stat st;
	size_t i;
	int err;

	if (stat(exe, &st))
		return -errno;
	for (i = 0; i < nr_programs; i++) {
		p = &programs[i];
		if (p->dev == st.st_dev && p->ino == st.st_ino && p->mtime.tv_sec == st.st_mtim.tv_sec &&
		    p->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			*m = p->markers;
			return 0;
		}
	}
	err = symtab_markers(exe, m);
	if (err)
		return err;
	p = &programs[nr_programs < PROGRAMS_MAX ? nr_programs++ : next_program++ % PROGRAMS_MAX];
	*p = (struct program){ .dev = st.st_dev, .ino = st.st_ino, .mtime = st.st_mtim, .markers = *m };
	return 0;
}

const char *procexit_unsafe(pid_t pid, int *err)
{
	struct symtab m;
	char exe[64];
	int cxx;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	*err = program_markers(exe, &m);
	cxx = *err ? 0 : maps_cxx(pid);
	if (cxx < 0)
		*err = cxx;
	if (*err)
		return NULL;
	/* Go's runtime reads every frame's return address when it scans a stack (resolve.c's leaf_outside_go). */
	if (m.go)
		return "Go";
	if (m.unwinds || cxx)
		return "C++ exceptions or Rust panics";
	/*
	 * A signal handler on an alternate stack above the thread's, hitting a
	 * uretprobe, makes the kernel drop the returns pending below it: the
	 * interrupted call's return then finds none (SIGILL).
	 */
	if (m.switches_stacks)
		return "stack switching (swapcontext, sigaltstack)";
	/*
	 * A longjmp is no danger here: the abandoned returns are dropped at the
	 * next uretprobe, and fn_session keeps the thread's pending returns
	 * below the kernel's limit, which a longjmp could otherwise leave full.
	 */
	return NULL;
}
