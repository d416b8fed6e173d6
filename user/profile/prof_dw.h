/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --call-graph dwarf for the offcpu, mutex and heap profiles: what their
 * loaders share to size the ring buffer and per-CPU buffers of prof.bpf.h
 * before load, and to start unwinding (dwstacks.h) after it; and a -p
 * list's share of the maps.
 */
#ifndef FNPROF_PROF_DW_H
#define FNPROF_PROF_DW_H

#include <sys/types.h>

#include <bpf/libbpf.h>

#include "profile/prof_src.h"

/* Records the ring buffer holds at least, of the largest size: its room for a burst of kept events. */
#define PROF_DW_RING_RECORDS 256

/* Before load: sizes pdw_rb (rb) and pdw_bufs (bufs) for c; with c->dwarf false, the smallest. 0 or -errno. */
int prof_dw_size(const struct prof_conf *c, struct bpf_map *rb, struct bpf_map *bufs);

/*
 * After load, with c->dwarf: starts unwinding rb's records into s->dw. refs:
 * the map whose values hold the ids of stacks to remember (at id_off), or
 * NULL. 0 or -errno (message printed).
 */
int prof_dw_start(const struct prof_conf *c, pid_t pid, struct bpf_map *rb, const struct bpf_map *refs,
		  __u32 id_off, struct prof_src *s);

/*
 * Before load, -p P1,P2,... (share > 1): obj's stack, counts and kernel
 * stack maps at 1/share of their size (at least 1024 entries), so that a
 * list's samplers and profiles hold the kernel memory of one; a map full is
 * counted as a drop. 0 or -errno.
 */
int prof_share_maps(unsigned int share, struct bpf_object *obj);

#endif /* FNPROF_PROF_DW_H */
