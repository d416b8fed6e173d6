/* SPDX-License-Identifier: GPL-2.0 */
/* Turns -f patterns into probe sites: object, function, file offset. */
#ifndef FNPROF_RESOLVE_H
#define FNPROF_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "opts.h"

/*
 * How the kernel handles a uprobe on the function's first instruction: it
 * decides what the probe costs inside the measured interval.
 */
enum site_kind {
	SITE_EMULATED,   /* push %reg: emulated in the trap, no single step */
	SITE_STEPPED,    /* any other instruction: executed out of line, single-stepped */
	SITE_NOP5,       /* 5-byte nop: optimized into a call on recent kernels */
	SITE_NR,
};

/* The kind of probe site that the function's first bytes make. */
enum site_kind site_kind_of(const unsigned char *insn, size_t len);
const char *site_kind_name(enum site_kind k);
const char *exit_mode_name(enum exit_mode m);

struct probe {
	char *name;       /* function */
	char *object;     /* object path as the target sees it */
	char *open_path;  /* path fnprof opens and attaches to (inside the target's root) */
	bool main_exe;    /* in the main executable (shown without an object prefix) */
	__u64 addr;       /* link-time virtual address */
	__u64 size;
	__u64 offset;     /* file offset: where the uprobe goes */
	__u32 id;         /* index: the BPF attach cookie */
	enum site_kind kind;
	enum exit_mode exit;  /* EXIT_URETPROBE, EXIT_RET or EXIT_NONE: how its return is seen */
	const char *exit_why; /* why that mode (auto) */
	__u64 *exits;     /* EXIT_RET: file offsets of its ret / tail-call instructions */
	int nr_exits;
};

#define MAX_HELD_FDS 64

struct probe_list {
	struct probe *probes;
	size_t nr;
	bool switches_stacks;        /* the program runs code on stacks of its own (coroutines, sigaltstack) */
	int held_fds[MAX_HELD_FDS];  /* objects opened inside the target's root: open_path names them */
	size_t nr_held;
};

/*
 * Resolves o->funcs for process pid (attach mode) or for the command
 * o->cmd about to be launched (pid is its pid; its libraries are not mapped
 * yet, so they are found through DT_NEEDED). 0, or an exit code after the
 * error was printed.
 */
int resolve_probes(const struct opts *o, pid_t pid, struct probe_list *out);

/*
 * Launch mode, when the command was a script followed through exec: as
 * resolve_probes, with the program at exe (/proc/PID/exe of the child, stopped
 * right after it exec'd it) as the main executable.
 */
int resolve_probes_followed(const struct opts *o, pid_t pid, const char *exe, struct probe_list *out);

/*
 * Whether the program at exe (real_path: its name) is the one to trace when
 * following a script: it has a function for every -f NAME of the main
 * executable; with only LIB:NAME patterns, any program but a shell or env.
 */
bool resolve_program_fits(const struct opts *o, const char *exe, const char *real_path);
void probe_list_free(struct probe_list *pl);

/* Splits "LIB:NAME" / "/path:NAME" / "NAME" (a C++ "a::b" is a name). obj is NULL for NAME. */
void split_func_spec(const char *spec, char *obj, size_t obj_size, const char **name);

/* The file execvp would run for cmd (PATH search), into buf. 0 or -ENOENT. */
int find_in_path(const char *cmd, char *buf, size_t size);

#endif /* FNPROF_RESOLVE_H */
