/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's uprobe_multi link (Linux 6.6+), made with the bpf() system
 * call: the fallback for libbpf older than 1.3, which has no API for it
 * (uprobes.c uses libbpf's where it has one). Header-only, so that the
 * benchmark's floor program can make its links the same way.
 */
#ifndef FNPROF_UPROBE_MULTI_H
#define FNPROF_UPROBE_MULTI_H

#include <errno.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/types.h>

#define BPF_LINK_CREATE_CMD 28         /* enum bpf_cmd: BPF_LINK_CREATE */
#define UPROBE_MULTI_ATTACH_TYPE 48    /* enum bpf_attach_type: BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1          /* BPF_F_UPROBE_MULTI_RETURN */
#define UPROBE_SESSION_ATTACH_TYPE 57  /* enum bpf_attach_type: BPF_TRACE_UPROBE_SESSION (Linux 6.13) */

/* union bpf_attr, link_create.uprobe_multi, as in the kernel's uapi since 6.6. */
struct link_create_uprobe_multi {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, multi_flags, pid;
};

/*
 * One link of program prog_fd at offs[0..cnt) of the object at path, with
 * cookies (or NULL), in process pid (0: every process). Its fd, or -errno.
 */
static inline int uprobe_link_of(__u32 attach_type, int prog_fd, const char *path, const __u64 *offs,
				 const __u64 *cookies, __u32 cnt, bool retprobe, int pid)
{
	union {
		struct link_create_uprobe_multi a;
		char attr[128];   /* the size of union bpf_attr's commands the kernel accepts */
	} u = {};
	int fd;

	u.a.prog_fd = prog_fd;
	u.a.attach_type = attach_type;
	u.a.path = (unsigned long)path;
	u.a.offsets = (unsigned long)offs;
	u.a.cookies = (unsigned long)cookies;
	u.a.cnt = cnt;
	u.a.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	u.a.pid = pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE_CMD, u.attr, sizeof(u.attr));
	return fd < 0 ? -errno : fd;
}

static inline int uprobe_multi_link(int prog_fd, const char *path, const __u64 *offs, const __u64 *cookies,
				    __u32 cnt, bool retprobe, int pid)
{
	return uprobe_link_of(UPROBE_MULTI_ATTACH_TYPE, prog_fd, path, offs, cookies, cnt, retprobe, pid);
}

/*
 * A uprobe session link (Linux 6.13): one program runs at entry and, where
 * it returned 0 there, at the return too (a uretprobe); the same arguments.
 */
static inline int uprobe_session_link(int prog_fd, const char *path, const __u64 *offs, const __u64 *cookies,
				      __u32 cnt, int pid)
{
	return uprobe_link_of(UPROBE_SESSION_ATTACH_TYPE, prog_fd, path, offs, cookies, cnt, false, pid);
}

#endif /* FNPROF_UPROBE_MULTI_H */
