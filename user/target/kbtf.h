/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What fnprof reads of the running kernel's BTF before a run: whether
 * sched_switch passes prev_state, whether uprobe sessions exist, where
 * task_struct keeps what a session's program reads, and the ids of the
 * raw tracepoints that tp_btf programs attach to (tpbtf.h). Reading the BTF costs
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

/* The raw tracepoints whose ids are kept (kbtf_tp_names): every tp_btf program of bpf/. */
#define KBTF_NR_TPS 5
extern const char *const kbtf_tp_names[KBTF_NR_TPS];

struct kbtf_facts {
	int switch_state;           /* sched_switch passes prev_state (5.18): 1, 0, or -errno if not told */
	bool sessions;              /* uprobe sessions (6.13), with task below read */
	struct task_offsets task;
	__u32 tp_ids[KBTF_NR_TPS];  /* btf_trace_<name>'s id in the kernel's BTF (kbtf_tp_names); 0 if none */
};

struct btf;

/* Whether enum type of btf (a kernel's) has a value named name. */
bool kbtf_has_enum_val(const struct btf *btf, const char *type, const char *name);

/* This boot's facts: from the kept file, or read from the kernel's BTF (and kept) at the first call. */
const struct kbtf_facts *kbtf_facts(void);

/* The id of typedef btf_trace_<name> in the kernel's BTF btf: > 0, or -ENOENT. */
int kbtf_tp_id_in(const struct btf *btf, const char *name);

#endif /* FNPROF_KBTF_H */
