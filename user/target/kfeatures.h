/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the running kernel offers fnprof, found on it (not read off its
 * version number): the instructions it emulates for a uprobe
 * (insnprobe.h), the 5-byte-nop optimization, uprobe_multi links, the
 * uretprobe system call, uprobe sessions, bpf_loop, task storage, ring
 * buffers and the BTF fields fnprof's BPF programs read. `fnprof --version
 * -v` lists them.
 */
#ifndef FNPROF_KFEATURES_H
#define FNPROF_KFEATURES_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "target/kbtf.h"

/*
 * One line per feature to f: "  NAME: yes", "  NAME: no (Linux X)" (the
 * first kernel that has it, or the kernel option it needs), or "  NAME:
 * unknown (why)". Costs ~10 ms (the kernel's BTF is read).
 */
void kfeatures_print(FILE *f);

/*
 * Whether the kernel has uprobe sessions (Linux 6.13: an entry program that
 * may decline its call's return probe), found in its BTF once (~10 ms) and
 * cached. FNPROF_NO_UPROBE_SESSION=1 (or FNPROF_NO_UPROBE_MULTI=1) says no.
 */
bool kfeatures_uprobe_sessions(void);

/* Those offsets, as kfeatures_uprobe_sessions() found them: 0, or -ENOENT without sessions. */
int kfeatures_task_offsets(struct task_offsets *out);

#endif /* FNPROF_KFEATURES_H */
