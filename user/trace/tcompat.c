// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fnprof.h"
#include "trace.skel.h"
#include "base/log.h"
#include "elf/debuginfo.h"
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
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.probe_files, nr_cookies);
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

/* The GNU build-id of the object at path, as the kernel gives it (20 bytes, zero-padded); false if none. */
static bool file_build_id(const char *path, __u8 id[20])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), i;
	char hex[2 * 64 + 1];
	unsigned int b;
	bool ok = false;
	Elf *e;

	elf_version(EV_CURRENT);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (e && debuginfo_build_id(e, hex, sizeof(hex)) && strlen(hex) <= 40) {
		memset(id, 0, 20);
		for (i = 0; hex[2 * i] && sscanf(hex + 2 * i, "%2x", &b) == 1; i++)
			id[i] = b;
		ok = true;
	}
	elf_end(e);
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * Site s's cookie in slot 0 for its object's build-id and offset, where the
 * process maps the object only later (the BPF side adds the process's slot).
 * Not fnprof's own probes: only fnprof runs its calibration functions.
 * 0, or -errno.
 */
static int fill_file(int fd, const struct uprobe_site *s)
{
	struct probe_file key = { .offset = s->offset };
	__u64 cookie = s->cookie & ~((__u64)FNPROF_COOKIE_SLOT_MASK << FNPROF_COOKIE_SLOT_SHIFT);

	if (s->cookie & FNPROF_COOKIE_SELF)
		return 0;
	if (!file_build_id(s->path, key.build_id)) {
		log_debug("%s has no build-id: calls of %s are seen only where it was mapped when the probes went in",
			  s->object, s->what);
		return 0;
	}
	return bpf_map_update_elem(fd, &key, &cookie, BPF_ANY) ? -errno : 0;
}

int tcompat_fill(int map_fd, int files_fd, struct uprobe_site *sites, size_t n)
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
		err = fill_file(files_fd, &sites[i]);
		r = err ? err : fill_site(map_fd, pm, &sites[i]);
		if (r < 0)
			err = r;
		else if (!r)
			log_debug("%s of %s is not mapped in process %d (yet): its build-id will tell its calls",
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
