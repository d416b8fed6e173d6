/* SPDX-License-Identifier: GPL-2.0 */
/* Go executables: the toolchain's version (.go.buildinfo) and function names (.gopclntab). */
#ifndef FNPROF_GOBIN_H
#define FNPROF_GOBIN_H

#include <stdbool.h>
#include <gelf.h>
#include <linux/types.h>

/* What the binary says of the Go toolchain that built it. */
struct go_info {
	char version[32];    /* "go1.19.8"; "" when .go.buildinfo cannot be read */
	int major, minor;    /* 1, 19; 0, 0 unknown */
	bool noregabi;       /* built with GOEXPERIMENT=noregabi */
};

/* Reads .go.buildinfo of a Go executable. 0, or -ENOENT (none) / -EINVAL (unreadable). */
int go_info_read(Elf *elf, struct go_info *gi);

/*
 * Why fnprof cannot trace functions in a Go binary built by gi's toolchain
 * on x86-64, or NULL if it can: it needs the register ABI (Go 1.17+), where
 * Go code keeps the running goroutine in r14.
 */
const char *go_unsupported(const struct go_info *gi);

/*
 * One function of .gopclntab: name (valid during the call), link-time address
 * and size; abi0: an ABI0 wrapper of the function of that name (which Go's
 * .symtab calls NAME.abi0).
 */
typedef int (*go_func_fn)(void *arg, const char *name, __u64 addr, __u64 size, bool abi0);

/*
 * Calls fn for every function in .gopclntab (Go 1.16 and later layouts), in
 * address order; a non-zero return from fn stops and is returned. 0, or
 * -ENOENT (no section) / -EINVAL (a layout this reader does not know).
 */
int go_pclntab_funcs(Elf *elf, go_func_fn fn, void *arg);

/*
 * Whether the ELF file at path was built by Go (it has .go.buildinfo or
 * .gopclntab); false for anything unreadable.
 */
bool go_file(const char *path);

#endif /* FNPROF_GOBIN_H */
