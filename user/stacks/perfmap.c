// SPDX-License-Identifier: GPL-2.0
/*
 * A file's lines are read into chunks of text that stay: each line's name is
 * ended there with a NUL and pointed to, not copied (a 64 MiB map of a
 * million lines costs its text and 32 bytes a line, in a few allocations).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/budget.h"
#include "base/clock.h"
#include "base/log.h"
#include "stacks/perfmap.h"
#include "base/proc.h"

struct jit_sym {
	__u64 start, end;
	__u64 seq;   /* its line's number: a later line wins */
	const char *name;   /* in a chunk */
};

/* Text read from the file, as many chunks as reads. */
struct chunk {
	struct chunk *next;
	size_t size;
	char text[];
};

/* A file as read, shared by the processes whose perf map it is (device, inode). */
struct pmfile {
	struct pmfile *next;
	struct perfmaps *c;
	dev_t dev;
	ino_t ino;
	pid_t pid;              /* the process it was read for first (for messages) */
	bool private;           /* perfmap_add_text's: never shared */
	unsigned int refs;
	struct jit_sym *syms;   /* sorted, not overlapping */
	size_t nr, cap;
	__u64 seq;
	struct chunk *text;
	size_t charged;         /* bytes taken from the budget: text and table */
	off_t used;             /* bytes read, up to the last complete line */
	struct timespec mtime;
	double last_use;        /* CLOCK_MONOTONIC seconds: read or looked up */
	bool in_long_line;      /* what follows the last read ends a line too long to keep */
	bool said_full;
	unsigned long nr_bad;   /* lines skipped: malformed or too long */
};

struct perfmaps {
	struct budget *b;
	struct pmfile *files;
	size_t nr;
};

struct perfmap {
	pid_t pid;
	struct perfmaps *c;
	struct pmfile *f;       /* NULL until a file is seen */
	double last_look;       /* CLOCK_MONOTONIC seconds */
	long nspid;             /* its pid in its own pid namespace; 0 until known */
	bool said_refused, said_budget;
};

/* --- files ------------------------------------------------------------------ */

struct perfmaps *perfmaps_new(struct budget *b)
{
	struct perfmaps *c = calloc(1, sizeof(*c));

	if (c)
		c->b = b;
	return c;
}

size_t perfmaps_nr(const struct perfmaps *c)
{
	return c->nr;
}

/* The file's names and text go (read again from the start next time); its budget is given back. */
static void clear_file(struct pmfile *f)
{
	struct chunk *t;

	while ((t = f->text)) {
		f->text = t->next;
		free(t);
	}
	free(f->syms);
	f->syms = NULL;
	f->nr = f->cap = 0;
	f->seq = 0;
	f->used = 0;
	f->in_long_line = false;
	budget_give(f->c->b, BUDGET_PERFMAPS, f->charged);
	f->charged = 0;
}

static void unlink_file(struct perfmaps *c, struct pmfile *f)
{
	struct pmfile **p;

	for (p = &c->files; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			c->nr--;
			return;
		}
}

static void file_put(struct pmfile *f)
{
	if (!f || --f->refs)
		return;
	clear_file(f);
	unlink_file(f->c, f);
	free(f);
}

void perfmaps_free(struct perfmaps *c)
{
	struct pmfile *f;

	if (!c)
		return;
	while ((f = c->files)) {
		f->refs = 1;
		file_put(f);
	}
	free(c);
}

/* The file of that device and inode, shared (a reference more), or a new one. NULL when out of memory. */
static struct pmfile *file_get(struct perfmaps *c, dev_t dev, ino_t ino, pid_t pid, bool private)
{
	struct pmfile *f;

	for (f = c->files; f && !private; f = f->next)
		if (!f->private && f->dev == dev && f->ino == ino) {
			f->refs++;
			return f;
		}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	*f = (struct pmfile){ .next = c->files, .c = c, .dev = dev, .ino = ino, .pid = pid, .private = private, .refs = 1,
			      .last_use = monotonic_s() };
	c->files = f;
	c->nr++;
	return f;
}

/* May f be evicted for self's sake: not self, holding text, and idle PERFMAP_IDLE_S or more? */
static bool evictable(const struct pmfile *f, const struct pmfile *self, double now)
{
	return f != self && f->charged && now - f->last_use >= PERFMAP_IDLE_S;
}

/* The file that lookups used least recently of those evictable for self. */
static struct pmfile *idle_file(struct perfmaps *c, const struct pmfile *self)
{
	double now = monotonic_s();
	struct pmfile *f, *v = NULL;

	for (f = c->files; f; f = f->next)
		if (evictable(f, self, now) && (!v || f->last_use < v->last_use))
			v = f;
	return v;
}

/* Would evicting every file evictable for self make room for bytes more? */
static bool eviction_makes_room(struct perfmaps *c, const struct pmfile *self, size_t bytes)
{
	size_t idle = 0, share = budget_share(c->b, BUDGET_PERFMAPS);
	double now = monotonic_s();
	struct pmfile *f;

	for (f = c->files; f; f = f->next)
		if (evictable(f, self, now))
			idle += f->charged;
	return bytes <= share && c->b->held[BUDGET_PERFMAPS] - idle <= share - bytes;
}

/*
 * Takes bytes for f, evicting idle files while they do not fit, where that
 * makes room (not for a file that would be refused all the same). false: no room.
 */
static bool take(struct pmfile *f, size_t bytes)
{
	struct budget *b = f->c->b;
	struct pmfile *v;

	while (!budget_fits(b, BUDGET_PERFMAPS, bytes) && eviction_makes_room(f->c, f, bytes) &&
	       (v = idle_file(f->c, f))) {
		log_debug("perf map file (inode %lu): evicted for want of room (idle %.0f s)", (unsigned long)v->ino,
			  monotonic_s() - v->last_use);
		clear_file(v);
		budget_evicted(b, BUDGET_PERFMAPS);
	}
	if (!budget_take(b, BUDGET_PERFMAPS, bytes))
		return false;
	f->charged += bytes;
	return true;
}

/* --- perf maps ---------------------------------------------------------------- */

struct perfmap *perfmap_new(pid_t pid, struct perfmaps *c)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));

	if (pm) {
		pm->pid = pid;
		pm->c = c;
	}
	return pm;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	file_put(pm->f);
	free(pm);
}

size_t perfmap_nr(const struct perfmap *pm)
{
	return pm->f ? pm->f->nr : 0;
}

/* --- lines -------------------------------------------------------------------- */

/* A hex number, "0x" allowed, at most 16 digits; *p moves past it. */
static bool parse_hex(const char **p, const char *end, __u64 *v)
{
	const char *s = *p;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (*v = 0; s < end; s++, digits++) {
		int c = *s, d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
				c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (d < 0)
			break;
		if (digits == 16)
			return false;
		*v = *v << 4 | d;
	}
	*p = s;
	return digits > 0;
}

static const char *skip_blanks(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/*
 * "START SIZE name": false for anything else (no name, size 0, a NUL, a
 * range past the top). The name is ended in place (at end: the newline).
 */
static bool parse_line(const char *s, char *end, struct jit_sym *out)
{
	const char *name;
	__u64 size;

	if (end > s && end[-1] == '\r')
		end--;
	if (!parse_hex(&s, end, &out->start) || s == end || (*s != ' ' && *s != '\t'))
		return false;
	s = skip_blanks(s, end);
	if (!parse_hex(&s, end, &size) || s == end || (*s != ' ' && *s != '\t'))
		return false;
	name = skip_blanks(s, end);
	if (!size || out->start + size < out->start || name == end || memchr(name, 0, end - name))
		return false;
	out->end = out->start + size;
	*end = 0;
	out->name = name;
	return true;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The lines from old on (just read) sorted and merged into the sorted ones
 * before: a file that grows costs its new lines' sort and one pass, not a
 * sort of all. -ENOMEM leaves all sorted anyway (the slow way).
 */
static int sort_new(struct pmfile *f, size_t old)
{
	struct jit_sym *out;
	size_t i = 0, j = old, k = 0;

	qsort(f->syms + old, f->nr - old, sizeof(*f->syms), cmp_sym);
	if (!old)
		return 0;
	out = malloc(f->cap * sizeof(*out));
	if (!out) {
		qsort(f->syms, f->nr, sizeof(*f->syms), cmp_sym);
		return -ENOMEM;
	}
	while (i < old || j < f->nr)
		out[k++] = j == f->nr || (i < old && cmp_sym(&f->syms[i], &f->syms[j]) <= 0) ? f->syms[i++] :
										 f->syms[j++];
	free(f->syms);
	f->syms = out;
	return 0;
}

/*
 * Sorted by start, then line: where two overlap, the later line wins; an
 * earlier one ends where a later one starts, or goes.
 */
static void flatten(struct pmfile *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->nr; i++) {
		struct jit_sym cur = f->syms[i];

		while (n && f->syms[n - 1].end > cur.start) {
			struct jit_sym *last = &f->syms[n - 1];

			if (last->seq > cur.seq) {
				cur.start = last->end;
				break;
			}
			if (last->start < cur.start) {
				last->end = cur.start;
				break;
			}
			n--;
		}
		if (cur.start < cur.end)
			f->syms[n++] = cur;
	}
	f->nr = n;
}

/* Room in the table for n lines more (at most PERFMAP_MAX_SYMS in all), exactly: 0, -ENOSPC or -ENOMEM. */
static int reserve(struct pmfile *f, size_t n)
{
	size_t need = f->nr + (n < PERFMAP_MAX_SYMS - f->nr ? n : PERFMAP_MAX_SYMS - f->nr), bytes;
	struct jit_sym *v;

	if (need <= f->cap)
		return 0;
	bytes = (need - f->cap) * sizeof(*f->syms);
	if (!take(f, bytes))
		return -ENOSPC;
	v = realloc(f->syms, need * sizeof(*v));
	if (!v) {
		f->charged -= bytes;
		budget_give(f->c->b, BUDGET_PERFMAPS, bytes);
		return -ENOMEM;
	}
	f->syms = v;
	f->cap = need;
	return 0;
}

static size_t count_lines(const char *p, const char *end)
{
	size_t n = 0;

	while (p < end && (p = memchr(p, '\n', end - p))) {
		n++;
		p++;
	}
	return n;
}

static void add_line(struct pmfile *f, struct jit_sym *sym)
{
	if (f->nr < PERFMAP_MAX_SYMS) {
		sym->seq = f->seq++;
		f->syms[f->nr++] = *sym;
		return;
	}
	if (!f->said_full)
		log_warn("perf map of process %d: over %u names; the rest are not read", f->pid, PERFMAP_MAX_SYMS);
	f->said_full = true;
}

/*
 * The complete lines of text[0..len), which stays (names point into it),
 * added to f: the bytes used, up to the last newline; -ENOSPC or -ENOMEM
 * (nothing added) when the table cannot grow.
 */
static long add_lines(struct pmfile *f, char *text, size_t len)
{
	char *p = text, *end = text + len, *nl;
	size_t before = f->nr;
	struct jit_sym sym;
	int err = reserve(f, count_lines(p, end));

	if (err)
		return err;
	if (f->in_long_line) {
		nl = memchr(p, '\n', len);
		if (!nl)
			return len;
		p = nl + 1;
		f->in_long_line = false;
		f->nr_bad++;
	}
	while (p < end && (nl = memchr(p, '\n', end - p))) {
		if (nl - p > PERFMAP_MAX_LINE || !parse_line(p, nl, &sym))
			f->nr_bad++;
		else
			add_line(f, &sym);
		p = nl + 1;
	}
	if (f->nr != before) {
		sort_new(f, before);
		flatten(f);
	}
	return p - text;
}

/* A chunk of len bytes for f's text, taken from the budget: NULL when no room (-ENOSPC) or memory. */
static struct chunk *new_chunk(struct pmfile *f, size_t len, int *err)
{
	size_t bytes = sizeof(struct chunk) + len + 1;
	struct chunk *t;

	*err = -ENOSPC;
	if (!take(f, bytes))
		return NULL;
	*err = -ENOMEM;
	t = malloc(bytes);
	if (!t) {
		f->charged -= bytes;
		budget_give(f->c->b, BUDGET_PERFMAPS, bytes);
		return NULL;
	}
	t->size = bytes;
	t->text[len] = 0;
	return t;
}

/* Gives back a chunk not kept. */
static void drop_chunk(struct pmfile *f, struct chunk *t)
{
	f->charged -= t->size;
	budget_give(f->c->b, BUDGET_PERFMAPS, t->size);
	free(t);
}

/*
 * The chunk's lines (len bytes) into f; the chunk kept if any are (names
 * point into it): a line's first half, bad lines or lines past the table's
 * cap give their bytes back. Bytes used, or -errno.
 */
static long add_chunk(struct pmfile *f, struct chunk *t, size_t len)
{
	__u64 seq = f->seq;   /* moves with each line added (flatten may keep nr as it was) */
	long used = add_lines(f, t->text, len);

	if (used < 0 || f->seq == seq) {
		drop_chunk(f, t);
		return used;
	}
	t->next = f->text;
	f->text = t;
	return used;
}

size_t perfmap_add_text(struct perfmap *pm, const char *buf, size_t len)
{
	struct chunk *t;
	long used;
	int err;

	if (!pm->f)
		pm->f = file_get(pm->c, 0, 0, pm->pid, true);
	t = pm->f ? new_chunk(pm->f, len, &err) : NULL;
	if (!t)
		return 0;
	memcpy(t->text, buf, len);
	used = add_chunk(pm->f, t, len);
	return used < 0 ? 0 : used;
}

/* --- the file ------------------------------------------------------------------ */

/* The pid of process pid in its own pid namespace: the last of /proc/PID/status's "NSpid:". -1 if unknown. */
static long ns_pid(pid_t pid)
{
	char v[128], *p;

	if (proc_status(pid, "NSpid", v, sizeof(v)))
		return -1;
	p = strrchr(v, '\t');
	return strtol(p ? p : v, NULL, 10);
}

static long map_pid(const struct perfmap *pm)
{
	return pm->nspid > 0 ? pm->nspid : (long)pm->pid;
}

/*
 * The map in the target's own /tmp, named with its pid in its own pid
 * namespace: resolved inside its root (no "..", symlink or mount leads out),
 * no magic links, a regular file only (proc_open_in_root). An fd, or -errno.
 */
static int open_map(struct perfmap *pm)
{
	char path[64];

	if (pm->pid <= 0)
		return -ENOENT;  /* no process (the unit tests'): proc_open_in_root would take 0 for fnprof */
	if (!pm->nspid)
		pm->nspid = ns_pid(pm->pid);
	snprintf(path, sizeof(path), "/tmp/perf-%ld.map", map_pid(pm));
	return proc_open_in_root(pm->pid, path);
}

/* Said once: why a map is not read. */
static void refuse(struct perfmap *pm, const char *why)
{
	if (!pm->said_refused)
		log_warn("perf map /tmp/perf-%ld.map of process %d (in its root): %s; its JIT frames stay [unknown]",
			 map_pid(pm), pm->pid, why);
	pm->said_refused = true;
}

/* Said and counted once until the map is read: a map the budget has no room for. */
static void refuse_budget(struct perfmap *pm, off_t size)
{
	const struct budget *b = pm->c->b;

	if (pm->said_budget)
		return;
	log_warn("perf map /tmp/perf-%ld.map of process %d (in its root): %.1f MiB, no room in the memory budget "
		 "(%.1f of %.1f MiB for perf maps held, half of --max-memory); its JIT frames stay [unknown] until "
		 "there is room (raise --max-memory)", map_pid(pm), pm->pid, size / 1048576.0,
		 b->held[BUDGET_PERFMAPS] / 1048576.0, budget_share(b, BUDGET_PERFMAPS) / 1048576.0);
	budget_refused(pm->c->b, BUDGET_PERFMAPS);
	pm->said_budget = true;
}

/* Reads bytes [f->used, size) of fd and adds their complete lines. 0 or -errno (-ENOSPC: no room). */
static int read_new(struct pmfile *f, int fd, off_t size)
{
	size_t len = size - f->used, got = 0;
	struct chunk *t;
	ssize_t n = 0;
	long used;
	int err;

	t = new_chunk(f, len, &err);
	if (!t)
		return err;
	while (got < len && (n = pread(fd, t->text + got, len - got, f->used + got)) > 0)
		got += n;
	if (n < 0) {
		err = -errno;
		drop_chunk(f, t);
		return err;
	}
	used = add_chunk(f, t, got);
	if (used < 0)
		return used;
	/* An unfinished line already too long: skipped, not read again and again. */
	if (got - used > PERFMAP_MAX_LINE) {
		used = got;
		f->in_long_line = true;
	}
	f->used += used;
	return 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether the file is the target's own: owned by its real or effective user ("Uid:\treal\teffective..."). */
static bool owned_by_target(struct perfmap *pm, const struct stat *st)
{
	long real = -1, eff = -1;
	char v[128];

	if (!proc_status(pm->pid, "Uid", v, sizeof(v)) && sscanf(v, "%ld %ld", &real, &eff) != 2)
		real = eff = -1;
	return (real >= 0 && st->st_uid == (uid_t)real) || (eff >= 0 && st->st_uid == (uid_t)eff);
}

/* What changed since the last read: appended lines are read alone, anything else from the start. 0 or -errno. */
static int read_changes(struct pmfile *f, int fd, const struct stat *st)
{
	int err = 0;

	if (st->st_size == f->used && same_time(&st->st_mtim, &f->mtime))
		return 0;
	if (st->st_size < f->used || (st->st_size == f->used && !same_time(&st->st_mtim, &f->mtime)))
		clear_file(f);
	f->mtime = st->st_mtim;
	f->last_use = monotonic_s();
	if (st->st_size > f->used)
		err = read_new(f, fd, st->st_size);
	if (err == -ENOSPC)
		f->mtime = (struct timespec){};  /* not all read: looked at again */
	else if (err)
		log_debug("perf map of process %d: read failed: %s", f->pid, strerror(-err));
	log_debug("perf map of process %d: %zu names, %lu lines skipped, %zu bytes held, %u processes share it",
		  f->pid, f->nr, f->nr_bad, f->charged, f->refs);
	return err;
}

/* The file of pm now (fd): shared with the processes that have the same, read if changed. */
static void read_file(struct perfmap *pm, int fd, const struct stat *st)
{
	struct pmfile *f = pm->f;

	if (!f || f->private || f->dev != st->st_dev || f->ino != st->st_ino) {
		f = file_get(pm->c, st->st_dev, st->st_ino, pm->pid, false);
		if (!f)
			return;
		file_put(pm->f);
		pm->f = f;
	}
	if (read_changes(f, fd, st) == -ENOSPC)
		refuse_budget(pm, st->st_size);
	else
		pm->said_budget = false;
}

void perfmap_refresh(struct perfmap *pm, bool force)
{
	struct stat st;
	int fd;

	if (!force && monotonic_s() - pm->last_look < PERFMAP_RECHECK_MS / 1000.0)
		return;
	pm->last_look = monotonic_s();
	fd = open_map(pm);
	if (fd == -ENODEV || fd == -ELOOP || fd == -EXDEV)
		refuse(pm, "not a regular file inside its root");
	if (fd < 0)
		return;
	if (fstat(fd, &st))
		;
	else if (!owned_by_target(pm, &st))
		refuse(pm, "not owned by the process's user");
	else if (st.st_size > PERFMAP_MAX_BYTES)
		refuse(pm, "larger than " LOG_STR(PERFMAP_MAX_MIB) " MiB");
	else
		read_file(pm, fd, &st);
	close(fd);
}

static const struct jit_sym *find(const struct pmfile *f, __u64 addr)
{
	return f ? RANGES_FIND(f->syms, f->nr, addr) : NULL;
}

const char *perfmap_lookup(struct perfmap *pm, __u64 addr)
{
	const struct jit_sym *sym = find(pm->f, addr);

	if (!sym) {
		perfmap_refresh(pm, false);
		sym = find(pm->f, addr);
	}
	if (sym)
		pm->f->last_use = monotonic_s();
	return sym ? sym->name : NULL;
}
