// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/proc.h"
#include "target/procmaps.h"

static int add_mapping(struct procmaps *pm, size_t *cap, const struct mapping *m)
{
	if (ARRAY_RESERVE(pm->maps, pm->nr + 1, *cap))
		return -ENOMEM;
	pm->maps[pm->nr] = *m;
	pm->maps[pm->nr].path = strdup(m->path);
	if (!pm->maps[pm->nr].path)
		return -ENOMEM;
	pm->nr++;
	return 0;
}

static int add_anon(struct procmaps *pm, size_t *cap, const struct mapping *m)
{
	if (ARRAY_RESERVE(pm->anon, pm->nr_anon + 1, *cap))
		return -ENOMEM;
	pm->anon[pm->nr_anon++] = (struct anon_range){ m->start, m->end };
	return 0;
}

enum map_kind { MAPPING_OTHER, MAPPING_FILE, MAPPING_ANON_EXEC };

/*
 * One line: "start-end perms pgoff maj:min inode   path". Files and the vDSO
 * are what samples land in; executable memory of no file is JIT code.
 */
static enum map_kind parse_line(char *line, struct mapping *m)
{
	char perms[8];
	int n = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   (uint64_t *)&m->start, (uint64_t *)&m->end, perms, (uint64_t *)&m->pgoff,
		   &m->dev_major, &m->dev_minor, (uint64_t *)&m->inode, &n) < 7)
		return MAPPING_OTHER;
	line[strcspn(line, "\n")] = 0;
	m->path = line + n;
	m->kept = false;
	m->exec = perms[2] == 'x';
	if (m->path[0] == '/' || !strcmp(m->path, "[vdso]"))
		return MAPPING_FILE;
	if (m->exec && !m->inode && (!m->path[0] || !strncmp(m->path, "[anon:", 6)))
		return MAPPING_ANON_EXEC;
	return MAPPING_OTHER;
}

int procmaps_load(pid_t pid, struct procmaps **out)
{
	char path[64], *line = NULL;
	struct procmaps *pm;
	size_t len = 0, cap = 0, cap_anon = 0;
	struct mapping m = {};
	int err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		fclose(f);
		return -ENOMEM;
	}
	pm->pid = pid;
	while (!err && getline(&line, &len, f) > 0) {
		switch (parse_line(line, &m)) {
		case MAPPING_FILE:
			err = add_mapping(pm, &cap, &m);
			break;
		case MAPPING_ANON_EXEC:
			err = add_anon(pm, &cap_anon, &m);
			break;
		default:
			break;
		}
	}
	if (!err && ferror(f))
		err = errno == ESRCH ? -ESRCH : -EIO;
	free(line);
	fclose(f);
	/*
	 * The kernel hands the file out a page at a time, each read from the
	 * process's mm anew: one that exits between two pages ends it early,
	 * without an error, its last mappings (the libraries, high up) left out.
	 * A clang++ that exited while its maps were read named every sample in
	 * LLVM [unknown]. A read is whole only if no exit had begun after it.
	 */
	if (!err && pid != getpid() && proc_exiting(pid))
		err = -ESRCH;
	if (err) {
		procmaps_free(pm);
		return err;
	}
	*out = pm;
	return 0;
}

static int cmp_anon(const void *a, const void *b)
{
	const struct anon_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* What pm maps (its file mappings and ranges of no file), in address order: they do not overlap. */
static struct anon_range *ranges_of(const struct procmaps *pm, size_t *n)
{
	struct anon_range *r = malloc((pm->nr + pm->nr_anon + 1) * sizeof(*r));
	size_t i;

	if (!r)
		return NULL;
	for (i = 0; i < pm->nr; i++)
		r[i] = (struct anon_range){ pm->maps[i].start, pm->maps[i].end };
	if (pm->nr_anon)
		memcpy(r + pm->nr, pm->anon, pm->nr_anon * sizeof(*r));
	*n = pm->nr + pm->nr_anon;
	qsort(r, *n, sizeof(*r), cmp_anon);
	return r;
}

/*
 * Whether [start, end) overlaps one of the n ranges r (sorted, apart): only
 * the last to start before end can, their ends being in order too.
 */
static bool taken(const struct anon_range *r, size_t n, __u64 start, __u64 end)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {   /* the first range starting at end or after */
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && r[lo - 1].end > start;
}


/* The ranges of no file old had, where nothing of the n ranges now lies (r, sorted). */
static int keep_anon(struct procmaps *pm, const struct procmaps *old, const struct anon_range *r, size_t nr)
{
	struct anon_range *a;
	size_t i, n = pm->nr_anon;

	if (!old->nr_anon)
		return 0;
	a = realloc(pm->anon, (n + old->nr_anon) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	pm->anon = a;
	for (i = 0; i < old->nr_anon && pm->nr_anon < n + PROCMAPS_KEPT_MAX; i++)
		if (!taken(r, nr, old->anon[i].start, old->anon[i].end))
			pm->anon[pm->nr_anon++] = old->anon[i];
	if (pm->nr_anon > n)
		qsort(pm->anon, pm->nr_anon, sizeof(*pm->anon), cmp_anon);
	return 0;
}

/* The executable mappings of files old had, likewise. */
static int keep_files(struct procmaps *pm, const struct procmaps *old, const struct anon_range *r, size_t nr)
{
	size_t i, cap = pm->nr, n = pm->nr, kept = 0;
	int err = 0;

	for (i = 0; i < old->nr && kept < PROCMAPS_KEPT_FILES_MAX && !err; i++) {
		const struct mapping *m = &old->maps[i];

		if (!m->exec || taken(r, nr, m->start, m->end))
			continue;
		err = add_mapping(pm, &cap, m);
		if (!err)
			pm->maps[pm->nr - 1].kept = true;
		kept++;
	}
	if (err)  /* none kept */
		while (pm->nr > n)
			free(pm->maps[--pm->nr].path);
	pm->nr_kept += pm->nr - n;
	return err;
}

int procmaps_keep_unmapped(struct procmaps *pm, const struct procmaps *old)
{
	struct anon_range *r;
	size_t nr = 0;
	int err, err2;

	if (!old || (!old->nr && !old->nr_anon))
		return 0;
	/* Against what pm maps itself: old's ranges do not overlap one another either. */
	r = ranges_of(pm, &nr);
	if (!r)
		return -ENOMEM;
	/* Each on its own: JIT ranges are kept even when the files could not be. */
	err = keep_files(pm, old, r, nr);
	err2 = keep_anon(pm, old, r, nr);
	free(r);
	return err ? err : err2;
}

void procmaps_free(struct procmaps *pm)
{
	size_t i;

	if (!pm)
		return;
	for (i = 0; i < pm->nr; i++)
		free(pm->maps[i].path);
	free(pm->maps);
	free(pm->anon);
	free(pm);
}

int procmaps_dup(const struct procmaps *pm, struct procmaps **out)
{
	struct procmaps *c = calloc(1, sizeof(*c));
	size_t i;

	if (!c)
		return -ENOMEM;
	*c = *pm;
	c->maps = calloc(pm->nr ? pm->nr : 1, sizeof(*c->maps));
	c->anon = calloc(pm->nr_anon ? pm->nr_anon : 1, sizeof(*c->anon));
	c->nr = 0;
	for (i = 0; c->maps && c->anon && i < pm->nr; i++, c->nr++) {
		c->maps[i] = pm->maps[i];
		c->maps[i].path = strdup(pm->maps[i].path);
		if (!c->maps[i].path)
			break;
	}
	if (!c->maps || !c->anon || c->nr < pm->nr) {
		procmaps_free(c);
		return -ENOMEM;
	}
	if (pm->nr_anon)
		memcpy(c->anon, pm->anon, pm->nr_anon * sizeof(*c->anon));
	*out = c;
	return 0;
}

const struct mapping *procmaps_find(const struct procmaps *pm, __u64 addr)
{
	/* The kernel lists mappings in address order, apart: those read are searched by halves. */
	const struct mapping *m = RANGES_FIND(pm->maps, pm->nr - pm->nr_kept, addr);
	size_t i;

	if (m)
		return m;
	/* The kept ones follow (256 at most), where nothing read lies. */
	for (i = pm->nr - pm->nr_kept; i < pm->nr; i++)
		if (addr >= pm->maps[i].start && addr < pm->maps[i].end)
			return &pm->maps[i];
	return NULL;
}

const struct anon_range *procmaps_find_anon(const struct procmaps *pm, __u64 addr)
{
	return RANGES_FIND(pm->anon, pm->nr_anon, addr);
}

bool lib_name_matches(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');
	size_t n = strlen(name);

	base = base ? base + 1 : path;
	if (!strcmp(base, name))
		return true;
	/* "libc" matches libc.so.6 and libc-2.31.so, not libcap.so. */
	return !strncmp(base, name, n) && (base[n] == '-' || !strncmp(base + n, ".so", 3));
}

const char *procmaps_find_object(const struct procmaps *pm, const char *name)
{
	size_t i;

	for (i = 0; i < pm->nr; i++) {
		const char *p = pm->maps[i].path;

		if (name[0] == '/' ? !strcmp(p, name) : lib_name_matches(p, name))
			return p;
	}
	return NULL;
}

const struct mapping *procmaps_find_path(const struct procmaps *pm, const char *path)
{
	size_t i;

	for (i = 0; i < pm->nr; i++)
		if (!strcmp(pm->maps[i].path, path))
			return &pm->maps[i];
	return NULL;
}

int procmaps_file_path(const struct procmaps *pm, const char *path, char *buf, size_t size)
{
	size_t i;

	for (i = 0; i < pm->nr; i++) {
		if (strcmp(pm->maps[i].path, path))
			continue;
		snprintf(buf, size, "/proc/%d/map_files/%llx-%llx", pm->pid,
			 (unsigned long long)pm->maps[i].start, (unsigned long long)pm->maps[i].end);
		return 0;
	}
	return -ENOENT;
}


bool maps_pace_due(const struct maps_pace *p, const struct maps_pace *gate)
{
	double now = monotonic_s();

	return now >= p->next && (!p->costly || !gate || now >= gate->next);
}

void maps_pace_begin(struct maps_pace *p)
{
	p->cpu0 = thread_cpu_s();
}

void maps_pace_end(struct maps_pace *p, double min_gap_s, struct maps_pace *gate)
{
	double cost = thread_cpu_s() - p->cpu0;

	p->costly = cost >= MAPS_PACE_FREE_S;
	p->next = monotonic_s() + (p->costly && 10 * cost > min_gap_s ? 10 * cost : min_gap_s);
	if (p->costly && gate)
		gate->next = p->next;
}
