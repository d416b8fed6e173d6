// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "target/kbtf.h"
#include "target/kfeatures.h"
#include "target/insnprobe.h"
#include "target/kneeds.h"

/*
 * How a feature is found: a value of a kernel enum, a kernel function, a
 * struct's field (BTF). What the BPF objects need of the kernel's BPF
 * (helpers, map types) is kneeds.c's table, listed after these.
 */
enum find_by { BY_ENUM_VAL, BY_FUNC, BY_FIELD };

static const struct feature {
	const char *name;
	enum find_by by;
	const char *type, *member;  /* BY_ENUM_VAL: enum, value; BY_FUNC: function (after the syscall prefix);
				     * BY_FIELD: struct, field */
	const char *since;          /* the first kernel with it, or the option it needs */
} features[] = {
	{ "uprobe_multi links", BY_ENUM_VAL, "bpf_attach_type", "BPF_TRACE_UPROBE_MULTI", "Linux 6.6" },
	{ "uprobe sessions", BY_ENUM_VAL, "bpf_attach_type", "BPF_TRACE_UPROBE_SESSION", "Linux 6.13" },
	{ "uretprobe system call", BY_FUNC, "uretprobe", NULL, "Linux 6.11" },
	{ "BTF uprobes_state.head_tramps", BY_FIELD, "uprobes_state", "head_tramps", "Linux 6.18" },
	{ "BTF task_struct.sched_info", BY_FIELD, "task_struct", "sched_info", "CONFIG_SCHED_INFO" },
	{ "BTF sched_entity.cfs_rq", BY_FIELD, "sched_entity", "cfs_rq", "CONFIG_FAIR_GROUP_SCHED" },
	{ "BTF cfs_rq.rq", BY_FIELD, "cfs_rq", "rq", "CONFIG_FAIR_GROUP_SCHED" },
};

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

/* 1 when the kernel has feature f, 0 when not, -errno when that cannot be told. */
static int has(const struct feature *f, const struct btf *btf, int btf_err)
{
	char fn[128];

	if (!btf)
		return btf_err;
	if (f->by == BY_ENUM_VAL)
		return kbtf_has_enum_val(btf, f->type, f->member);
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

/* What fnprof's BPF objects need (kneeds.c's one table), as the refusals before a run ask for it. */
static void print_needs(FILE *out)
{
	unsigned int has, unknown;
	char since[32];
	int n;

	has = kneeds_probe((1U << KNEED_NR) - 1, &unknown);
	for (n = 0; n < KNEED_NR; n++) {
		snprintf(since, sizeof(since), "Linux %s", kneeds_since(n));
		print_line(out, kneeds_name(n), unknown & 1U << n ? -EPERM : !!(has & 1U << n), since);
	}
}

int kfeatures_task_offsets(struct task_offsets *out)
{
	if (!kfeatures_uprobe_sessions())
		return -ENOENT;
	*out = kbtf_facts()->task;
	return 0;
}

bool kfeatures_uprobe_sessions(void)
{
	static int cached = -1;

	if (cached < 0) {
		cached = kbtf_facts()->sessions;
		/* To test the fallback; sessions are uprobe_multi links, which that variable turns off too. */
		if (getenv("FNPROF_NO_UPROBE_SESSION") || getenv("FNPROF_NO_UPROBE_MULTI"))
			cached = 0;
	}
	return cached;
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
	print_needs(out);
	/* What tracing takes from those (kneeds_trace_compat): the full trace object, or the compat one. */
	print_line(out, "the full trace object", !kneeds_trace_compat(NULL),
		   "tracing takes the compat one: wall and self time, no on/off-CPU split, system-wide, -e, "
		   "--slow or Go; Linux 5.17");
}
