// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "target/arch.h"
#include "base/array.h"
#include "elf/elfcheck.h"
#include "base/log.h"
#include "base/proc.h"
#include "target/procmaps.h"
#include "target/kfeatures.h"
#include "target/resolve.h"
#include "target/insnprobe.h"
#include "target/kneeds.h"
#include "base/safeopen.h"
#include "base/sanitize.h"
#include "elf/symbols.h"

/* Objects opened while resolving, each read once. */
struct obj_cache {
	struct {
		char *path;          /* as the target sees it */
		char *open_path;
		struct symtab *st;
	} e[64];
	size_t nr;
};

struct resolver {
	const struct resolve_conf *o;
	pid_t pid;
	bool launch;
	bool system;              /* system-wide: objects as the host sees them, no process */
	struct procmaps *pm;      /* attach mode only */
	char exe[PATH_MAX];       /* main executable, as the target sees it */
	char exe_open[PATH_MAX];  /* and as fnprof opens it */
	struct obj_cache cache;
	struct probe_list *out;
	size_t cap;
	bool process_unwinds;     /* the program uses C++ exceptions, Rust panics or Go */
	bool process_longjmps;    /* its executable imports longjmp */
	bool process_go;          /* its executable is a Go program */
	/* The object whose code is read now (first bytes, exits): opened once, not once per function. */
	int code_fd;
	char *code_path;
};

/* The open_path's code, read-only, owned by the resolver: an fd or -errno. */
static int code_fd(struct resolver *r, const char *open_path)
{
	if (r->code_path && !strcmp(r->code_path, open_path))
		return r->code_fd;
	if (r->code_path && r->code_fd >= 0)
		close(r->code_fd);
	free(r->code_path);
	r->code_path = strdup(open_path);
	r->code_fd = r->code_path ? open_regular(AT_FDCWD, open_path, 0) : -ENOMEM;
	return r->code_fd;
}

void split_func_spec(const char *spec, char *obj, size_t obj_size, const char **name)
{
	const char *p;

	for (p = spec; (p = strchr(p, ':')); p += 2) {
		if (p[1] != ':')
			break;
	}
	if (!p || p == spec) {
		*name = spec;
		obj[0] = 0;
		return;
	}
	snprintf(obj, obj_size, "%.*s", (int)(p - spec), spec);
	*name = p + 1;
}

int find_in_path(const char *cmd, char *buf, size_t size)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX];
	size_t n;

	if (strchr(cmd, '/')) {
		snprintf(buf, size, "%s", cmd);
		return access(buf, X_OK) ? -errno : 0;
	}
	for (path = path ? path : "/usr/local/bin:/usr/bin:/bin"; *path; path += n + !!path[n]) {
		n = strcspn(path, ":");
		snprintf(dir, sizeof(dir), "%.*s", (int)n, n ? path : ".");
		snprintf(buf, size, "%s/%s", dir, cmd);
		if (!access(buf, X_OK))
			return 0;
	}
	return -ENOENT;
}

static void log_symtab_error(const char *path, int err)
{
	if (err == -E2BIG)
		log_err("failed to read symbols of %s: more than %uM functions, a name over %u KiB, or names far beyond "
			"its string table: not a sane ELF file, not read", path, SYMTAB_MAX_FUNCTIONS >> 20,
			SYMTAB_MAX_NAME_LEN >> 10);
	else
		log_err("failed to read symbols of %s: %s", path,
			err == -EINVAL ? "not an ELF file"
			: err == -ENODEV ? "not a regular file (fnprof never reads a FIFO, device or directory)"
			: err == -ESTALE ? "it was truncated or rewritten while fnprof read it; try again"
			: strerror(-err));
}

static struct symtab *load_object(struct resolver *r, const char *path, const char *open_path)
{
	struct obj_cache *c = &r->cache;
	struct symtab *st;
	size_t i;
	int err;

	for (i = 0; i < c->nr; i++)
		if (!strcmp(c->e[i].path, path))
			return c->e[i].st;
	if (c->nr == sizeof(c->e) / sizeof(c->e[0])) {
		log_err("too many objects in -f patterns (at most %zu)", sizeof(c->e) / sizeof(c->e[0]));
		return NULL;
	}
	err = symtab_load_target(open_path, path, r->pid, &st);
	if (err) {
		log_symtab_error(path, err);
		return NULL;
	}
	if (st->debug_file)
		log_debug("symbols of %s from its debug file %s", path, st->debug_file);
	c->e[c->nr].path = strdup(path);
	c->e[c->nr].open_path = strdup(open_path);
	c->e[c->nr].st = st;
	c->nr++;
	return st;
}

/* After the architecture's own (arch_lib_dirs). */
static const char *const lib_dirs[] = { "/lib", "/usr/lib", "/usr/local/lib" };

/* Searches a ':'-separated list of directories ($ORIGIN expanded) for file. */
static bool search_dirs(const char *dirs, const char *origin, const char *file, char *buf, size_t size)
{
	size_t n;

	for (; dirs && *dirs; dirs += n + !!dirs[n]) {
		n = strcspn(dirs, ":");
		if (n >= 7 && !strncmp(dirs, "$ORIGIN", 7))
			snprintf(buf, size, "%s%.*s/%s", origin, (int)n - 7, dirs + 7, file);
		else
			snprintf(buf, size, "%.*s/%s", (int)n, dirs, file);
		if (!access(buf, R_OK))
			return true;
	}
	return false;
}

/* Where the dynamic loader would find needed lib file for exe (RUNPATH, LD_LIBRARY_PATH, system). */
static bool locate_needed(const char *file, const char *runpath, const char *origin, char *buf, size_t size)
{
	size_t i;

	if (search_dirs(runpath, origin, file, buf, size) ||
	    search_dirs(getenv("LD_LIBRARY_PATH"), origin, file, buf, size))
		return true;
	if (search_dirs(arch_lib_dirs, origin, file, buf, size))
		return true;
	for (i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++)
		if (search_dirs(lib_dirs[i], origin, file, buf, size))
			return true;
	return false;
}

/* An executable's DT_NEEDED entries and where its loader looks first. */
struct needed {
	char name[64][256];
	size_t nr;
	char runpath[PATH_MAX];
	char origin[PATH_MAX];  /* its directory, for $ORIGIN */
};

/* Reads exe's DT_NEEDED entries and DT_RUNPATH (or DT_RPATH) into nd. 0 or -errno. */
static int read_needed(const char *exe, struct needed *nd)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Dyn dyn;
	size_t i;
	Elf *elf;
	int fd;

	memset(nd, 0, sizeof(*nd));
	snprintf(nd->origin, sizeof(nd->origin), "%s", exe);
	*(strrchr(nd->origin, '/') ? strrchr(nd->origin, '/') : nd->origin) = 0;
	fd = symtab_open(exe);
	if (fd < 0)
		return fd;
	elf = elfcheck_begin(fd, NULL);   /* quiet: symtab_load of the same file says what it refused */
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		/* The type first: only .dynamic is read, never every section. */
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(data = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; gelf_getdyn(data, i, &dyn) && dyn.d_tag != DT_NULL; i++) {
			const char *s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);

			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && nd->nr < 64)
				snprintf(nd->name[nd->nr++], sizeof(nd->name[0]), "%s", s);
			else if (dyn.d_tag == DT_RUNPATH || (dyn.d_tag == DT_RPATH && !nd->runpath[0]))
				snprintf(nd->runpath, sizeof(nd->runpath), "%s", s);
		}
		break;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return 0;
}

/*
 * Whether the object at path is the one name designates: its file name, a
 * short name (lib_name_matches: "libc" for libc.so.6), or a prefix of its
 * file name that ends where a version or suffix starts: "libz.so.1" (the
 * soname) for libz.so.1.2.13, "python3" for python3.11.
 */
static bool object_name_matches(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(name);

	base = base ? base + 1 : path;
	return lib_name_matches(path, name) || (n && !strncmp(base, name, n) && (base[n] == '.' || base[n] == '-'));
}

/* Launch mode: the library of exe's DT_NEEDED entries that name designates. */
static int find_needed(const char *exe, const char *name, char *buf, size_t size)
{
	struct needed *nd = malloc(sizeof(*nd));
	int found = nd ? read_needed(exe, nd) : -ENOMEM;
	size_t i;

	if (!found)
		found = -ENOENT;
	for (i = 0; nd && i < nd->nr && found; i++)
		if (object_name_matches(nd->name[i], name) &&
		    locate_needed(nd->name[i], nd->runpath[0] ? nd->runpath : NULL, nd->origin, buf, size))
			found = 0;
	free(nd);
	return found;
}

/* Whether the file at path starts as an ELF file does (libc.so, say, is a linker script). */
static bool is_elf(const char *path)
{
	unsigned char m[4] = { 0 };
	int fd = open_regular(AT_FDCWD, path, 0);
	bool elf = fd >= 0 && read(fd, m, 4) == 4 && !memcmp(m, "\177ELF", 4);

	if (fd >= 0)
		close(fd);
	return elf;
}

/* The ELF file name with the first of n suffixes that names one in the system directories, into buf. */
static int find_lib_suffixed(const char *name, const char *const *suffixes, size_t n, char *buf, size_t size)
{
	char file[PATH_MAX + 8];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(file, sizeof(file), "%s%s", name, suffixes[i]);
		/* Not /usr/lib/python3.11, a directory, for "python3.11". */
		if (locate_needed(file, NULL, "", buf, size) && is_elf(buf))
			return 0;
	}
	return -ENOENT;
}

/* Launch mode fallback: a library named so in the system directories ("libm" -> libm.so.6). */
static int find_system_lib(const char *name, char *buf, size_t size)
{
	static const char *const suffixes[] = { "", ".so", ".so.6", ".so.1", ".so.0", ".so.2" };

	return find_lib_suffixed(name, suffixes, sizeof(suffixes) / sizeof(suffixes[0]), buf, size);
}

/* Keeps fd open for the whole run: open_path becomes /proc/FNPROF_PID/fd/N, which names that very file. */
static int hold_fd(struct resolver *r, int fd, char *open_path)
{
	if (r->out->nr_held == MAX_HELD_FDS) {
		log_err("too many objects opened inside the target's root (at most %d)", MAX_HELD_FDS);
		close(fd);
		return -EMFILE;
	}
	r->out->held_fds[r->out->nr_held++] = fd;
	snprintf(open_path, PATH_MAX, "/proc/%d/fd/%d", getpid(), fd);
	return 0;
}

/* System-wide: the library named so in the system directories, as the host's programs load it. */
static int find_host_lib(const char *name, char *buf, size_t size)
{
	/* Sonames first: the unversioned .so is the development symlink, or a linker script. */
	static const char *const suffixes[] = { "", ".so.6", ".so.1", ".so.0", ".so.2", ".so.3", ".so.4", ".so.5",
						".so" };

	return find_lib_suffixed(name, suffixes, sizeof(suffixes) / sizeof(suffixes[0]), buf, size);
}

/*
 * System-wide: the object at path (or the library named so in the system
 * directories), opened and held, so that the probes go on exactly the file
 * that was resolved, and an upgrade (a new file at the path) can be told.
 */
static int locate_host_object(struct resolver *r, const char *objname, char *path, char *open_path)
{
	int fd;

	if (objname[0] == '/')
		snprintf(path, PATH_MAX, "%s", objname);
	else if (find_host_lib(objname, path, PATH_MAX)) {
		log_err("no library '%s' in the system library directories: give its path (-f /path/lib.so:NAME)",
			objname);
		return -ENOENT;
	}
	for (size_t i = 0; i < r->out->nr; i++) {
		if (!strcmp(r->out->probes[i].object, path)) {   /* opened for an earlier -f already */
			snprintf(open_path, PATH_MAX, "%s", r->out->probes[i].open_path);
			return 0;
		}
	}
	fd = open_regular(AT_FDCWD, path, 0);
	if (fd < 0) {
		log_err("cannot open %s: %s", path, fd == -ENODEV ? "not a regular file" : strerror(-fd));
		return fd;
	}
	return hold_fd(r, fd, open_path);
}

/*
 * Opens path as the target would see it, without escaping its root through
 * "..", symlinks or mounts, and keeps the file open for the probes.
 */
static int open_in_root(struct resolver *r, const char *path, char *open_path)
{
	int fd = proc_open_in_root(r->pid, path);

	if (fd < 0) {
		log_err("cannot open %s inside the root of process %d: %s", path, r->pid,
			fd == -ENODEV ? "not a regular file" : strerror(-fd));
		return fd;
	}
	return hold_fd(r, fd, open_path);
}

/*
 * The file mapped at path, for fnprof to read and probe: the mapping itself
 * (/proc/PID/map_files). Without the capability that needs, the file at path
 * inside the target's root, accepted only if it is the mapped one (device and
 * inode): a path alone could name another file by now.
 */
static int open_mapped(struct resolver *r, const char *path, char *open_path)
{
	const struct mapping *m = procmaps_find_path(r->pm, path);
	struct stat st;
	int fd;

	if (!m)
		return open_in_root(r, path, open_path);
	if (proc_can_follow_map_files())
		return procmaps_file_path(r->pm, path, open_path, PATH_MAX);
	fd = proc_open_in_root(r->pid, path);
	if (fd >= 0 && !fstat(fd, &st) && st.st_ino == m->inode &&
	    st.st_dev == makedev(m->dev_major, m->dev_minor))
		return hold_fd(r, fd, open_path);
	if (fd >= 0)
		close(fd);
	log_err("cannot open %s as process %d maps it: /proc/%d/map_files needs CAP_SYS_ADMIN or "
		"CAP_CHECKPOINT_RESTORE, which fnprof lacks, and %s; run as root or add CAP_CHECKPOINT_RESTORE",
		path, r->pid, r->pid, fd >= 0 ? "the file at that path is not the mapped one (replaced since)"
					      : "the path cannot be opened inside its root");
	return -EPERM;
}

/* The mapped object that name designates (object_name_matches), the closest match first, or NULL. */
static const char *find_mapped_object(const struct procmaps *pm, const char *name)
{
	const char *p = procmaps_find_object(pm, name);
	size_t i;

	for (i = 0; !p && name[0] != '/' && i < pm->nr; i++)
		if (pm->maps[i].path[0] == '/' && object_name_matches(pm->maps[i].path, name))
			p = pm->maps[i].path;
	return p;
}

/*
 * Launch mode: the object a -f prefix names, as the process will map it:
 * the executable by its name, a library it needs, the executable by a
 * prefix of its name, a library of the system's. 0 or -ENOENT (said).
 */
static int locate_launch_object(const struct resolver *r, const char *objname, char *path)
{
	if (objname[0] == '/') {
		snprintf(path, PATH_MAX, "%s", objname);
		return 0;
	}
	if (lib_name_matches(r->exe, objname) ||
	    (find_needed(r->exe, objname, path, PATH_MAX) && object_name_matches(r->exe, objname))) {
		snprintf(path, PATH_MAX, "%s", r->exe);
		return 0;
	}
	if (!find_needed(r->exe, objname, path, PATH_MAX) || !find_system_lib(objname, path, PATH_MAX))
		return 0;
	log_err("no library '%s' among the libraries %s needs, nor in the system library directories",
		objname, r->exe);
	return -ENOENT;
}

/* Where the object named by a -f prefix is: as the target sees it, and for us to open. */
static int locate_object(struct resolver *r, const char *objname, char *path, char *open_path)
{
	const char *p;

	if (r->system)
		return locate_host_object(r, objname, path, open_path);
	if (!objname[0]) {
		strcpy(path, r->exe);
		strcpy(open_path, r->exe_open);
		return 0;
	}
	if (r->launch) {
		if (locate_launch_object(r, objname, path))
			return -ENOENT;
		strcpy(open_path, path);
		return 0;
	}
	p = find_mapped_object(r->pm, objname);
	if (!p && objname[0] != '/') {
		log_err("no object matching '%s' is mapped by process %d (see /proc/%d/maps)",
			objname, r->pid, r->pid);
		return -ENOENT;
	}
	snprintf(path, PATH_MAX, "%s", p ? p : objname);
	/* Mapped: the mapped file itself. Not mapped yet (dlopen later): looked up inside the target's root. */
	return p ? open_mapped(r, path, open_path) : open_in_root(r, path, open_path);
}

/* A script followed through exec: the program it exec'd, held open (the child is stopped right after the exec). */
static int locate_followed_exe(struct resolver *r)
{
	ssize_t n = readlink(r->o->followed, r->exe, sizeof(r->exe) - 1);
	int fd = open_regular(AT_FDCWD, r->o->followed, 0), err = fd < 0 ? fd : -ENOENT;

	if (n <= 0 || fd < 0) {
		log_err("cannot open the program that process %d runs: %s", r->pid, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	r->exe[n] = 0;
	return hold_fd(r, fd, r->exe_open);
}

/* The main executable, as the mapping whose device and inode are /proc/PID/exe's. */
static int locate_exe(struct resolver *r)
{
	char link[64];
	struct stat st;
	size_t i;

	if (r->o->followed)
		return locate_followed_exe(r);
	if (r->launch) {
		if (find_in_path(r->o->cmd[0], r->exe_open, sizeof(r->exe_open))) {
			log_err("cannot run '%s': no such executable file (searched PATH)", r->o->cmd[0]);
			return -ENOENT;
		}
		if (!realpath(r->exe_open, r->exe))
			snprintf(r->exe, sizeof(r->exe), "%s", r->exe_open);
		snprintf(r->exe_open, sizeof(r->exe_open), "%s", r->exe);
		return 0;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", r->pid);
	if (stat(link, &st)) {
		int err = -errno;

		log_err("cannot read the executable of process %d: %s", r->pid, strerror(-err));
		return err;
	}
	for (i = 0; i < r->pm->nr; i++) {
		const struct mapping *m = &r->pm->maps[i];

		/* An inode number alone can be another file system's: a mapped file of the target's choosing. */
		if (m->inode == st.st_ino && makedev(m->dev_major, m->dev_minor) == st.st_dev) {
			snprintf(r->exe, sizeof(r->exe), "%s", m->path);
			return open_mapped(r, r->exe, r->exe_open);
		}
	}
	/* Not in the maps (deleted or replaced file): the kernel's own reference still works. */
	snprintf(r->exe, sizeof(r->exe), "%s", link);
	snprintf(r->exe_open, sizeof(r->exe_open), "%s", link);
	return 0;
}

/* What arch_entry_skip reads of an object beside the code: its jump tables. */
struct object_reader {
	int fd;
	const struct symtab *st;
};

static size_t read_object(void *ctx, __u64 vaddr, void *buf, size_t len)
{
	const struct object_reader *o = ctx;
	__u64 off, avail = symtab_vaddr_to_off(o->st, vaddr, &off);
	ssize_t n;

	n = avail ? pread(o->fd, buf, len < avail ? len : avail, off) : 0;
	return n > 0 ? (size_t)n : 0;
}

static const struct sym *cold_part(const struct symtab *st, const struct sym *s);
static unsigned char *read_code(int fd, __u64 off, __u64 size);

/* A function's code as read from its object: its parts, and their disassembly once asked for. */
struct fn_code {
	struct code_part parts[2];
	size_t nr;                 /* 0: not read (too large, or the object cannot be read) */
	struct arch_code *arch;    /* NULL when not read */
	struct object_reader obj;  /* for its jump tables */
};

static void fn_code_free(struct fn_code *fc);

/* The code of function s and of its cold part, read once for the entry site and the exits. */
static void fn_code_read(struct fn_code *fc, int fd, const struct sym *s, const struct symtab *st)
{
	const struct sym *sy[2] = { s, cold_part(st, s) };
	size_t k, nr = sy[1] ? 2 : 1;

	memset(fc, 0, sizeof(*fc));
	fc->obj = (struct object_reader){ fd, st };
	for (k = 0; k < nr; k++) {
		fc->parts[k] = (struct code_part){ fd >= 0 ? read_code(fd, sy[k]->offset, sy[k]->size) : NULL,
						   sy[k]->size, sy[k]->addr };
		if (!fc->parts[k].code)
			break;
	}
	fc->nr = k;
	if (k == nr)
		fc->arch = arch_code_new(fc->parts, nr);
	if (!fc->arch) {
		fn_code_free(fc);
		fc->nr = 0;
	}
}

static void fn_code_free(struct fn_code *fc)
{
	size_t k;

	arch_code_free(fc->arch);
	fc->arch = NULL;
	for (k = 0; k < fc->nr; k++)
		free((void *)fc->parts[k].code);
}

/*
 * The kind of p's entry probe site, from its first bytes, and how far in
 * the probe can go (p->entry_skip) to land on an instruction the kernel
 * does not single-step. Without the function's code (fc->nr 0), from its
 * first 16 bytes.
 */
static void place_entry(struct resolver *r, struct probe *p, struct fn_code *fc)
{
	unsigned char head[16];
	const unsigned char *code = fc->nr ? fc->parts[0].code : head;
	ssize_t n = fc->nr ? (ssize_t)fc->parts[0].size : -1;
	int fd = code_fd(r, p->open_path);
	const struct uprobe_insns *u = insnprobe_here();   /* what this kernel emulates */

	if (!fc->nr && fd >= 0)
		n = pread(fd, head, sizeof(head), p->offset);
	p->entry_skip = fc->nr ? arch_entry_skip(fc->arch, r->o->reads_args, u, read_object, &fc->obj) : 0;
	p->kind = n > (ssize_t)p->entry_skip ? site_kind_of(code + p->entry_skip, n - p->entry_skip, u) :
		  site_kind_of(code, 0, u);
	p->branch_delta = n > (ssize_t)p->entry_skip && p->kind != SITE_STEPPED ?
			  arch_branch_delta(code + p->entry_skip, n - p->entry_skip) : 0;
	if (p->entry_skip)
		log_debug("%s: entry probe %u bytes in, on an instruction the kernel emulates (%s)", p->name,
			  p->entry_skip, site_kind_name(p->kind));
	/* A twin for a single-stepped entry, if the function allows one (used or not: pair_entry). */
	p->pair_off = fc->nr ? arch_pair_offset(code, n, p->addr, p->entry_skip, u, &p->pair_ret) : 0;
}

/*
 * A single-stepped entry with a twin probe (SITE_PAIR), read without its
 * steps: where a return is timed (not --entry-only), not for Go functions
 * (their calls are kept per goroutine, by other programs).
 */
static void pair_entry(struct resolver *r, struct probe *p)
{
	int i;

	/* A twin on a ret that is an exit probe's place too: the two programs' order is the kernel's. */
	for (i = 0; p->pair_ret && p->exit == EXIT_RET && i < p->nr_exits; i++)
		if (p->exits[i] == p->offset + p->pair_off)
			p->pair_off = 0;
	if (!r->o->step_pair || p->kind != SITE_STEPPED || !p->pair_off || p->go || p->exit == EXIT_NONE) {
		p->pair_off = 0;
		return;
	}
	p->kind = p->pair_ret ? SITE_PAIR_RET : SITE_PAIR;
	log_debug("%s: single-stepped entry, timed by a twin probe %u bytes in", p->name, p->pair_off);
}

/* The cold part gcc split off function s (NAME.cold, NAME.cold.N), or NULL. */
static const struct sym *cold_part(const struct symtab *st, const struct sym *s)
{
	size_t i, n = strlen(s->name);

	for (i = 0; i < st->nr; i++) {
		const char *c = st->syms[i].name;

		if (!strncmp(c, s->name, n) && !strncmp(c + n, ".cold", 5) && (!c[n + 5] || c[n + 5] == '.'))
			return &st->syms[i];
	}
	return NULL;
}

/* Reads size bytes at file offset off of the object; NULL on failure. */
static unsigned char *read_code(int fd, __u64 off, __u64 size)
{
	unsigned char *code = size && size <= (1 << 20) ? malloc(size) : NULL;

	if (code && pread(fd, code, size, off) != (ssize_t)size) {
		free(code);
		code = NULL;
	}
	return code;
}

/* The file offset of address addr of function s's code: in its body, or in its cold part. */
static __u64 code_offset(const struct sym *s, const struct sym *cold, __u64 addr)
{
	const struct sym *in = cold && addr - cold->addr < cold->size ? cold : s;

	return in->offset + (addr - in->addr);
}

/* Tail calls followed from one function: this deep, and callees visited, at most. */
#define TAIL_DEPTH_MAX 8
#define TAIL_CALLEES_MAX 64

/* One function's exits as they are gathered: its rets, and the sites past them (tail calls). */
struct exit_walk {
	struct resolver *r;
	struct probe *p;
	const struct symtab *st;
	__u64 *rets;
	size_t nr_rets;
	struct tail_site *tails;
	size_t nr_tails, cap_tails;
	size_t nr_in_callees, room;   /* sites in callees, and how many more than the own exits may be */
	struct {
		__u64 addr;
		bool ok;
	} seen[TAIL_CALLEES_MAX];
	size_t nr_seen;
	bool nomem;
	/* The function's own tail jumps, by target: a function followed, one not (a PLT stub), indirect. */
	size_t nr_direct, nr_unfollowed, nr_indirect;
};

static void add_tail(struct exit_walk *w, __u64 offset, bool in_callee, bool untimed, bool jump)
{
	if (ARRAY_RESERVE(w->tails, w->nr_tails + 1, w->cap_tails)) {
		w->nomem = true;
		return;
	}
	w->tails[w->nr_tails++] = (struct tail_site){ offset, in_callee, untimed, jump };
	w->nr_in_callees += in_callee;
}

/*
 * The function a direct tail jump to addr goes to, if it is one whose code
 * fnprof can read and follow: a symbol that starts there, in the same
 * object. A jmp to a PLT stub (foo@plt) has none: the library's function
 * is only known once the loader has bound it.
 */
static const struct sym *tail_callee(const struct exit_walk *w, __u64 addr)
{
	const struct sym *c = symtab_lookup(w->st, addr);

	if (!c || c->addr != addr || !c->size || c->ifunc || c->go || strstr(c->name, ".cold"))
		return NULL;
	return c;
}

static bool follow_exits(struct exit_walk *w, const struct sym *s, struct fn_code *fc, const __u64 *addrs, int n,
			 int depth);

/*
 * A tail call to the function at addr, from depth (0: the traced function):
 * its exits become the call's, as sites in a callee. False when it cannot
 * be followed (unknown, too deep, too many sites): then the jmp ends the call.
 */
static bool follow_callee(struct exit_walk *w, __u64 addr, int depth)
{
	const struct sym *c = tail_callee(w, addr);
	struct fn_code fc;
	__u64 *addrs = NULL;
	size_t i, k;
	int n;
	bool ok;

	if (!c || depth >= TAIL_DEPTH_MAX)
		return false;
	for (i = 0; i < w->nr_seen; i++)
		if (w->seen[i].addr == addr)
			return w->seen[i].ok;
	if (w->nr_seen == TAIL_CALLEES_MAX)
		return false;
	/* Marked first, so that a tail call back into it (a cycle) finds its exits already there. */
	k = w->nr_seen++;
	w->seen[k].addr = addr;
	w->seen[k].ok = true;
	fn_code_read(&fc, code_fd(w->r, w->p->open_path), c, w->st);
	n = fc.nr ? find_exits(fc.arch, &addrs) : -EIO;
	ok = follow_exits(w, c, &fc, addrs, n, depth + 1);
	free(addrs);
	fn_code_free(&fc);
	w->seen[k].ok = ok;
	return ok;
}

/*
 * The exits of function s (code fc; addrs: its n exits, find_exits's, n <= 0
 * when not found) at depth, gathered into w: a ret ends
 * the call (for a callee, a site in it); a tail jump to a known function is
 * followed into that one's exits; any other tail jump ends the call, untimed
 * beyond it. False if the code cannot be read, or the sites would be more
 * than MAX_EXITS (then nothing of s is kept).
 */
static bool follow_exits(struct exit_walk *w, const struct sym *s, struct fn_code *fc, const __u64 *addrs, int n,
			 int depth)
{
	const struct sym *cold = cold_part(w->st, s);
	size_t rets0 = w->nr_rets, tails0 = w->nr_tails, in0 = w->nr_in_callees, seen0 = w->nr_seen, j;
	__u64 target;
	enum arch_exit_kind kind;
	int i;

	for (i = 0; i < n && !w->nomem; i++) {
		kind = arch_exit_kind(fc->arch, addrs[i], &target);
		if (!depth && kind == ARCH_EXIT_JMP && !w->p->go && tail_callee(w, target))
			w->nr_direct++;
		else if (!depth && kind != ARCH_EXIT_RET)
			*(kind == ARCH_EXIT_JMP ? &w->nr_unfollowed : &w->nr_indirect) += 1;
		if (kind == ARCH_EXIT_RET && !depth)
			w->rets[w->nr_rets++] = code_offset(s, cold, addrs[i]);
		else if (kind == ARCH_EXIT_RET)
			add_tail(w, code_offset(s, cold, addrs[i]), true, false, false);
		else if (kind != ARCH_EXIT_JMP || w->p->go || !follow_callee(w, target, depth))
			add_tail(w, code_offset(s, cold, addrs[i]), depth > 0, true, false);
		else if (!depth)
			/* The function's own jmp, followed: the callee's exits close its call only once it is taken. */
			add_tail(w, code_offset(s, cold, addrs[i]), false, false, true);
		if (w->nr_in_callees > w->room)
			break;
	}
	if (n > 0 && i == n && !w->nomem)
		return true;
	w->nr_rets = rets0;
	w->nr_tails = tails0;
	w->nr_in_callees = in0;
	/* The callees followed from here lost their sites with it: a jmp to one is not followed. */
	for (j = seen0; j < w->nr_seen; j++)
		w->seen[j].ok = false;
	return false;
}

/* Why a function has no exit probes (its exit_why), for the ones said together. */
static const char *const no_exit_whys[2] = {
	"no return instruction found: it only tail-calls or never returns",
	"no return instruction found: its code does not disassemble cleanly",
};

/*
 * EXIT_RET: the function's exits, from its code, and those of the functions
 * it tail-calls (a `jmp other` with its frame popped: the call goes on in
 * other, until other returns). Falls back to entry-only without them.
 */
static void find_ret_exits(struct resolver *r, struct probe *p, const struct sym *s, const struct symtab *st,
			   struct fn_code *fc)
{
	struct exit_walk w = { .r = r, .p = p, .st = st };
	__u64 *addrs = NULL;
	int n = fc->nr ? find_exits(fc->arch, &addrs) : -EIO;
	size_t i;

	w.seen[w.nr_seen++].addr = s->addr;
	w.seen[0].ok = true;
	/* The own exits are n at most (each ret, or a jmp that ends the call): the callees get the rest. */
	w.room = n > 0 && n <= MAX_EXITS ? MAX_EXITS - n : 0;
	w.rets = n > 0 && n <= MAX_EXITS ? calloc(n, sizeof(*w.rets)) : NULL;
	/* The exits found here are the walk's first step: not looked for again. */
	if (w.rets && follow_exits(&w, s, fc, addrs, n, 0)) {
		free(addrs);
		p->exits = w.rets;
		p->nr_exits = w.nr_rets;
		p->tails = w.tails;
		p->nr_tails = w.nr_tails;
		for (i = 0; i < w.nr_tails; i++)
			p->follows_tails |= w.tails[i].in_callee;
		if (w.nr_direct + w.nr_unfollowed + w.nr_indirect)
			log_debug("%s: tail calls: %zu to functions of its object (%zu exit probes in %zu callees), "
				  "%zu through the PLT (not followed), %zu indirect", p->name, w.nr_direct, w.nr_in_callees,
				  w.nr_seen - 1, w.nr_unfollowed, w.nr_indirect);
		return;
	}
	free(addrs);
	free(w.rets);
	free(w.tails);
	if (w.nomem || (n > 0 && n <= MAX_EXITS && !w.rets))
		n = -ENOMEM;
	if (n > MAX_EXITS)
		log_warn("%d exits in '%s', more than the %d fnprof probes in one function: counting its calls only",
			 n, p->name, MAX_EXITS);
	else if (n < 0 && n != -EINVAL)
		log_warn("no return instruction found in '%s' (%s): counting its calls only", p->name, strerror(-n));
	else    /* said once for all such functions, at the end (warn_no_exits) */
		p->exit_why = no_exit_whys[n == -EINVAL];
	p->exit = EXIT_NONE;
}

/*
 * The functions left without exits for one of no_exit_whys, in one warning
 * per reason: -f 'libc:*' has ~90 (exit, abort, longjmp, err...), which
 * one line each buried the rest of the output.
 */
static void warn_no_exits(const struct probe_list *pl)
{
	char names[256];
	size_t i, k, nr, len;

	for (k = 0; k < 2; k++) {
		const char *why = no_exit_whys[k], *reason = strchr(why, ':') + 2, *one = NULL;

		for (i = nr = len = 0; i < pl->nr; i++) {
			if (pl->probes[i].exit != EXIT_NONE || pl->probes[i].exit_why != why)
				continue;
			one = pl->probes[i].name;
			if (nr++ < 5 && len < sizeof(names))
				len += snprintf(names + len, sizeof(names) - len, "%s'%s'", nr > 1 ? ", " : "", one);
		}
		if (nr == 1)
			log_warn("no return instruction found in '%s' (%s): counting its calls only", one, reason);
		else if (nr > 5)
			log_warn("no return instruction found in %zu functions (%s): %s and %zu more (EXIT none in "
				 "--list); counting their calls only", nr, reason, names, nr - 5);
		else if (nr)
			log_warn("no return instruction found in %zu functions (%s): %s; counting their calls only",
				 nr, reason, names);
	}
}

/*
 * A function that calls nothing (no call, no tail call, no indirect jump
 * but a switch's), in a process that is not Go and runs no code on stacks
 * of its own: an exception is thrown by a call and a longjmp is one, so
 * neither can pass its frame, and a uretprobe's return address there is
 * never read by an unwinder. Go is left out: its runtime reads every
 * frame's return address when it scans a goroutine stopped anywhere
 * (asynchronous preemption). So is stack switching: a signal handler on an
 * alternate stack above the thread's, hitting a uretprobe of its own, makes
 * the kernel drop the pending returns below it as dead, the leaf's too,
 * whose return then finds no return instance (SIGILL).
 */
static bool leaf_outside_go(const struct resolver *r, const struct sym *s, const struct symtab *st,
			    struct fn_code *fc)
{
	return !s->go && !st->go && !r->process_go && !r->out->switches_stacks && fc->nr && arch_is_leaf(fc->arch);
}

/*
 * System-wide, where the kernel has uprobe sessions: the exit is chosen per
 * process, a uretprobe (the session's return) where that process is safe
 * for it, ret probes in the others. A function whose exits follow tail
 * calls into other functions keeps ret probes everywhere: those probes
 * would fire in every process's calls of the callees.
 */
static void choose_session(struct resolver *r, struct probe *p, const struct sym *s, const struct symtab *st, struct fn_code *fc)
{
	if (!kfeatures_uprobe_sessions())
		return;
	find_ret_exits(r, p, s, st, fc);
	if (p->exit != EXIT_RET || p->nr_tails) {
		if (p->exit == EXIT_RET)
			p->exit_why = "system-wide: any process that maps it may unwind through it (and its exits "
				      "follow tail calls, which a uprobe session cannot decline per process)";
		return;
	}
	p->exit = EXIT_URETPROBE;
	p->session = true;
	p->exit_why = "system-wide: a uprobe session's return, declined (ret probes) in processes where a "
		      "uretprobe is unsafe";
}

/*
 * --exit=auto: a uretprobe only where nothing unwinds through return
 * addresses, moves stacks or longjmps. A longjmp out of 64 or more pending
 * uretprobes leaves the thread without any later one: the kernel checks its
 * limit of 64 before it drops the returns that the longjmp abandoned.
 */
static void choose_exit(struct resolver *r, struct probe *p, const struct sym *s, const struct symtab *st,
			struct fn_code *fc)
{
	p->exit = r->o->exit_mode;
	/* Any process may map the object, C++ and Go ones too: only the ret probes are safe for all. */
	if (p->exit == EXIT_AUTO && r->system) {
		p->exit = EXIT_RET;
		p->exit_why = "system-wide: any process that maps it may unwind through it";
		if (!s->go && !st->go)
			choose_session(r, p, s, st, fc);
	}
	if (p->exit == EXIT_AUTO) {
		bool risky = st->unwinds || r->process_unwinds;
		bool jumps = st->longjmps || r->process_longjmps;

		p->exit = risky || jumps || r->out->switches_stacks ? EXIT_RET : EXIT_URETPROBE;
		p->exit_why = risky ? "C++ exceptions, Rust panics or Go in the process"
			      : r->out->switches_stacks ? "stack switching (swapcontext, sigaltstack) in the process"
			      : jumps ? "longjmp in the process"
			      : NULL;
		if (p->exit == EXIT_RET && leaf_outside_go(r, s, st, fc)) {
			p->exit = EXIT_URETPROBE;
			p->exit_why = "a leaf: it calls nothing, so no exception or longjmp passes its frame";
		}
	}
	/*
	 * The entry point (_start) is jumped to, not called: at its first
	 * instruction [sp] holds argc, which a uretprobe would overwrite with its
	 * trampoline's address. It never returns either.
	 */
	if (st->entry && s->addr == st->entry && p->exit != EXIT_NONE) {
		log_warn("'%s' is the entry point of %s: it is jumped to, not called, and never returns; "
			 "counting its calls only", p->name, p->object);
		p->exit = EXIT_NONE;
		p->exit_why = "the program's entry point: jumped to, never returns";
		p->session = false;
	}
	/* choose_session() may have found them already. */
	if (p->exit == EXIT_RET && !p->exits && !p->tails)
		find_ret_exits(r, p, s, st, fc);
	if (s->go && p->exit == EXIT_RET) {
		p->go = true;
		p->cpu_unknown = "goroutines switch in user space, unseen by the kernel's scheduler events";
	}
	/* The compat trace object follows no switch (bpf/compat.bpf.h): wall and self time only. */
	if (!p->cpu_unknown && p->exit != EXIT_NONE && kneeds_trace_compat(NULL))
		p->cpu_unknown = kneeds_compat_sched_why();
}

static int add_probe(struct resolver *r, const struct sym *s, const char *path, const char *open_path,
		     const struct symtab *st)
{
	struct probe_list *pl = r->out;
	struct fn_code fc;
	struct probe *p;
	size_t i;

	for (i = 0; i < pl->nr; i++)
		if (pl->probes[i].offset == s->offset && !strcmp(pl->probes[i].open_path, open_path))
			return 0;
	if (ARRAY_RESERVE(pl->probes, pl->nr + 1, r->cap))
		return -ENOMEM;
	p = &pl->probes[pl->nr];
	*p = (struct probe){
		.name = strdup(sym_display_name(s)), .object = strdup(path), .open_path = strdup(open_path),
		.main_exe = !strcmp(path, r->exe), .addr = s->addr, .size = s->size,
		.offset = s->offset, .id = pl->nr,
	};
	if (!p->name || !p->object || !p->open_path)
		return -ENOMEM;
	fn_code_read(&fc, code_fd(r, open_path), s, st);
	place_entry(r, p, &fc);
	pl->nr++;
	choose_exit(r, p, s, st, &fc);
	fn_code_free(&fc);
	pair_entry(r, p);
	return 0;
}

/* Libraries searched for a name the executable lacks: the first this many. */
#define SUGGEST_LIBS 32

/* The libraries the program maps (attach mode) or needs (launch mode), into paths: how many. */
static size_t program_libraries(const struct resolver *r, char (*paths)[PATH_MAX], size_t max)
{
	struct needed *nd;
	size_t i, n = 0;

	for (i = 0; r->pm && i < r->pm->nr && n < max; i++) {
		const char *p = r->pm->maps[i].path;

		if (p[0] == '/' && strcmp(p, r->exe) && (!n || strcmp(p, paths[n - 1])))
			snprintf(paths[n++], PATH_MAX, "%s", p);
	}
	if (r->pm || !(nd = malloc(sizeof(*nd))))
		return n;
	for (i = 0; !read_needed(r->exe, nd) && i < nd->nr && n < max; i++)
		if (locate_needed(nd->name[i], nd->runpath[0] ? nd->runpath : NULL, nd->origin, paths[n], PATH_MAX))
			n++;
	free(nd);
	return n;
}

/* Whether the library at path (as the target sees it) has a function name matches. */
static bool library_has(const struct resolver *r, const char *path, const char *name)
{
	int fd = r->pm ? proc_open_in_root(r->pid, path) : open_regular(AT_FDCWD, path, 0);
	const struct sym **m = NULL;
	struct symtab *st = NULL;
	char open_path[64];
	bool has;

	if (fd < 0)
		return false;
	snprintf(open_path, sizeof(open_path), "/proc/self/fd/%d", fd);
	has = !symtab_load_target(open_path, path, r->pid, &st) && symtab_match(st, name, &m) > 0;
	free(m);
	symtab_free(st);
	close(fd);
	return has;
}

/* Prints ", LIB:name" (the first time "; did you mean: LIB:name") for each library with name: how many. */
static size_t suggest_libraries(const struct resolver *r, const char *name)
{
	char (*paths)[PATH_MAX] = malloc(SUGGEST_LIBS * sizeof(*paths)), clean[256];
	size_t i, n = paths ? program_libraries(r, paths, SUGGEST_LIBS) : 0, said = 0;

	for (i = 0; i < n && said < 3; i++) {
		const char *base = strrchr(paths[i], '/') + 1, *so = strstr(base, ".so");

		if (!library_has(r, paths[i], name))
			continue;
		fprintf(stderr, "%s%.*s:%s", said++ ? ", " : "; did you mean: ", so ? (int)(so - base) : (int)strlen(base),
			base, sanitize_term(name, clean, sizeof(clean)));
	}
	free(paths);
	return said;
}

/* No function name in the object at path: says so, with the names it may have meant, in the libraries too. */
static void report_not_found(const struct resolver *r, const struct symtab *st, const char *path, const char *name,
			     bool in_exe)
{
	const char *near[5];
	char clean[256];
	size_t i, n, libs = 0;

	if (st->source == SYMS_NONE) {
		log_err("%s is stripped: it has no symbol table (.symtab), no separate debug file (looked for by "
			"build-id and .gnu_debuglink under /usr/lib/debug and beside it%s) and no functions in .dynsym; "
			"install its debug package or use a build with symbols", path,
			getenv("DEBUGINFOD_URLS") ? ", and on debuginfod" : "; DEBUGINFOD_URLS is not set");
		return;
	}
	n = symtab_suggest(st, name, near, 5);
	fprintf(stderr, "fnprof: no function '%s' in %s (%zu functions in %s%s)", name, path, st->nr - st->nr_unnamed,
		st->source == SYMS_SYMTAB ? ".symtab" : st->source == SYMS_DEBUG_FILE ? "the debug file " :
		st->source == SYMS_GOPCLNTAB ? ".gopclntab: the Go binary is stripped, names from the Go runtime's table" :
		".dynsym: the binary is stripped and has no debug file, only exported functions are known",
		st->source == SYMS_DEBUG_FILE ? st->debug_file : "");
	/* A name of a library the program uses, given without its library: the likeliest meaning. */
	if (in_exe && !r->system)
		libs = suggest_libraries(r, name);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i || libs ? ", " : "; did you mean: ",
			sanitize_term(near[i], clean, sizeof(clean)));
	fputc('\n', stderr);
}

/* Why a symbol cannot carry a probe, or NULL if it can. */
static const char *refusal(const struct sym *s)
{
	if (s->ifunc)
		return "it is an IFUNC resolver, not the function it selects (trace the implementation)";
	if (!s->size)
		return "it has no size, so it is not a proper function symbol";
	/* gcc's hot/cold splitting: the cold part is jumped to, never called. */
	if (strstr(s->name, ".cold"))
		return "it is the cold part of a split function, not a function entry";
	return NULL;
}

/* Does the program unwind or move stacks? Its executable, or a C++ runtime it maps, says so. */
static int check_unwinding(struct resolver *r)
{
	struct symtab *exe;
	size_t i;

	exe = load_object(r, r->exe, r->exe_open);
	if (!exe)
		return -ENOENT;
	/* The probes match returns to calls by stack pointer: they need to know, whatever the exit mode. */
	r->out->switches_stacks = exe->switches_stacks;
	if (r->o->exit_mode != EXIT_AUTO)
		return 0;
	r->process_unwinds = exe->unwinds;
	r->process_longjmps = exe->longjmps;
	r->process_go = exe->go;
	for (i = 0; r->pm && i < r->pm->nr; i++)
		if (lib_name_matches(r->pm->maps[i].path, "libstdc++"))
			r->process_unwinds = true;
	return 0;
}

/* The file offset of a runtime function (one match), 0 if not found. */
static __u64 go_runtime_offset(const struct symtab *st, const char *name)
{
	const struct sym **m = NULL;
	__u64 off = symtab_match(st, name, &m) == 1 ? m[0]->offset : 0;

	free(m);
	return off;
}

/*
 * Go functions are timed per goroutine: that needs the register
 * ABI, a ret probe (a uretprobe breaks the runtime) and no per-thread
 * counters. Remembers where goroutines end (runtime.goexit1). 0 or -errno
 * after the error was printed.
 */
static int check_go(struct resolver *r, const struct symtab *st, const char *path, const char *open_path)
{
	const struct sym **m = NULL;
	const char *why = go_unsupported(&st->go_info);

	if (why) {
		log_err("cannot trace functions of the Go program %s (%s): %s", path,
			st->go_info.version[0] ? st->go_info.version : "version unknown", why);
		return -ENOTSUP;
	}
	if (r->o->exit_mode == EXIT_URETPROBE) {
		log_err("cannot trace %s with --exit=uretprobe: the Go runtime aborts on a return address "
			"it did not write; use --exit=ret (or auto)", path);
		return -EINVAL;
	}
	if (r->o->counters) {
		log_err("cannot count -e events in the Go program %s: counts are kept per thread, and a "
			"goroutine moves between threads inside a call", path);
		return -EINVAL;
	}
	if (!r->out->go_exit_path)
		log_debug("%s: Go program built by %s, register ABI: Go calls kept per goroutine", path,
			  st->go_info.version);
	if (r->out->go_exit_path || symtab_match(st, "runtime.goexit1", &m) != 1) {
		free(m);
		return 0;
	}
	r->out->go_exit_offset = m[0]->offset;
	r->out->go_exit_path = strdup(open_path);
	free(m);
	r->out->go_park_offset = go_runtime_offset(st, "runtime.gopark");
	r->out->go_run_offset = go_runtime_offset(st, "runtime.execute");
	return r->out->go_exit_path ? 0 : -ENOMEM;
}

static bool any_go(const struct sym **m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (m[i]->go)
			return true;
	return false;
}

static int resolve_spec(struct resolver *r, const char *spec)
{
	char objname[PATH_MAX], path[PATH_MAX], open_path[PATH_MAX];
	const struct sym **m = NULL;
	const char *name, *why;
	size_t i, n, added = 0;
	struct symtab *st;
	int err;

	split_func_spec(spec, objname, sizeof(objname), &name);
	err = locate_object(r, objname, path, open_path);
	if (err)
		return err;
	st = load_object(r, path, open_path);
	if (!st)
		return -ENOENT;
	n = symtab_match(st, name, &m);
	err = any_go(m, n) ? check_go(r, st, path, open_path) : 0;
	if (err) {
		free(m);
		return err;
	}
	for (i = 0, err = 0; i < n && !err; i++) {
		why = refusal(m[i]);
		if (!why) {
			err = add_probe(r, m[i], path, open_path, st);
			added++;
		} else if (!pattern_is_glob(name)) {
			log_err("cannot trace '%s' in %s: %s", m[i]->name, path, why);
			err = -EPERM;
		} else {
			log_debug("skipping %s in %s: %s", m[i]->name, path, why);
		}
	}
	free(m);
	if (err)
		return err;
	if (!added)
		report_not_found(r, st, path, name, !objname[0]);
	return added ? 0 : -ENOENT;
}

/* Whether the file name (no directory) is one of a wrapper's. */
static bool wrapper_name(const char *path)
{
	/* Shells ("ash" covers dash and busybox's sh) and the programs that set something up and exec. */
	static const char *const names[] = {
		"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox", "env", "taskset", "nice", "ionice",
		"chrt", "setpriv", "timeout", "nohup", "stdbuf", "numactl", "setsid", "unshare", "prlimit",
	};
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(base, names[i]))
			return true;
	return false;
}

bool resolve_is_wrapper(const char *path)
{
	char real[PATH_MAX];

	return wrapper_name(path) || (realpath(path, real) && wrapper_name(real));
}

bool resolve_program_fits(const struct resolve_conf *o, const char *exe, const char *real_path)
{
	char objname[PATH_MAX];
	const struct sym **m;
	const char *name;
	bool fits = true, any = false, named = false;
	struct symtab *st;
	size_t i;

	if (symtab_load(exe, &st))
		return false;
	for (i = 0; i < o->nr_funcs && fits; i++) {
		split_func_spec(o->funcs[i], objname, sizeof(objname), &name);
		/* -f bash:NAME -- bash -c ...: the wrapper itself is meant. */
		named |= objname[0] && (objname[0] == '/' ? !strcmp(objname, real_path)
							  : lib_name_matches(real_path, objname));
		if (objname[0])
			continue;
		any = true;
		fits = symtab_match(st, name, &m) > 0;
		free(m);
	}
	symtab_free(st);
	/* Only library functions asked for: any program could do, the one after the shells is meant. */
	return fits && (any || named || !resolve_is_wrapper(real_path));
}

int resolve_probes(const struct resolve_conf *o, pid_t pid, struct probe_list *out)
{
	struct resolver r = { .o = o, .pid = pid, .launch = o->cmd != NULL, .system = o->system_wide, .out = out };
	size_t i;
	int err = 0;

	memset(out, 0, sizeof(*out));
	/* What the kernel emulates (place_entry), found before any object is loaded: its children are forks. */
	insnprobe_here();
	if (r.system) {
		/* No process: no main executable; the objects are opened as the host sees them. */
		for (i = 0; i < o->nr_funcs && !err; i++)
			err = resolve_spec(&r, o->funcs[i]);
		goto done;
	}
	if (!r.launch) {
		err = procmaps_load(pid, &r.pm);
		if (err) {
			log_err("cannot read the mappings of process %d: %s", pid,
				err == -ESRCH ? "no such process" : strerror(-err));
			return err;
		}
	}
	err = locate_exe(&r);
	if (!err)
		err = check_unwinding(&r);
	for (i = 0; i < o->nr_funcs && !err; i++)
		err = resolve_spec(&r, o->funcs[i]);
done:
	if (!err)
		warn_no_exits(out);
	for (i = 0; i < r.cache.nr; i++) {
		free(r.cache.e[i].path);
		free(r.cache.e[i].open_path);
		symtab_free(r.cache.e[i].st);
	}
	procmaps_free(r.pm);
	if (r.code_path && r.code_fd >= 0)
		close(r.code_fd);
	free(r.code_path);
	if (err)
		probe_list_free(out);
	return err;
}
