// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/log.h"
#include "trace.skel.h"
#include "trace/core_relos.h"
#include "trace/kernel_types.h"
#include "trace/trace_load.h"

/* The compat build is opened instead (trace_load_use_compat). */
static bool use_compat;

void trace_load_use_compat(bool on)
{
	use_compat = on;
}

bool trace_load_compat(void)
{
	return use_compat;
}

/* The ELF image of the build to open. */
static const void *elf_image(size_t *size)
{
	return use_compat ? trace_compat_elf_bytes(size) : trace_bpf__elf_bytes(size);
}

/* Which programs an instance loads. */
enum half { HALF_NONE, HALF_UPROBES, HALF_OTHERS };

/*
 * The kernel types that the uprobe programs may read with the layout they
 * were compiled with: x86-64's register frame and a UAPI struct. Any other
 * type needs the running kernel's BTF.
 */
static const char *const abi_types[] = { "pt_regs", "bpf_perf_event_value" };

static bool is_uprobe_prog(const struct bpf_program *p)
{
	return bpf_program__type(p) == BPF_PROG_TYPE_KPROBE;
}

static bool is_abi_type(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const char *name = t ? btf__name_by_offset(btf, t->name_off) : NULL;
	size_t i;

	for (i = 0; name && i < sizeof(abi_types) / sizeof(abi_types[0]); i++)
		if (!strcmp(name, abi_types[i]))
			return true;
	return false;
}

/* Whether section sec holds code of the uprobe programs (subprograms in .text may be theirs). */
static bool uprobe_section(const struct trace_bpf *skel, const char *sec)
{
	struct bpf_program *p;

	if (!strcmp(sec, ".text"))
		return true;
	bpf_object__for_each_program(p, skel->obj)
		if (is_uprobe_prog(p) && !strcmp(bpf_program__section_name(p), sec))
			return true;
	return false;
}

/* A copy of the object's section want (.BTF, .BTF.ext), from the ELF image the skeleton embeds; NULL if none. */
static void *elf_section(const char *want, size_t *len)
{
	size_t size = 0, shstrndx;
	const void *elf = elf_image(&size);
	Elf_Scn *scn = NULL;
	void *out = NULL;
	const char *name;
	GElf_Shdr sh;
	Elf_Data *d;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_memory((char *)elf, size);
	if (e && elf_getshdrstrndx(e, &shstrndx))
		scn = NULL;
	else if (e)
		scn = elf_nextscn(e, NULL);
	for (; scn; scn = elf_nextscn(e, scn)) {
		name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (!name || strcmp(name, want))
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_size && (out = malloc(d->d_size))) {
			memcpy(out, d->d_buf, d->d_size);
			*len = d->d_size;
		}
		break;
	}
	elf_end(e);
	return out;
}

/* A relocation that the uprobe half may take against its own BTF: in another program's section, or of an ABI type. */
static bool abi_relo(void *ctx, const char *sec, const struct bpf_core_relo *r)
{
	const struct trace_bpf *skel = ctx;

	return !uprobe_section(skel, sec) || is_abi_type(bpf_object__btf(skel->obj), r->type_id);
}

/* Whether every CO-RE relocation in the uprobe programs (ext: .BTF.ext, len bytes) is against an ABI type. */
static bool uprobes_read_abi_only(const struct trace_bpf *skel, const __u32 *ext, size_t len)
{
	return core_relos_each(bpf_object__btf(skel->obj), ext, len, abi_relo, (void *)skel);
}

/*
 * The kernel's types that the CO-RE relocations read (kernel_types.h), as
 * a path for libbpf (/proc/self/fd/N) into path: its fd, or -errno where
 * libbpf is to read the kernel's whole BTF (FNPROF_WHOLE_KERNEL_BTF=1:
 * always, for the tests).
 */
static int kernel_types_file(const __u32 *ext, size_t len, char *path, size_t size)
{
	size_t btf_len = 0;
	void *btf = elf_section(".BTF", &btf_len);
	int fd = getenv("FNPROF_WHOLE_KERNEL_BTF") ? -ECANCELED : btf && ext ? kernel_types_open(btf, btf_len, ext, len) :
		 -ENOENT;

	free(btf);
	if (fd < 0) {
		log_debug("CO-RE against the kernel's whole BTF: %s", strerror(-fd));
		return fd;
	}
	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

/*
 * The object's own BTF in a memory file: the "kernel BTF" that the uprobe
 * half is relocated against. Its path into path; the file's fd, or -errno.
 */
static int own_btf_file(const struct trace_bpf *skel, char *path, size_t size)
{
	__u32 sz = 0;
	const void *data = btf__raw_data(bpf_object__btf(skel->obj), &sz);
	int fd = memfd_create("fnprof-btf", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (!data || write(fd, data, sz) != (ssize_t)sz) {
		close(fd);
		return -EIO;
	}
	snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

/* trace_bpf__open_opts(), of the image elf_image() gives: the two builds share one skeleton. */
static struct trace_bpf *open_skel(const struct bpf_object_open_opts *opts)
{
	struct trace_bpf *skel = calloc(1, sizeof(*skel));
	int err;

	if (!skel)
		return NULL;
	err = trace_bpf__create_skeleton(skel);
	if (!err) {
		skel->skeleton->data = (void *)elf_image(&skel->skeleton->data_sz);
		err = bpf_object__open_skeleton(skel->skeleton, opts);
	}
	if (err) {
		trace_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

static int open_instance(trace_setup_fn setup, void *arg, const struct bpf_object_open_opts *opts,
			 struct trace_bpf **out)
{
	struct trace_bpf *skel = open_skel(opts);
	int err;

	if (!skel)
		return -errno;
	err = setup(skel, arg);
	if (err)
		trace_bpf__destroy(skel);
	*out = err ? NULL : skel;
	return err;
}

/* Leaves only the programs of half to load (those that setup did not turn off). */
static void load_only(struct trace_bpf *skel, enum half half)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, skel->obj)
		if (half == HALF_NONE || is_uprobe_prog(p) != (half == HALF_UPROBES))
			bpf_program__set_autoload(p, false);
}

/* An instance (open_instance) loaded with half's programs alone (HALF_NONE: none, its maps only). */
static int open_loaded(trace_setup_fn setup, void *arg, const struct bpf_object_open_opts *opts, enum half half,
		       struct trace_bpf **out)
{
	int err = open_instance(setup, arg, opts, out);

	if (err)
		return err;
	load_only(*out, half);
	return trace_bpf__load(*out);
}

/*
 * skel's maps become those of owner (loaded), but for its own read-only
 * data. The writable globals (.bss: epoch, generation, paused, ...) are
 * shared too: user space writes them through the uprobe half's skeleton,
 * and the tracepoint programs must read the same values.
 */
static int share_maps(struct trace_bpf *skel, const struct trace_bpf *owner)
{
	const struct bpf_map *src = NULL;
	struct bpf_map *m;
	int err;

	bpf_object__for_each_map(m, skel->obj) {
		src = bpf_object__next_map(owner->obj, src);  /* the same object: the same order */
		if (!src || strcmp(bpf_map__name(src), bpf_map__name(m)))
			return -EINVAL;
		if (bpf_map__is_internal(m) && (bpf_map__map_flags(m) & BPF_F_RDONLY_PROG))
			continue;
		err = bpf_map__reuse_fd(m, bpf_map__fd(src));
		if (err)
			return err;
	}
	return 0;
}

/* The tracepoint half, loading on its own thread. */
struct trace_pending {
	struct trace_bpf *skel;
	pthread_t thread;
	int err;
	int kernel_fd;   /* the kernel types' file (libbpf reads it as it loads), -1 if none */
};

static void *load_thread(void *arg)
{
	struct trace_pending *j = arg;

	j->err = trace_bpf__load(j->skel);
	return NULL;
}

/* Starts loading skel on a thread of its own, into j. 0 or -errno. */
static int start_pending(struct trace_pending *j, struct trace_bpf *skel)
{
	j->skel = skel;
	j->kernel_fd = -1;
	return -pthread_create(&j->thread, NULL, load_thread, j);
}

/* Waits for the thread of j (started) and frees j: its load's result. */
static int join_pending(struct trace_pending *j)
{
	int err;

	pthread_join(j->thread, NULL);
	err = j->err;
	if (j->kernel_fd >= 0)
		close(j->kernel_fd);
	free(j);
	return err;
}

/*
 * The maps first, from an instance that loads no program (so it needs no
 * kernel BTF either); then the tracepoint half, others, on a thread, and
 * the uprobe half here.
 */
static int load_halves(trace_setup_fn setup, void *arg, const char *btf_path,
		       struct trace_bpf *others, struct trace_bpf **probes)
{
	LIBBPF_OPTS(bpf_object_open_opts, own_btf, .btf_custom_path = btf_path);
	struct trace_bpf *maps = NULL, *up = NULL;
	struct trace_pending *job = calloc(1, sizeof(*job));
	bool started = false;
	int err = job ? 0 : -ENOMEM;

	err = err ? : open_loaded(setup, arg, &own_btf, HALF_NONE, &maps);
	err = err ? : share_maps(others, maps);
	err = err ? : start_pending(job, others);
	started = !err;
	err = err ? : open_instance(setup, arg, &own_btf, &up);
	if (!err) {
		load_only(up, HALF_UPROBES);
		err = share_maps(up, maps);
	}
	err = err ? : trace_bpf__load(up);
	trace_bpf__destroy(maps);
	if (started) {
		int job_err = join_pending(job);

		err = err ? : job_err;
	} else {
		free(job);
	}
	if (err)
		trace_bpf__destroy(up);
	*probes = err ? NULL : up;
	return err;
}

/*
 * The uprobe half first, creating the maps itself (no third instance: its
 * open and load cost ~2 ms); then the tracepoint half, others, on a thread
 * on the same maps, left loading in *pending.
 */
static int load_uprobes_first(trace_setup_fn setup, void *arg, const char *btf_path,
			      struct trace_bpf *others, struct trace_bpf **probes, struct trace_pending **pending)
{
	LIBBPF_OPTS(bpf_object_open_opts, own_btf, .btf_custom_path = btf_path);
	struct trace_pending *job = calloc(1, sizeof(*job));
	struct trace_bpf *up = NULL;
	int err = job ? 0 : -ENOMEM;

	err = err ? : open_loaded(setup, arg, &own_btf, HALF_UPROBES, &up);
	err = err ? : share_maps(others, up);
	err = err ? : start_pending(job, others);
	if (err) {
		free(job);
		trace_bpf__destroy(up);
		return err;
	}
	*pending = job;
	*probes = up;
	return 0;
}

/* trace_load() and trace_load_early(): the tracepoint half still loading into *pending, with pending. */
/* skel (opened with the kernel types' file kfd, which is closed) loaded whole, into *probes. */
static int load_one_piece(struct trace_bpf *skel, int kfd, struct trace_bpf **probes)
{
	int err;

	log_debug("loading the BPF programs in one piece");
	err = trace_bpf__load(skel);
	if (kfd >= 0)
		close(kfd);
	if (err)
		trace_bpf__destroy(skel);
	*probes = err ? NULL : skel;
	return err;
}

static int load(trace_setup_fn setup, void *arg, struct trace_bpf **probes, struct trace_bpf **sched,
		struct trace_pending **pending)
{
	size_t len = 0;
	__u32 *ext = elf_section(".BTF.ext", &len);
	char path[64], kernel[64];
	int kfd = kernel_types_file(ext, len, kernel, sizeof(kernel));
	LIBBPF_OPTS(bpf_object_open_opts, kernel_types, .btf_custom_path = kfd >= 0 ? kernel : NULL);
	struct trace_bpf *skel;
	int fd, err;

	*probes = *sched = NULL;
	if (pending)
		*pending = NULL;
	err = open_instance(setup, arg, &kernel_types, &skel);
	/* FNPROF_ONE_PIECE=1: the way taken when the uprobe programs need the kernel's BTF (tests). */
	fd = err || getenv("FNPROF_ONE_PIECE") || !uprobes_read_abi_only(skel, ext, len) ? -EINVAL :
	     own_btf_file(skel, path, sizeof(path));
	free(ext);
	if (err) {
		if (kfd >= 0)
			close(kfd);
		return err;
	}
	if (fd < 0)
		return load_one_piece(skel, kfd, probes);
	load_only(skel, HALF_OTHERS);
	err = pending ? load_uprobes_first(setup, arg, path, skel, probes, pending) :
	      load_halves(setup, arg, path, skel, probes);
	close(fd);
	if (pending && *pending) {
		(*pending)->kernel_fd = kfd;   /* libbpf reads it in the thread's load */
		return 0;  /* skel is the thread's */
	}
	if (kfd >= 0)
		close(kfd);
	if (err)
		trace_bpf__destroy(skel);
	else
		log_debug("loaded the uprobe and the tracepoint programs side by side, on shared maps");
	*sched = err ? NULL : skel;
	return err;
}

int trace_load(trace_setup_fn setup, void *arg, struct trace_bpf **probes, struct trace_bpf **sched)
{
	return load(setup, arg, probes, sched, NULL);
}

int trace_load_early(trace_setup_fn setup, void *arg, struct trace_bpf **probes, struct trace_bpf **sched,
		     struct trace_pending **pending)
{
	return load(setup, arg, probes, sched, pending);
}

int trace_load_finish(struct trace_pending *pending, struct trace_bpf **sched)
{
	struct trace_bpf *skel;
	int err;

	*sched = NULL;
	if (!pending)
		return 0;
	skel = pending->skel;
	err = join_pending(pending);
	if (err) {
		trace_bpf__destroy(skel);
		return err;
	}
	*sched = skel;
	log_debug("loaded the uprobe and the tracepoint programs side by side, on shared maps "
		  "(the tracepoint programs after the target's probes were in)");
	return err;
}
