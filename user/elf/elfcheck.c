// SPDX-License-Identifier: GPL-2.0
/*
 * Sections checked against the file before they are read. libelf checks a
 * section against the file's size only: a 4 KiB file extended to 2 GiB with
 * ftruncate passes, and reading its .symtab took 2.1 GB and 19.5 s.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elfcheck.h"
#include "base/log.h"
#include "base/sanitize.h"

enum refusal { KEPT, PAST_END, OVER_HOLE, TOO_BIG, INFLATES_TOO_BIG };

static const char *const why[] = {
	[PAST_END] = "it runs past the end of the file",
	[OVER_HOLE] = "it lies over a hole in the file (a sparse file claiming bytes it does not hold)",
	[TOO_BIG] = "it is larger than fnprof reads (1 GiB)",
	[INFLATES_TOO_BIG] = "it decompresses to more than fnprof reads (1 GiB)",
};

/* Whether bytes [off, off + size) of fd hold data throughout: the next hole is at their end or after. */
static bool over_hole(int fd, __u64 off, __u64 size)
{
	off_t hole = lseek(fd, (off_t)off, SEEK_HOLE);

	if (hole < 0)
		return errno == ENXIO;   /* off at or past the end; other errors: holes unknown here */
	return (__u64)hole < off + size;
}

static enum refusal check_one(Elf_Scn *scn, const GElf_Shdr *sh, int fd, __u64 file_size)
{
	GElf_Chdr ch;

	if (sh->sh_offset > file_size || sh->sh_size > file_size - sh->sh_offset)
		return PAST_END;
	if (over_hole(fd, sh->sh_offset, sh->sh_size))
		return OVER_HOLE;
	if (sh->sh_size > ELFCHECK_MAX_SECTION)
		return TOO_BIG;
	/* gelf_getchdr reads the section's raw bytes: checked just above. */
	if ((sh->sh_flags & SHF_COMPRESSED) && (!gelf_getchdr(scn, &ch) || ch.ch_size > ELFCHECK_MAX_SECTION))
		return INFLATES_TOO_BIG;
	return KEPT;
}

/* Makes the section read as an empty SHT_NOBITS one: absent for every reader. */
static void refuse(Elf_Scn *scn, GElf_Shdr *sh)
{
	sh->sh_type = SHT_NOBITS;
	sh->sh_size = 0;
	sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	gelf_update_shdr(scn, sh);
}

/*
 * Names the first refused section: after refusal, so that a refused
 * .shstrtab is not read for it. Path and name are the target's: sanitized.
 */
static void warn(Elf *elf, const char *path, size_t first, __u64 size, enum refusal r, int nr)
{
	char safe_path[PATH_MAX], safe_name[128];
	const char *name = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (!elf_getshdrstrndx(elf, &shstrndx) && gelf_getshdr(elf_getscn(elf, first), &sh))
		name = elf_strptr(elf, shstrndx, sh.sh_name);
	if (name)
		name = sanitize_term(name, safe_name, sizeof(safe_name));
	log_warn("%s: section %s%s%s[%zu] (%llu bytes) not read: %s; the object is read without it%s",
		 sanitize_term(path, safe_path, sizeof(safe_path)), name ? "'" : "", name ? name : "",
		 name ? "' " : "", first, (unsigned long long)size, why[r],
		 nr > 1 ? " (and other sections likewise)" : "");
}

int elfcheck_sections(Elf *elf, int fd, const char *path)
{
	enum refusal first_why = KEPT, r;
	size_t first = 0;
	__u64 first_size = 0;
	Elf_Scn *scn = NULL;
	struct stat st;
	GElf_Shdr sh;
	int nr = 0;

	if (fstat(fd, &st) || elf_kind(elf) != ELF_K_ELF)
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL || !sh.sh_size)
			continue;
		r = check_one(scn, &sh, fd, st.st_size);
		if (r == KEPT)
			continue;
		if (!nr++)
			first = elf_ndxscn(scn), first_size = sh.sh_size, first_why = r;
		refuse(scn, &sh);
	}
	if (nr && path)
		warn(elf, path, first, first_size, first_why, nr);
	return nr;
}

Elf *elfcheck_begin(int fd, const char *path)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && elfcheck_sections(elf, fd, path) < 0) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}
