// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <bpf/btf.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/runcache.h"
#include "target/kbtf.h"

/* Bumped whenever what kbtf_facts holds, or how it is read, changes. */
#define FACTS_FORMAT "2"
/* One file a format: builds of fnprof run in turn (a benchmark's) do not read each other's over and over. */
#define CACHE_NAME "kernel-btf-facts-" FACTS_FORMAT

const char *const kbtf_tp_names[KBTF_NR_TPS] = {
	"sched_switch", "sys_enter", "sys_exit", "sched_process_fork", "sched_process_exit",
};

bool kbtf_has_enum_val(const struct btf *btf, const char *type, const char *name)
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

/*
 * The byte offset and size of member name of the struct at id, looked for in
 * its anonymous members too (randomized layouts group fields so): 0, or
 * -ENOENT.
 */
static int member_at(const struct btf *btf, int id, const char *name, __u32 base, __u32 *off, __u32 *size)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m = t && btf_is_composite(t) ? btf_members(t) : NULL;
	int i;

	for (i = 0; m && i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		__u32 at = base + btf_member_bit_offset(t, i) / 8;

		if (n && !strcmp(n, name)) {
			*off = at;
			*size = btf__resolve_size(btf, m->type);
			return 0;
		}
		if ((!n || !*n) && !member_at(btf, btf__resolve_type(btf, m->type), name, at, off, size))
			return 0;
	}
	return -ENOENT;
}

static int read_task_offsets(const struct btf *btf, struct task_offsets *o)
{
	int id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
	__u32 size;

	if (id <= 0 || member_at(btf, id, "self_exec_id", 0, &o->exec_id_off, &o->exec_id_size) ||
	    member_at(btf, id, "real_parent", 0, &o->parent_off, &size) || member_at(btf, id, "tgid", 0, &o->tgid_off, &size))
		return -ENOENT;
	return o->exec_id_size == 4 || o->exec_id_size == 8 ? 0 : -ENOENT;
}

int kbtf_tp_id_in(const struct btf *btf, const char *name)
{
	char type[128];
	int id;

	snprintf(type, sizeof(type), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF);
	return id > 0 ? id : -ENOENT;
}

/*
 * 1 when sched_switch passes prev_state to tp_btf programs (5.18, commit
 * fa2c3254d7cf "sched/tracing: Don't re-read p->state when emitting
 * sched_switch event"), else 0. Its prototype in the kernel's BTF: the
 * tracepoint's data, then its arguments.
 */
static int switch_state(const struct btf *btf)
{
	int id = kbtf_tp_id_in(btf, "sched_switch");
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) ? btf_vlen(t) >= 5 : -ENOENT;
}

/* The facts, from the kernel's BTF: 0, or -errno when it cannot be read. */
static int read_facts(struct kbtf_facts *f)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int err = btf ? 0 : errno ? -errno : -ENOENT, i, id;

	if (err) {
		f->switch_state = err;
		return err;
	}
	f->switch_state = switch_state(btf);
	/*
	 * A session's entry tells its return apart (by its ip: bpf_get_func_ip,
	 * which uprobe_multi programs have since 6.6); its program reads
	 * task_struct at offsets.
	 */
	f->sessions = kbtf_has_enum_val(btf, "bpf_attach_type", "BPF_TRACE_UPROBE_SESSION") &&
		      !read_task_offsets(btf, &f->task);
	for (i = 0; i < KBTF_NR_TPS; i++) {
		id = kbtf_tp_id_in(btf, kbtf_tp_names[i]);
		f->tp_ids[i] = id > 0 ? id : 0;
	}
	btf__free(btf);
	return 0;
}

/* This boot's facts, if a run of fnprof as the same user kept them: true and *f. */
static bool cache_read(struct kbtf_facts *f)
{
	struct kbtf_facts c;

	if (!runcache_read_keyed(CACHE_NAME, FACTS_FORMAT, &c, sizeof(c)) || (c.switch_state != 0 && c.switch_state != 1))
		return false;
	*f = c;
	return true;
}

static struct kbtf_facts facts;

static void find_facts(void)
{
	double t0 = monotonic_s();

	if (cache_read(&facts)) {
		log_debug("the kernel's BTF: as this boot's first run read it (%s/%s, %.2f ms)", runcache_dir(), CACHE_NAME,
			  (monotonic_s() - t0) * 1e3);
		return;
	}
	if (read_facts(&facts)) {
		log_debug("cannot read the kernel's BTF: %s", strerror(-facts.switch_state));
		return;
	}
	log_debug("the kernel's BTF read in %.1f ms", (monotonic_s() - t0) * 1e3);
	/* Kept only where every fact was told: one not told is asked again by the next run. */
	if (facts.switch_state >= 0)
		runcache_write_keyed(CACHE_NAME, FACTS_FORMAT, &facts, sizeof(facts));
}

/* Once: the tracepoint programs' loader thread asks too (tpbtf.c), maybe first. */
const struct kbtf_facts *kbtf_facts(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, find_facts);
	return &facts;
}
