// SPDX-License-Identifier: GPL-2.0
/* Attaches the empty probe pair to BINARY:FUNCTION in process PID until SIGINT/SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry);
	LIBBPF_OPTS(bpf_uprobe_opts, ret, .retprobe = true);
	struct floor_bpf *skel;
	int pid;

	if (argc != 4) {
		fprintf(stderr, "usage: floor PID BINARY FUNCTION\n");
		return 2;
	}
	pid = atoi(argv[1]);
	entry.func_name = ret.func_name = argv[3];
	skel = floor_bpf__open_and_load();
	if (!skel)
		return 1;
	skel->links.empty_exit = bpf_program__attach_uprobe_opts(skel->progs.empty_exit, pid, argv[2], 0, &ret);
	skel->links.empty_entry = bpf_program__attach_uprobe_opts(skel->progs.empty_entry, pid, argv[2], 0, &entry);
	if (!skel->links.empty_exit || !skel->links.empty_entry) {
		fprintf(stderr, "floor: attach failed: %d\n", errno);
		floor_bpf__destroy(skel);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop)
		pause();
	floor_bpf__destroy(skel);
	return 0;
}
