// SPDX-License-Identifier: GPL-2.0
/* --profile mutex: loads mutex.bpf.c (futex system calls) for one process. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/clock.h"
#include "stacks/dwstacks.h"
#include "base/log.h"
#include "mutex.skel.h"
#include "profile/prof_dw.h"
#include "profile/prof_src.h"
#include "target/tpbtf.h"

/*
 * As Go's mutex profile, contentions and delay are charged to the stack that
 * woke the waiters (released the lock); the waiters' own stacks carry the
 * same waits as wait_contentions and wait_delay.
 */
static const struct prof_desc mutex_desc = {
	.kind = PROF_MUTEX,
	.what = "futex waits",
	.nr_values = 4,
	.types = { { "contentions", "count" }, { "delay", "nanoseconds" }, { "wait_contentions", "count" },
		   { "wait_delay", "nanoseconds" } },
	.fixed = { true, false, true, false },
	.rank = 1,
	.second = 3,
	.label_key = "kind",
	.labels = { "lock", "wait" },
	.period_type = { "contentions", "count" },
	.default_type = "delay",
};

static void mutex_arm(struct prof_src *s)
{
	struct mutex_bpf *skel = s->priv;

	skel->bss->start_ns = monotonic_ns();  /* bpf_ktime_get_ns's clock */
}

static void mutex_stop(struct prof_src *s)
{
	dwstacks_stop(s->dw);  /* its thread reads the object's ring buffer */
	mutex_bpf__destroy(s->priv);
}

int mutex_start(const struct prof_conf *c, pid_t pid, struct prof_src *out)
{
	struct mutex_bpf *skel = mutex_bpf__open();
	int err;

	if (!skel) {
		err = -errno;
		log_err("failed to open the mutex BPF object: %s", strerror(-err));
		return err;
	}
	PROF_SET_RODATA(skel, c, pid);
	err = prof_dw_size(c, skel->maps.pdw_rb, skel->maps.pdw_bufs);
	if (!err)
		err = prof_share_maps(c->share, skel->obj);
	if (!err)
		err = mutex_bpf__load(skel);
	if (!err)
		err = tpbtf_attach(skel->progs.on_enter, &skel->links.on_enter);
	if (!err)
		err = tpbtf_attach(skel->progs.on_exit, &skel->links.on_exit);
	if (err) {
		log_err("failed to load the mutex BPF programs (raw_syscalls sys_enter/sys_exit): %s", strerror(-err));
		mutex_bpf__destroy(skel);
		return err;
	}
	*out = (struct prof_src){
		.desc = &mutex_desc, .priv = skel, .arm = mutex_arm, .stop = mutex_stop, .live_fd = -1,
		.procs_fd = c->all ? bpf_map__fd(skel->maps.procs) : -1, .kstacks_fd = -1,
		.stacks_fd = bpf_map__fd(skel->maps.stacks), .counts_fd = bpf_map__fd(skel->maps.counts),
		.drops_fd = bpf_map__fd(skel->maps.pdrops), .period = 1,
	};
	err = prof_dw_start(c, pid, skel->maps.pdw_rb, skel->maps.wakers, offsetof(struct prof_waker, dw_id), out);
	if (err) {
		mutex_bpf__destroy(skel);
		return err;
	}
	snprintf(out->note, sizeof(out->note), "every contended wait");
	return 0;
}
