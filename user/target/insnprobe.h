/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which first instructions the running kernel emulates for a uprobe, found
 * on it rather than assumed from its version: the site chosen for a traced
 * function (site_kind_of, arch_entry_skip) follows it.
 *
 * How: a child process per form of arch_insns (forked from fnprof, so it
 * maps fnprof's own function that starts with the form), an entry-only
 * uprobe on that function (a perf event for that child alone; no uretprobe,
 * whose trampoline some kernels keep in the same area), one call, then the
 * child's /proc/PID/maps: the kernel maps its out-of-line area "[uprobes]"
 * at the first instruction it single-steps (xol_add_vma), and
 * "[uprobes-trampoline]" at the first 5-byte nop it optimizes. Neither is
 * mapped for an emulated instruction. No timing: the answer is the same on
 * a busy machine. The work is done in an orphaned grandchild, which exits
 * after it answered: each uprobe's release costs the kernel a grace period
 * (50-100 ms here), paid there and not by fnprof's start-up.
 */
#ifndef FNPROF_INSNPROBE_H
#define FNPROF_INSNPROBE_H

#include "target/arch.h"

/*
 * Probes every form into *u (u->probed false when nothing could be found:
 * no uprobe PMU, no permission). A form whose hit was not seen stays
 * INSN_UNKNOWN. 0 or -errno; *ms: the wall time it took, in milliseconds.
 */
int insnprobe_run(struct uprobe_insns *u, double *ms);

/*
 * The same, found once per process on the first call (later calls return
 * the same): what the site choice reads. This boot's first run probes and
 * keeps the answer in /run/fnprof (root's, keyed by the boot id: a kernel
 * does not change what it emulates until it reboots); later runs read it.
 * Never NULL. Not for a thread other than the one that called it first.
 */
const struct uprobe_insns *insnprobe_here(void);

#endif /* FNPROF_INSNPROBE_H */
