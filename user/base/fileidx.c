// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileidx.h"

static size_t slot_of(dev_t dev, ino_t ino, size_t cap)
{
	unsigned long long h = ((unsigned long long)ino * 0x9e3779b97f4a7c15ULL) ^ ((unsigned long long)dev << 17);

	return (h ^ h >> 29) & (cap - 1);
}

/* The slot of (dev, ino) in slots of cap, or the empty one where it would go. */
static struct fileidx_slot *find(struct fileidx_slot *s, size_t cap, dev_t dev, ino_t ino)
{
	size_t h;

	for (h = slot_of(dev, ino, cap); s[h].ino && (s[h].ino != ino || s[h].dev != dev); h = (h + 1) & (cap - 1))
		;
	return &s[h];
}

static int grow(struct fileidx *x)
{
	size_t cap = x->cap ? 2 * x->cap : 64, i;
	struct fileidx_slot *s = calloc(cap, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < x->cap; i++)
		if (x->slot[i].ino)
			*find(s, cap, x->slot[i].dev, x->slot[i].ino) = x->slot[i];
	free(x->slot);
	x->slot = s;
	x->cap = cap;
	return 0;
}

size_t fileidx_get(const struct fileidx *x, dev_t dev, ino_t ino)
{
	const struct fileidx_slot *s;

	if (!x->cap || !ino)
		return (size_t)-1;
	s = find(x->slot, x->cap, dev, ino);
	return s->ino ? s->val : (size_t)-1;
}

int fileidx_put(struct fileidx *x, dev_t dev, ino_t ino, size_t val)
{
	struct fileidx_slot *s;

	if (!ino)
		return -EINVAL;
	if (2 * (x->nr + 1) > x->cap && grow(x))
		return -ENOMEM;
	s = find(x->slot, x->cap, dev, ino);
	if (!s->ino)
		x->nr++;
	*s = (struct fileidx_slot){ .dev = dev, .ino = ino, .val = val };
	return 0;
}

void fileidx_clear(struct fileidx *x)
{
	if (x->slot)
		memset(x->slot, 0, x->cap * sizeof(*x->slot));
	x->nr = 0;
}

void fileidx_free(struct fileidx *x)
{
	free(x->slot);
	*x = (struct fileidx){};
}
