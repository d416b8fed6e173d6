// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fnprof.h"
#include "trace.skel.h"
#include "base/log.h"
#include "target/kneeds.h"
#include "target/procmaps.h"
#include "trace/tcompat.h"
#include "trace/uprobes.h"

/* The line of one refusal: what needs what, and that the kernel (release) lacks it. */
static int refuse(const char *what, unsigned int needs, const char *rest)
{
	char lacks[256] = "";
	unsigned int lack;
	struct utsname u;

	kneeds_trace_compat(&lack);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	/* FNPROF_TRACE_COMPAT=1 on a kernel that has them: the compat object is refused the same. */
	kneeds_list(lack & needs ? lack & needs : needs, lacks, sizeof(lacks));
	log_err("%s needs %s, which this kernel (%s) lacks%s; %s", what, lacks, u.release,
		lack & needs ? "" : " (FNPROF_TRACE_COMPAT=1)", rest);
	return -ENOTSUP;
}

#define NEED(x) (1U << KNEED_##x)
/* What sched_switch's program of the full object needs that the compat object does without. */
#define SCHED_NEEDS (NEED(TASK_STORAGE) | NEED(TASK_BTF) | NEED(TASK_PT_REGS))

int tcompat_refusal(const struct tcompat_run *run)
{
	char what[192];

	if (run->system_wide)
		return refuse("tracing system-wide (-f without -p or a command: a probe then cannot tell its function)",
			      NEED(ATTACH_COOKIE), "tracing a command or -p PID runs on it");
	if (run->events)
		return refuse("-e (counters per call: sched_switch's bookkeeping)", SCHED_NEEDS,
			      "tracing without -e runs on it");
	if (run->slow)
		return refuse("--slow (where a slow call blocked: sched_switch's bookkeeping)", SCHED_NEEDS,
			      "tracing without --slow runs on it");
	if (run->go) {
		snprintf(what, sizeof(what), "tracing Go functions (%s: calls kept per goroutine)", run->go);
		return refuse(what, NEED(TASK_STORAGE) | NEED(TASK_PT_REGS) | NEED(LOOP) | NEED(ATTACH_COOKIE),
			      "tracing C functions runs on it");
	}
	if (run->tails) {
		snprintf(what, sizeof(what), "--exit=ret on %s, whose exits follow its tail calls", run->tails);
		return refuse(what, NEED(ATTACH_COOKIE), "--exit=uretprobe runs on it");
	}
	return 0;
}

int tcompat_setup(struct trace_bpf *skel, __u32 nr_threads, __u32 nr_cookies)
{
	struct bpf_program *off[] = { skel->progs.on_switch, skel->progs.on_sys_enter, skel->progs.on_sys_exit,
				      skel->progs.fn_exit_tail, skel->progs.go_entry, skel->progs.go_exit_ret,
				      skel->progs.go_gone, skel->progs.go_park, skel->progs.go_run };
	size_t i;
	int err;

	for (i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		bpf_program__set_autoload(off[i], false);
	err = bpf_map__set_max_entries(skel->maps.threads, nr_threads);
	return err ? err : bpf_map__set_max_entries(skel->maps.probe_cookies, nr_cookies);
}

/* Whether mapping m holds file offset off of the file st. */
static bool maps_offset(const struct mapping *m, const struct stat *st, __u64 off)
{
	return m->exec && m->inode == st->st_ino && makedev(m->dev_major, m->dev_minor) == st->st_dev &&
	       off >= m->pgoff && off - m->pgoff < m->end - m->start;
}

/* Site s's cookie at each address where pm maps its offset: how many, or -errno. */
static int fill_site(int fd, const struct procmaps *pm, const struct uprobe_site *s)
{
	struct probe_addr key = { .tgid = (__u32)s->pid };
	struct stat st;
	size_t i;
	int n = 0;

	if (stat(s->path, &st))
		return -errno;
	for (i = 0; i < pm->nr; i++) {
		if (!maps_offset(&pm->maps[i], &st, s->offset))
			continue;
		key.addr = pm->maps[i].start + s->offset - pm->maps[i].pgoff;
		if (bpf_map_update_elem(fd, &key, &s->cookie, BPF_ANY))
			return -errno;
		n++;
	}
	return n;
}

int tcompat_fill(int map_fd, struct uprobe_site *sites, size_t n)
{
	struct procmaps *pm = NULL;
	pid_t pid = 0;
	size_t i;
	int err = 0, r;

	for (i = 0; i < n && !err; i++) {
		/* A return's program reads no cookie: its address is the caller's. */
		if (sites[i].retprobe || sites[i].pid <= 0)
			continue;
		if (!pm || pm->pid != sites[i].pid) {
			procmaps_free(pm);
			pm = NULL;
			pid = sites[i].pid;
			err = procmaps_load(pid, &pm);
			if (err)
				break;
		}
		pid = sites[i].pid;
		r = fill_site(map_fd, pm, &sites[i]);
		if (r < 0)
			err = r;
		else if (!r)
			log_debug("%s of %s is not mapped in process %d (yet): its calls are lost until it is",
				  sites[i].what, sites[i].object, sites[i].pid);
	}
	procmaps_free(pm);
	for (i = 0; i < n; i++)
		sites[i].cookie = 0;
	if (err)
		log_err("cannot tell the probes' addresses in process %d (a kernel without attach cookies needs "
			"them): %s", pid, strerror(-err));
	return err;
}
