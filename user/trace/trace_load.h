/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loading trace.bpf.c in two halves at once. Most of the load is two pieces
 * of about 10 ms each: libbpf reading and searching the kernel's BTF (for the
 * tracepoint programs' CO-RE relocations and attach points), and the kernel
 * verifying the uprobe programs. The uprobe programs read no kernel type but
 * ABI ones (pt_regs, bpf_perf_event_value): relocated against the object's own
 * BTF, they need nothing of the kernel's. So the object is opened three
 * times: one instance creates the maps and loads no program; then the
 * tracepoint half loads on a thread while the uprobe half loads on the
 * caller's, both on the first instance's maps, the writable globals (.bss)
 * included: user space writes them through *probes, and the tracepoint
 * programs read the same memory (trace_load_early(): two instances, the
 * uprobe half creating the maps). Should the uprobe programs ever relocate
 * against another type, everything loads in one piece.
 */
#ifndef FNPROF_TRACE_LOAD_H
#define FNPROF_TRACE_LOAD_H

#include <stdbool.h>
#include <stddef.h>

struct trace_bpf;

/*
 * Which build of trace.bpf.c the loads below open: the full one, or with
 * on the compat one (bpf/compat.bpf.h), for a kernel that lacks what the
 * full one needs; the tracer chooses, from what kneeds found.
 */
void trace_load_use_compat(bool on);
bool trace_load_compat(void);
/* The compat build's ELF image (user/trace/trace_compat.c). */
const void *trace_compat_elf_bytes(size_t *size);

/*
 * Sets up one instance of trace.bpf.c between open and load: read-only
 * data, map sizes, attach types, programs not wanted. 0 or -errno.
 */
typedef int (*trace_setup_fn)(struct trace_bpf *skel, void *arg);

/*
 * Opens and loads trace.bpf.c, set up by setup(arg). *probes gets the uprobe
 * programs and the maps; *sched the other programs, on the same maps, or
 * NULL when everything had to load in *probes. 0 or -errno (libbpf's own
 * messages with -v).
 */
int trace_load(trace_setup_fn setup, void *arg, struct trace_bpf **probes, struct trace_bpf **sched);

/*
 * The same, but where the object loads in two halves the uprobe half loads
 * first, creating the maps, and it returns then, with the tracepoint half
 * loading on a thread (*pending; *sched NULL): the target's probes can go
 * in meanwhile.
 * Where it loads in one piece, as trace_load() with *pending NULL. Every
 * *pending must go to trace_load_finish(), even on a later failure.
 */
struct trace_pending;
int trace_load_early(trace_setup_fn setup, void *arg, struct trace_bpf **probes, struct trace_bpf **sched,
		     struct trace_pending **pending);
/*
 * Waits for the tracepoint half of pending (NULL: nothing to wait for) and
 * frees pending: *sched the instance with its programs, or NULL. 0 or -errno.
 */
int trace_load_finish(struct trace_pending *pending, struct trace_bpf **sched);

#endif /* FNPROF_TRACE_LOAD_H */
