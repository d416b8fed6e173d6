// SPDX-License-Identifier: GPL-2.0
/* The offcpu, mutex and heap loaders' DWARF part: buffer sizes and the unwinding thread. */
#include <errno.h>
#include <string.h>

#include "stacks/dwstacks.h"
#include "base/log.h"
#include "profile/prof_dw.h"
#include "base/rbreader.h"

int prof_dw_size(const struct prof_conf *c, struct bpf_map *rb, struct bpf_map *bufs)
{
	double want = (double)PROF_DW_RING_RECORDS * (c->stack_bytes + sizeof(struct prof_dwarf) + 8);

	if (!c->dwarf)
		return 0;  /* the BPF object's own sizes: one page, one buffer */
	return rb_reader_size(rb, bufs, want, FNPROF_RB_MIN);
}

int prof_dw_start(const struct prof_conf *c, pid_t pid, struct bpf_map *rb, const struct bpf_map *refs,
		  __u32 id_off, struct prof_src *s)
{
	struct dwstacks_refs r = { .fd = -1 };
	int err;

	if (!c->dwarf)
		return 0;
	if (refs)
		r = (struct dwstacks_refs){ .fd = bpf_map__fd(refs), .key_size = bpf_map__key_size(refs),
					    .value_size = bpf_map__value_size(refs), .id_off = id_off };
	err = dwstacks_start_prof(bpf_map__fd(rb), pid, &r, &s->dw);
	if (err)
		log_err("cannot start unwinding the %s profile's stacks: %s", prof_kind_name(s->desc->kind),
			strerror(-err));
	return err;
}

/* The fewest entries a shared map keeps: room for one process's stacks over a short run. */
#define PROF_MIN_SHARE 1024

int prof_share_maps(unsigned int share, struct bpf_object *obj)
{
	static const char *const names[] = { "stacks", "counts", "kstacks" };
	struct bpf_map *m;
	__u32 n;
	size_t i;
	int err;

	for (i = 0; share > 1 && i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(m = bpf_object__find_map_by_name(obj, names[i])))
			continue;   /* kstacks: offcpu's only */
		n = bpf_map__max_entries(m) / share;
		if ((err = bpf_map__set_max_entries(m, n > PROF_MIN_SHARE ? n : PROF_MIN_SHARE)))
			return err;
	}
	return 0;
}
