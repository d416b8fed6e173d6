// SPDX-License-Identifier: GPL-2.0
/*
 * libdwfl unwinding of copied stacks, as perf's unwind-libdw.c does it: the
 * process is "attached" with callbacks that hand libdwfl the sample's
 * registers and read memory from the stack copy only. Objects are reported
 * to libdwfl through /proc/PID/map_files (the very file mapped, inside the
 * target's root); the vDSO from the process's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <elfutils/libdwfl.h>

#include "array.h"
#include <linux/types.h>

#include "fnprof.h"
#include "log.h"
#include "procmaps.h"
#include "safeopen.h"
#include "sigbus.h"
#include "unwind.h"

struct unwinder {
	pid_t pid;
	Dwfl *dwfl;
	bool attached;
	int arch_fd;              /* fnprof's own executable: the architecture for dwfl_attach_state */
	Elf *arch_elf;
	char **reported;          /* "path@start" of the objects given to libdwfl */
	size_t nr_reported, cap_reported;
	double last_report;       /* CLOCK_MONOTONIC seconds */
	__u64 digest;             /* of the mappings given to libdwfl */
	/* The sample being unwound. */
	const struct dwarf_sample *s;
	const unsigned char *stack;
	__u64 *ips;
	int n, max;
	bool ran_off;             /* a read above the copy's end */
	unsigned int nr_logged;
	unsigned int nr_truncated; /* walks dropped: a mapped object shrank under libdwfl */
	long nr_fds, max_fds;     /* fds held by its modules; the cap on all unwinders' (fds_held) */
	unsigned long nr_over;    /* objects left out for the cap */
};

/*
 * libdwfl keeps each module's fd open. A process with thousands of objects
 * mapped would take the whole descriptor table, and then the HTTP server
 * could accept nothing: all unwinders together hold at most half the soft
 * RLIMIT_NOFILE; objects beyond are not reported (their frames end walks).
 */
static atomic_long fds_held;

/* Objects are given to libdwfl with their fds: it never looks them up by name. */
static int no_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base, char **file_name,
		       Elf **elfp)
{
	return -1;
}

/* .eh_frame of the object itself is what unwinding needs; debug files are the symbolizer's business. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = no_find_elf,
	.find_debuginfo = no_debuginfo,
};

static bool was_reported(struct unwinder *u, const char *key)
{
	size_t i;

	for (i = 0; i < u->nr_reported; i++)
		if (!strcmp(u->reported[i], key))
			return true;
	return false;
}

/* The vDSO's image, copied out of the process into a memfd. -errno or an fd. */
static int vdso_fd(pid_t pid, const struct mapping *m)
{
	size_t len = m->end - m->start;
	char path[64], *buf = malloc(len);
	int mem, fd = -1;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (buf && mem >= 0 && pread(mem, buf, len, m->start) == (ssize_t)len) {
		fd = memfd_create("vdso", MFD_CLOEXEC);
		if (fd >= 0 && write(fd, buf, len) != (ssize_t)len) {
			close(fd);
			fd = -1;
		}
	}
	if (mem >= 0)
		close(mem);
	free(buf);
	return fd;
}

/* Gives libdwfl the object mapped executable at m, once; base: where its offset 0 lies. */
static void report_mapping(struct unwinder *u, const struct mapping *m)
{
	char key[4200], path[96];
	bool vdso = !strcmp(m->path, "[vdso]");
	int fd;

	if (!m->exec || (m->path[0] != '/' && !vdso))
		return;
	snprintf(key, sizeof(key), "%s@%llx", m->path, (unsigned long long)(m->start - m->pgoff));
	if (was_reported(u, key) || ARRAY_RESERVE(u->reported, u->nr_reported + 1, u->cap_reported))
		return;
	if (atomic_load(&fds_held) >= u->max_fds) {
		if (!u->nr_over++)
			log_warn("unwinding: process %d maps more objects than fnprof keeps open (%ld); %s and others "
				 "are left out, their frames end stacks", u->pid, u->max_fds, m->path);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", u->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = vdso ? vdso_fd(u->pid, m) : open_regular(AT_FDCWD, path, 0);
	if (fd < 0)
		return;
	if (!dwfl_report_elf(u->dwfl, m->path, m->path, fd, m->start - m->pgoff, false)) {
		log_debug("unwinding: cannot read %s: %s", m->path, dwfl_errmsg(-1));
		close(fd);
	} else {
		u->nr_fds++;
		atomic_fetch_add(&fds_held, 1);
	}
	u->reported[u->nr_reported] = strdup(key);
	if (u->reported[u->nr_reported])
		u->nr_reported++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A digest of the executable file mappings: libdwfl's modules are redone when it changes. */
static __u64 maps_digest(const struct procmaps *pm)
{
	__u64 h = 1469598103934665603ULL;
	size_t i;
	const char *c;

	for (i = 0; i < pm->nr; i++) {
		const struct mapping *m = &pm->maps[i];

		if (!m->exec)
			continue;
		h = (h ^ m->start) * 1099511628211ULL;
		h = (h ^ m->pgoff) * 1099511628211ULL;
		for (c = m->path; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	}
	return h;
}

/*
 * Gives libdwfl the objects mapped now, when they changed (exec, dlopen,
 * dlclose). A new session from scratch: libdwfl refuses a module over the
 * range of one it has, and an exec replaces them all.
 */
static void report_objects(struct unwinder *u)
{
	struct procmaps *pm;
	__u64 digest;
	size_t i;

	u->last_report = now_s();
	if (procmaps_load(u->pid, &pm))
		return;
	digest = maps_digest(pm);
	if (u->dwfl && digest == u->digest) {
		procmaps_free(pm);
		return;
	}
	for (i = 0; i < u->nr_reported; i++)
		free(u->reported[i]);
	u->nr_reported = 0;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	atomic_fetch_sub(&fds_held, u->nr_fds);
	u->nr_fds = 0;
	u->attached = false;
	u->dwfl = dwfl_begin(&dwfl_callbacks);
	if (u->dwfl) {
		dwfl_report_begin(u->dwfl);
		for (i = 0; i < pm->nr; i++)
			report_mapping(u, &pm->maps[i]);
		dwfl_report_end(u->dwfl, NULL, NULL);
		u->digest = digest;
	}
	procmaps_free(pm);
}

/* --- the thread callbacks: one thread, the sample's, with its registers and stack copy --- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->s->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	__u64 sp = u->s->regs[7];
	__u32 i;

	if (addr < sp || addr - sp + sizeof(*result) > u->s->stack_len) {
		u->ran_off |= addr >= sp;
		return false;  /* beyond the copy: the walk ends there */
	}
	memcpy(result, u->stack + (addr - sp), sizeof(*result));
	/* A return address that a uretprobe replaced: the original one. */
	for (i = 0; i < u->s->nr_rets && i < FNPROF_MAX_RETS; i++)
		if (u->s->ret_slot[i] == addr)
			*result = u->s->ret_addr[i];
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word regs[FNPROF_NR_REGS];
	int i;

	for (i = 0; i < FNPROF_NR_REGS; i++)
		regs[i] = u->s->regs[i];
	return dwfl_thread_state_registers(thread, 0, FNPROF_NR_REGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct unwinder *unwinder_new(pid_t pid)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	struct rlimit nofile;

	if (!u)
		return NULL;
	u->pid = pid;
	u->max_fds = getrlimit(RLIMIT_NOFILE, &nofile) || nofile.rlim_cur == RLIM_INFINITY ? 512 : nofile.rlim_cur / 2;
	elf_version(EV_CURRENT);
	u->arch_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	u->arch_elf = u->arch_fd >= 0 ? elf_begin(u->arch_fd, ELF_C_READ, NULL) : NULL;
	if (sigbus_guard_init())
		log_warn("unwinding: cannot catch SIGBUS (%s): a target that truncates a mapped object can stop fnprof",
			 strerror(errno));
	/* The objects are reported at the first sample: a command about to be launched has not exec'd yet. */
	return u;
}

void unwinder_free(struct unwinder *u)
{
	size_t i;

	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	atomic_fetch_sub(&fds_held, u->nr_fds);
	if (u->arch_elf)
		elf_end(u->arch_elf);
	if (u->arch_fd >= 0)
		close(u->arch_fd);
	for (i = 0; i < u->nr_reported; i++)
		free(u->reported[i]);
	free(u->reported);
	free(u);
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL) || !pc)
		return DWARF_CB_ABORT;
	u->ips[u->n++] = pc;
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* One walk of the sample's stack into ips. 0, or non-zero when it ended on an error. */
static int walk(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max)
{
	u->n = 0;
	if (!u->dwfl)
		return -1;
	if (!u->attached) {
		/*
		 * Given an ELF, libdwfl keeps a backend of its own for the process; without, it borrows
		 * the first module's, which goes when an exec replaces the modules.
		 */
		u->attached = u->arch_elf && dwfl_attach_state(u->dwfl, u->arch_elf, u->pid, &thread_callbacks, u);
		if (!u->attached) {
			log_debug("unwinding: cannot attach to process %d: %s", u->pid, dwfl_errmsg(-1));
			return -1;
		}
	}
	u->s = s;
	u->stack = (const unsigned char *)(s + 1);
	u->ips = ips;
	u->max = max;
	u->ran_off = false;
	return dwfl_getthread_frames(u->dwfl, s->tid, on_frame, u);
}

/*
 * walk() with the objects re-read first where needed, in a SIGBUS guard:
 * libdwfl maps the objects, and a target may truncate one under it. Then
 * the walk is dropped (frames read from zeros), said once, and the objects
 * are reported again (libelf sees the new size and refuses what is gone).
 */
static int guarded_walk(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max)
{
	__u64 ip = s->regs[16];
	unsigned long mark = sigbus_guard_begin();
	int err;

	/* An ip in no object known: something was mapped since (exec, dlopen); look again, 20 times a second at most. */
	if ((!u->dwfl || !dwfl_addrmodule(u->dwfl, ip)) && now_s() - u->last_report > 0.05)
		report_objects(u);
	err = walk(u, s, ips, max);
	/* Stopped at a caller in no object known: mapped since (exec, dlopen); look again, then retry. */
	if (err && !u->ran_off && now_s() - u->last_report > 0.05) {
		report_objects(u);
		err = walk(u, s, ips, max);
	}
	if (sigbus_guard_end(mark)) {
		if (!u->nr_truncated++)
			log_warn("unwinding: an object of process %d was truncated while fnprof read it: "
				 "stacks through it are cut at the sampled address", u->pid);
		u->digest = 0;
		u->last_report = 0;
		u->n = 0;
		u->ran_off = false;
		return -1;
	}
	return err;
}

bool unwinder_has_objects(const struct unwinder *u)
{
	return u->dwfl;
}

int unwinder_unwind(struct unwinder *u, const struct dwarf_sample *s, __u64 *ips, int max, bool *truncated)
{
	__u64 ip = s->regs[16];
	int err;

	*truncated = false;
	if (max <= 0 || !ip)
		return 0;
	err = guarded_walk(u, s, ips, max);
	/* Why walks stop short, for -v: the first few only, there is one per sample. */
	if (err && u->n < max && u->nr_logged++ < 10)
		log_debug("unwinding: stopped after %d frames at ip %llx sp %llx: %s", u->n, (unsigned long long)ip,
			  (unsigned long long)s->regs[7], dwfl_errmsg(-1));
	if (!u->n)
		ips[u->n++] = ip;
	*truncated = u->ran_off && u->n < max;
	return u->n;
}
