// SPDX-License-Identifier: GPL-2.0
/* -a's object cache (objcache.h): one copy per file, shared, freed with its last reference. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "stacks/objcache.h"
#include "elf/symbols.h"
#include "unit.h"

/* The test program's own symbols: a real object to share. */
static struct symtab *own_symbols(void)
{
	struct symtab *st = NULL;

	return symtab_load("/proc/self/exe", &st) ? NULL : st;
}

static void shared_and_counted(void)
{
	struct objcache *c = objcache_new();
	struct symtab *st = own_symbols(), *got = NULL;
	struct inlines *inl = (struct inlines *)1;  /* only its pointer is compared: never freed (refs left) */

	CHECK(c && st);
	CHECK(!objcache_get(c, 1, 42, &got, &inl));
	CHECK(!objcache_add(c, 1, 42, st, NULL));
	CHECK(objcache_nr(c) == 1);
	/* A second process mapping the same file (device, inode) gets the same copy. */
	CHECK(objcache_get(c, 1, 42, &got, &inl) && got == st && !inl);
	/* Another inode on the same device is another file. */
	CHECK(!objcache_get(c, 1, 43, &got, &inl));
	objcache_release(c, 1, 42);
	CHECK(objcache_nr(c) == 1);   /* one reference left */
	objcache_release(c, 1, 42);   /* the last: freed (ASan: no leak, no double free) */
	CHECK(objcache_nr(c) == 0);
	CHECK(!objcache_get(c, 1, 42, &got, &inl));
	objcache_release(c, 1, 42);   /* nothing held: ignored */
	objcache_free(c);
}

static void free_takes_what_is_left(void)
{
	struct objcache *c = objcache_new();

	CHECK(c);
	CHECK(!objcache_add(c, 2, 7, own_symbols(), NULL));
	CHECK(!objcache_add(c, 2, 8, own_symbols(), NULL));
	objcache_free(c);   /* both freed with it (ASan's leak check) */
	objcache_free(NULL);
}

int main(void)
{
	RUN(shared_and_counted);
	RUN(free_takes_what_is_left);
	UNIT_EXIT();
}
