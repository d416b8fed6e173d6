// SPDX-License-Identifier: GPL-2.0
/* A small array searched linearly: a machine maps hundreds of distinct files, not millions. */
#include <errno.h>
#include <stdlib.h>

#include "base/array.h"
#include "elf/inlines.h"
#include "stacks/objcache.h"
#include "elf/symbols.h"

struct cached {
	dev_t dev;
	ino_t ino;
	struct symtab *st;
	struct inlines *inl;
	unsigned long refs;
};

struct objcache {
	struct cached *v;
	size_t nr, cap;
};

struct objcache *objcache_new(void)
{
	return calloc(1, sizeof(struct objcache));
}

void objcache_free(struct objcache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nr; i++) {
		symtab_free(c->v[i].st);
		inlines_close(c->v[i].inl);
	}
	free(c->v);
	free(c);
}

static struct cached *find(const struct objcache *c, dev_t dev, ino_t ino)
{
	size_t i;

	for (i = 0; i < c->nr; i++)
		if (c->v[i].dev == dev && c->v[i].ino == ino)
			return &c->v[i];
	return NULL;
}

bool objcache_get(struct objcache *c, dev_t dev, ino_t ino, struct symtab **st, struct inlines **inl)
{
	struct cached *e = find(c, dev, ino);

	if (!e)
		return false;
	e->refs++;
	*st = e->st;
	*inl = e->inl;
	return true;
}

int objcache_add(struct objcache *c, dev_t dev, ino_t ino, struct symtab *st, struct inlines *inl)
{
	if (ARRAY_RESERVE(c->v, c->nr + 1, c->cap))
		return -ENOMEM;
	c->v[c->nr++] = (struct cached){ .dev = dev, .ino = ino, .st = st, .inl = inl, .refs = 1 };
	return 0;
}

void objcache_release(struct objcache *c, dev_t dev, ino_t ino)
{
	struct cached *e = find(c, dev, ino);

	if (!e || --e->refs)
		return;
	symtab_free(e->st);
	inlines_close(e->inl);
	*e = c->v[--c->nr];
}

size_t objcache_nr(const struct objcache *c)
{
	return c->nr;
}
