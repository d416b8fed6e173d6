/*
 * floor [-m] PID BINARY FUNC: attaches the empty uprobe + uretprobe pair of floor.bpf.c to FUNC of
 * BINARY in process PID, prints "attached", and waits for SIGINT/SIGTERM or the process's exit.
 *
 * The probes are perf-event links (what bpftrace and funclatency use), or with -m one uprobe_multi
 * link each (kernel 6.6+), which is what fnprof uses where the kernel has them: the two reach the
 * BPF program through different kernel paths, so each tool is compared with the floor it shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"
#include "trace/uprobe_multi.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* File offset of function name in the ELF file path (its symbol's address within its section). */
static long func_offset(const char *path, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, tsh;
	long off = -1;
	Elf *e;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	while (e && off < 0 && (scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !d)
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
				continue;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name) && gelf_getshdr(elf_getscn(e, s.st_shndx), &tsh)) {
				off = s.st_value - tsh.sh_addr + tsh.sh_offset;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return off;
}

/* One uprobe_multi link of prog at offset of path in pid; its fd or -errno. */
static int attach_multi(struct bpf_program *prog, const char *path, __u64 offset, int pid, bool ret)
{
	return uprobe_multi_link(bpf_program__fd(prog), path, &offset, NULL, 1, ret, pid);
}

static int attach_perf(struct floor_bpf *skel, int pid, const char *path, const char *func)
{
	LIBBPF_OPTS(bpf_uprobe_opts, eo, .func_name = func, .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, ro, .func_name = func, .retprobe = true);
	int err;

	skel->links.floor_entry = bpf_program__attach_uprobe_opts(skel->progs.floor_entry, pid, path, 0, &eo);
	err = libbpf_get_error(skel->links.floor_entry);
	if (!err) {
		skel->links.floor_return =
			bpf_program__attach_uprobe_opts(skel->progs.floor_return, pid, path, 0, &ro);
		err = libbpf_get_error(skel->links.floor_return);
	}
	if (err)
		skel->links.floor_entry = skel->links.floor_return = NULL;
	return err;
}

int main(int argc, char **argv)
{
	bool multi = argc > 1 && !strcmp(argv[1], "-m");
	int pid, err = 0, fds[2] = { -1, -1 };
	struct floor_bpf *skel;
	long off = 0;

	argv += multi;
	argc -= multi;
	if (argc != 4) {
		fprintf(stderr, "usage: floor [-m] PID BINARY FUNC\n");
		return 2;
	}
	pid = atoi(argv[1]);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (multi && (off = func_offset(argv[2], argv[3])) < 0) {
		fprintf(stderr, "floor: %s not found in %s\n", argv[3], argv[2]);
		return 1;
	}

	skel = floor_bpf__open();
	if (skel && multi) {
		bpf_program__set_expected_attach_type(skel->progs.floor_entry, UPROBE_MULTI_ATTACH_TYPE);
		bpf_program__set_expected_attach_type(skel->progs.floor_return, UPROBE_MULTI_ATTACH_TYPE);
	}
	if (!skel || floor_bpf__load(skel)) {
		fprintf(stderr, "floor: load failed: %s\n", strerror(errno));
		floor_bpf__destroy(skel);
		return 1;
	}
	if (multi) {
		/* The exit first, as fnprof does: a call entered meanwhile has its return seen. */
		fds[1] = attach_multi(skel->progs.floor_return, argv[2], off, pid, true);
		fds[0] = fds[1] < 0 ? fds[1] : attach_multi(skel->progs.floor_entry, argv[2], off, pid, false);
		err = fds[0] < 0 ? fds[0] : 0;
	} else {
		err = attach_perf(skel, pid, argv[2], argv[3]);
	}
	if (err) {
		fprintf(stderr, "floor: attach failed: %s\n", strerror(-err));
	} else {
		printf("attached\n");
		fflush(stdout);
		while (!stop && kill(pid, 0) == 0)
			usleep(10000);
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	floor_bpf__destroy(skel);
	return err ? 1 : 0;
}
