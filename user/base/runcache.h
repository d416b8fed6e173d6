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

#endif /* FNPROF_RUNCACHE_H */
