// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/array.h"
#include "base/budget.h"
#include "base/fileidx.h"
#include "elf/inlines.h"
#include "stacks/ksyms.h"
#include "base/log.h"
#include "base/names.h"
#include "stacks/objcache.h"
#include "target/mapsnap.h"
#include "stacks/perfmap.h"
#include "base/proc.h"
#include "target/procmaps.h"
#include "base/safeopen.h"
#include "stacks/symbolize.h"
#include "elf/symbols.h"

/* One object mapped now; dropped once the process unmaps it (dlclose, exec), so the cache stays bounded. */
struct object {
	char *own_path;     /* its own copy: the interned one goes with a generation of names */
	const char *path;   /* interned, in names generation gen */
	unsigned int gen;
	struct symtab *st;  /* NULL: could not be read */
	struct inlines *inl;  /* its DWARF, for inlined frames; NULL if none */
	dev_t dev;          /* the file: with a shared cache, st and inl are the cache's */
	ino_t ino;
	bool shared;
};

struct symbolizer {
	pid_t pid;
	/*
	 * What the targets make it hold, under one budget: the strings frames
	 * point to (functions, inlined calls, objects; frames are cached per
	 * stack and outlive the objects they came from) and the perf maps. A
	 * child's are its parent's (symbolizer_new_child).
	 */
	struct budget own_budget;
	struct budget *budget;
	struct names own_names;
	struct names *names;
	struct perfmaps *own_jit_files;
	struct perfmaps *jit_files;  /* perf map files, shared by inode */
	struct procmaps *pm;
	struct ksyms *ksyms;
	bool ksyms_tried;
	struct perfmap *jit;  /* names of its JIT code; made once it maps executable memory of no file */
	struct object *objs;
	size_t nr_objs, cap_objs;
	struct fileidx by_inode;  /* objs by file: one read per file, however many mappings or names it has */
	struct maps_pace pace;    /* when the mappings may be read again */
	struct maps_pace gate;    /* a parent's: its children's costly reads take turns (procmaps.h) */
	struct maps_pace *gate_of; /* a child's: its parent's gate */
	bool missed;  /* an address was in no mapping since the last refresh */
	struct objcache *cache;  /* objects' symbols shared with other processes' symbolizers, or NULL */
	bool own_cache;
	struct mapsnap *snap;    /* -a: mappings read when the process was first sampled (a parent's, shared) */
	/*
	 * A child (-a): objects are read when a frame needs them, not all at
	 * each refresh (only the vDSO, which goes with the process); after the
	 * process exits, from the same file (device, inode) where it still is.
	 */
	bool lazy;
};

static struct symbolizer *create(pid_t pid, struct symbolizer *parent, size_t max_memory)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->pid = pid;
	budget_init(&s->own_budget, max_memory ? max_memory : BUDGET_DEFAULT);
	s->budget = parent ? parent->budget : &s->own_budget;
	names_init(&s->own_names, s->budget);
	s->names = parent ? parent->names : &s->own_names;
	s->own_jit_files = parent ? NULL : perfmaps_new(s->budget);
	s->jit_files = parent ? parent->jit_files : s->own_jit_files;
	if (!s->jit_files) {
		free(s);
		return NULL;
	}
	if (parent && !parent->cache) {
		parent->cache = objcache_new();
		parent->own_cache = parent->cache != NULL;
	}
	s->cache = parent ? parent->cache : NULL;
	s->lazy = parent != NULL;
	s->gate_of = parent ? &parent->gate : NULL;
	s->snap = parent ? parent->snap : NULL;
	if (parent && !s->cache) {
		free(s);
		return NULL;
	}
	symbolizer_refresh(s);
	return s;
}

struct symbolizer *symbolizer_new(pid_t pid, size_t max_memory)
{
	return create(pid, NULL, max_memory);
}

struct symbolizer *symbolizer_new_child(pid_t pid, struct symbolizer *parent)
{
	return create(pid, parent, 0);
}

void symbolizer_set_snapshots(struct symbolizer *parent, struct mapsnap *m)
{
	parent->snap = m;
}

size_t symbolizer_nr_shared(const struct symbolizer *s)
{
	return s->cache ? objcache_nr(s->cache) : 0;
}

/* An object's symbols and DWARF go: its own, or its reference to the shared cache's. */
static void object_release(struct symbolizer *s, struct object *o)
{
	free(o->own_path);
	if (o->shared) {
		objcache_release(s->cache, o->dev, o->ino);
		return;
	}
	symtab_free(o->st);
	inlines_close(o->inl);
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_objs; i++)
		object_release(s, &s->objs[i]);
	free(s->objs);
	fileidx_free(&s->by_inode);
	names_free(&s->own_names);
	if (s->own_cache)
		objcache_free(s->cache);
	procmaps_free(s->pm);
	ksyms_free(s->ksyms);
	perfmap_free(s->jit);
	perfmaps_free(s->own_jit_files);
	free(s);
}

static struct object *object_get(struct symbolizer *s, const struct mapping *m);

/* The one copy of name; NULL when out of memory, names_over_budget when over the budget. */
static const char *intern(struct symbolizer *s, const char *name)
{
	return names_intern(s->names, name);
}

/* The object's path as frames show it: interned again after the names were renewed. */
static const char *object_path(struct symbolizer *s, struct object *o)
{
	if (o->gen != s->names->gen) {
		o->path = intern(s, o->own_path);
		o->gen = s->names->gen;
	}
	return o->path ? o->path : "[unknown]";
}

static bool mapped_exec(const struct procmaps *pm, const char *path)
{
	size_t i;

	for (i = 0; i < pm->nr; i++)
		if (pm->maps[i].exec && !strcmp(pm->maps[i].path, path))
			return true;
	return false;
}

/* The objects indexed by file again, after some moved. */
static void reindex(struct symbolizer *s)
{
	size_t i;

	fileidx_clear(&s->by_inode);
	for (i = 0; i < s->nr_objs; i++)  /* out of memory: an object not found is read again */
		if (s->objs[i].ino)
			fileidx_put(&s->by_inode, s->objs[i].dev, s->objs[i].ino, i);
}

/*
 * Drops the objects pm no longer maps: their names stay (interned), their
 * symbols and DWARF go. Files looked up by inode (pm may have 60000).
 */
static void drop_unmapped(struct symbolizer *s, const struct procmaps *pm)
{
	struct fileidx mapped = {};
	size_t i;

	for (i = 0; i < pm->nr; i++) {
		const struct mapping *m = &pm->maps[i];

		if (m->exec && m->inode && fileidx_put(&mapped, makedev(m->dev_major, m->dev_minor), m->inode, i)) {
			fileidx_free(&mapped);   /* out of memory: all kept until the next refresh */
			return;
		}
	}
	for (i = 0; i < s->nr_objs;) {
		struct object *o = &s->objs[i];

		if (o->ino ? fileidx_get(&mapped, o->dev, o->ino) != (size_t)-1 : mapped_exec(pm, o->own_path)) {
			i++;
			continue;
		}
		object_release(s, o);
		*o = s->objs[--s->nr_objs];
	}
	fileidx_free(&mapped);
	reindex(s);
}

/* The parent of process pid, from /proc/PID/stat ("pid (comm) state ppid ..."); -1 if unknown. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n = -1;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && sscanf(p + 1, " %*c %d", &ppid) == 1 ? ppid : -1;
}

/*
 * A command fnprof launches is its own child until it execs: its mappings are
 * then fnprof's, whose objects (and their debug files) are not worth reading.
 */
static bool launched_not_execd(pid_t pid)
{
	struct stat self, target;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return !stat("/proc/self/exe", &self) && !stat(path, &target) && self.st_dev == target.st_dev &&
	       self.st_ino == target.st_ino && parent_of(pid) == getpid();
}

/* A memfd: code some JIT compilers map twice (writable, executable); or an ELF run from memory. */
static bool is_memfd(const char *path)
{
	return !strncmp(path, "/memfd:", 7);
}

static bool maps_exec_memfd(const struct procmaps *pm)
{
	size_t i;

	for (i = 0; i < pm->nr; i++)
		if (pm->maps[i].exec && is_memfd(pm->maps[i].path))
			return true;
	return false;
}

/*
 * Its mappings now; a process gone (or exiting) before this first reading:
 * those read when it was first sampled (mapsnap.h), if any. -ESRCH when
 * there are none to show (its first thread exited: keep the last ones).
 */
static int load_maps(struct symbolizer *s, struct procmaps **pm)
{
	int err = procmaps_load(s->pid, pm);

	if (!err && !(*pm)->nr) {
		procmaps_free(*pm);
		err = -ESRCH;
	}
	if (err && !s->pm && s->snap && !mapsnap_get(s->snap, s->pid, pm))
		return 0;
	return err;
}

void symbolizer_refresh(struct symbolizer *s)
{
	struct procmaps *pm;
	size_t i;
	int err;

	/* Paced (maps_pace): a stray address asks for this, and 60000 mappings take 0.3 s to read. */
	if (!maps_pace_due(&s->pace, s->gate_of))
		return;
	s->missed = false;
	if (launched_not_execd(s->pid))
		return;
	maps_pace_begin(&s->pace);
	err = load_maps(s, &pm);
	maps_pace_end(&s->pace, 0, s->gate_of);
	if (err) {
		log_debug("mappings of process %d not re-read (%s): the last ones kept", s->pid,
			  err == -ESRCH ? "exiting or gone" : strerror(-err));
		return;
	}
	/*
	 * Samples are named at the report, after they were taken: code
	 * unmapped meanwhile still has them. Node's last refresh, caught in
	 * V8's teardown, named all 761 samples [unknown], 0 fib; a library
	 * dlclose'd before the report left its samples [unknown] too. Their
	 * objects stay (drop_unmapped keeps what pm still holds).
	 */
	if (procmaps_keep_unmapped(pm, s->pm))
		log_debug("cannot keep the code ranges of process %d seen before", s->pid);
	procmaps_free(s->pm);
	s->pm = pm;
	drop_unmapped(s, pm);
	/* Read the code objects' symbols now: after the process exits, the vDSO and deleted files are gone. */
	for (i = 0; i < pm->nr; i++)
		if (pm->maps[i].exec && (!s->lazy || !strcmp(pm->maps[i].path, "[vdso]")))
			object_get(s, &pm->maps[i]);
	/* Its perf map too, while its root can be opened: after it exits, the names read stay. */
	if ((pm->nr_anon || maps_exec_memfd(pm)) && !s->jit)
		s->jit = perfmap_new(s->pid, s->jit_files);
	if (s->jit)
		perfmap_refresh(s->jit, true);
}

/*
 * The vDSO is no file: its ELF image is copied out of the process's memory
 * into a memfd, which then reads like one.
 */
static int load_vdso(struct symbolizer *s, const struct mapping *m, struct symtab **st)
{
	size_t len = m->end - m->start;
	char path[64], *buf = malloc(len);
	int mem, fd = -1, err = -EIO;

	snprintf(path, sizeof(path), "/proc/%d/mem", s->pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (buf && mem >= 0 && pread(mem, buf, len, m->start) == (ssize_t)len) {
		fd = memfd_create("vdso", MFD_CLOEXEC);
		if (fd >= 0 && write(fd, buf, len) == (ssize_t)len) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			err = symtab_load_target(path, m->path, s->pid, st);
		}
	}
	if (fd >= 0)
		close(fd);
	if (mem >= 0)
		close(mem);
	free(buf);
	return err;
}

/*
 * The symbols of fd (an open file, or a negative errno passed through), if it
 * is the very file mapping m maps (device and inode; else -ESTALE). *obj: fd,
 * kept open for its DWARF; closed on failure.
 */
static int load_if_mapped(int fd, const struct mapping *m, pid_t pid, struct symtab **st, int *obj)
{
	char path[64];
	struct stat sb;
	int err = -ESTALE;

	if (fd < 0)
		return fd;
	if (!fstat(fd, &sb) && sb.st_ino == m->inode && sb.st_dev == makedev(m->dev_major, m->dev_minor)) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		/* Named by the mapping's path, as through map_files: "libc.so.6+0x...", never "19+0x...". */
		err = symtab_load_target(path, m->path, pid, st);
	}
	if (err)
		close(fd);
	else
		*obj = fd;
	return err;
}

/*
 * Without map_files (no CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE): the path
 * inside the target's root, read only if it is the mapped file (device and
 * inode). The path is the target's choice: never opened on the host. *obj:
 * the file, still open, for its DWARF.
 */
static int load_in_root(struct symbolizer *s, const struct mapping *m, struct symtab **st, int *obj)
{
	return load_if_mapped(proc_open_in_root(s->pid, m->path), m, s->pid, st, obj);
}

/*
 * A lazy symbolizer's process exited before a frame needed the object: the
 * path as fnprof sees it, read only if it is the very file that was mapped
 * (device and inode), as load_in_root. *obj: the file, open, for its DWARF.
 */
static int load_same_file(const struct mapping *m, struct symtab **st, int *obj)
{
	return load_if_mapped(m->path[0] == '/' ? open_regular(AT_FDCWD, m->path, 0) : -ENOENT, m, 0, st, obj);
}

/*
 * Reads the object's symbols through the mapping itself (no path lookup),
 * else inside the target's root. *obj: the object's file, open (the caller
 * closes it), for its DWARF; -1 where there is none (the vDSO).
 */
static struct symtab *read_symtab(struct symbolizer *s, const struct mapping *m, int *obj)
{
	struct symtab *st = NULL;
	char path[64];

	*obj = -1;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", s->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	if (!strcmp(m->path, "[vdso]"))
		return load_vdso(s, m, &st) ? NULL : st;
	if (!symtab_load_target(path, m->path, s->pid, &st)) {
		*obj = open_regular(AT_FDCWD, path, 0);
		return st;
	}
	if (!load_in_root(s, m, &st, obj))
		return st;
	return s->lazy && !load_same_file(m, &st, obj) ? st : NULL;
}

/* The object of m's file, or NULL: by device and inode (30000 hardlinks of a library are one); the vDSO by name. */
static struct object *object_find(struct symbolizer *s, const struct mapping *m)
{
	size_t i = fileidx_get(&s->by_inode, makedev(m->dev_major, m->dev_minor), m->inode);

	if (m->inode)
		return i == (size_t)-1 ? NULL : &s->objs[i];
	for (i = 0; i < s->nr_objs; i++)
		if (!s->objs[i].ino && !strcmp(s->objs[i].own_path, m->path))
			return &s->objs[i];
	return NULL;
}

/* The object mapped at m, its symbols read on first sight (once per file). NULL only when out of memory. */
static struct object *object_get(struct symbolizer *s, const struct mapping *m)
{
	struct object *o = object_find(s, m);
	int fd;

	if (o)
		return o;
	if (ARRAY_RESERVE(s->objs, s->nr_objs + 1, s->cap_objs))
		return NULL;
	o = &s->objs[s->nr_objs];
	*o = (struct object){ .own_path = strdup(m->path), .path = intern(s, m->path), .gen = s->names->gen,
			      .dev = makedev(m->dev_major, m->dev_minor), .ino = m->inode };
	if (!o->own_path || !o->path || (o->ino && fileidx_put(&s->by_inode, o->dev, o->ino, s->nr_objs))) {
		free(o->own_path);
		return NULL;
	}
	/* A file another process's symbolizer read already (never the vDSO: no inode). */
	if (s->cache && o->ino && objcache_get(s->cache, o->dev, o->ino, &o->st, &o->inl)) {
		o->shared = true;
		s->nr_objs++;
		return o;
	}
	o->st = read_symtab(s, m, &fd);
	/* Its DWARF is read now too: the mapping, through which the file is opened, goes with the process. */
	if (o->st && m->path[0] == '/')
		o->inl = inlines_open(fd, o->st->debug_file, s->pid);
	else if (fd >= 0)
		close(fd);
	log_debug("inlined frames of %s: %s", m->path, o->inl ? "from DWARF" : "none (no DWARF)");
	/* A failed read is this process's (its file may be gone): not handed to the others. */
	o->shared = s->cache && o->ino && o->st && !objcache_add(s->cache, o->dev, o->ino, o->st, o->inl);
	s->nr_objs++;
	return o;
}

/* The name the runtime's perf map gives the JIT code at ip (interned), or NULL. */
static const char *jit_name(struct symbolizer *s, __u64 ip)
{
	const char *name = s->jit ? perfmap_lookup(s->jit, ip) : NULL;

	return name ? intern(s, name) : NULL;
}

/* Code of no file (JIT): named from the perf map, object "[jit]". */
static void symbolize_jit(struct symbolizer *s, const struct anon_range *r, __u64 ip, struct frame_info *out)
{
	out->object = "[jit]";
	out->map_start = r->start;
	out->map_limit = r->end;
	out->func = jit_name(s, ip);
	out->known = out->func != NULL && out->func != names_over_budget;
	if (!out->func)
		out->func = "[unknown]";
}

void symbolize_user(struct symbolizer *s, __u64 ip, struct frame_info *out)
{
	const struct mapping *m = s->pm ? procmaps_find(s->pm, ip) : NULL;
	const struct anon_range *anon = !m && s->pm ? procmaps_find_anon(s->pm, ip) : NULL;
	const struct sym *sym = NULL;
	const char *name = NULL, *path;
	struct object *obj;
	struct symtab *st;
	__u64 vaddr;

	memset(out, 0, sizeof(*out));
	out->func = "[unknown]";
	out->object = "[unknown]";
	/*
	 * Mapped since the last refresh (dlopen)? Re-read once, not for every
	 * stray address. In a library unloaded before that refresh too: another
	 * may have taken its range since (plug-ins reuse the range freed).
	 */
	if ((m ? m->kept : !anon) && !s->missed) {
		symbolizer_refresh(s);
		s->missed = true;
		m = s->pm ? procmaps_find(s->pm, ip) : NULL;
		anon = !m && s->pm ? procmaps_find_anon(s->pm, ip) : NULL;
	}
	if (anon) {
		symbolize_jit(s, anon, ip, out);
		return;
	}
	obj = m ? object_get(s, m) : NULL;
	if (!obj)
		return;
	/* The name it is mapped by: one file (one object) may have many (hardlinks). */
	path = object_path(s, obj);
	out->object = strcmp(obj->own_path, m->path) ? intern(s, m->path) : path;
	if (!out->object)
		out->object = path;
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_pgoff = m->pgoff;
	st = obj->st;
	if (st && !symtab_off_to_vaddr(st, ip - m->start + m->pgoff, &vaddr))
		sym = symtab_lookup(st, vaddr);
	if (sym)
		name = intern(s, sym_display_name(sym));
	else if (is_memfd(m->path))  /* no ELF symbol in a memfd: JIT code, named in the perf map? */
		name = jit_name(s, ip);
	out->known = name != NULL && name != names_over_budget;
	out->func = name ? name : "[unknown]";
}

int symbolize_inlines(struct symbolizer *s, __u64 ip, const char **names, int max)
{
	const struct mapping *m = s->pm ? procmaps_find(s->pm, ip) : NULL;
	struct object *obj = m ? object_get(s, m) : NULL;
	__u64 vaddr;
	int n, i, k = 0;

	if (!obj || !obj->inl || symtab_off_to_vaddr(obj->st, ip - m->start + m->pgoff, &vaddr))
		return 0;
	n = inlines_at(obj->inl, vaddr, names, max);
	for (i = 0; i < n; i++)   /* the object's DWARF goes when it is unmapped: the names stay */
		if ((names[k] = intern(s, names[i])))
			k++;
	return k;
}

struct budget *symbolizer_budget(struct symbolizer *s)
{
	return s->budget;
}

unsigned int symbolizer_names_gen(const struct symbolizer *s)
{
	return s->names->gen;
}

bool symbolizer_renew_names(struct symbolizer *s)
{
	if (!names_full(s->names))
		return false;
	log_debug("names: %zu held, %zu bytes: over three quarters of their budget, dropped", s->names->nr,
		  s->names->bytes);
	names_renew(s->names);
	return true;
}

size_t symbolizer_nr_objects(const struct symbolizer *s)
{
	return s->nr_objs;
}

bool symbolize_main_object(struct symbolizer *s, struct frame_info *out)
{
	size_t i;

	/* /proc/PID/maps lists the executable first (lowest address), its code mapping among the next. */
	for (i = 0; s->pm && i < s->pm->nr; i++) {
		const struct mapping *m = &s->pm->maps[i];

		if (strcmp(m->path, s->pm->maps[0].path))
			break;
		if (m->exec) {
			symbolize_user(s, m->start, out);
			return out->map_start != 0;
		}
	}
	return false;
}

void symbolize_kernel(struct symbolizer *s, __u64 ip, struct frame_info *out)
{
	const char *name;

	if (!s->ksyms_tried) {
		s->ksyms = ksyms_load();
		s->ksyms_tried = true;
	}
	name = ksyms_lookup(s->ksyms, ip);
	memset(out, 0, sizeof(*out));
	out->func = name ? name : "[unknown]";
	out->object = "[kernel.kallsyms]";
	out->known = name != NULL;
}

/* The frames of ip: its inlined calls (innermost first) for a user address, then its function. */
static int frames_of(struct symbolizer *s, __u64 ip, bool kernel, bool inlines, struct frame_info *f, int max)
{
	const char *inl[SYM_MAX_INLINED];
	int i, n = kernel || !inlines ? 0 :
		symbolize_inlines(s, ip, inl, max - 1 < SYM_MAX_INLINED ? max - 1 : SYM_MAX_INLINED);

	if (kernel)
		symbolize_kernel(s, ip, &f[0]);
	else
		symbolize_user(s, ip, &f[0]);
	for (i = n; i > 0; i--)
		f[i] = f[0];
	for (i = 0; i < n; i++) {
		f[i].func = inl[i];
		f[i].inlined = true;
	}
	return n + 1;
}

static void shrink(void **p, int n, size_t size)
{
	void *v = realloc(*p, (n ? n : 1) * size);

	if (v)
		*p = v;
}

int symbolize_stack(struct symbolizer *s, const __u64 *ips, int n, bool kernel, bool inlines, int max,
		    struct sym_stack *t)
{
	int i, k, nf = 0;

	t->f = calloc(n && max ? max : 1, sizeof(*t->f));
	t->ips = calloc(n && max ? max : 1, sizeof(*t->ips));
	if (!t->f || !t->ips)
		return -ENOMEM;
	for (i = 0; i < n && nf < max; i++) {
		/* Above the leaf, a frame holds a return address: the call is one byte before. */
		k = frames_of(s, i ? ips[i] - 1 : ips[i], kernel, inlines, &t->f[nf], max - nf);
		while (k--)
			t->ips[nf++] = ips[i];
	}
	t->nr = nf;
	/* Room for max frames was taken while filling: cached stacks keep what they hold (most are short). */
	shrink((void **)&t->f, nf, sizeof(*t->f));
	shrink((void **)&t->ips, nf, sizeof(*t->ips));
	return 0;
}

void sym_stacks_free(struct sym_stack *st, size_t nr)
{
	size_t i;

	for (i = 0; st && i < nr; i++) {
		free(st[i].f);
		free(st[i].ips);
	}
	free(st);
}

bool symbolize_probe_frame(const struct frame_info *f)
{
	return !strncmp(f->func, "bpf_", 4) || !strncmp(f->func, "__bpf_trace", 11) ||
	       !strncmp(f->func, "__traceiter_", 12);
}
