// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/log.h"
#include "target/procmaps.h"
#include "trace/uprobe_multi.h"
#include "trace/uprobe_warm.h"
#include "trace/uprobes.h"

/* The throwaway probes' site: never called, only its address matters. */
__asm__(".text\n.globl fnprof_warm_site\n.type fnprof_warm_site,@function\n"
	"fnprof_warm_site:\n\tret\n.size fnprof_warm_site, .-fnprof_warm_site\n");
void fnprof_warm_site(void);

/*
 * A registration every few ms keeps the semaphore's writer side open (each one
 * does for at least a grace period); 32 of them cover about 100 ms of loading.
 */
#define REWARM_MS 3
#define MAX_WARM 32

struct uprobe_warm {
	pthread_t thread;
	int stop_fd;                 /* eventfd: written when the target's probes are in */
	int prog_fd;                 /* an empty program for uprobe_multi links, or -1 */
	struct uprobe_set probes;    /* the throwaway probes: uprobe_multi links or perf events */
};

/* The uprobe PMU's type, from sysfs. */
static int uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int type = -1;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	return type;
}

/* A perf uprobe on fnprof_warm_site in fnprof itself; its registration is what counts. */
static int open_warm_probe(int type, const char *path, __u64 offset)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = type, .disabled = 1,
		.config1 = (uintptr_t)path, .config2 = offset,
	};

	return syscall(__NR_perf_event_open, &a, getpid(), -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * An empty program ("return 0") for uprobe_multi links. Why links, not perf
 * events: closing a perf uprobe waits for grace periods under the kernel's
 * event_mutex (perf_uprobe_destroy), so 32 of them took 32 waits in a row,
 * 2 s at exit; uprobe_multi links wait outside any global lock, and closed
 * together their waits overlap. -1 where the kernel has no such links.
 */
static int empty_multi_prog(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = UPROBE_MULTI_ATTACH_TYPE);
	int fd;

	if (!uprobes_multi_supported())
		return -1;
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "fnprof_warm", "GPL", insns, 2, &po);
	if (fd < 0)
		log_debug("uprobe warm-up with perf events: no empty program: %s", strerror(errno));
	return fd;
}

/* One throwaway probe on fnprof_warm_site at offset of path: its fd, or -errno. */
static int open_warm(const struct uprobe_warm *w, int type, const char *path, __u64 offset)
{
	int fd;

	if (w->prog_fd >= 0)
		return uprobe_multi_link(w->prog_fd, path, &offset, NULL, 1, false, getpid());
	fd = open_warm_probe(type, path, offset);
	return fd < 0 ? -errno : fd;
}

static void *warm_thread(void *arg)
{
	struct uprobe_warm *w = arg;
	struct pollfd pfd = { .fd = w->stop_fd, .events = POLLIN };
	const struct mapping *m;
	struct procmaps *pm;
	int type = uprobe_pmu_type(), fd;

	w->prog_fd = empty_multi_prog();
	if ((type < 0 && w->prog_fd < 0) || procmaps_load(getpid(), &pm))
		return NULL;
	m = procmaps_find(pm, (uintptr_t)fnprof_warm_site);
	while (m && w->probes.nr < MAX_WARM) {
		fd = open_warm(w, type, m->path, (uintptr_t)fnprof_warm_site - m->start + m->pgoff);
		if (fd < 0 && w->prog_fd >= 0 && !w->probes.nr && type >= 0) {
			/* The kernel's version promised links it would not make (an LSM, a seccomp filter): perf events. */
			log_debug("uprobe warm-up with perf events: no uprobe_multi link: %s", strerror(-fd));
			close(w->prog_fd);
			w->prog_fd = -1;
			continue;
		}
		if (fd < 0) {
			log_debug("no uprobe warm-up: %s", strerror(-fd));
			break;
		}
		if (uprobes_adopt_fd(&w->probes, fd)) {
			close(fd);
			break;
		}
		if (poll(&pfd, 1, REWARM_MS) != 0)
			break;
	}
	procmaps_free(pm);
	log_debug("uprobe warm-up: %zu throwaway probes", w->probes.nr);
	/*
	 * Each close waits for grace periods: here, at once and together, they
	 * are over long before fnprof exits.
	 */
	uprobes_free(&w->probes);
	return NULL;
}

static struct uprobe_warm *early;

static struct uprobe_warm *start_thread(void)
{
	struct uprobe_warm *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->prog_fd = -1;
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (w->stop_fd >= 0 && !pthread_create(&w->thread, NULL, warm_thread, w))
		return w;
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	free(w);
	return NULL;
}

struct uprobe_warm *uprobe_warm_start(void)
{
	struct uprobe_warm *w = early;

	early = NULL;
	return w ? w : start_thread();
}

void uprobe_warm_early(void)
{
	if (!early)
		early = start_thread();
}

void uprobe_warm_stop(struct uprobe_warm *w)
{
	__u64 one = 1;

	/* At worst the thread stops by itself, after MAX_WARM probes. */
	if (w && write(w->stop_fd, &one, sizeof(one)) != sizeof(one))
		log_debug("uprobe warm-up: cannot stop the thread: %s", strerror(errno));
}

void uprobe_warm_free(struct uprobe_warm *w)
{
	if (!w)
		return;
	uprobe_warm_stop(w);
	pthread_join(w->thread, NULL);
	if (w->prog_fd >= 0)
		close(w->prog_fd);
	close(w->stop_fd);
	free(w);
}

void uprobe_warm_discard(void)
{
	uprobe_warm_free(early);
	early = NULL;
}
