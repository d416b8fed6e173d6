/*
 * floor PID BINARY FUNC: attaches the empty uprobe + uretprobe pair of floor.bpf.c to FUNC of BINARY
 * in process PID, prints "attached", and waits for SIGINT/SIGTERM or the process's exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct floor_bpf *skel;
	int pid, err;

	if (argc != 4) {
		fprintf(stderr, "usage: %s PID BINARY FUNC\n", argv[0]);
		return 2;
	}
	pid = atoi(argv[1]);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	skel = floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "floor: load failed: %s\n", strerror(errno));
		return 1;
	}
	LIBBPF_OPTS(bpf_uprobe_opts, eo, .func_name = argv[3], .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, ro, .func_name = argv[3], .retprobe = true);
	skel->links.floor_entry = bpf_program__attach_uprobe_opts(skel->progs.floor_entry, pid, argv[2], 0, &eo);
	err = libbpf_get_error(skel->links.floor_entry);
	if (!err) {
		skel->links.floor_return =
			bpf_program__attach_uprobe_opts(skel->progs.floor_return, pid, argv[2], 0, &ro);
		err = libbpf_get_error(skel->links.floor_return);
	}
	if (err) {
		skel->links.floor_entry = NULL;
		skel->links.floor_return = NULL;
		fprintf(stderr, "floor: attach failed: %s\n", strerror(-err));
		floor_bpf__destroy(skel);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (!stop && kill(pid, 0) == 0)
		usleep(10000);
	floor_bpf__destroy(skel);
	return 0;
}
