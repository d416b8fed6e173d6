/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ELF function symbols of one object: its .symtab, else the .symtab of its
 * separate debug file (debuginfo.h), else .dynsym; functions that no symbol
 * covers are named "object+0xADDR" from the unwind tables (ehframe.h).
 */
#ifndef FNPROF_SYMBOLS_H
#define FNPROF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "elf/gobin.h"

enum sym_source {
	SYMS_NONE,    /* neither table has functions: stripped */
	SYMS_SYMTAB,
	SYMS_DYNSYM,  /* no .symtab: only exported functions are known */
	SYMS_GOPCLNTAB, /* a stripped Go binary: every function, from the Go runtime's own table */
	SYMS_DEBUG_FILE,  /* the .symtab of a separate debug file (symtab.debug_file) */
};

struct sym {
	char *name;    /* as in the symbol table (mangled for C++) */
	char *pretty;  /* demangled ("app::middle(int)"), or NULL for C names */
	char *base;    /* demangled without parameters ("app::middle"), or NULL */
	__u64 addr;    /* st_value: link-time virtual address */
	__u64 size;
	__u64 offset;  /* file offset of addr, from the executable PT_LOAD that holds it */
	bool ifunc;    /* STT_GNU_IFUNC: the address is a resolver, not the function */
	bool unnamed;  /* no symbol: "object+0xADDR" from an FDE of the unwind tables */
	bool global;
	bool go;       /* a Go function (in .gopclntab): its calls belong to goroutines */
};

struct segment {
	__u64 vaddr, memsz, offset, filesz;
	bool exec;
};

struct symtab {
	char *path;            /* as opened */
	struct sym *syms;      /* sorted by addr, one entry per address (aliases merged) */
	size_t nr;
	enum sym_source source;
	char *debug_file;      /* SYMS_DEBUG_FILE: where it was found (debuginfo_open's "found") */
	size_t nr_unnamed;     /* functions named from FDEs */
	bool dyn;              /* ET_DYN: PIE executable or shared object */
	bool unwinds;          /* C++ exceptions, Rust panics or Go: code that a uretprobe can break */
	bool switches_stacks;  /* imports swapcontext/setcontext/sigaltstack: runs code on other stacks */
	bool go;               /* a Go executable (.go.buildinfo or .gopclntab) */
	struct go_info go_info;  /* its toolchain, as far as .go.buildinfo tells */
	__u64 entry;           /* e_entry: where the kernel or the loader starts it (0: none) */
	bool longjmps;         /* imports longjmp/siglongjmp/__longjmp_chk: may abandon many frames at once */
	struct segment *segs;  /* PT_LOAD segments */
	size_t nr_segs;
};

/*
 * Limits on what one file may make fnprof allocate: a hostile file can point
 * millions of symbols at one huge name. The largest real programs have about
 * 2 million functions; their names fit in the string table they come from.
 */
#define SYMTAB_MAX_FUNCTIONS (8u << 20)
#define SYMTAB_MAX_NAME_LEN (64u << 10)

/*
 * Reads the function symbols of the ELF file at path. 0 or -errno: -EINVAL
 * (not ELF, or cut short), -ENODEV (not a regular file: a FIFO, device or
 * directory is never read), -ESTALE (truncated or rewritten while it was
 * read: no SIGBUS, the file is not mapped), -E2BIG (more than
 * SYMTAB_MAX_FUNCTIONS functions, a name over SYMTAB_MAX_NAME_LEN bytes, or
 * names far beyond the size of their string table).
 */
int symtab_load(const char *path, struct symtab **out);

/*
 * The same for an object of process pid (0: one of fnprof's own root) that
 * fnprof opens at open_path and the target knows as target_path: without a
 * .symtab, its separate debug file is looked for inside the target's root.
 */
int symtab_load_target(const char *open_path, const char *target_path, pid_t pid, struct symtab **out);
void symtab_free(struct symtab *st);

/*
 * Only the markers of the object at path (unwinds, switches_stacks,
 * longjmps, go and go_info) into *out, no symbol: its other fields are
 * zero, nothing to free. Reads the section headers and symbol tables'
 * names once (~1 ms for a large program). 0 or -errno.
 */
int symtab_markers(const char *path, struct symtab *out);

/* Opens path for reading if it is a regular file, without blocking: an fd, or -errno (-ENODEV: not regular). */
int symtab_open(const char *path);

/* The function containing link-time address vaddr, or NULL. */
const struct sym *symtab_lookup(const struct symtab *st, __u64 vaddr);

/*
 * The file offset of link-time address vaddr in any PT_LOAD's file-backed
 * bytes, and how many of them follow it there (0: none).
 */
__u64 symtab_vaddr_to_off(const struct symtab *st, __u64 vaddr, __u64 *off);

/* File offset -> link-time virtual address, through the PT_LOAD segments. 0 or -ENOENT. */
int symtab_off_to_vaddr(const struct symtab *st, __u64 off, __u64 *vaddr);

/*
 * Functions whose name matches pattern (fnmatch glob, or exact when it has no
 * glob characters): the symbol name, or for C++ the demangled name with or
 * without its parameters. Fills out (caller frees the array, not the entries).
 */
size_t symtab_match(const struct symtab *st, const char *pattern, const struct sym ***out);

/* Up to max names closest to name (edit distance, substring), best first. */
size_t symtab_suggest(const struct symtab *st, const char *name, const char **out, size_t max);

bool pattern_is_glob(const char *pattern);

/* The name to show: demangled for C++. */
const char *sym_display_name(const struct sym *s);

#endif /* FNPROF_SYMBOLS_H */
