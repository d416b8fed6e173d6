// SPDX-License-Identifier: GPL-2.0
/*
 * Reads .eh_frame_hdr's binary-search table (the one the C++ unwinder uses):
 * pairs of (function start, FDE address), datarel-relative to the header.
 * gcc, clang and every linker emit it as sdata4 pairs; other encodings are
 * not read (no names from FDEs for that object then).
 */
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/ehframe.h"

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_datarel_sdata4 0x3b
#define DW_EH_PE_pcrel_sdata4 0x1b

/* Size in bytes of a pointer of encoding enc (its low nibble), or 0 if not fixed. */
static size_t enc_size(unsigned char enc)
{
	switch (enc & 0x0f) {
	case 0x00: return 8;  /* absptr on a 64-bit target */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

static __u64 read_u(const unsigned char *p, size_t n)
{
	__u64 v = 0;

	memcpy(&v, p, n);  /* little-endian (x86-64) */
	return v;
}

static __s32 read_s32(const unsigned char *p)
{
	__s32 v;

	memcpy(&v, p, 4);
	return v;
}

static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * The FDE's own address range, when its pc_begin is pcrel sdata4 (the common
 * case, checked by finding the table's start again from it); 0 otherwise.
 */
static __u64 fde_size(const Elf_Data *eh, __u64 eh_addr, __u64 fde, __u64 start)
{
	const unsigned char *p;
	__u64 off = fde - eh_addr;

	if (fde < eh_addr || off + 16 > eh->d_size)
		return 0;
	p = (const unsigned char *)eh->d_buf + off;
	if (read_u(p, 4) == 0xffffffff || (__u64)(fde + 8 + (__s64)read_s32(p + 8)) != start || read_s32(p + 12) < 0)
		return 0;
	return (__u64)read_s32(p + 12);
}

size_t ehframe_ranges(Elf *elf, struct fde_range **out)
{
	GElf_Shdr hs, es;
	Elf_Scn *hdr = section_named(elf, ".eh_frame_hdr", &hs), *ehs = section_named(elf, ".eh_frame", &es);
	Elf_Data *d = hdr ? elf_getdata(hdr, NULL) : NULL, *eh = ehs ? elf_getdata(ehs, NULL) : NULL;
	const unsigned char *p;
	size_t ptr_size, cnt_size, nr, i;
	__u64 count;

	*out = NULL;
	if (!d || d->d_size < 4)
		return 0;
	p = d->d_buf;
	ptr_size = p[1] == DW_EH_PE_omit ? 0 : enc_size(p[1]);
	cnt_size = enc_size(p[2]);
	if (p[0] != 1 || p[3] != DW_EH_PE_datarel_sdata4 || !cnt_size || (p[1] != DW_EH_PE_omit && !ptr_size) ||
	    4 + ptr_size + cnt_size > d->d_size)
		return 0;
	count = read_u(p + 4 + ptr_size, cnt_size);
	p += 4 + ptr_size + cnt_size;
	if (count > (d->d_size - (p - (const unsigned char *)d->d_buf)) / 8 || !count)
		return 0;
	nr = count;
	*out = calloc(nr, sizeof(**out));
	if (!*out)
		return 0;
	for (i = 0; i < nr; i++)
		(*out)[i].start = hs.sh_addr + (__s64)read_s32(p + 8 * i);
	for (i = 0; i < nr; i++) {
		__u64 fde = hs.sh_addr + (__s64)read_s32(p + 8 * i + 4);

		(*out)[i].size = eh ? fde_size(eh, es.sh_addr, fde, (*out)[i].start) : 0;
		if (!(*out)[i].size && i + 1 < nr)
			(*out)[i].size = (*out)[i + 1].start - (*out)[i].start;
	}
	return nr;
}
