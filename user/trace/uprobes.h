/* SPDX-License-Identifier: GPL-2.0 */
/* Attaching and detaching sets of uprobes: uprobe_multi links where the kernel has them. */
#ifndef FNPROF_UPROBES_H
#define FNPROF_UPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct bpf_program;
struct bpf_link;

/* One probe: program prog at file offset of the object at path, in process pid (-1: every process). */
struct uprobe_site {
	struct bpf_program *prog;
	const char *path;
	pid_t pid;
	__u64 offset;
	__u64 cookie;
	bool retprobe;
	bool session;                /* a uprobe session (uprobe_multi links only): entry and return in one program */
	const char *what, *object;   /* function and object, for messages */
};

struct uprobe_set {
	bool multi;                  /* uprobe_multi links (raw fds) rather than perf links */
	bool quiet;                  /* attach failures are for the caller to report */
	int *fds;
	size_t nr, cap;
	struct bpf_link **links;
	size_t nr_links, cap_links;
};

/* Whether this kernel has uprobe_multi links (6.6+; FNPROF_NO_UPROBE_MULTI=1 says no). */
bool uprobes_multi_supported(void);

/* Before the BPF object is loaded: programs for uprobe_multi links need that attach type. */
int uprobes_prepare(struct bpf_program *prog, bool multi);
/* The same for a program of uprobe sessions. */
int uprobes_prepare_session(struct bpf_program *prog);

/*
 * Attaches the sites, in their order (so exit probes can go in before entry
 * probes). 0, or -errno after a message naming the function or object.
 */
int uprobes_attach(struct uprobe_set *s, const struct uprobe_site *sites, size_t n);

/* The set takes over fd, a probe made elsewhere, and closes it with its own. 0 or -ENOMEM. */
int uprobes_adopt_fd(struct uprobe_set *s, int fd);

/* Takes every probe of the set out (the breakpoints are gone when it returns). */
void uprobes_detach(struct uprobe_set *s);
void uprobes_free(struct uprobe_set *s);

/*
 * uprobes_free() of sets[0..n), their probes closed together (as one set's,
 * from up to 64 threads): each close waits for a grace period (uprobe_multi:
 * one per link), and waits begun at once overlap rather than add up.
 */
void uprobes_free_all(struct uprobe_set *const *sets, size_t n);

#endif /* FNPROF_UPROBES_H */
