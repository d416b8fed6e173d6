/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CO-RE relocations of a BPF object, read from its .BTF.ext section
 * (Documentation/bpf/btf.rst): what its programs read of the kernel's types.
 */
#ifndef FNPROF_CORE_RELOS_H
#define FNPROF_CORE_RELOS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/bpf.h>

struct btf;

/*
 * Calls fn(ctx, section, relocation) for each CO-RE relocation of the
 * .BTF.ext section ext (len bytes, 4-aligned; the section names are
 * strings of btf, the object's BTF) until fn returns false. True if the
 * section was read to its end with fn true each time; false if fn stopped
 * it or the section is malformed.
 */
typedef bool (*core_relo_fn)(void *ctx, const char *sec, const struct bpf_core_relo *r);
bool core_relos_each(const struct btf *btf, const __u32 *ext, size_t len, core_relo_fn fn, void *ctx);

#endif /* FNPROF_CORE_RELOS_H */
