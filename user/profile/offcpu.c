// SPDX-License-Identifier: GPL-2.0
/* --profile offcpu: loads offcpu.bpf.c (sched_switch) for one process. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/clock.h"
#include "stacks/dwstacks.h"
#include "base/log.h"
#include "offcpu.skel.h"
#include "profile/prof_dw.h"
#include "profile/prof_src.h"
#include "target/tpbtf.h"

/* As Go's block profile: contentions and delay; the label tells a run-queue wait from a blocked one. */
static const struct prof_desc offcpu_desc = {
	.kind = PROF_OFFCPU,
	.what = "waits",
	.nr_values = 2,
	.types = { { "contentions", "count" }, { "delay", "nanoseconds" } },
	.fixed = { true, false },
	.rank = 1,
	.second = 0,
	.label_key = "state",
	.labels = { "blocked", "runqueue" },
	.period_type = { "contentions", "count" },
};

static void offcpu_arm(struct prof_src *s)
{
	struct offcpu_bpf *skel = s->priv;

	skel->bss->start_ns = monotonic_ns();  /* bpf_ktime_get_ns's clock */
}

static void offcpu_stop(struct prof_src *s)
{
	dwstacks_stop(s->dw);  /* its thread reads the object's ring buffer */
	offcpu_bpf__destroy(s->priv);
}

int offcpu_start(const struct prof_conf *c, pid_t pid, struct prof_src *out)
{
	struct offcpu_bpf *skel = offcpu_bpf__open();
	int err;

	if (!skel) {
		err = -errno;
		log_err("failed to open the offcpu BPF object: %s", strerror(-err));
		return err;
	}
	PROF_SET_RODATA(skel, c, pid);
	skel->rodata->rate_ns = c->offcpu_rate_ns;
	/* A thread back from a wait copies its stack at its system call's exit: with dwarf only. */
	bpf_program__set_autoload(skel->progs.on_sys_exit, c->dwarf);
	err = prof_dw_size(c, skel->maps.pdw_rb, skel->maps.pdw_bufs);
	if (!err)
		err = prof_share_maps(c->share, skel->obj);
	if (!err)
		err = offcpu_bpf__load(skel);
	if (!err)
		err = tpbtf_attach(skel->progs.on_switch, &skel->links.on_switch);
	if (!err && c->dwarf)
		err = tpbtf_attach(skel->progs.on_sys_exit, &skel->links.on_sys_exit);
	if (err) {
		log_err("failed to load the offcpu BPF program (sched_switch): %s", strerror(-err));
		offcpu_bpf__destroy(skel);
		return err;
	}
	*out = (struct prof_src){
		.desc = &offcpu_desc, .priv = skel, .arm = offcpu_arm, .stop = offcpu_stop, .live_fd = -1,
		.procs_fd = c->all ? bpf_map__fd(skel->maps.procs) : -1,
		.stacks_fd = bpf_map__fd(skel->maps.stacks), .counts_fd = bpf_map__fd(skel->maps.counts),
		.drops_fd = bpf_map__fd(skel->maps.pdrops), .period = 1,
		.kstacks_fd = bpf_map__fd(skel->maps.kstacks),
	};
	err = prof_dw_start(c, pid, skel->maps.pdw_rb, NULL, 0, out);
	if (err) {
		offcpu_bpf__destroy(skel);
		return err;
	}
	if (c->offcpu_rate_ns % 1000)
		snprintf(out->note, sizeof(out->note), "waits under %llu ns sampled", (unsigned long long)c->offcpu_rate_ns);
	else
		snprintf(out->note, sizeof(out->note), "waits under %llu us sampled",
			 (unsigned long long)c->offcpu_rate_ns / 1000);
	return 0;
}
