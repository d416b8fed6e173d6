/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Section sizes of an ELF file of the target's choosing, checked before
 * libelf, fnprof's readers or libdw read any section into memory: a sparse
 * file (extended with ftruncate) can claim gigabytes it does not hold.
 */
#ifndef FNPROF_ELFCHECK_H
#define FNPROF_ELFCHECK_H

#include <gelf.h>

/* The largest section (decompressed, for SHF_COMPRESSED) fnprof lets libelf or libdw read: 1 GiB. */
#define ELFCHECK_MAX_SECTION (1ULL << 30)

/*
 * Checks every section of elf, which was opened with ELF_C_READ (not mmap:
 * the headers are changed in memory) on fd, before anything read a
 * section's data. A section is kept if it lies within the file, over no
 * hole (lseek SEEK_HOLE; a file system without holes reports none), and is
 * at most ELFCHECK_MAX_SECTION (decompressed too). A refused section is
 * made to read as an empty SHT_NOBITS one, so that libelf (elf_getdata,
 * elf_strptr), fnprof's readers and libdw (dwarf_begin_elf) all see the
 * object without it. One log_warn names path and the first refused
 * section, unless path is NULL. Returns how many were refused, or -EINVAL.
 */
int elfcheck_sections(Elf *elf, int fd, const char *path);

/*
 * elf_begin(fd, ELF_C_READ) and, for an ELF file, elfcheck_sections: an Elf
 * for the caller to elf_end (check elf_kind: it may be an archive or not
 * ELF at all, as elf_begin's), or NULL. path: for the warning, NULL for
 * none. For libdw: dwarf_begin_elf(elf, DWARF_C_READ, NULL), never
 * dwarf_begin(fd), which reads the sections unchecked.
 */
Elf *elfcheck_begin(int fd, const char *path);

#endif /* FNPROF_ELFCHECK_H */
