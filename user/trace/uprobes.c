// SPDX-License-Identifier: GPL-2.0
/*
 * Putting uprobes in and taking them out. Where the kernel has uprobe_multi
 * links (6.6+), every probe of one program in one object is one link: the
 * kernel registers them together and, on close, waits for one RCU grace
 * period for all of them. One perf-event link per probe instead waits one
 * grace period (~0.1-0.2 s) per probe, serialised by a kernel mutex: minutes
 * for a thousand functions. libbpf has an API for uprobe_multi links since
 * 1.3 (bpf_program__attach_uprobe_multi), used where the libbpf fnprof is
 * built with has it; with an older one (Debian 12 has 1.1) the link is made
 * with the bpf() system call directly (uprobe_multi.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/array.h"
#include "base/log.h"
#include "trace/uprobe_multi.h"
#include "trace/uprobes.h"

/*
 * uprobe_multi links came with Linux 6.6. The release tells, without parsing
 * the kernel's BTF a second time (libbpf reads it for CO-RE anyway).
 */
bool uprobes_multi_supported(void)
{
	static int cached = -1;
	struct utsname u;
	int major = 0, minor = 0;

	if (cached < 0) {
		cached = !uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
			 (major > 6 || (major == 6 && minor >= 6));
		if (getenv("FNPROF_NO_UPROBE_MULTI"))  /* to test the per-probe path */
			cached = 0;
	}
	return cached;
}

int uprobes_prepare(struct bpf_program *prog, bool multi)
{
	return multi ? bpf_program__set_expected_attach_type(prog, UPROBE_MULTI_ATTACH_TYPE) : 0;
}

int uprobes_prepare_session(struct bpf_program *prog)
{
	return bpf_program__set_expected_attach_type(prog, UPROBE_SESSION_ATTACH_TYPE);
}

static int push_fd(struct uprobe_set *s, int fd)
{
	if (ARRAY_RESERVE(s->fds, s->nr + 1, s->cap))
		return -ENOMEM;
	s->fds[s->nr++] = fd;
	return 0;
}

/* A link fd made with the bpf() call (fd: it, or -errno) into s; closed when s has no room for it. */
static int keep_fd(struct uprobe_set *s, int fd)
{
	int err;

	if (fd < 0)
		return fd;
	err = push_fd(s, fd);
	if (err)
		close(fd);
	return err;
}

int uprobes_adopt_fd(struct uprobe_set *s, int fd)
{
	return push_fd(s, fd);
}

static int push_link(struct uprobe_set *s, struct bpf_link *l)
{
	if (ARRAY_RESERVE(s->links, s->nr_links + 1, s->cap_links))
		return -ENOMEM;
	s->links[s->nr_links++] = l;
	return 0;
}

static void attach_error(const struct uprobe_site *site, size_t n, int err)
{
	if (n == 1)
		log_err("failed to attach %s to '%s' in %s (offset 0x%llx): %s",
			site->retprobe ? "uretprobe" : "uprobe", site->what, site->object,
			(unsigned long long)site->offset, strerror(-err));
	else
		log_err("failed to attach %zu %s to %s: %s", n, site->retprobe ? "uretprobes" : "uprobes",
			site->object, strerror(-err));
}

/* One perf-event link per site. */
static int attach_single(struct uprobe_set *s, const struct uprobe_site *site)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = site->cookie, .retprobe = site->retprobe);
	struct bpf_link *l;
	int err;

	l = bpf_program__attach_uprobe_opts(site->prog, site->pid, site->path, site->offset, &uo);
	if (!l) {
		err = -errno;
		if (!s->quiet)
			attach_error(site, 1, err);
		return err;
	}
	err = push_link(s, l);
	if (err)
		bpf_link__destroy(l);
	return err;
}

#if LIBBPF_MAJOR_VERSION > 1 || (LIBBPF_MAJOR_VERSION == 1 && LIBBPF_MINOR_VERSION >= 3)
#define HAVE_LIBBPF_UPROBE_MULTI 1
#else
#define HAVE_LIBBPF_UPROBE_MULTI 0
#endif

/*
 * The link for n sites at offs with cookies, into s: libbpf's own API where
 * it has one, else the bpf() system call. 0 or -errno.
 */
static int multi_link(struct uprobe_set *s, const struct uprobe_site *site, const unsigned long *offs,
		      const __u64 *cookies, size_t n)
{
	/* libbpf has sessions since 1.5 only: the bpf() system call for all. */
	if (site->session)
		return keep_fd(s, uprobe_session_link(bpf_program__fd(site->prog), site->path, (const __u64 *)offs,
						      cookies, n, site->pid < 0 ? 0 : site->pid));
#if HAVE_LIBBPF_UPROBE_MULTI
	LIBBPF_OPTS(bpf_uprobe_multi_opts, uo, .offsets = offs, .cookies = cookies, .cnt = n,
		    .retprobe = site->retprobe);
	struct bpf_link *l;
	int err;

	/* libbpf: pid 0 is its own process, -1 every process (the kernel's 0). */
	l = bpf_program__attach_uprobe_multi(site->prog, site->pid ? site->pid : -1, site->path, NULL, &uo);
	if (!l)
		return -errno;
	err = push_link(s, l);
	if (err)
		bpf_link__destroy(l);
	return err;
#else
	_Static_assert(sizeof(unsigned long) == sizeof(__u64), "offsets are handed to the kernel as __u64");

	/* The kernel's "every process" is pid 0 (the site's -1). */
	return keep_fd(s, uprobe_multi_link(bpf_program__fd(site->prog), site->path, (const __u64 *)offs, cookies, n,
					    site->retprobe, site->pid < 0 ? 0 : site->pid));
#endif
}

/* One uprobe_multi link for sites[0..n), which share program, object, process and kind. */
static int attach_multi(struct uprobe_set *s, const struct uprobe_site *sites, size_t n)
{
	unsigned long *offs = calloc(n, sizeof(*offs));
	__u64 *cookies = calloc(n, sizeof(*cookies));
	size_t i;
	int err = -ENOMEM;

	if (offs && cookies) {
		for (i = 0; i < n; i++) {
			offs[i] = sites[i].offset;
			cookies[i] = sites[i].cookie;
		}
		err = multi_link(s, &sites[0], offs, cookies, n);
		if (err && err != -ENOMEM && !s->quiet)
			attach_error(&sites[0], n, err);
	}
	free(offs);
	free(cookies);
	return err;
}

static bool same_link(const struct uprobe_site *a, const struct uprobe_site *b)
{
	return a->prog == b->prog && a->pid == b->pid && a->retprobe == b->retprobe && a->session == b->session &&
	       !strcmp(a->path, b->path);
}

int uprobes_attach(struct uprobe_set *s, const struct uprobe_site *sites, size_t n)
{
	bool *done;
	size_t i, j, nr;
	struct uprobe_site *group;
	int err = 0;

	if (!s->multi) {
		for (i = 0; i < n && !err; i++)
			err = attach_single(s, &sites[i]);
		return err;
	}
	/* Sites in their order, gathered into groups: each group is attached at its first site. */
	done = calloc(n ? n : 1, sizeof(*done));
	group = calloc(n ? n : 1, sizeof(*group));
	if (!done || !group)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		if (done[i])
			continue;
		for (j = i, nr = 0; j < n; j++)
			if (!done[j] && same_link(&sites[i], &sites[j]))
				group[nr++] = sites[j], done[j] = true;
		err = attach_multi(s, group, nr);
	}
	free(done);
	free(group);
	return err;
}

struct closer {
	struct uprobe_set *s;
	size_t from, to;
	bool links;
};

static void *close_some(void *arg)
{
	struct closer *c = arg;
	size_t i;

	for (i = c->from; i < c->to; i++) {
		if (c->links)
			bpf_link__destroy(c->s->links[i]);
		else
			close(c->s->fds[i]);
	}
	return NULL;
}

/* Closes n links from up to 64 threads: grace periods overlap where the kernel lets them. */
static void close_parallel(struct uprobe_set *s, size_t n, bool links)
{
	enum { MAX_THREADS = 64 };
	struct closer c[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	bool started[MAX_THREADS] = {};
	size_t i, nr = n < MAX_THREADS ? n : MAX_THREADS;

	for (i = 0; i < nr; i++) {
		c[i] = (struct closer){ .s = s, .from = n * i / nr, .to = n * (i + 1) / nr, .links = links };
		started[i] = !pthread_create(&th[i], NULL, close_some, &c[i]);
		if (!started[i])
			close_some(&c[i]);
	}
	for (i = 0; i < nr; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

void uprobes_detach(struct uprobe_set *s)
{
	close_parallel(s, s->nr, false);
	close_parallel(s, s->nr_links, true);
	s->nr = s->nr_links = 0;
}

void uprobes_free(struct uprobe_set *s)
{
	uprobes_detach(s);
	free(s->fds);
	free(s->links);
	s->fds = NULL;
	s->links = NULL;
	s->cap = s->cap_links = 0;
}

/* Moves from's probes into all (from keeps none). 0, or -ENOMEM with both untouched. */
static int take_probes(struct uprobe_set *all, struct uprobe_set *from)
{
	if (ARRAY_RESERVE(all->fds, all->nr + from->nr, all->cap) ||
	    ARRAY_RESERVE(all->links, all->nr_links + from->nr_links, all->cap_links))
		return -ENOMEM;
	if (from->nr)
		memcpy(all->fds + all->nr, from->fds, from->nr * sizeof(*from->fds));
	if (from->nr_links)
		memcpy(all->links + all->nr_links, from->links, from->nr_links * sizeof(*from->links));
	all->nr += from->nr;
	all->nr_links += from->nr_links;
	from->nr = from->nr_links = 0;
	return 0;
}

void uprobes_free_all(struct uprobe_set *const *sets, size_t n)
{
	struct uprobe_set all = {};
	size_t i;

	/* One set of them all: one close_parallel (64 threads at most), whatever n. */
	for (i = 0; i < n; i++)
		if (take_probes(&all, sets[i]))
			uprobes_detach(sets[i]);   /* out of memory: this one's closes on their own */
	uprobes_free(&all);
	for (i = 0; i < n; i++)
		uprobes_free(sets[i]);
}
