/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Objects' symbols and DWARF shared by the symbolizers of many processes
 * (-a): keyed by the file (device, inode), so that 200 processes mapping
 * libc hold one copy of its symbols. Reference counted: an entry goes with
 * its last user. Not thread-safe (the symbolizers run on one thread).
 */
#ifndef FNPROF_OBJCACHE_H
#define FNPROF_OBJCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct inlines;
struct symtab;

struct objcache;

/* NULL when out of memory. */
struct objcache *objcache_new(void);
/* Frees the cache and whatever entries are left; safe with NULL. */
void objcache_free(struct objcache *c);

/*
 * The symbols and DWARF of file (dev, ino), with a new reference, into
 * *st and *inl (either may be NULL: not readable). false if not held.
 */
bool objcache_get(struct objcache *c, dev_t dev, ino_t ino, struct symtab **st, struct inlines **inl);

/* Holds st and inl for (dev, ino), with one reference: the caller's. The cache owns them. 0 or -ENOMEM. */
int objcache_add(struct objcache *c, dev_t dev, ino_t ino, struct symtab *st, struct inlines *inl);

/* Drops the reference to (dev, ino); the last frees the symbols and DWARF. */
void objcache_release(struct objcache *c, dev_t dev, ino_t ino);

/* How many files' symbols are held. */
size_t objcache_nr(const struct objcache *c);

#endif /* FNPROF_OBJCACHE_H */
