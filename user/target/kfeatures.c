// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "target/kfeatures.h"
#include "target/insnprobe.h"

/* How a feature is found: a value of a kernel enum, a kernel function, a struct's field (BTF), libbpf's probes. */
enum find_by { BY_ENUM_VAL, BY_FUNC, BY_FIELD, BY_HELPER, BY_MAP };

static const struct feature {
	const char *name;
	enum find_by by;
	const char *type, *member;  /* BY_ENUM_VAL: enum, value; BY_FUNC: function (after the syscall prefix);
				     * BY_FIELD: struct, field */
	int id;                     /* BY_HELPER: BPF_FUNC_*; BY_MAP: BPF_MAP_TYPE_* */
	const char *since;          /* the first kernel with it, or the option it needs */
} features[] = {
	{ "uprobe_multi links", BY_ENUM_VAL, "bpf_attach_type", "BPF_TRACE_UPROBE_MULTI", 0, "Linux 6.6" },
	{ "uprobe sessions", BY_ENUM_VAL, "bpf_attach_type", "BPF_TRACE_UPROBE_SESSION", 0, "Linux 6.13" },
	{ "uretprobe system call", BY_FUNC, "uretprobe", NULL, 0, "Linux 6.11" },
	{ "bpf_loop", BY_HELPER, NULL, NULL, BPF_FUNC_loop, "Linux 5.17" },
	{ "task storage maps", BY_MAP, NULL, NULL, BPF_MAP_TYPE_TASK_STORAGE, "Linux 5.11" },
	{ "ring buffers", BY_MAP, NULL, NULL, BPF_MAP_TYPE_RINGBUF, "Linux 5.8" },
	{ "BTF uprobes_state.head_tramps", BY_FIELD, "uprobes_state", "head_tramps", 0, "Linux 6.18" },
	{ "BTF task_struct.sched_info", BY_FIELD, "task_struct", "sched_info", 0, "CONFIG_SCHED_INFO" },
	{ "BTF sched_entity.cfs_rq", BY_FIELD, "sched_entity", "cfs_rq", 0, "CONFIG_FAIR_GROUP_SCHED" },
	{ "BTF cfs_rq.rq", BY_FIELD, "cfs_rq", "rq", 0, "CONFIG_FAIR_GROUP_SCHED" },
};

/* Whether enum type of the kernel's BTF has a value named name. */
static bool has_enum_val(const struct btf *btf, const char *type, const char *name)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_ENUM);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_enum *e = t ? btf_enum(t) : NULL;
	int i;

	for (i = 0; e && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
			return true;
	return false;
}

/* Whether struct type of the kernel's BTF has a member named name. */
static bool has_field(const struct btf *btf, const char *type, const char *name)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;
	int i;

	for (i = 0; m && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), name))
			return true;
	return false;
}

/*
 * Whether libbpf's probes can tell anything: they load a program or make a
 * map, and read a refusal (no privilege) as "no", or a helper as "yes".
 * 0, or -EPERM when a kprobe program or an array, which every kernel has,
 * cannot be made.
 */
static int bpf_usable(void)
{
	static int usable = 1;

	if (usable == 1)
		usable = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL) == 1 &&
				 libbpf_probe_bpf_map_type(BPF_MAP_TYPE_ARRAY, NULL) == 1 ? 0 : -EPERM;
	return usable;
}

/* 1 when the kernel has feature f, 0 when not, -errno when that cannot be told. */
static int has(const struct feature *f, const struct btf *btf, int btf_err)
{
	char fn[128];

	if ((f->by == BY_HELPER || f->by == BY_MAP) && bpf_usable())
		return bpf_usable();
	if (f->by == BY_HELPER)
		return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, f->id, NULL);
	if (f->by == BY_MAP)
		return libbpf_probe_bpf_map_type(f->id, NULL);
	if (!btf)
		return btf_err;
	if (f->by == BY_ENUM_VAL)
		return has_enum_val(btf, f->type, f->member);
	if (f->by == BY_FIELD)
		return has_field(btf, f->type, f->member);
	snprintf(fn, sizeof(fn), "%s%s", arch_syscall_prefix, f->type);
	return btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC) > 0;
}

static void print_line(FILE *out, const char *name, int yes, const char *since)
{
	if (yes > 0)
		fprintf(out, "  %s: yes\n", name);
	else if (!yes)
		fprintf(out, "  %s: no (%s)\n", name, since);
	else
		fprintf(out, "  %s: unknown (%s)\n", name, strerror(-yes));
}

/* The uprobe instruction forms, as insnprobe found them. */
static void print_insns(FILE *out)
{
	struct uprobe_insns u;
	char since[64];
	unsigned int i;
	double ms = 0;
	int err = insnprobe_run(&u, &ms);

	for (i = 0; i < arch_nr_insns; i++) {
		enum insn_how how = u.probed ? u.how[i] : INSN_UNKNOWN;
		bool none = !strcmp(arch_insns[i].since, "none");
		char name[96];

		snprintf(name, sizeof(name), "uprobe %s", arch_insns[i].name);
		snprintf(since, sizeof(since), "%s%s%s", how == INSN_REFUSED ? "the attach is refused; " : "",
			 none ? "no kernel does" : "Linux ", none ? "" : arch_insns[i].since);
		print_line(out, name, how == INSN_UNKNOWN ? (err ? err : -EAGAIN) :
				      how == INSN_EMULATED || how == INSN_OPTIMIZED, since);
	}
	fprintf(out, "  (the uprobe instructions were probed in %.1f ms)\n", ms);
}

void kfeatures_print(FILE *out)
{
	struct btf *btf;
	int btf_err = 0;
	size_t i;

	fprintf(out, "kernel features:\n");
	print_insns(out);
	btf = btf__load_vmlinux_btf();
	if (!btf)
		btf_err = errno ? -errno : -ENOENT;
	for (i = 0; i < sizeof(features) / sizeof(features[0]); i++)
		print_line(out, features[i].name, has(&features[i], btf, btf_err), features[i].since);
	btf__free(btf);
}
