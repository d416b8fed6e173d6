// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol tables of fixture ELF files built here with the system compiler:
 * PIE, non-PIE, shared object, stripped; plus the -f spec and library-name rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <sys/stat.h>
#include <elfutils/libdw.h>

#include "elf/elfcheck.h"
#include "target/procmaps.h"
#include "target/resolve.h"
#include "base/safeopen.h"
#include "elf/symbols.h"
#include "unit.h"

static char dir[] = "/tmp/fnprof-unit-XXXXXX";

static const char fixture_src[] =
	"__attribute__((noinline)) int alpha(int x) { __asm__ volatile(\"\" : \"+r\"(x)); return x + 1; }\n"
	"__attribute__((noinline)) int beta_one(int x) { return alpha(x) * 2; }\n"
	"__attribute__((noinline)) int beta_two(int x) { return beta_one(x) * 3; }\n"
	"int main(int argc, char **argv) { (void)argv; return beta_two(argc) == 7; }\n";

static const char lib_src[] =
	"__attribute__((noinline)) int alpha(int x) { __asm__ volatile(\"\" : \"+r\"(x)); return x + 1; }\n"
	"int beta_one(int x) { return alpha(x) * 2; }\n";

/* Runs "CMD_HEAD DIR/SRC -o DIR/OUT". */
static int build(const char *cmd_head, const char *src, const char *out)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "%s %s/%s -o %s/%s", cmd_head, dir, src, dir, out);
	return system(cmd);
}

static int build_fixtures(void)
{
	char path[256];
	FILE *f;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/fx.c", dir);
	f = fopen(path, "w");
	fputs(fixture_src, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/lib.c", dir);
	f = fopen(path, "w");
	fputs(lib_src, f);
	fclose(f);
	return build("cc -O2 -fno-omit-frame-pointer -fPIE -pie", "fx.c", "pie") ||
	       build("cc -O2 -fno-omit-frame-pointer -no-pie", "fx.c", "nopie") ||
	       build("cc -O2 -fno-omit-frame-pointer -shared -fPIC", "lib.c", "lib.so") ||
	       build("cc -g -O2", "fx.c", "dbg") ||
	       build("cc -g -O2", "fx.c", "sparse") ||
	       build("strip", "pie", "stripped") ||
	       build("strip", "lib.so", "stripped.so");
}

static struct symtab *load(const char *name)
{
	struct symtab *st = NULL;
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (symtab_load(path, &st))
		return NULL;
	return st;
}

/* File offset of vaddr derived independently, from the section headers. */
static long long offset_by_sections(const char *path, __u64 vaddr)
{
	long long off = -1;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int fd = open(path, O_RDONLY);
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && vaddr >= sh.sh_addr &&
		    vaddr < sh.sh_addr + sh.sh_size)
			off = vaddr - sh.sh_addr + sh.sh_offset;
	elf_end(elf);
	close(fd);
	return off;
}

static void check_object(const char *name, int want_dyn)
{
	struct symtab *st = load(name);
	const struct sym **m = NULL, *s;
	__u64 vaddr = 0;

	CHECK(st);
	CHECK(st->source == SYMS_SYMTAB);
	CHECK(st->dyn == want_dyn);
	CHECK(symtab_match(st, "alpha", &m) == 1);
	s = m[0];
	free(m);
	CHECK(symtab_lookup(st, s->addr) == s);
	CHECK(symtab_lookup(st, s->addr + s->size - 1) == s);
	CHECK(!symtab_off_to_vaddr(st, s->offset, &vaddr) && vaddr == s->addr);
	CHECK(offset_by_sections(st->path, s->addr) == (long long)s->offset);
	symtab_free(st);
}

static void pie_executable(void) { check_object("pie", 1); }
static void non_pie_executable(void) { check_object("nopie", 0); }
static void shared_object(void) { check_object("lib.so", 1); }

static void glob_matches_all(void)
{
	struct symtab *st = load("pie");
	const struct sym **m = NULL;

	CHECK(st);
	CHECK(symtab_match(st, "beta_*", &m) == 2);
	free(m);
	CHECK(symtab_match(st, "nothing_*", &m) == 0);
	free(m);
	symtab_free(st);
}

static void suggests_close_names(void)
{
	struct symtab *st = load("pie");
	const char *near[5];
	size_t n;

	CHECK(st);
	n = symtab_suggest(st, "alpah", near, 5);
	CHECK(n >= 1 && !strcmp(near[0], "alpha"));
	n = symtab_suggest(st, "beta", near, 5);
	CHECK(n >= 2);
	symtab_free(st);
}

static void stripped_executable_has_no_functions(void)
{
	struct symtab *st = load("stripped");
	const struct sym **m = NULL;

	CHECK(st);
	CHECK(st->source != SYMS_SYMTAB);
	CHECK(symtab_match(st, "alpha", &m) == 0);
	free(m);
	symtab_free(st);
}

/* Without symbols, each function is still a row of its own: "object+0xADDR" from its FDE. */
static void stripped_functions_named_from_fdes(void)
{
	struct symtab *st = load("stripped"), *full = load("pie");
	const struct sym **m = NULL, *s;
	char name[64];
	size_t n = 0;

	CHECK(st && full);
	if (!st || !full)
		goto out;
	n = symtab_match(full, "alpha", &m);
	CHECK(n == 1);
	if (n == 1) {
		snprintf(name, sizeof(name), "stripped+%#llx", (unsigned long long)m[0]->addr);
		s = symtab_lookup(st, m[0]->addr + 1);
		CHECK(s && s->unnamed && !strcmp(s->name, name) && s->addr == m[0]->addr && s->size >= m[0]->size);
		if (s && strcmp(s->name, name))
			printf("# %s, want %s\n", s->name, name);
	}
	CHECK(st->nr_unnamed >= 4);
out:
	free(m);
	symtab_free(st);
	symtab_free(full);
}

static void stripped_library_keeps_dynsym(void)
{
	struct symtab *st = load("stripped.so");
	const struct sym **m = NULL;

	CHECK(st);
	CHECK(st->source == SYMS_DYNSYM);
	CHECK(symtab_match(st, "alpha", &m) == 1);
	free(m);
	symtab_free(st);
}

static void rejects_non_elf_and_missing(void)
{
	struct symtab *st = NULL;
	char path[256];

	snprintf(path, sizeof(path), "%s/fx.c", dir);
	CHECK(symtab_load(path, &st) == -EINVAL);
	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK(symtab_load(path, &st) == -ENOENT);
}

static void splits_func_specs(void)
{
	char obj[256];
	const char *name;

	split_func_spec("hot_func", obj, sizeof(obj), &name);
	CHECK(!obj[0] && !strcmp(name, "hot_func"));
	split_func_spec("libc:malloc", obj, sizeof(obj), &name);
	CHECK(!strcmp(obj, "libc") && !strcmp(name, "malloc"));
	split_func_spec("/usr/lib/libfoo.so.1:bar", obj, sizeof(obj), &name);
	CHECK(!strcmp(obj, "/usr/lib/libfoo.so.1") && !strcmp(name, "bar"));
	split_func_spec("ns::Class::method", obj, sizeof(obj), &name);
	CHECK(!obj[0] && !strcmp(name, "ns::Class::method"));
	split_func_spec("libx:ns::f", obj, sizeof(obj), &name);
	CHECK(!strcmp(obj, "libx") && !strcmp(name, "ns::f"));
}

static void matches_library_names(void)
{
	CHECK(lib_name_matches("/usr/lib/x86_64-linux-gnu/libc.so.6", "libc"));
	CHECK(lib_name_matches("/lib/libc-2.31.so", "libc"));
	CHECK(lib_name_matches("/usr/lib/libc.so.6", "libc.so.6"));
	CHECK(!lib_name_matches("/usr/lib/libcap.so.2", "libc"));
	CHECK(!lib_name_matches("/usr/lib/libcrypto.so.3", "libc"));
}

/* Only regular files open; a FIFO, device or directory is refused without blocking or opening it. */
static void open_regular_refuses_others(void)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(!mkfifo(path, 0600));
	CHECK(open_regular(AT_FDCWD, path, 0) == -ENODEV);
	CHECK(open_regular(AT_FDCWD, "/dev/null", 0) == -ENODEV);
	CHECK(open_regular(AT_FDCWD, dir, 0) == -ENODEV);
	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK(open_regular(AT_FDCWD, path, 0) == -ENOENT);
	snprintf(path, sizeof(path), "%s/pie", dir);
	fd = open_regular(AT_FDCWD, path, 0);
	CHECK(fd >= 0);
	CHECK((fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK)) == (O_RDONLY | O_NONBLOCK));
	close(fd);
}

/* Moves section name of the file at path to a 512 MiB hole at its end (ftruncate: sparse). */
static int make_sparse(const char *path, const char *name)
{
	int fd = open(path, O_RDWR), err = -1;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	struct stat st;

	while (elf && !elf_getshdrstrndx(elf, &shstrndx) && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", name))
			break;
	if (scn && gelf_getehdr(elf, &eh) && !fstat(fd, &st)) {
		Elf64_Shdr raw;
		off_t at = eh.e_shoff + elf_ndxscn(scn) * sizeof(raw);

		if (pread(fd, &raw, sizeof(raw), at) == sizeof(raw)) {
			raw.sh_offset = (st.st_size + 0xfff) & ~0xfffL;
			raw.sh_size = 512 << 20;
			err = pwrite(fd, &raw, sizeof(raw), at) == sizeof(raw) &&
			      !ftruncate(fd, raw.sh_offset + raw.sh_size) ? 0 : -1;
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

/* Whether libdw, handed the checked Elf, finds a compile unit. */
static int dwarf_cus(const char *name, int *refused)
{
	char path[256];
	int fd, cus = 0;
	Dwarf_Off off;
	size_t hsize;
	Dwarf *dw;
	Elf *elf;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open_regular(AT_FDCWD, path, 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	*refused = elf ? elfcheck_sections(elf, fd, NULL) : -1;
	dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	cus = dw && !dwarf_nextcu(dw, 0, &off, &hsize, NULL, NULL, NULL);
	if (dw)
		dwarf_end(dw);
	elf_end(elf);
	close(fd);
	return cus;
}

/* A sparse .debug_info is refused before libdw reads 512 MiB of it; a real one is kept. */
static void sparse_debug_info_refused(void)
{
	char path[256];
	int refused;

	snprintf(path, sizeof(path), "%s/sparse", dir);
	CHECK(!make_sparse(path, ".debug_info"));
	CHECK(dwarf_cus("dbg", &refused) == 1 && refused == 0);
	CHECK(dwarf_cus("sparse", &refused) == 0 && refused == 1);
}

int main(void)
{
	if (build_fixtures()) {
		printf("FAIL build_fixtures: cannot compile fixture ELF files in %s\n", dir);
		return 1;
	}
	RUN(pie_executable);
	RUN(non_pie_executable);
	RUN(shared_object);
	RUN(glob_matches_all);
	RUN(suggests_close_names);
	RUN(stripped_executable_has_no_functions);
	RUN(stripped_functions_named_from_fdes);
	RUN(stripped_library_keeps_dynsym);
	RUN(rejects_non_elf_and_missing);
	RUN(splits_func_specs);
	RUN(matches_library_names);
	RUN(open_regular_refuses_others);
	RUN(sparse_debug_info_refused);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			printf("FAIL cleanup: %s\n", cmd);
	}
	UNIT_EXIT();
}
