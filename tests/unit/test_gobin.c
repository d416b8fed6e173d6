// SPDX-License-Identifier: GPL-2.0
/*
 * Go executables: the names read from .gopclntab of the stripped Go target
 * against the .symtab of the same program built with symbols, and the
 * toolchain version from .go.buildinfo. The Go targets are built by make
 * test-build where Go is installed (run from tests/: bin/...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gobin.h"
#include "symbols.h"
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

int main(void)
{
	RUN(pclntab_names_match_symtab);
	RUN(cgo_c_functions_are_not_go);
	RUN(buildinfo_version);
	RUN(garbled_version_is_unknown);
	RUN(c_program_is_not_go);
	RUN(unsupported_versions);
	UNIT_EXIT();
}
