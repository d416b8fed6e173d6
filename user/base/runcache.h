/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files kept from one run of fnprof to the next within a boot: what the
 * running kernel does or holds cannot change before the next boot. They
 * live in /run/fnprof (a tmpfs, emptied at boot), owned by the user running
 * fnprof and writable by no one else, each written whole (a new file renamed
 * over the old one): a reader never sees half of one.
 */
#ifndef FNPROF_RUNCACHE_H
#define FNPROF_RUNCACHE_H

#include <stdbool.h>
#include <stddef.h>

#define RUNCACHE_DIR "/run/fnprof"

/*
 * The folder: RUNCACHE_DIR; in the test build (fnprof-test) only,
 * FNPROF_TEST_RUNCACHE_DIR where set, so that a test of the kept files
 * meets no other fnprof running meanwhile.
 */
const char *runcache_dir(void);

/* This boot's id (/proc/sys/kernel/random/boot_id, without its newline) into buf; "" if unknown. */
void runcache_boot_id(char *buf, size_t size);

/*
 * Opens the kept file name (no slash in it) for reading: an fd the caller
 * closes, or -errno: -ENOENT if none, -EPERM if it is not a regular file of
 * ours that no one else may write.
 */
int runcache_open(const char *name);

/* Keeps len bytes of data as name, for the next runs: 0 or -errno (-EPERM: /run/fnprof is not ours). */
int runcache_write(const char *name, const void *data, size_t len);

/*
 * A kept file of a key and then len bytes of data. The key (RUNCACHE_KEY_LEN
 * bytes, NUL-padded) is "BOOT VERSION WHAT": this boot's id, fnprof's version
 * and what (the caller's format of data, which it changes with the data's
 * layout). runcache_read_keyed(): true and the data, if name holds that key
 * and len bytes exactly; false for a file of another boot, version or format,
 * or none. runcache_write_keyed(): 0 or -errno (-ENOENT: the boot's id is
 * not known, so nothing could tell the next boot's runs from this one's).
 */
#define RUNCACHE_KEY_LEN 128
bool runcache_read_keyed(const char *name, const char *what, void *data, size_t len);
int runcache_write_keyed(const char *name, const char *what, const void *data, size_t len);

#endif /* FNPROF_RUNCACHE_H */
