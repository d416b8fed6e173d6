/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracing with the compat trace object (bpf/compat.bpf.h), on kernels that
 * lack attach cookies, task storage, bpf_loop or fetching atomics (5.10 to
 * 5.16): what it cannot do, refused in one line naming what the kernel
 * lacks; its programs and maps; and the cookies its probes read from a map,
 * (process, probed address) -> cookie, filled here from the traced
 * processes' mappings before their probes go in.
 */
#ifndef FNPROF_TCOMPAT_H
#define FNPROF_TCOMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct trace_bpf;
struct uprobe_site;

/* What a run asks of the tracer that the compat object may not do. */
struct tcompat_run {
	bool system_wide;     /* -f without -p or a command: probes of no known process */
	bool events;          /* -e */
	bool slow;            /* --slow */
	const char *go;       /* a Go function traced, or NULL */
	const char *tails;    /* a function whose --exit=ret exits follow its tail calls, or NULL */
};

/* 0, or -ENOTSUP after the line that refuses the first of run's asks that the compat object cannot do. */
int tcompat_refusal(const struct tcompat_run *run);

/* Between open and load: the programs it loads (not those it cannot) and its maps' sizes. 0 or -errno. */
int tcompat_setup(struct trace_bpf *skel, __u32 nr_threads, __u32 nr_cookies);

/*
 * The cookies of sites[0..n) (the entry-side probes of processes with a
 * pid) into map_fd (probe_cookies), at each address where the process maps
 * the probe's file offset, and into files_fd (probe_files) by the object's
 * build-id and offset, for an object the process maps later (a launched
 * command's libraries, dlopen). A call the kernel cannot tell the build-id
 * of, there, is counted as lost (DROP_NO_COOKIE). The sites' own cookies
 * become 0: a kernel without attach cookies refuses a probe with one.
 * 0 or -errno (after a message).
 */
int tcompat_fill(int map_fd, int files_fd, struct uprobe_site *sites, size_t n);

#endif /* FNPROF_TCOMPAT_H */
