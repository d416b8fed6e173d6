// SPDX-License-Identifier: GPL-2.0
/*
 * The compat trace object's ELF image (bpf/compat.bpf.h), apart: its
 * skeleton has the full one's name and layout (the Makefile checks), so
 * this file alone includes it, and trace_load.c opens either image through
 * the full skeleton.
 */
#include "trace_compat.skel.h"
#include "trace/trace_load.h"

const void *trace_compat_elf_bytes(size_t *size)
{
	return trace_bpf__elf_bytes(size);
}
