/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What fnprof reads of the running kernel's BTF before a run: whether
 * sched_switch passes prev_state, whether uprobe sessions exist and where
 * task_struct keeps what a session's program reads. Reading the BTF costs
 * 7-20 ms (3 MB through sysfs, then parsed), on the path to the first probe
 * of a system-wide trace: the boot's first run keeps the answers in
 * /run/fnprof (runcache.h), and later runs read them from there.
 */
#ifndef FNPROF_KBTF_H
#define FNPROF_KBTF_H

#include <stdbool.h>
#include <linux/types.h>

/* Where the running kernel's task_struct keeps the fields that a session's program reads (bytes). */
struct task_offsets {
	__u32 exec_id_off, exec_id_size;   /* self_exec_id: bumped by each exec */
	__u32 parent_off;                  /* real_parent */
	__u32 tgid_off;
};

struct kbtf_facts {
	int switch_state;           /* sched_switch passes prev_state (5.18): 1, 0, or -errno if not told */
	bool sessions;              /* uprobe sessions (6.13), with task below read */
	struct task_offsets task;
};

struct btf;

/* Whether enum type of btf (a kernel's) has a value named name. */
bool kbtf_has_enum_val(const struct btf *btf, const char *type, const char *name);

/* This boot's facts: from the kept file, or read from the kernel's BTF (and kept) at the first call. */
const struct kbtf_facts *kbtf_facts(void);

#endif /* FNPROF_KBTF_H */
