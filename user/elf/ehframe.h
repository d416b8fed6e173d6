/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Function extents from the unwind tables (.eh_frame_hdr's sorted FDE index):
 * every function the compiler emitted call-frame information for, named or
 * not. This is what names functions of stripped objects that no symbol covers.
 */
#ifndef FNPROF_EHFRAME_H
#define FNPROF_EHFRAME_H

#include <stddef.h>
#include <libelf.h>
#include <linux/types.h>

struct fde_range {
	__u64 start;  /* link-time virtual address */
	__u64 size;   /* the FDE's address range; the distance to the next start when unknown */
};

/*
 * The FDE ranges of elf, sorted by start, into *out (the caller frees).
 * Returns how many; 0 when there is no usable .eh_frame_hdr (or no memory).
 */
size_t ehframe_ranges(Elf *elf, struct fde_range **out);

#endif /* FNPROF_EHFRAME_H */
