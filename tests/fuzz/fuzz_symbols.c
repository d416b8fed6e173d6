// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the ELF symbol reader, and the DWARF inline reader, on
 * arbitrary bytes. fnprof reads objects of processes it does not trust;
 * malformed ELF or DWARF must never crash it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/inlines.h"
#include "elf/symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	const struct sym **m = NULL;
	struct symtab *st = NULL;
	const char *near[3], *names[8];
	struct inlines *inl;
	char path[64];
	__u64 v;

	if (fd < 0)
		fd = memfd_create("fuzz-elf", 0);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (symtab_load(path, &st))
		return 0;
	/* Everything a report does with a table. */
	if (st->nr) {
		symtab_lookup(st, st->syms[st->nr / 2].addr + 1);
		symtab_off_to_vaddr(st, st->syms[0].offset, &v);
	}
	free(m);
	symtab_match(st, "*a*", &m);
	free(m);
	symtab_suggest(st, "main", near, 3);
	/* Its DWARF's inlined calls, as a sampled stack's frames ask for them. */
	inl = inlines_open(dup(fd), NULL, 0);
	for (size_t i = 0; inl && i < st->nr && i < 64; i++)
		inlines_at(inl, st->syms[i].addr + st->syms[i].size / 2, names, 8);
	inlines_close(inl);
	symtab_free(st);
	return 0;
}
