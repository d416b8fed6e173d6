/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An index of files by identity (device, inode) to a number of the
 * caller's (a slot in an array of its own): one entry per file however many
 * mappings or names it has (30000 hardlinks of one library are one file).
 * Open addressing, at most half full.
 */
#ifndef FNPROF_FILEIDX_H
#define FNPROF_FILEIDX_H

#include <stddef.h>
#include <sys/types.h>

struct fileidx_slot {
	dev_t dev;
	ino_t ino;        /* 0: empty (no file has inode 0) */
	size_t val;
};

struct fileidx {
	struct fileidx_slot *slot;
	size_t nr, cap;
};

/* The number held for (dev, ino), or (size_t)-1 if none. */
size_t fileidx_get(const struct fileidx *x, dev_t dev, ino_t ino);
/* Holds val for (dev, ino) (ino non-zero), replacing what it held. 0 or -ENOMEM (x unchanged). */
int fileidx_put(struct fileidx *x, dev_t dev, ino_t ino, size_t val);
/* Empties x, keeping its memory. */
void fileidx_clear(struct fileidx *x);
void fileidx_free(struct fileidx *x);

#endif /* FNPROF_FILEIDX_H */
