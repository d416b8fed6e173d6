/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Addresses of a process -> (function, object): its mappings (kept after it
 * exits, refreshed while it runs), each object's symbols read once and held
 * while the process maps it: a refresh drops the objects it no longer maps,
 * so a long --listen run holds what the process maps now, not all it ever
 * mapped. The names frames point to outlive that (one copy each), until
 * they fill their budget (symbolizer_renew_names).
 */
#ifndef FNPROF_SYMBOLIZE_H
#define FNPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

struct symbolizer;

struct frame_info {
	const char *func;    /* function, demangled; "[unknown]" when not known */
	const char *object;  /* object path ("[kernel.kallsyms]" for the kernel); "[unknown]" if unmapped */
	__u64 map_start, map_limit, map_pgoff;  /* its mapping, for pprof (0 if none) */
	bool known;
	bool inlined;        /* an inlined call ("name (inlined)") within the frame that follows */
};

/*
 * A symbolizer for process pid whose names and perf maps are held under
 * max_memory bytes (--max-memory; 0: BUDGET_DEFAULT), set before its first
 * reading. NULL when out of memory.
 */
struct symbolizer *symbolizer_new(pid_t pid, size_t max_memory);
/*
 * -a: a symbolizer for process pid that shares its parent's budget, names
 * (the strings frames point to, which so outlive it), perf map files (one
 * copy of a file however many processes name it) and objects' symbols and
 * DWARF (objcache.h: one copy per file, by device and inode). It reads an
 * object when a frame first needs it, not all at each refresh (so memory
 * goes to the objects sampled code is in), and after the process exited,
 * from the same file (device and inode) where it still lies. The parent
 * must outlive it. NULL when out of memory.
 */
struct symbolizer *symbolizer_new_child(pid_t pid, struct symbolizer *parent);

/*
 * Of a parent (-a): where its children find the mappings of a process gone
 * before they first read them (mapsnap.h); m must outlive them. Set before
 * the first child is made.
 */
struct mapsnap;
void symbolizer_set_snapshots(struct symbolizer *parent, struct mapsnap *m);

/* Of a parent: how many files' symbols its children share now. */
size_t symbolizer_nr_shared(const struct symbolizer *s);
void symbolizer_free(struct symbolizer *s);

/* Re-reads /proc/PID/maps if the process still runs; the old mappings stay otherwise. */
void symbolizer_refresh(struct symbolizer *s);

/*
 * The budget for what it (and its children) hold for the targets: names and
 * perf maps (budget.h; BUDGET_DEFAULT until the caller sets its limit).
 */
struct budget *symbolizer_budget(struct symbolizer *s);

/*
 * The generation of the names it hands out (names.h). Frames of an older
 * one point to freed strings: whoever caches frames drops them when it
 * changes. symbolizer_renew_names starts a new one when the names fill over
 * three quarters of their budget (true then); call it only where no frame
 * is held (before a report symbolizes its stacks).
 */
unsigned int symbolizer_names_gen(const struct symbolizer *s);
bool symbolizer_renew_names(struct symbolizer *s);

/* How many objects' symbols are held now. */
size_t symbolizer_nr_objects(const struct symbolizer *s);

/* The function holding a user address; the strings live as long as the symbolizer. */
void symbolize_user(struct symbolizer *s, __u64 ip, struct frame_info *out);
/*
 * The inlined calls that a user address lies in, from DWARF (the object's or
 * its debug file's), innermost first, as "name (inlined)": up to max names,
 * living as long as the symbolizer. Returns how many (0 without DWARF).
 */
int symbolize_inlines(struct symbolizer *s, __u64 ip, const char **names, int max);

/* The program's own executable mapping (the first object mapped), for pprof. false if unknown. */
bool symbolize_main_object(struct symbolizer *s, struct frame_info *out);

void symbolize_kernel(struct symbolizer *s, __u64 ip, struct frame_info *out);

/* Whether a kernel frame is the probe's own (atop a stack taken in a tracepoint): fnprof's, not the target's. */
bool symbolize_probe_frame(const struct frame_info *f);

/* A stack symbolized once: nr frames, leaf first, each with the address it came from. */
struct sym_stack {
	int nr;
	struct frame_info *f;
	__u64 *ips;
};

#define SYM_MAX_INLINED 16  /* inlined frames shown per address */

/*
 * Symbolizes n raw addresses (leaf first; above the leaf, return addresses)
 * into t, up to max frames; with inlines, a user address's inlined calls are
 * frames of their own before its function's. 0 or -ENOMEM.
 */
int symbolize_stack(struct symbolizer *s, const __u64 *ips, int n, bool kernel, bool inlines, int max,
		    struct sym_stack *t);

/* Frees nr stacks of an array of them, and the array. */
void sym_stacks_free(struct sym_stack *st, size_t nr);

#endif /* FNPROF_SYMBOLIZE_H */
