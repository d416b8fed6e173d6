/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's types that a BPF object's CO-RE relocations read, as a BTF of
 * their own, for libbpf to relocate against (btf_custom_path) instead of the
 * kernel's whole BTF: there it searches all of the kernel's 100k+ types once
 * for each type the programs read (~1 ms each; the tracepoint programs read
 * 11: a quarter of a short run's CPU). The first run of a boot builds it from
 * the kernel's BTF; the next ones read it (runcache.h), keyed by the boot and
 * by the object.
 *
 * Kept of the kernel's types: each candidate of each relocation's root type
 * (the same kind and name, less any ___flavour), with the members that its
 * access strings name (at their offsets; anonymous members on the way too)
 * and the types of the last ones, down to what CO-RE compares (kind, size,
 * an integer's encoding, an enum's values; pointers to void). Relocations
 * come out as against the whole BTF, but for the kinds that compare whole
 * types (type exists, size, matches, target id) and roots the kernel has no
 * candidate for (libbpf would look in the modules): for those none is made,
 * and an empty file tells the boot's next runs so.
 */
#ifndef FNPROF_KERNEL_TYPES_H
#define FNPROF_KERNEL_TYPES_H

#include <stddef.h>
#include <linux/types.h>

/*
 * A file with the kernel's types that the relocations of the object's
 * .BTF.ext section ext (len bytes) read, for the object whose .BTF section
 * is btf_raw (btf_len bytes). Returns its fd (the caller closes it), or
 * -errno: -EOPNOTSUPP where the whole BTF is needed (see above).
 */
int kernel_types_open(const void *btf_raw, size_t btf_len, const __u32 *ext, size_t len);

#endif /* FNPROF_KERNEL_TYPES_H */
