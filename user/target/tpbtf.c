// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/log.h"
#include "target/kbtf.h"
#include "target/tpbtf.h"

#ifdef FNPROF_TEST_HOOKS
/* FNPROF_TEST_TP_NOT_KEPT=1 (fnprof-test only): every tracepoint's id is looked up as if not kept. */
static bool kept_ignored(void)
{
	return getenv("FNPROF_TEST_TP_NOT_KEPT");
}
#else
static bool kept_ignored(void)
{
	return false;
}
#endif

/* The id of raw tracepoint name's btf_trace_<name>: kept for this boot, or read now. > 0, or -errno. */
static int tp_id(const char *name)
{
	const struct kbtf_facts *f = kbtf_facts();
	struct btf *btf;
	int i, id;

	for (i = 0; !kept_ignored() && i < KBTF_NR_TPS; i++)
		if (!strcmp(kbtf_tp_names[i], name) && f->tp_ids[i])
			return f->tp_ids[i];
	log_debug("tracepoint %s: its BTF id not kept, reading the kernel's BTF", name);
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return errno ? -errno : -ENOENT;
	id = kbtf_tp_id_in(btf, name);
	btf__free(btf);
	return id;
}

/* libbpf's prog_prepare_load_fn: the raw tracepoint program becomes the tp_btf program it was written as. */
static int prepare(struct bpf_program *prog, struct bpf_prog_load_opts *opts, long cookie)
{
	const char *name = strchr(bpf_program__section_name(prog), '/');
	int id = name ? tp_id(name + 1) : -EINVAL;

	(void)cookie;
	if (id < 0) {
		log_warn("program %s: no BTF id for tracepoint %s: %s", bpf_program__name(prog), name ? name + 1 : "(none)",
			 strerror(-id));
		return id;
	}
	opts->expected_attach_type = BPF_TRACE_RAW_TP;
	opts->attach_btf_obj_fd = 0;   /* vmlinux */
	opts->attach_btf_id = id;
	return bpf_program__set_type(prog, BPF_PROG_TYPE_TRACING);
}

static bool is_tp_btf(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);

	return !strncmp(sec, "tp_btf", 6) && (!sec[6] || sec[6] == '/');
}

int tpbtf_attach(const struct bpf_program *prog, struct bpf_link **link)
{
	*link = is_tp_btf(prog) ? bpf_program__attach_trace(prog) : bpf_program__attach(prog);
	return *link ? 0 : -errno;
}

static int attach(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	(void)cookie;
	return tpbtf_attach(prog, link);
}

int tpbtf_register(void)
{
	LIBBPF_OPTS(libbpf_prog_handler_opts, o, .prog_prepare_load_fn = prepare, .prog_attach_fn = attach);
	int id = libbpf_register_prog_handler("tp_btf+", BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_TRACE_RAW_TP, &o);

	return id < 0 ? id : 0;
}
