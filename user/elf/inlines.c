// SPDX-License-Identifier: GPL-2.0
/* Inlined-call chains with libdw: dwarf_getscopes at an address, its DW_TAG_inlined_subroutine scopes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include <dwarf.h>

#include "base/array.h"
#include "elf/debuginfo.h"
#include "elf/demangle.h"
#include "elf/elfcheck.h"
#include "elf/inlines.h"

struct inlines {
	Elf *elf;
	Dwarf *dw;
	char **names;          /* interned "name (inlined)" */
	size_t nr_names, cap_names;
};

/*
 * A Dwarf with .debug_info from fd, or NULL. Read into memory (ELF_C_READ:
 * pread, no mapping): a target that truncates the file later cannot make
 * fnprof die of SIGBUS, and one that does it now makes a read error. *elfp:
 * the Elf under it, which the caller ends after the Dwarf.
 */
static Dwarf *dwarf_of(int fd, Elf **elfp)
{
	Elf *elf = elfcheck_begin(fd, NULL);  /* sections past the end or over holes: absent */
	Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	Dwarf_Off off;
	size_t hsize;

	if (dw && dwarf_nextcu(dw, 0, &off, &hsize, NULL, NULL, NULL)) {
		dwarf_end(dw);  /* no compile unit: stripped of its debug info */
		dw = NULL;
	}
	if (!dw && elf)
		elf_end(elf);
	*elfp = dw ? elf : NULL;
	return dw;
}

/* The DWARF of fd, which is closed: all is in memory once read. */
static Dwarf *dwarf_of_fd(int fd, Elf **elfp)
{
	Dwarf *dw;

	*elfp = NULL;
	if (fd < 0)
		return NULL;
	dw = dwarf_of(fd, elfp);
	close(fd);
	return dw;
}

/* The object's own DWARF, else its debug file's (where the symbols found it). */
struct inlines *inlines_open(int fd, const char *debug_file, pid_t pid)
{
	struct inlines *in = calloc(1, sizeof(*in));

	if (!in) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	in->dw = dwarf_of_fd(fd, &in->elf);
	if (!in->dw && debug_file)
		in->dw = dwarf_of_fd(debuginfo_reopen(debug_file, pid), &in->elf);
	if (!in->dw) {
		inlines_close(in);
		return NULL;
	}
	return in;
}

void inlines_close(struct inlines *in)
{
	size_t i;

	if (!in)
		return;
	if (in->dw)
		dwarf_end(in->dw);
	if (in->elf)
		elf_end(in->elf);
	for (i = 0; i < in->nr_names; i++)
		free(in->names[i]);
	free(in->names);
	free(in);
}

/* One string per name: frames are grouped by the pointer. */
static const char *intern(struct inlines *in, const char *name)
{
	char buf[1024];
	size_t i;

	snprintf(buf, sizeof(buf), "%s (inlined)", name);
	for (i = 0; i < in->nr_names; i++)
		if (!strcmp(in->names[i], buf))
			return in->names[i];
	if (ARRAY_RESERVE(in->names, in->nr_names + 1, in->cap_names))
		return NULL;
	in->names[in->nr_names] = strdup(buf);
	return in->names[in->nr_names] ? in->names[in->nr_names++] : NULL;
}

/* Whether s lies in a .debug section of elf and ends there. */
static bool ends_in_debug_section(Elf *elf, const char *s)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(name, ".debug_", 7))
			continue;
		/* libdw has read the .debug sections at dwarf_begin: this is its copy, not a new read. */
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf && s >= (const char *)d->d_buf && s < (const char *)d->d_buf + d->d_size)
			return memchr(s, 0, (const char *)d->d_buf + d->d_size - s) != NULL;
	}
	return false;
}

/*
 * A string libdw handed out, or NULL where a corrupt file's does not end
 * inside its section (an inline DW_FORM_string at the end of .debug_info:
 * libdw 0.188 does not check, and reading it ran past the section, found by
 * fuzz_symbols). In the file's own sections or in its supplementary (dwz) file's.
 */
static const char *bounded(Dwarf *dw, const char *s)
{
	Dwarf *alt = dwarf_getalt(dw);

	if (!s)
		return NULL;
	return ends_in_debug_section(dwarf_getelf(dw), s) || (alt && ends_in_debug_section(dwarf_getelf(alt), s)) ?
		       s : NULL;
}

/* The inlined function's name: demangled from its linkage name for C++, else DW_AT_name. */
static const char *scope_name(Dwarf *dw, Dwarf_Die *die, char **to_free)
{
	Dwarf_Attribute attr;
	const char *link = bounded(dw, dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr)));

	*to_free = link ? demangle(link) : NULL;
	return *to_free ? *to_free : bounded(dw, dwarf_diename(die));
}

int inlines_at(struct inlines *in, __u64 vaddr, const char **names, int max)
{
	Dwarf_Die cu, *scopes = NULL;
	int i, nr, n = 0;

	if (!in || !dwarf_addrdie(in->dw, vaddr, &cu))
		return 0;
	nr = dwarf_getscopes(&cu, vaddr, &scopes);
	for (i = 0; i < nr && n < max; i++) {
		char *dem;
		const char *name;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		name = scope_name(in->dw, &scopes[i], &dem);
		names[n] = name ? intern(in, name) : NULL;
		n += names[n] != NULL;
		free(dem);
	}
	free(scopes);
	return n;
}
