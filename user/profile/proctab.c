// SPDX-License-Identifier: GPL-2.0
/*
 * The processes in a dense array, found through an open-addressing index
 * (pid -> position + 1) rebuilt when it grows or entries are forgotten.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base/clock.h"
#include "fnprof.h"
#include "base/json.h"
#include "base/proc.h"
#include "profile/proctab.h"
#include "base/sanitize.h"
#include "stacks/symbolize.h"
#include "target/mapsnap.h"

#define REFRESH_S 1.0   /* a live process's mappings are re-read this often */

struct proc_ent {
	pid_t pid;
	char comm[FNPROF_COMM_LEN];   /* as of its last exec */
	__u64 exec_id;            /* that exec's generation (struct proc_seen) */
	struct symbolizer *sym;   /* NULL: none held */
	bool exited;
	double refreshed;         /* when its mappings were read last (monotonic_s) */
	__u64 used;               /* the scan of its last use: the least recent gives its symbolizer up */
};

struct proctab {
	struct proc_ent *ent;
	size_t nr, cap;
	__u32 *index;
	size_t index_cap;
	struct symbolizer *parent;      /* whose names and object cache the processes' symbolizers share */
	struct mapsnap *snap;           /* mappings read at first sight, or NULL */
	size_t nr_sym;
	__u64 tick;
	struct proctab_stats st;
};

struct proctab *proctab_new(struct symbolizer *parent)
{
	struct proctab *t = calloc(1, sizeof(*t));

	if (t)
		t->parent = parent;
	return t;
}

void proctab_set_snapshots(struct proctab *t, struct mapsnap *m)
{
	t->snap = m;
	symbolizer_set_snapshots(t->parent, m);
}

void proctab_free(struct proctab *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++)
		symbolizer_free(t->ent[i].sym);
	free(t->ent);
	free(t->index);
	free(t);
}

static size_t pid_hash(pid_t pid, size_t cap)
{
	return ((__u32)pid * 2654435761U) & (cap - 1);
}

/* The index for the entries there are, at most half full. 0 or -ENOMEM. */
static int reindex(struct proctab *t)
{
	size_t cap = 1024, i, h;
	__u32 *index;

	while (cap < 2 * (t->nr + 1))
		cap *= 2;
	/*
	 * It only grows: one big enough is emptied and filled again (after
	 * forget(), whose entries moved), and a larger one is allocated before
	 * the old goes, which stays whole if there is no memory.
	 */
	if (cap <= t->index_cap) {
		cap = t->index_cap;
		memset(t->index, 0, cap * sizeof(*t->index));
	} else if (!(index = calloc(cap, sizeof(*index)))) {
		return -ENOMEM;
	} else {
		free(t->index);
		t->index = index;
		t->index_cap = cap;
	}
	for (i = 0; i < t->nr; i++) {
		for (h = pid_hash(t->ent[i].pid, cap); t->index[h]; h = (h + 1) & (cap - 1))
			;
		t->index[h] = i + 1;
	}
	return 0;
}

static struct proc_ent *find(const struct proctab *t, pid_t pid)
{
	size_t h;

	for (h = t->index_cap ? pid_hash(pid, t->index_cap) : 0; t->index_cap && t->index[h];
	     h = (h + 1) & (t->index_cap - 1))
		if (t->ent[t->index[h] - 1].pid == pid)
			return &t->ent[t->index[h] - 1];
	return NULL;
}

static void drop_symbolizer(struct proctab *t, struct proc_ent *e)
{
	if (!e->sym)
		return;
	symbolizer_free(e->sym);
	e->sym = NULL;
	t->nr_sym--;
}

/* At the cap: the least recently used symbolizer goes, an exited process's first. */
static void evict_one(struct proctab *t)
{
	struct proc_ent *victim = NULL;
	size_t i;

	for (i = 0; i < t->nr; i++) {
		struct proc_ent *e = &t->ent[i];

		if (!e->sym)
			continue;
		if (!victim || (e->exited && !victim->exited) ||
		    (e->exited == victim->exited && e->used < victim->used))
			victim = e;
	}
	if (victim) {
		drop_symbolizer(t, victim);
		t->st.evicted++;
	}
}

/* Its mappings and symbols read now, while it runs. */
static struct symbolizer *hold_symbolizer(struct proctab *t, struct proc_ent *e)
{
	if (e->sym)
		return e->sym;
	if (t->nr_sym >= PROCTAB_MAX_SYMBOLIZERS)
		evict_one(t);
	e->sym = symbolizer_new_child(e->pid, t->parent);
	e->refreshed = monotonic_s();
	t->nr_sym += e->sym != NULL;
	return e->sym;
}

/* A new process, with its name (NULL: read from /proc now). NULL at the cap or out of memory. */
static struct proc_ent *add(struct proctab *t, pid_t pid, const char *comm)
{
	struct proc_ent *e;

	if (t->nr >= PROCTAB_MAX_PROCS + 1024)
		return NULL;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct proc_ent *v = realloc(t->ent, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->ent = v;
		t->cap = cap;
	}
	e = &t->ent[t->nr];
	*e = (struct proc_ent){ .pid = pid, .used = t->tick };
	if (comm)
		sanitize_term(comm, e->comm, sizeof(e->comm));
	else
		proc_thread_name(pid, 0, "[unknown]", e->comm, sizeof(e->comm));
	t->nr++;
	if (2 * (t->nr + 1) > t->index_cap && reindex(t)) {
		t->nr--;
		return NULL;
	}
	/* Into the index: reindex placed it when it grew; otherwise it goes in now. */
	if (!find(t, pid)) {
		size_t h;

		for (h = pid_hash(pid, t->index_cap); t->index[h]; h = (h + 1) & (t->index_cap - 1))
			;
		t->index[h] = t->nr;
	}
	return e;
}

static int cmp_used(const void *a, const void *b)
{
	const struct proc_ent *x = a, *y = b;

	if (x->exited != y->exited)
		return x->exited ? -1 : 1;
	return x->used < y->used ? -1 : x->used > y->used;
}

/*
 * Near the cap on known processes: the exited ones that were used least
 * recently (half of those known) are forgotten, here and in the kernel's map.
 */
static void forget(struct proctab *t, int map_fd)
{
	size_t i, n = 0;

	qsort(t->ent, t->nr, sizeof(*t->ent), cmp_used);
	while (n < t->nr / 2 && t->ent[n].exited)
		n++;
	for (i = 0; i < n; i++) {
		__u32 key = t->ent[i].pid;

		bpf_map_delete_elem(map_fd, &key);
		drop_symbolizer(t, &t->ent[i]);
		if (t->snap)
			mapsnap_forget(t->snap, key);
	}
	memmove(t->ent, t->ent + n, (t->nr - n) * sizeof(*t->ent));
	t->nr -= n;
	t->st.forgotten += n;
	reindex(t);
}

/* A live process: its mappings re-read now and then; an exit noted. */
static void check_proc(struct proctab *t, struct proc_ent *e, double now)
{
	if (e->exited || !e->sym)
		return;
	if (!proc_alive(e->pid)) {
		e->exited = true;
		t->st.exited++;
	} else if (now - e->refreshed >= REFRESH_S) {
		symbolizer_refresh(e->sym);
		e->refreshed = now;
	}
}

/*
 * A process that exec'd since it was first seen: the new image's name; its
 * symbolizer goes with the old image's mappings (the next is made from the
 * new ones). Its samples are counted per process, not per image: those
 * before the exec take the new name too.
 */
static void note_exec(struct proctab *t, struct proc_ent *e, const struct proc_seen *v)
{
	sanitize_term(v->comm, e->comm, sizeof(e->comm));
	e->exec_id = v->exec_id;
	drop_symbolizer(t, e);
	t->st.execs++;
}

/* A process seen for the first time; its symbolizer made now, while it runs or from its mappings read at first sight. */
static void note_new(struct proctab *t, __u32 pid, const struct proc_seen *v)
{
	struct proc_ent *e = add(t, pid, v->comm);
	bool alive = proc_alive(pid);

	if (!e)
		return;
	e->exec_id = v->exec_id;
	if (alive || (t->snap && mapsnap_exec_id(t->snap, pid)))
		hold_symbolizer(t, e);
	if (!alive) {
		/* Gone before it was first read: it exited too. */
		e->exited = true;
		t->st.exited++;
	}
}

void proctab_scan(struct proctab *t, int map_fd)
{
	__u32 key, next, *cur = NULL;
	struct proc_seen v;
	struct proc_ent *e;
	double now = monotonic_s();
	size_t i;

	t->tick++;
	if (t->nr >= PROCTAB_MAX_PROCS)
		forget(t, map_fd);
	while (!bpf_map_get_next_key(map_fd, cur, &next)) {
		key = next;
		cur = &key;
		if (bpf_map_lookup_elem(map_fd, &key, &v))
			continue;
		v.comm[sizeof(v.comm) - 1] = 0;
		e = find(t, key);
		if (!e)
			note_new(t, key, &v);
		else if (e->exec_id != v.exec_id)
			note_exec(t, e, &v);
	}
	for (i = 0; i < t->nr; i++)
		check_proc(t, &t->ent[i], now);
}

static struct proc_ent *get(struct proctab *t, pid_t pid)
{
	struct proc_ent *e = find(t, pid);

	if (!e)
		e = add(t, pid, NULL);
	if (e)
		e->used = t->tick;
	return e;
}

const char *proctab_comm(struct proctab *t, pid_t pid)
{
	struct proc_ent *e = get(t, pid);

	return e ? e->comm : "[unknown]";
}

struct symbolizer *proctab_symbolizer(struct proctab *t, pid_t pid)
{
	struct proc_ent *e = get(t, pid);

	return e ? hold_symbolizer(t, e) : NULL;
}

void proctab_release_exited(struct proctab *t)
{
	size_t i;

	for (i = 0; i < t->nr; i++) {
		if (!t->ent[i].exited)
			continue;
		drop_symbolizer(t, &t->ent[i]);
		if (t->snap)
			mapsnap_forget(t->snap, t->ent[i].pid);
	}
}

void proctab_stats(const struct proctab *t, struct proctab_stats *out)
{
	*out = t->st;
	out->procs = t->nr;
	out->symbolizers = t->nr_sym;
	out->objects = symbolizer_nr_shared(t->parent);
	if (t->snap)
		mapsnap_stats(t->snap, &out->maps);
}

void proctab_print_stats(const struct proctab *t, FILE *out)
{
	struct proctab_stats st;

	proctab_stats(t, &st);
	fprintf(out, "processes: %zu seen, %llu exited, %llu exec'd; symbols of %zu object files held for %zu of them (at most %d)",
		st.procs, (unsigned long long)st.exited, (unsigned long long)st.execs, st.objects, st.symbolizers, PROCTAB_MAX_SYMBOLIZERS);
	if (st.evicted || st.forgotten)
		fprintf(out, "; over the caps: %llu gave their symbols up, %llu forgotten (at most %d known)",
			(unsigned long long)st.evicted, (unsigned long long)st.forgotten, PROCTAB_MAX_PROCS);
	fputc('\n', out);
	if (t->snap)
		fprintf(out, "mappings read at first sight: %llu processes, %llu gone before they could be read, "
			     "%llu given up over the cap (at most %d held)\n", (unsigned long long)st.maps.read,
			(unsigned long long)st.maps.missed, (unsigned long long)st.maps.evicted, MAPSNAP_MAX);
}

static void stats_json(struct json *j, const struct proctab_stats *st)
{
	const struct json_kv kv[] = {
		{ "seen", st->procs }, { "exited", st->exited }, { "symbolizers", st->symbolizers },
		{ "objects", st->objects }, { "evicted", st->evicted }, { "forgotten", st->forgotten },
		{ "execs", st->execs }, { "maps_read", st->maps.read }, { "maps_missed", st->maps.missed },
		{ "maps_evicted", st->maps.evicted },
	};

	json_obj_begin(j, "processes");
	JSON_U64S(j, kv);
	json_obj_end(j);
}

void proctab_json_stats(const struct proctab *t, struct json *j)
{
	struct proctab_stats st;

	proctab_stats(t, &st);
	stats_json(j, &st);
}
