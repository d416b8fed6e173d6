// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "target/insnprobe.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/runcache.h"
#include "target/procmaps.h"

/* How long the children may take to make their calls: a loaded machine takes milliseconds. */
#define HIT_TIMEOUT_MS 2000

/* The children of one probe, one per form, and the pipes that drive them. */
struct kids {
	pid_t pid[ARCH_INSNS_MAX];
	int perf[ARCH_INSNS_MAX];   /* the form's uprobe, for its child alone; -errno when not opened;
				     * left open: the worker's exit closes them */
	int go[2], done[2], quit[2];
	unsigned int nr;
};

/* The uprobe PMU's type (/sys/bus/event_source/devices/uprobe/type), or -errno. */
static int uprobe_pmu(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int type = -1;

	if (!f)
		return -errno;
	if (fscanf(f, "%d", &type) != 1)
		type = -EINVAL;
	fclose(f);
	return type;
}

/* A child: waits for go, calls fn once, says done, then waits until quit closes. */
static void child(const struct kids *k, void (*fn)(void))
{
	char c = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(k->go[1]);
	close(k->done[0]);
	close(k->quit[1]);
	if (read(k->go[0], &c, 1) == 1) {
		fn();
		if (write(k->done[1], &c, 1) < 0)
			_exit(1);
	}
	while (read(k->quit[0], &c, 1) > 0)
		;
	_exit(0);
}

static int spawn(struct kids *k)
{
	unsigned int i;

	for (i = 0; i < arch_nr_insns; i++) {
		k->perf[i] = -ENOENT;
		k->pid[i] = fork();
		if (k->pid[i] < 0)
			return -errno;
		if (!k->pid[i])
			child(k, arch_insns[i].fn);
		k->nr = i + 1;
	}
	return 0;
}

/* An entry uprobe at file offset off of path, in process pid only: its fd, or -errno. */
static int open_uprobe(int type, const char *path, __u64 off, pid_t pid)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = type, .config1 = (uintptr_t)path, .config2 = off,
	};
	int fd = syscall(__NR_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Each form's uprobe, in its child: 0, or -errno when none could be opened (the probe tells nothing). */
static int attach(struct kids *k)
{
	int type = uprobe_pmu(), err, opened = 0;
	const struct mapping *m;
	struct procmaps *pm;
	unsigned int i;

	if (type < 0)
		return type;
	err = procmaps_load(getpid(), &pm);
	if (err)
		return err;
	for (i = 0; i < k->nr; i++) {
		m = procmaps_find(pm, (uintptr_t)arch_insns[i].fn);
		k->perf[i] = m ? open_uprobe(type, m->path, (uintptr_t)arch_insns[i].fn - m->start + m->pgoff,
					     k->pid[i]) : -ENOENT;
		opened += k->perf[i] >= 0;
		err = k->perf[i] >= 0 ? err : k->perf[i];
	}
	procmaps_free(pm);
	return opened ? 0 : err;
}

/* Lets every child make its call; waits until all have (or HIT_TIMEOUT_MS). */
static void hit(struct kids *k)
{
	struct pollfd p = { .fd = k->done[0], .events = POLLIN };
	double until = monotonic_s() + HIT_TIMEOUT_MS / 1e3;
	unsigned int seen = 0;
	char buf[ARCH_INSNS_MAX] = { 0 };
	ssize_t n;

	if (write(k->go[1], buf, k->nr) != (ssize_t)k->nr)
		return;
	while (seen < k->nr && monotonic_s() < until) {
		if (poll(&p, 1, (int)((until - monotonic_s()) * 1e3) + 1) <= 0)
			break;
		n = read(k->done[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		seen += n;
	}
}

/* What the kernel mapped into child pid: "[uprobes]" (a step), "[uprobes-trampoline]" (an optimized probe). */
static enum insn_how maps_say(pid_t pid)
{
	char path[64], line[512];
	bool xol = false, tramp = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return INSN_UNKNOWN;
	while (fgets(line, sizeof(line), f)) {
		xol |= strstr(line, " [uprobes]") != NULL;
		tramp |= strstr(line, " [uprobes-trampoline]") != NULL;
	}
	fclose(f);
	return tramp ? INSN_OPTIMIZED : xol ? INSN_STEPPED : INSN_EMULATED;
}

/* Form i's answer: refused when the kernel would not take the probe; unknown unless its one hit was seen. */
static enum insn_how judge(const struct kids *k, unsigned int i)
{
	__u64 hits = 0;

	/* arch_uprobe_analyze_insn's refusal (the kernel's ENOTSUPP, 524); the uprobe was valid otherwise. */
	if (k->perf[i] == -524 || k->perf[i] == -EOPNOTSUPP)
		return INSN_REFUSED;
	if (k->perf[i] < 0 || read(k->perf[i], &hits, sizeof(hits)) != sizeof(hits) || hits != 1)
		return INSN_UNKNOWN;
	return maps_say(k->pid[i]);
}

/* Ends the children (they wait for quit to close) and reaps them; the uprobes stay open (see work). */
static void reap(struct kids *k)
{
	unsigned int i;

	close(k->quit[1]);
	close(k->go[1]);
	close(k->done[0]);
	for (i = 0; i < k->nr; i++)
		while (waitpid(k->pid[i], NULL, 0) < 0 && errno == EINTR)
			;
}

static int open_pipes(struct kids *k)
{
	if (pipe2(k->go, O_CLOEXEC))
		return -errno;
	if (pipe2(k->done, O_CLOEXEC)) {
		close(k->go[0]);
		close(k->go[1]);
		return -errno;
	}
	if (pipe2(k->quit, O_CLOEXEC)) {
		close(k->go[0]);
		close(k->go[1]);
		close(k->done[0]);
		close(k->done[1]);
		return -errno;
	}
	return 0;
}

/* The probe itself, in the worker process: *u, or -errno in err. */
static int work(struct uprobe_insns *u)
{
	struct kids k = { .nr = 0 };
	unsigned int i;
	int err;

	memset(u, 0, sizeof(*u));
	err = open_pipes(&k);
	if (err)
		return err;
	err = spawn(&k);
	/* The children hold their own ends; with these closed, a dead child reads as EOF. */
	close(k.go[0]);
	close(k.done[1]);
	close(k.quit[0]);
	if (!err)
		err = attach(&k);
	if (!err) {
		hit(&k);
		for (i = 0; i < k.nr; i++)
			u->how[i] = judge(&k, i);
		u->probed = true;
	}
	reap(&k);
	return err;
}

/* What the worker sends back. */
struct answer {
	struct uprobe_insns u;
	int err;
};

/*
 * The worker: a grandchild, orphaned at once, holding nothing of fnprof's
 * but the pipe out (not the target's pipes nor fnprof's output, which a
 * reader waits on). It writes its answer, then exits: closing a uprobe
 * costs a grace period (50-100 ms each here), paid at its exit, by nobody.
 */
static void worker(int out)
{
	struct answer a;
	int fd;

	if (syscall(__NR_close_range, 0, out - 1, 0) || syscall(__NR_close_range, out + 1, ~0U, 0))
		for (fd = 0; fd < 4096; fd++)
			if (fd != out)
				close(fd);
	a.err = work(&a.u);
	if (write(out, &a, sizeof(a)) < 0)
		_exit(1);
	_exit(0);
}

/* The worker's answer from fd, within HIT_TIMEOUT_MS and a second for the rest. */
static bool read_answer(int fd, struct answer *a)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, HIT_TIMEOUT_MS + 1000) == 1 && read(fd, a, sizeof(*a)) == sizeof(*a);
}

int insnprobe_run(struct uprobe_insns *u, double *ms)
{
	struct answer a = { .err = -ECHILD };
	double t0 = monotonic_s();
	int res[2];
	pid_t pid;

	memset(u, 0, sizeof(*u));
	if (pipe2(res, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (!pid) {
		if (fork() == 0)
			worker(res[1]);
		_exit(0);
	}
	close(res[1]);
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !read_answer(res[0], &a))
		a.err = pid < 0 ? -errno : -ETIMEDOUT;
	close(res[0]);
	if (!a.err || a.u.probed)
		*u = a.u;
	*ms = (monotonic_s() - t0) * 1e3;
	return a.err;
}

/*
 * What this boot's kernel does cannot change until the next boot: the first
 * run's answer is kept (runcache.h), keyed by the boot's id and fnprof's
 * list of forms. Each probe leaves a second or so of uprobe releases behind
 * it in the kernel (a grace period each), which a test suite of fnprof runs
 * would pile up.
 */
#define CACHE_NAME "uprobe-insns"

/* What the cache's key says of the forms: how many, and a hash of their names. */
static void forms_key(char *what, size_t size)
{
	unsigned int i, h = 5381;
	const char *c;

	for (i = 0; i < arch_nr_insns; i++)
		for (c = arch_insns[i].name; *c; c++)
			h = h * 33 + (unsigned char)*c;
	snprintf(what, size, "%u %x", arch_nr_insns, h);
}

/* Whether every form has its answer: none left INSN_UNKNOWN. */
static bool all_answered(const struct uprobe_insns *u)
{
	unsigned int i;

	for (i = 0; i < arch_nr_insns; i++)
		if (u->how[i] == INSN_UNKNOWN)
			return false;
	return true;
}

/* This boot's answer, if a run of fnprof as the same user found one for every form: true and *u. */
static bool cache_read(struct uprobe_insns *u)
{
	struct uprobe_insns c;
	char what[32];
	unsigned int i;
	bool ok;

	forms_key(what, sizeof(what));
	ok = runcache_read_keyed(CACHE_NAME, what, &c, sizeof(c)) && c.probed;
	for (i = 0; ok && i < ARCH_INSNS_MAX; i++)
		ok = c.how[i] >= INSN_UNKNOWN && c.how[i] <= INSN_OPTIMIZED;
	ok = ok && all_answered(&c);
	if (ok)
		*u = c;
	return ok;
}

/* Keeps u for the next runs; nothing when /run is not ours. */
static void cache_write(const struct uprobe_insns *u)
{
	char what[32];

	forms_key(what, sizeof(what));
	runcache_write_keyed(CACHE_NAME, what, u, sizeof(*u));
}

const struct uprobe_insns *insnprobe_here(void)
{
	static struct uprobe_insns here;
	static bool done;
	double t0 = monotonic_s(), ms;
	int err;

	if (done)
		return &here;
	done = true;
	if (cache_read(&here)) {
		log_debug("what the kernel emulates for a uprobe: as this boot's first run found (%s/%s, %.2f ms)",
			  runcache_dir(), CACHE_NAME, (monotonic_s() - t0) * 1e3);
		return &here;
	}
	err = insnprobe_run(&here, &ms);
	if (err)
		log_debug("what the kernel emulates for a uprobe is not known (%s): assumed as on every kernel",
			  strerror(-err));
	else
		log_debug("what the kernel emulates for a uprobe, probed in %.1f ms", ms);
	/* A form whose hit was not seen (a machine too busy for the children's calls) is asked again by
	 * the next run: kept, the guess would hold for the whole boot. */
	if (here.probed && all_answered(&here))
		cache_write(&here);
	return &here;
}
