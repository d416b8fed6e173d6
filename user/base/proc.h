/* SPDX-License-Identifier: GPL-2.0 */
/* Readings of a process from /proc, and checks of what this machine allows. */
#ifndef FNPROF_PROC_H
#define FNPROF_PROC_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

/*
 * The value of field key of /proc/PID/status (pid 0: fnprof's own), what
 * follows "key:" with its blanks, into out (n bytes, the line's newline
 * cut). 0, or -ENOENT when the field or the process is not there.
 */
int proc_status(pid_t pid, const char *key, char *out, size_t n);

/* The number in field key of /proc/self/status ("VmHWM", 10: KiB), in base. 0 when it is not there. */
__u64 proc_self_status(const char *key, int base);

struct rusage;
/* User plus system time in an rusage, in ns. */
__u64 proc_rusage_ns(const struct rusage *ru);

/* fnprof's own CPU time (all its threads, since it started), in ns; 0 if unknown. */
__u64 proc_self_cpu_ns(void);

/* utime+stime of every thread of pid (/proc/PID/stat), in ns. 0 or -errno. */
int proc_cpu_ns(pid_t pid, __u64 *ns);

/* CPU time of process pid, ns, to the nanosecond (its CPU-time clock). */
int proc_cpu_precise_ns(pid_t pid, __u64 *ns);

/* How many threads process pid has now, or -errno. */
int proc_nr_threads(pid_t pid);

/*
 * The name of thread tid of pid (tid 0: of the process), which the target
 * sets: made safe for a terminal (sanitize_term) here, for every printer.
 * gone where it cannot be read (exited).
 */
void proc_thread_name(pid_t pid, __u32 tid, const char *gone, char *buf, size_t size);

/* Whether pid names a live (not zombie) process. */
bool proc_alive(pid_t pid);

/*
 * Whether process pid (its first thread) has begun to exit, or is gone: its
 * mappings may be torn down meanwhile. Once this is false, no exit had begun
 * before the call.
 */
bool proc_exiting(pid_t pid);

/*
 * Opens path as process pid (0: fnprof) sees it, inside its root, never escaping that
 * root through "..", symlinks or mounts (openat2 RESOLVE_IN_ROOT), nor
 * through a magic link of its /proc (/proc/self/root, /proc/PID/fd/N:
 * RESOLVE_NO_MAGICLINKS, -ELOOP), never blocking (O_NONBLOCK), and only a
 * regular file. Only /proc/PID/root itself, the way in, is followed. An fd,
 * or -errno (-ENODEV: not a regular file).
 */
int proc_open_in_root(pid_t pid, const char *path);

/*
 * Whether fnprof may open /proc/PID/map_files entries: the kernel asks for
 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE there, which CAP_BPF + CAP_PERFMON
 * alone do not give.
 */
bool proc_can_follow_map_files(void);

/*
 * Raises the soft RLIMIT_NOFILE to the hard limit, as fnprof holds
 * descriptors per CPU, probe and object (and never uses select()). 0 or
 * -errno.
 */
int proc_raise_nofile(void);

/* Refuses a setuid or setgid run. 0, or -EPERM after a message. */
int check_not_setuid(void);

/*
 * Root, or the capabilities BPF tracing needs (CAP_BPF + CAP_PERFMON, or
 * CAP_SYS_ADMIN); BTF; uprobe support. 0, or -EPERM / -ENOSYS after a message
 * naming what is missing.
 */
int check_system(void);

#endif /* FNPROF_PROC_H */
