// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "base/log.h"
#include "base/proc.h"
#include "base/safeopen.h"
#include "base/sanitize.h"

/* The fields after "pid (comm)": comm may hold spaces and parentheses. */
static int read_stat_tail(pid_t pid, char *buf, size_t size, char **tail)
{
	char path[64];
	size_t n;
	FILE *f;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	*tail = p + 2;  /* field 3: state */
	return 0;
}

__u64 proc_rusage_ns(const struct rusage *ru)
{
	return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ULL +
	       (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ULL;
}

__u64 proc_self_cpu_ns(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : proc_rusage_ns(&ru);
}

int proc_cpu_ns(pid_t pid, __u64 *ns)
{
	unsigned long long utime, stime;
	char buf[1024], *tail;
	int err;

	err = read_stat_tail(pid, buf, sizeof(buf), &tail);
	if (err)
		return err;
	/* Fields 3..15: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime. */
	if (sscanf(tail, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
		return -EINVAL;
	*ns = (utime + stime) * (1000000000ULL / sysconf(_SC_CLK_TCK));
	return 0;
}

int proc_nr_threads(pid_t pid)
{
	char buf[1024], *tail;
	int err, n;

	err = read_stat_tail(pid, buf, sizeof(buf), &tail);
	if (err)
		return err;
	/* Field 20, after state and 16 numbers. */
	if (sscanf(tail, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %d", &n) != 1)
		return -EINVAL;
	return n;
}

int proc_cpu_precise_ns(pid_t pid, __u64 *ns)
{
	struct timespec ts;
	clockid_t clk;
	int err;

	/* The process CPU clock brings a running thread's time up to date, unlike /proc. */
	err = clock_getcpuclockid(pid, &clk);
	if (err)
		return -err;
	if (clock_gettime(clk, &ts))
		return -errno;
	*ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	return 0;
}

bool proc_alive(pid_t pid)
{
	char buf[1024], *tail;

	return !read_stat_tail(pid, buf, sizeof(buf), &tail) && tail[0] != 'Z' && tail[0] != 'X';
}

#define PF_EXITING 0x00000004  /* the kernel's task flag: do_exit() has begun */

bool proc_exiting(pid_t pid)
{
	char buf[1024], *tail;
	unsigned int flags;

	/* Fields 3..9: state ppid pgrp session tty tpgid flags. */
	if (read_stat_tail(pid, buf, sizeof(buf), &tail) ||
	    sscanf(tail, "%*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return true;
	return tail[0] == 'Z' || tail[0] == 'X' || tail[0] == 'x' || (flags & PF_EXITING);
}

int proc_status(pid_t pid, const char *key, char *out, size_t n)
{
	size_t len = strlen(key);
	char path[64], line[256];
	int err = -ENOENT;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(pid ? path : "/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == ':') {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, n, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
			err = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return err;
}

__u64 proc_self_status(const char *key, int base)
{
	char v[128];

	return proc_status(0, key, v, sizeof(v)) ? 0 : strtoull(v, NULL, base);
}

/* Effective capability set. */
static unsigned long long cap_effective(void)
{
	return proc_self_status("CapEff", 16);
}

#define CAP_BIT(n) (1ULL << (n))
enum { CAP_SYS_ADMIN_NR = 21, CAP_PERFMON_NR = 38, CAP_BPF_NR = 39, CAP_CHECKPOINT_RESTORE_NR = 40 };

void proc_thread_name(pid_t pid, __u32 tid, const char *gone, char *buf, size_t size)
{
	char path[64], raw[64];
	FILE *f;

	snprintf(path, sizeof(path), tid ? "/proc/%d/task/%u/comm" : "/proc/%d/comm", pid, tid);
	f = fopen(path, "re");
	if (!f || !fgets(raw, sizeof(raw), f))
		snprintf(raw, sizeof(raw), "%s", gone);
	raw[strcspn(raw, "\n")] = 0;
	sanitize_term(raw, buf, size);
	if (f)
		fclose(f);
}

int proc_raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		return -errno;
	if (r.rlim_cur >= r.rlim_max)
		return 0;
	r.rlim_cur = r.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &r) ? -errno : 0;
}

bool proc_can_follow_map_files(void)
{
	return cap_effective() & (CAP_BIT(CAP_SYS_ADMIN_NR) | CAP_BIT(CAP_CHECKPOINT_RESTORE_NR));
}

int proc_open_in_root(pid_t pid, const char *path)
{
	char root[64];
	int rfd, fd;

	snprintf(root, sizeof(root), pid ? "/proc/%d/root" : "/", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = open_regular(rfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	close(rfd);
	return fd;
}

static int check_caps(void)
{
	unsigned long long caps = cap_effective();

	if (caps & CAP_BIT(CAP_SYS_ADMIN_NR))
		return 0;
	if ((caps & CAP_BIT(CAP_BPF_NR)) && (caps & CAP_BIT(CAP_PERFMON_NR)))
		return 0;
	log_err("not enough privileges: BPF tracing needs root, or CAP_BPF and CAP_PERFMON "
		"(missing:%s%s); run with sudo",
		caps & CAP_BIT(CAP_BPF_NR) ? "" : " CAP_BPF",
		caps & CAP_BIT(CAP_PERFMON_NR) ? "" : " CAP_PERFMON");
	return -EPERM;
}

int check_not_setuid(void)
{
	if (getuid() != geteuid() || getgid() != getegid()) {
		log_err("refusing to run setuid or setgid: run fnprof with sudo instead");
		return -EPERM;
	}
	return 0;
}

int check_system(void)
{
	if (check_not_setuid())
		return -EPERM;
	if (check_caps())
		return -EPERM;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_err("this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): "
			"fnprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOSYS;
	}
	if (access("/sys/bus/event_source/devices/uprobe", F_OK)) {
		log_err("this kernel has no uprobe support (/sys/bus/event_source/devices/uprobe is missing): "
			"fnprof needs CONFIG_UPROBE_EVENTS=y");
		return -ENOSYS;
	}
	return 0;
}
