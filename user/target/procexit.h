/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether a uretprobe is safe in one running process: --exit=auto's rules
 * (resolve.c) for a process that system-wide tracing meets, read from its
 * program's markers and the libraries it maps. System-wide uprobe sessions
 * choose each process's exit by it.
 */
#ifndef FNPROF_PROCEXIT_H
#define FNPROF_PROCEXIT_H

#include <sys/types.h>

/*
 * Why a uretprobe's hijacked return address is unsafe in process pid (a
 * static string: Go, C++ exceptions or Rust panics, stack switching),
 * NULL where it is safe: longjmp is (the session keeps the pending returns
 * below the kernel's limit, which a longjmp could leave full). -errno in *err, with NULL, when the
 * process cannot be read (gone, or its program not an ELF file); else 0.
 */
const char *procexit_unsafe(pid_t pid, int *err);

#endif /* FNPROF_PROCEXIT_H */
