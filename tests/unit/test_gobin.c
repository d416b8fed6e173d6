// SPDX-License-Identifier: GPL-2.0
/*
 * Go executables: the names read from .gopclntab of the stripped Go target
 * against the .symtab of the same program built with symbols, and the
 * toolchain version from .go.buildinfo. The Go targets are built by make
 * test-build where Go is installed (run from tests/: bin/...).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/gobin.h"
#include "elf/symbols.h"
#include "unit.h"

#define GO_FULL "bin/gotarget"
#define GO_STRIPPED "bin/gotarget-stripped"

static const struct sym *one(const struct symtab *st, const char *name)
{
	const struct sym **m = NULL, *s = NULL;

	if (symtab_match(st, name, &m) == 1)
		s = m[0];
	free(m);
	return s;
}

static void pclntab_names_match_symtab(void)
{
	static const char *const names[] = { "main.work", "main.rec", "runtime.goexit1", "main.main" };
	struct symtab *full = NULL, *stripped = NULL;
	size_t i;

	if (access(GO_FULL, R_OK) || access(GO_STRIPPED, R_OK))
		return;   /* no Go here: the integration tests say so */
	CHECK(!symtab_load(GO_FULL, &full) && !symtab_load(GO_STRIPPED, &stripped));
	CHECK(full->source == SYMS_SYMTAB && stripped->source == SYMS_GOPCLNTAB);
	CHECK(stripped->nr > 1000 && full->go && stripped->go);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct sym *a = one(full, names[i]), *b = one(stripped, names[i]);

		CHECK(a && b);
		CHECK(a->addr == b->addr && a->offset == b->offset);
		/* The table's size runs to the next function: the padding after it included. */
		CHECK(b->size >= a->size && b->size < a->size + 64);
	}
	symtab_free(full);
	symtab_free(stripped);
}

/* In a cgo program, the C functions are not Go functions; those of the table are. */
static void cgo_c_functions_are_not_go(void)
{
	struct symtab *st = NULL;

	if (access("bin/gotarget-cgo", R_OK))
		return;
	CHECK(!symtab_load("bin/gotarget-cgo", &st));
	CHECK(st->go && one(st, "c_spin") && one(st, "main.main"));
	CHECK(!one(st, "c_spin")->go && one(st, "main.main")->go);
	symtab_free(st);
}

static void buildinfo_version(void)
{
	struct symtab *st = NULL;

	if (access(GO_STRIPPED, R_OK))
		return;
	CHECK(!symtab_load(GO_STRIPPED, &st));
	CHECK(!strncmp(st->go_info.version, "go1.", 4) && st->go_info.major == 1 && st->go_info.minor >= 17);
	CHECK(!st->go_info.noregabi && !go_unsupported(&st->go_info));
	symtab_free(st);
}

/* A copy of the stripped target whose version string holds byte c at its 5th byte: into path. */
static int patched_copy(const char *path, char c)
{
	static const char magic[] = "\xff Go buildinf:";
	FILE *in = fopen(GO_STRIPPED, "rb"), *out = fopen(path, "wb");
	char *buf = malloc(16 << 20), *b, *v;
	size_t n = in && buf ? fread(buf, 1, 16 << 20, in) : 0;
	int err = -1;

	b = n ? memmem(buf, n, magic, sizeof(magic) - 1) : NULL;
	v = b ? memmem(b, 64, "go1.", 4) : NULL;
	if (v && out) {
		v[4] = c;
		err = fwrite(buf, 1, n, out) == n ? 0 : -1;
	}
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	free(buf);
	return err;
}

/* A version that is not text is no version: the binary is refused, not printed garbage. */
static void garbled_version_is_unknown(void)
{
	char path[] = "/tmp/fnprof-gobin-XXXXXX";
	struct symtab *st = NULL;
	int fd;

	if (access(GO_STRIPPED, R_OK))
		return;
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(!patched_copy(path, '\x01'));
	CHECK(!symtab_load(path, &st));
	unlink(path);
	CHECK(st->go && st->source == SYMS_GOPCLNTAB && !st->go_info.major && !st->go_info.version[0]);
	CHECK(go_unsupported(&st->go_info) != NULL);
	symtab_free(st);
}

static void c_program_is_not_go(void)
{
	struct symtab *st = NULL;

	CHECK(!symtab_load("bin/work", &st));
	CHECK(!st->go && !st->go_info.major);
	symtab_free(st);
}

static void unsupported_versions(void)
{
	struct go_info old = { .version = "go1.16.15", .major = 1, .minor = 16 };
	struct go_info unknown = { 0 };
	struct go_info noregabi = { .version = "go1.19.8", .major = 1, .minor = 19, .noregabi = true };
	struct go_info ok = { .version = "go1.17", .major = 1, .minor = 17 };

	CHECK(go_unsupported(&old) && strstr(go_unsupported(&old), "1.17"));
	CHECK(go_unsupported(&unknown) && go_unsupported(&noregabi));
	CHECK(!go_unsupported(&ok));
}

/*
 * An ELF file at path holding one section, name, of size bytes at link-time
 * address addr, and .shstrtab. Read as fnprof reads (ELF_C_READ), each
 * section's bytes are a heap block of their own: ASan sees a read outside.
 */
static Elf *crafted_elf(char *path, const char *name, __u64 addr, const void *data, size_t size, int *fd)
{
	char names[64];
	size_t nlen = (size_t)snprintf(names, sizeof(names), "%c%s%c.shstrtab", 0, name, 0) + 1;
	size_t data_at = sizeof(Elf64_Ehdr), names_at = data_at + size, sh_at = (names_at + nlen + 7) & ~7UL;
	Elf64_Ehdr eh = { .e_ident = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
			  .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_shoff = sh_at,
			  .e_ehsize = sizeof(Elf64_Ehdr), .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3,
			  .e_shstrndx = 2 };
	Elf64_Shdr sh[3] = { { 0 },
			     { .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = addr,
			       .sh_offset = data_at, .sh_size = size, .sh_addralign = 1 },
			     { .sh_name = 2 + strlen(name), .sh_type = SHT_STRTAB, .sh_offset = names_at,
			       .sh_size = nlen, .sh_addralign = 1 } };

	*fd = mkstemp(path);
	if (*fd < 0 || pwrite(*fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    pwrite(*fd, data, size, data_at) != (ssize_t)size || pwrite(*fd, names, nlen, names_at) != (ssize_t)nlen ||
	    pwrite(*fd, sh, sizeof(sh), sh_at) != sizeof(sh))
		return NULL;
	unlink(path);
	elf_version(EV_CURRENT);
	return elf_begin(*fd, ELF_C_READ, NULL);
}

/*
 * Old-layout .go.buildinfo (before Go 1.18) whose pointer to the version's
 * string header is 2^64 - 16: address + size wrapped to 0, passed the bounds
 * check, and the header was read 16 bytes before the section's buffer.
 */
static void buildinfo_wrapping_address(void)
{
	unsigned char b[64] = "\xff Go buildinf:";
	char path[] = "/tmp/fnprof-gobin-XXXXXX";
	struct go_info gi;
	__u64 ptr = -16ULL;
	Elf *elf;
	int fd;

	b[14] = 8;   /* pointer size; flags 0: the version behind a pointer */
	memcpy(b + 16, &ptr, 8);
	elf = crafted_elf(path, ".go.buildinfo", 0, b, sizeof(b), &fd);
	CHECK(elf);
	CHECK(go_info_read(elf, &gi) == -EINVAL && !gi.version[0]);
	elf_end(elf);
	close(fd);
}

static int count_func(void *arg, const char *name, __u64 addr, __u64 size, bool abi0)
{
	(void)name, (void)addr, (void)size, (void)abi0;
	++*(int *)arg;
	return 0;
}

/*
 * A Go 1.16 .gopclntab whose function record lies 2^64 - 10 bytes on: the
 * name's offset, read 8 bytes into the record, wrapped to 2 bytes before the
 * table and passed the bounds check.
 */
static void pclntab_wrapping_record(void)
{
	unsigned char t[106] = { 0xfa, 0xff, 0xff, 0xff, 0, 0, 1, 8 };
	__u64 hdr[8] = { 1, 0, 104, 0, 0, 0, 72, 0 };   /* nfunc, ..., names at 104, functab at 72 */
	__u64 tab[4] = { 0x1000, -10ULL - 72, 0x1010, 0 };
	char path[] = "/tmp/fnprof-gobin-XXXXXX";
	int fd, n = 0;
	Elf *elf;

	memcpy(t + 8, hdr, sizeof(hdr));
	memcpy(t + 72, tab, sizeof(tab));
	t[104] = 'f';
	elf = crafted_elf(path, ".gopclntab", 0x2000, t, sizeof(t), &fd);
	CHECK(elf);
	CHECK(go_pclntab_funcs(elf, count_func, &n) == 0 && n == 0);
	elf_end(elf);
	close(fd);
}

int main(void)
{
	RUN(pclntab_names_match_symtab);
	RUN(cgo_c_functions_are_not_go);
	RUN(buildinfo_version);
	RUN(garbled_version_is_unknown);
	RUN(c_program_is_not_go);
	RUN(unsupported_versions);
	RUN(buildinfo_wrapping_address);
	RUN(pclntab_wrapping_record);
	UNIT_EXIT();
}
