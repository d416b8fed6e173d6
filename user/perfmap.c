// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "log.h"
#include "perfmap.h"
#include "proc.h"

struct jit_sym {
	__u64 start, end;
	__u64 seq;   /* its line's number: a later line wins */
	char *name;
};

struct perfmap {
	pid_t pid;
	struct jit_sym *syms;   /* sorted, not overlapping */
	size_t nr, cap;
	__u64 seq;
	/* The file as last read. */
	dev_t dev;
	ino_t ino;
	off_t used;             /* bytes read, up to the last complete line */
	struct timespec mtime;
	double last_look;       /* CLOCK_MONOTONIC seconds */
	long nspid;             /* its pid in its own pid namespace; 0 until known */
	bool in_long_line;      /* what follows the last read ends a line too long to keep */
	bool said_refused, said_full;
	unsigned long nr_bad;   /* lines skipped: malformed or too long */
};

struct perfmap *perfmap_new(pid_t pid)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));

	if (pm)
		pm->pid = pid;
	return pm;
}

static void clear_syms(struct perfmap *pm)
{
	size_t i;

	for (i = 0; i < pm->nr; i++)
		free(pm->syms[i].name);
	pm->nr = 0;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	clear_syms(pm);
	free(pm->syms);
	free(pm);
}

size_t perfmap_nr(const struct perfmap *pm)
{
	return pm->nr;
}

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

/* "START SIZE name": false for anything else (no name, size 0, a NUL, a range past the top). */
static bool parse_line(const char *s, const char *end, struct jit_sym *out)
{
	__u64 size;
	const char *name;

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
	out->name = strndup(name, end - name);
	return out->name != NULL;
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
static int sort_new(struct perfmap *pm, size_t old)
{
	struct jit_sym *out;
	size_t i = 0, j = old, k = 0;

	qsort(pm->syms + old, pm->nr - old, sizeof(*pm->syms), cmp_sym);
	if (!old)
		return 0;
	out = malloc(pm->cap * sizeof(*out));
	if (!out) {
		qsort(pm->syms, pm->nr, sizeof(*pm->syms), cmp_sym);
		return -ENOMEM;
	}
	while (i < old || j < pm->nr)
		out[k++] = j == pm->nr || (i < old && cmp_sym(&pm->syms[i], &pm->syms[j]) <= 0) ? pm->syms[i++] :
										  pm->syms[j++];
	free(pm->syms);
	pm->syms = out;
	return 0;
}

/*
 * Sorted by start, then line: where two overlap, the later line wins; an
 * earlier one ends where a later one starts, or goes.
 */
static void flatten(struct perfmap *pm)
{
	size_t i, n = 0;

	for (i = 0; i < pm->nr; i++) {
		struct jit_sym cur = pm->syms[i];

		while (n && pm->syms[n - 1].end > cur.start) {
			struct jit_sym *last = &pm->syms[n - 1];

			if (last->seq > cur.seq) {
				cur.start = last->end;
				break;
			}
			if (last->start < cur.start) {
				last->end = cur.start;
				break;
			}
			free(last->name);
			n--;
		}
		if (cur.start < cur.end)
			pm->syms[n++] = cur;
		else
			free(cur.name);
	}
	pm->nr = n;
}

size_t perfmap_add_text(struct perfmap *pm, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;
	size_t before = pm->nr;
	struct jit_sym sym;

	if (pm->in_long_line) {
		nl = memchr(p, '\n', len);
		if (!nl)
			return len;
		p = nl + 1;
		pm->in_long_line = false;
		pm->nr_bad++;
	}
	while (p < end && (nl = memchr(p, '\n', end - p))) {
		if (nl - p > PERFMAP_MAX_LINE || !parse_line(p, nl, &sym))
			pm->nr_bad++;
		else if (pm->nr >= PERFMAP_MAX_SYMS || ARRAY_RESERVE(pm->syms, pm->nr + 1, pm->cap)) {
			free(sym.name);
			if (pm->nr >= PERFMAP_MAX_SYMS && !pm->said_full)
				log_warn("perf map of process %d: over %u names; the rest are not read", pm->pid,
					 PERFMAP_MAX_SYMS);
			pm->said_full |= pm->nr >= PERFMAP_MAX_SYMS;
		} else {
			sym.seq = pm->seq++;
			pm->syms[pm->nr++] = sym;
		}
		p = nl + 1;
	}
	if (pm->nr != before) {
		sort_new(pm, before);
		flatten(pm);
	}
	return p - buf;
}

/* The pid of process pid in its own pid namespace: the last of /proc/PID/status's "NSpid:". -1 if unknown. */
static long ns_pid(pid_t pid)
{
	char v[128], *p;

	if (proc_status(pid, "NSpid", v, sizeof(v)))
		return -1;
	p = strrchr(v, '\t');
	return strtol(p ? p : v, NULL, 10);
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
	snprintf(path, sizeof(path), "/tmp/perf-%ld.map", pm->nspid > 0 ? pm->nspid : (long)pm->pid);
	return proc_open_in_root(pm->pid, path);
}

/* Said once: why a map is not read. */
static void refuse(struct perfmap *pm, const char *why)
{
	if (!pm->said_refused)
		log_warn("perf map /tmp/perf-%ld.map of process %d (in its root): %s; its JIT frames stay [unknown]",
			 pm->nspid > 0 ? pm->nspid : (long)pm->pid, pm->pid, why);
	pm->said_refused = true;
}

/* Reads bytes [pm->used, size) of fd and adds their complete lines. */
static int read_new(struct perfmap *pm, int fd, off_t size)
{
	size_t len = size - pm->used, got = 0, used;
	char *buf = malloc(len);
	ssize_t n = 0;

	if (!buf)
		return -ENOMEM;
	while (got < len && (n = pread(fd, buf + got, len - got, pm->used + got)) > 0)
		got += n;
	if (n < 0) {
		free(buf);
		return -errno;
	}
	used = perfmap_add_text(pm, buf, got);
	/* An unfinished line already too long: skipped, not read again and again. */
	if (got - used > PERFMAP_MAX_LINE) {
		used = got;
		pm->in_long_line = true;
	}
	pm->used += used;
	free(buf);
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

/* What changed since the last read: appended lines are read alone, anything else from the start. */
static void read_changes(struct perfmap *pm, int fd, const struct stat *st)
{
	bool same_file = st->st_dev == pm->dev && st->st_ino == pm->ino;

	if (same_file && st->st_size == pm->used && same_time(&st->st_mtim, &pm->mtime))
		return;
	if (!same_file || st->st_size < pm->used ||
	    (st->st_size == pm->used && !same_time(&st->st_mtim, &pm->mtime))) {
		clear_syms(pm);
		pm->used = 0;
		pm->seq = 0;
		pm->in_long_line = false;
	}
	pm->dev = st->st_dev;
	pm->ino = st->st_ino;
	pm->mtime = st->st_mtim;
	if (st->st_size > pm->used && read_new(pm, fd, st->st_size))
		log_debug("perf map of process %d: read failed", pm->pid);
	log_debug("perf map of process %d: %zu names, %lu lines skipped", pm->pid, pm->nr, pm->nr_bad);
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
		refuse(pm, "larger than 64 MiB");
	else
		read_changes(pm, fd, &st);
	close(fd);
}

static const struct jit_sym *find(const struct perfmap *pm, __u64 addr)
{
	size_t lo = 0, hi = pm->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < pm->syms[mid].start)
			hi = mid;
		else if (addr >= pm->syms[mid].end)
			lo = mid + 1;
		else
			return &pm->syms[mid];
	}
	return NULL;
}

const char *perfmap_lookup(struct perfmap *pm, __u64 addr)
{
	const struct jit_sym *sym = find(pm, addr);

	if (!sym) {
		perfmap_refresh(pm, false);
		sym = find(pm, addr);
	}
	return sym ? sym->name : NULL;
}
