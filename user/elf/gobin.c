// SPDX-License-Identifier: GPL-2.0
/*
 * Go executables. Layouts as the Go toolchain writes them (its
 * debug/buildinfo and debug/gosym packages read the same):
 *  .go.buildinfo: "\xff Go buildinf:", pointer size, flags; from Go 1.18 the
 *    version string follows at 32, length-prefixed (varint); before, a
 *    pointer at 16 to a string header (pointer, length).
 *  .gopclntab: a header (magic, pointer size, function count, offsets), then
 *    the function table: (entry, offset of the function's record) pairs,
 *    nfunc + 1 of them (the last entry is the end of the text); the record
 *    holds the offset of the name in the function-name table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elfcheck.h"
#include "elf/gobin.h"
#include "base/safeopen.h"

static const char buildinfo_magic[14] = "\xff Go buildinf:";

#define PCLN_GO116 0xfffffffaU   /* Go 1.16, 1.17 */
#define PCLN_GO118 0xfffffff0U   /* Go 1.18, 1.19 */
#define PCLN_GO120 0xfffffff1U   /* Go 1.20 and later */

/* A section's bytes by name, or NULL. */
static const unsigned char *section_by_name(Elf *elf, const char *name, size_t *size, __u64 *addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf_Data *data;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name) || !(data = elf_getdata(scn, NULL)) || !data->d_buf)
			continue;
		*size = data->d_size;
		if (addr)
			*addr = sh.sh_addr;
		return data->d_buf;
	}
	return NULL;
}

/*
 * Whether len bytes at off lie within size bytes. Every offset, address and
 * length in these sections is the file's: no sum of them may wrap.
 */
static bool within(__u64 size, __u64 off, __u64 len)
{
	return off <= size && len <= size - off;
}

/* size bytes at offset off of section scn's data, or NULL. */
static const unsigned char *section_bytes(Elf_Scn *scn, __u64 off, size_t size)
{
	Elf_Data *data = elf_getdata(scn, NULL);

	if (!data || !data->d_buf || !within(data->d_size, off, size))
		return NULL;
	return (const unsigned char *)data->d_buf + off;
}

/* Whether section sh holds size bytes at link-time address vaddr. */
static bool holds(const GElf_Shdr *sh, __u64 vaddr, size_t size)
{
	return sh->sh_type != SHT_NOBITS && vaddr >= sh->sh_addr && within(sh->sh_size, vaddr - sh->sh_addr, size);
}

/* size bytes at link-time address vaddr, from the section holding them, or NULL. */
static const unsigned char *at_vaddr(Elf *elf, __u64 vaddr, size_t size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && holds(&sh, vaddr, size))
			return section_bytes(scn, vaddr - sh.sh_addr, size);
	return NULL;
}

static __u64 get_uint(const unsigned char *p, int size)
{
	__u64 v = 0;

	memcpy(&v, p, size == 8 ? 8 : 4);   /* little-endian: x86-64 only */
	return v;
}

/* An unsigned varint at *p (below end); advances *p. false if it runs off the end. */
static bool get_uvarint(const unsigned char **p, const unsigned char *end, __u64 *v)
{
	int shift;

	*v = 0;
	for (shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;

		*v |= (__u64)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The version string: inline (Go 1.18+) or behind a string header (older). */
static int buildinfo_version(Elf *elf, const unsigned char *b, size_t size, const char **s, __u64 *len)
{
	const unsigned char *p = b + 32, *hdr;
	int ptr = b[14];

	if (b[15] & 2) {
		if (size < 32 || !get_uvarint(&p, b + size, len) || *len > (__u64)(b + size - p))
			return -EINVAL;
		*s = (const char *)p;
		return 0;
	}
	if ((ptr != 4 && ptr != 8) || size < 16 + 2 * (size_t)ptr)
		return -EINVAL;
	hdr = at_vaddr(elf, get_uint(b + 16, ptr), 2 * ptr);
	if (!hdr)
		return -EINVAL;
	*len = get_uint(hdr + ptr, ptr);
	*s = *len < 64 ? (const char *)at_vaddr(elf, get_uint(hdr, ptr), *len) : NULL;
	return *s ? 0 : -EINVAL;
}

/* The module information after the version (Go 1.18+): build settings, one per line. */
static bool modinfo_has(const unsigned char *b, size_t size, const char *vend, const char *what)
{
	const unsigned char *p = (const unsigned char *)vend;
	__u64 len;

	if (!get_uvarint(&p, b + size, &len) || len > (__u64)(b + size - p))
		return false;
	return memmem(p, len, what, strlen(what)) != NULL;
}

/* A version string to print: ASCII, no control characters. */
static bool printable(const char *s, __u64 len)
{
	__u64 i;

	for (i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return len > 0;
}

int go_info_read(Elf *elf, struct go_info *gi)
{
	const unsigned char *b;
	const char *s;
	size_t size;
	__u64 len;
	int err;

	memset(gi, 0, sizeof(*gi));
	b = section_by_name(elf, ".go.buildinfo", &size, NULL);
	if (!b)
		return -ENOENT;
	if (size < 32 || memcmp(b, buildinfo_magic, sizeof(buildinfo_magic)))
		return -EINVAL;
	err = buildinfo_version(elf, b, size, &s, &len);
	if (err)
		return err;
	if (!printable(s, len))
		return -EINVAL;
	snprintf(gi->version, sizeof(gi->version), "%.*s", (int)(len < sizeof(gi->version) ? len : sizeof(gi->version)), s);
	gi->noregabi = (b[15] & 2) && modinfo_has(b, size, s + len, "noregabi");
	/* "go1.19.8", "go1.21rc2", "devel go1.22-abcdef ..." */
	s = strstr(gi->version, "go1.");
	if (s)
		gi->major = 1, gi->minor = atoi(s + 4);
	return 0;
}

const char *go_unsupported(const struct go_info *gi)
{
	if (!gi->major)
		return "its Go version cannot be read from .go.buildinfo, so where it keeps the running "
		       "goroutine is not known";
	if (gi->minor < 17)
		return "Go before 1.17 keeps the running goroutine in thread-local storage (no register "
		       "ABI), which fnprof does not read; rebuild with Go 1.17 or later";
	if (gi->noregabi)
		return "it was built with GOEXPERIMENT=noregabi: no register ABI, so r14 does not hold "
		       "the running goroutine; rebuild without it";
	return NULL;
}

/* The .gopclntab header, as the version's layout has it. */
struct pcln {
	const unsigned char *b;
	size_t size;
	int ptr;
	bool go118;           /* 32-bit entry offsets from textStart (1.18+), else addresses */
	__u64 nfunc, text_start, names, functab;
};

static int pcln_header(Elf *elf, struct pcln *t)
{
	__u32 magic;
	__u64 text_addr = 0;
	size_t text_size;
	int w;

	if (t->size < 8 + 8 * 8)
		return -EINVAL;
	magic = get_uint(t->b, 4);
	t->ptr = t->b[7];
	if ((magic != PCLN_GO116 && magic != PCLN_GO118 && magic != PCLN_GO120) || t->b[4] || t->b[5] ||
	    (t->ptr != 4 && t->ptr != 8))
		return -EINVAL;
	w = t->ptr;
	t->go118 = magic != PCLN_GO116;
	t->nfunc = get_uint(t->b + 8, w);
	if (t->go118) {
		t->text_start = get_uint(t->b + 8 + 2 * w, w);
		t->names = get_uint(t->b + 8 + 3 * w, w);
		t->functab = get_uint(t->b + 8 + 7 * w, w);
	} else {
		t->names = get_uint(t->b + 8 + 2 * w, w);
		t->functab = get_uint(t->b + 8 + 6 * w, w);
	}
	/* A position-independent build leaves textStart to a relocation: .text starts there. */
	if (t->go118 && !t->text_start && section_by_name(elf, ".text", &text_size, &text_addr))
		t->text_start = text_addr;
	return t->names < t->size && t->functab < t->size ? 0 : -EINVAL;
}

/*
 * Entry address of function i (i == nfunc: the end of the text) and its
 * record's offset from the function table. functab < size (pcln_header).
 */
static bool pcln_func(const struct pcln *t, __u64 i, __u64 *entry, __u64 *rec)
{
	__u64 w = t->go118 ? 4 : t->ptr, at;

	if (i >= (t->size - t->functab) / (2 * w))
		return false;
	at = t->functab + i * 2 * w;
	*entry = get_uint(t->b + at, w) + (t->go118 ? t->text_start : 0);
	*rec = get_uint(t->b + at + w, w);
	return true;
}

/* The name of the function whose record is at rec from the function table, or NULL. */
static const char *pcln_name(const struct pcln *t, __u64 rec)
{
	__u64 w = t->go118 ? 4 : t->ptr, at;
	__u64 off;

	if (!within(t->size - t->functab, rec, w + 4))
		return NULL;
	at = t->functab + rec + w;
	off = t->names + (__u32)get_uint(t->b + at, 4);
	if (off >= t->size || !memchr(t->b + off, 0, t->size - off))
		return NULL;
	return (const char *)t->b + off;
}

/*
 * The executable sections, sorted by address: each function's code is found
 * by a binary search, not by a walk over every section (200000 functions
 * and 20000 sections took 16 s).
 */
struct code_secs {
	struct code_sec {
		GElf_Shdr sh;
		Elf_Scn *scn;
	} *secs;
	size_t nr;
};

static int cmp_code_sec(const void *a, const void *b)
{
	__u64 x = ((const struct code_sec *)a)->sh.sh_addr, y = ((const struct code_sec *)b)->sh.sh_addr;

	return x < y ? -1 : x > y;
}

static int code_secs_init(Elf *elf, struct code_secs *c)
{
	Elf_Scn *scn = NULL;
	size_t n = 0;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		n++;
	c->nr = 0;
	c->secs = calloc(n ? n : 1, sizeof(*c->secs));
	if (!c->secs)
		return -ENOMEM;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_type != SHT_NOBITS)
			c->secs[c->nr++] = (struct code_sec){ sh, scn };
	qsort(c->secs, c->nr, sizeof(*c->secs), cmp_code_sec);
	return 0;
}

/* size bytes of code at vaddr, from the last section starting at or below it, or NULL. */
static const unsigned char *code_at(const struct code_secs *c, __u64 vaddr, size_t size)
{
	size_t lo = 0, hi = c->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->secs[mid].sh.sh_addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !holds(&c->secs[lo - 1].sh, vaddr, size))
		return NULL;
	return section_bytes(c->secs[lo - 1].scn, vaddr - c->secs[lo - 1].sh.sh_addr, size);
}

/*
 * Whether the function is an ABI0 wrapper (the table names it as the function
 * it wraps; .symtab adds ".abi0"): called from assembly, it loads the running
 * goroutine from thread-local storage into r14, mov %fs:-8,%r14, first thing.
 */
static bool abi0_wrapper(const struct code_secs *c, __u64 addr, __u64 size)
{
	static const unsigned char load_g[] = { 0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff };
	size_t n = size < 32 ? size : 32;
	const unsigned char *code = code_at(c, addr, n);

	return code && memmem(code, n, load_g, sizeof(load_g));
}

/* Calls fn for each function of the table t, in its order. */
static int pcln_walk(const struct pcln *t, const struct code_secs *c, go_func_fn fn, void *arg)
{
	__u64 i, entry, rec, next, nrec;
	const char *name;
	int err;

	if (!pcln_func(t, 0, &entry, &rec))
		return -EINVAL;
	for (i = 0; i < t->nfunc; i++, entry = next, rec = nrec) {
		if (!pcln_func(t, i + 1, &next, &nrec) || next < entry)
			return -EINVAL;
		name = pcln_name(t, rec);
		if (name && *name && next > entry) {
			err = fn(arg, name, entry, next - entry, abi0_wrapper(c, entry, next - entry));
			if (err)
				return err;
		}
	}
	return 0;
}

int go_pclntab_funcs(Elf *elf, go_func_fn fn, void *arg)
{
	struct pcln t = { 0 };
	struct code_secs c;
	int err;

	t.b = section_by_name(elf, ".gopclntab", &t.size, NULL);
	if (!t.b)
		return -ENOENT;
	err = pcln_header(elf, &t);
	if (err)
		return err;
	err = code_secs_init(elf, &c);
	if (err)
		return err;
	err = pcln_walk(&t, &c, fn, arg);
	free(c.secs);
	return err;
}

bool go_file(const char *path)
{
	int fd = open_regular(AT_FDCWD, path, 0);
	size_t size;
	bool go = false;
	Elf *elf;

	if (fd < 0)
		return false;
	/* Read, not mapped: the file is the target's, it may change under us. */
	elf = elfcheck_begin(fd, NULL);   /* quiet: symtab_load of the same file says what it refused */
	if (elf && elf_kind(elf) == ELF_K_ELF)
		go = section_by_name(elf, ".go.buildinfo", &size, NULL) ||
		     section_by_name(elf, ".gopclntab", &size, NULL);
	if (elf)
		elf_end(elf);
	close(fd);
	return go;
}
