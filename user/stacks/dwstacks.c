// SPDX-License-Identifier: GPL-2.0
/*
 * The reading thread and the tables it fills. The thread alone touches the
 * unwinder; the tables are shared with the reports under one lock, taken
 * only to count an unwound sample or to copy the counts out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/json.h"
#include "stacks/dwstacks.h"
#include "base/proc.h"
#include "target/mapsnap.h"
#include "target/procmaps.h"
#include "base/rbreader.h"
#include "stacks/unwind.h"

struct ustack {
	__u64 *ips;
	int nr;
	__u32 pid;                /* -a: whose (the same addresses in two processes are two stacks) */
	__u64 hash;
};

/* -a: an unwinder per process, the least recently used given up at the cap. */
struct proc_unwinder {
	pid_t pid;
	struct unwinder *uw;
	__u64 used;
	__u64 exec_id;            /* the image whose mappings it holds (mapsnap.h); 0: not known */
};

/*
 * A counting table: entries of esize bytes that start with their key (ksize
 * bytes, compared and hashed as bytes), in open addressing, at most half
 * full. The samples' counts and the profiles' values are each one.
 */
struct ktable {
	char *e;                  /* cap entries, then used: their cap flags, in one block */
	bool *used;
	size_t nr, cap, esize, ksize;
};

struct dwstacks {
	bool per_thread;
	struct rb_reader rd;
	struct unwinder *uw;      /* the thread's own (one target) */
	bool all;                 /* -a: the samples of every process, unwound with theirs: */
	struct proc_unwinder uws[DWSTACK_MAX_UNWINDERS];
	struct maps_pace gate;    /* their costly re-reads of maps take turns (procmaps.h) */
	struct mapsnap *snap;     /* the mappings read when each process was first sampled, or NULL */
	size_t nr_uws;
	__u64 tick;
	double last_sweep;        /* when exited processes' unwinders were dropped last */
	pthread_mutex_t lock;     /* everything below */
	struct ustack *stacks;    /* by id - DWSTACK_BASE */
	size_t nr_stacks, cap_stacks;
	__s32 *stack_index;       /* open addressing: stack id + 1, 0 empty; 2 * DWSTACK_MAX slots */
	struct ktable counts;     /* of struct dwstack_count */
	struct dwstack_stats st;
	struct dwstack_stats st_copied;  /* st when the counts were last copied out: what they hold */
	/* Profiles (dwstacks_start_prof): */
	struct ktable pc;         /* of struct dwstack_prof */
	struct id_slot *ids;      /* open addressing on the id, 0: empty; at most half full */
	size_t nr_ids, cap_ids;
	/* Dropping the ids no map holds (prune): */
	struct dwstacks_refs refs;
	__u32 prunes;             /* readings of refs' map done */
	size_t ids_pruned;        /* nr_ids after the last */
	size_t ids_marked;        /* of them, the ones the map held then */
	double last_prune;
	bool prune_asked;         /* by a report */
	bool prune_due;           /* pass_done's verdict, for idle */
};

struct id_slot {
	__u64 id;                 /* 0: empty */
	__s32 stack;
	__u32 seen;               /* the last reading of the map that found it (or before which it came) */
};

/* Ids read from the map per batch: a bounded buffer, the lock taken once per batch. */
#define REFS_BATCH 4096
/* New ids since the last reading of the map, at least, for the next to come before DWSTACK_PRUNE_S. */
#define PRUNE_SOONER_IDS 65536

/* A record's stack follows its struct dwarf_sample, as on_sample's does. */
_Static_assert(sizeof(struct prof_dwarf) == offsetof(struct prof_dwarf, user) + sizeof(struct dwarf_sample),
	       "prof_dwarf: the stack copy must follow user");

static __u64 hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	__u64 h = 1469598103934665603ULL;  /* FNV-1a */

	while (n--)
		h = (h ^ *b++) * 1099511628211ULL;
	return h;
}

/* The id of process pid's stack ips[0..n), added if new; -1 when the table is full. */
static __s32 intern(struct dwstacks *d, __u32 pid, const __u64 *ips, int n)
{
	__u64 h = hash_bytes(ips, n * sizeof(*ips)) ^ (pid * 0x9e3779b97f4a7c15ULL);
	size_t slot = h & (2 * DWSTACK_MAX - 1);
	struct ustack *s;

	for (; d->stack_index[slot]; slot = (slot + 1) & (2 * DWSTACK_MAX - 1)) {
		s = &d->stacks[d->stack_index[slot] - 1];
		if (s->hash == h && s->nr == n && s->pid == pid && !memcmp(s->ips, ips, n * sizeof(*ips)))
			return DWSTACK_BASE + d->stack_index[slot] - 1;
	}
	if (d->nr_stacks == DWSTACK_MAX || ARRAY_RESERVE(d->stacks, d->nr_stacks + 1, d->cap_stacks))
		return -1;
	s = &d->stacks[d->nr_stacks];
	s->ips = malloc(n * sizeof(*ips));
	if (!s->ips)
		return -1;
	memcpy(s->ips, ips, n * sizeof(*ips));
	s->nr = n;
	s->pid = pid;
	s->hash = h;
	d->stack_index[slot] = ++d->nr_stacks;
	return DWSTACK_BASE + d->nr_stacks - 1;
}

/* Doubles t (1024 entries at first), its entries moved over. 0 or -ENOMEM. */
static int kt_grow(struct ktable *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024, i, h;
	char *e = calloc(cap, t->esize + sizeof(bool));
	bool *used;

	if (!e)
		return -ENOMEM;
	used = (bool *)(e + cap * t->esize);
	for (i = 0; i < t->cap; i++) {
		if (!t->used[i])
			continue;
		for (h = hash_bytes(t->e + i * t->esize, t->ksize) & (cap - 1); used[h]; h = (h + 1) & (cap - 1))
			;
		memcpy(e + h * t->esize, t->e + i * t->esize, t->esize);
		used[h] = true;
	}
	free(t->e);
	t->e = e;
	t->used = used;
	t->cap = cap;
	return 0;
}

/* An empty table of entries of esize bytes, each keyed by its first ksize. 0 or -ENOMEM. */
static int kt_init(struct ktable *t, size_t esize, size_t ksize)
{
	*t = (struct ktable){ .esize = esize, .ksize = ksize };
	return kt_grow(t);
}

/* The entry of key k: found, or added (zeroed, with its key). NULL when the table cannot grow. */
static void *kt_entry(struct ktable *t, const void *k)
{
	size_t h;
	char *e;

	if (2 * (t->nr + 1) > t->cap && kt_grow(t))
		return NULL;
	for (h = hash_bytes(k, t->ksize) & (t->cap - 1); t->used[h]; h = (h + 1) & (t->cap - 1))
		if (!memcmp(t->e + h * t->esize, k, t->ksize))
			return t->e + h * t->esize;
	e = t->e + h * t->esize;
	memcpy(e, k, t->ksize);
	t->used[h] = true;
	t->nr++;
	return e;
}

static void count(struct dwstacks *d, const struct sample_key *k)
{
	struct dwstack_count *c = kt_entry(&d->counts, k);

	if (!c) {
		d->st.lost++;
		return;
	}
	c->count++;
}

/* A new unwinder for pid in p (free, or the least recently used one's), with the image it unwinds. */
static void unwinder_put(struct dwstacks *d, struct proc_unwinder *p, pid_t pid, __u64 exec_id)
{
	*p = (struct proc_unwinder){ .pid = pid, .uw = unwinder_new(pid, &d->gate), .used = d->tick,
				     .exec_id = exec_id };
	if (p->uw && d->snap)
		unwinder_set_snapshots(p->uw, d->snap);
}

/*
 * -a: process pid's unwinder, made now if none, or anew after an exec (the
 * old image's objects go); at the cap, the least recently used one's goes.
 */
static struct unwinder *unwinder_of(struct dwstacks *d, pid_t pid)
{
	__u64 exec_id = d->snap ? mapsnap_exec_id(d->snap, pid) : 0;
	struct proc_unwinder *p = NULL;
	size_t i;

	d->tick++;
	for (i = 0; i < d->nr_uws; i++) {
		if (d->uws[i].pid == pid && d->uws[i].exec_id != exec_id && exec_id) {
			unwinder_free(d->uws[i].uw);
			unwinder_put(d, &d->uws[i], pid, exec_id);
		}
		if (d->uws[i].pid == pid) {
			d->uws[i].used = d->tick;
			return d->uws[i].uw;
		}
		if (!p || d->uws[i].used < p->used)
			p = &d->uws[i];
	}
	if (d->nr_uws < DWSTACK_MAX_UNWINDERS) {
		p = &d->uws[d->nr_uws++];
	} else {
		unwinder_free(p->uw);
		d->st.unwinders_evicted++;
	}
	unwinder_put(d, p, pid, exec_id);
	return p->uw;
}

/* Processes that exited give their unwinders up (their samples before the exit were read). */
static void drop_exited(struct dwstacks *d)
{
	size_t i = 0;

	while (i < d->nr_uws) {
		if (proc_alive(d->uws[i].pid)) {
			i++;
			continue;
		}
		unwinder_free(d->uws[i].uw);
		d->uws[i] = d->uws[--d->nr_uws];
	}
}

/* How a walk's frames were found, into the statistics (under the lock). */
static void add_frames(struct dwstack_stats *st, const struct unwind_counts *how)
{
	st->frames_cfi += how->cfi;
	st->frames_fp += how->fp;
	st->frames_epilogue += how->epilogue;
}

/* One sample from the ring buffer: unwound here, counted under the lock. */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct dwstacks *d = ctx;
	const struct dwarf_sample *s = data;
	__u64 ips[FNPROF_STACK_DEPTH];
	struct sample_key key = {};
	struct unwinder *uw;
	struct unwind_counts how = {};
	bool truncated = false, fp = false;
	int n = 0;

	if (size < sizeof(*s) || s->stack_len > size - sizeof(*s))
		return 0;
	/* A kernel thread has no user registers (ip 0): no unwinder for it. */
	uw = !d->all ? d->uw : s->regs[FNPROF_REG_IP] ? unwinder_of(d, s->pid) : NULL;
	if (uw)
		n = unwinder_unwind(uw, s, ips, FNPROF_STACK_DEPTH, &truncated, &how);
	/*
	 * -a: a process gone before its mappings could be read (the reader
	 * behind on a busy machine) keeps its frame-pointer stack. Known from
	 * the unwinder, without a look at /proc per sample (JIT code is in no
	 * object read, sample after sample).
	 */
	fp = d->all && uw && s->ufp >= 0 && !unwinder_has_objects(uw);
	key.pid = d->all ? s->pid : 0;
	key.tid = d->per_thread ? s->tid : 0;
	key.kstack = s->kstack;
	pthread_mutex_lock(&d->lock);
	key.ustack = fp ? s->ufp : n ? intern(d, key.pid, ips, n) : -1;
	if (n && key.ustack < 0)
		d->st.lost++;
	d->st.fp_fallback += fp;
	d->st.samples++;
	d->st.truncated += truncated;
	add_frames(&d->st, &how);
	count(d, &key);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* --- profiles --------------------------------------------------------------- */

static void count_prof(struct dwstacks *d, const struct prof_key *k, const struct prof_val *v)
{
	struct dwstack_prof *c = kt_entry(&d->pc, k);
	int i;

	if (!c) {
		d->st.lost++;
		return;
	}
	for (i = 0; i < PROF_NR_VALUES; i++)
		c->val.v[i] += v->v[i];
}

static size_t id_hash(__u64 id, size_t cap)
{
	return (id * 0x9e3779b97f4a7c15ULL) >> 32 & (cap - 1);
}

/* The slot of id in the table, or the empty one where it would go. */
static struct id_slot *id_slot(struct id_slot *ids, size_t cap, __u64 id)
{
	size_t h;

	for (h = id_hash(id, cap); ids[h].id && ids[h].id != id; h = (h + 1) & (cap - 1))
		;
	return &ids[h];
}

/*
 * The table's memory straight from the kernel, and back to it when a table
 * is replaced: malloc keeps a freed block of a few MiB for reuse once it has
 * raised its mmap threshold, and the tables that growth left behind added up
 * to as much as the table.
 */
static struct id_slot *ids_alloc(size_t cap)
{
	void *p = mmap(NULL, cap * sizeof(struct id_slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void ids_free(struct id_slot *ids, size_t cap)
{
	if (ids)
		munmap(ids, cap * sizeof(*ids));
}

/* The ids into a table of cap slots (a power of two, over twice their number). */
static int rehash_ids(struct dwstacks *d, size_t cap)
{
	struct id_slot *n = ids_alloc(cap);
	size_t i, nr = 0;

	if (!n)
		return -ENOMEM;
	for (i = 0; i < d->cap_ids; i++) {
		if (!d->ids[i].id)
			continue;
		*id_slot(n, cap, d->ids[i].id) = d->ids[i];
		nr++;
	}
	ids_free(d->ids, d->cap_ids);
	d->ids = n;
	d->cap_ids = cap;
	d->nr_ids = nr;
	return 0;
}

/*
 * Remembers id's stack. An id still held is counted and its stack forgotten:
 * the blocks that hold it may be the old one's or the new one's.
 */
static void remember_id(struct dwstacks *d, __u64 id, __s32 stack)
{
	struct id_slot *s;

	if (2 * (d->nr_ids + 1) > d->cap_ids && rehash_ids(d, d->cap_ids ? 2 * d->cap_ids : 1024)) {
		d->st.lost++;
		return;
	}
	s = id_slot(d->ids, d->cap_ids, id);
	if (s->id) {
		d->st.ids_reused++;
		s->stack = -1;
		return;
	}
	*s = (struct id_slot){ .id = id, .stack = stack, .seen = d->prunes };
	d->nr_ids++;
}

static __s32 by_id_locked(struct dwstacks *d, __u64 id, bool count_lost)
{
	struct id_slot *s = d->cap_ids ? id_slot(d->ids, d->cap_ids, id) : NULL;

	if (id && s && s->id == id)
		return s->stack;
	d->st.ids_lost += count_lost;
	return -1;
}

/* Marks the ids the map's values (nr of them) hold as seen by reading gen. */
static void mark_ids(struct dwstacks *d, const char *vals, __u32 nr, __u32 gen)
{
	struct id_slot *s;
	__u64 id;
	__u32 i;

	pthread_mutex_lock(&d->lock);
	for (i = 0; d->cap_ids && i < nr; i++) {
		memcpy(&id, vals + (size_t)i * d->refs.value_size + d->refs.id_off, sizeof(id));
		s = id_slot(d->ids, d->cap_ids, id);
		if (id && s->id == id)
			s->seen = gen;
	}
	pthread_mutex_unlock(&d->lock);
}

/* Reads the whole map, marking the ids it holds; false if it could not be read through. */
static bool read_refs(struct dwstacks *d, __u32 gen)
{
	char *keys = malloc((size_t)REFS_BATCH * d->refs.key_size);
	char *vals = malloc((size_t)REFS_BATCH * d->refs.value_size);
	__u32 in = 0, out = 0, nr;
	bool first = true;
	int err = 0;

	while (keys && vals && !err) {
		nr = REFS_BATCH;
		/* -1 and errno with libbpf before 1.0, -errno after: ENOENT is the end, with the last nr. */
		err = bpf_map_lookup_batch(d->refs.fd, first ? NULL : &in, &out, keys, vals, &nr, NULL) ? errno : 0;
		if (err && err != ENOENT)
			break;
		mark_ids(d, vals, nr, gen);
		in = out;
		first = false;
	}
	free(keys);
	free(vals);
	return err == ENOENT;
}

/* Empties slot i, moving back the ids after it that would no longer be found (linear probing). */
static void drop_slot(struct dwstacks *d, size_t i)
{
	size_t mask = d->cap_ids - 1, j = i, k;

	for (;;) {
		j = (j + 1) & mask;
		if (!d->ids[j].id)
			break;
		k = id_hash(d->ids[j].id, d->cap_ids);
		/* Stays where it is when its home slot k lies cyclically in (i, j]. */
		if (i <= j ? i < k && k <= j : i < k || k <= j)
			continue;
		d->ids[i] = d->ids[j];
		i = j;
	}
	d->ids[i] = (struct id_slot){};
	d->nr_ids--;
}

/*
 * Drops the ids the map has not held at this reading nor at the one before
 * (nor came before that one): a record sent under an id (heap: before its
 * pointer goes in the live map), or charged to it (mutex: a waker looked up
 * before it was replaced), is read by then. The reading thread's, without
 * the lock.
 */
static void prune(struct dwstacks *d)
{
	__u32 gen = d->prunes + 1;
	bool ok = read_refs(d, gen);
	size_t cap = 1024, marked = 0, i = 0;

	pthread_mutex_lock(&d->lock);
	/* A map not read through keeps every id: dropping one still held would lose its stack. */
	while (ok && i < d->cap_ids) {
		if (d->ids[i].id && d->ids[i].seen < gen - 1)
			drop_slot(d, i);  /* an id moved into slot i is looked at next */
		else
			i++;
	}
	/* Counted apart: a drop can move an id looked at already (wrapped round the end) into slot i. */
	for (i = 0; ok && i < d->cap_ids; i++)
		marked += d->ids[i].id && d->ids[i].seen == gen;
	/* Smaller when a quarter full would do: a run's churn does not keep its peak's table. */
	while (cap < 4 * d->nr_ids)
		cap *= 2;
	if (cap < d->cap_ids / 2)
		rehash_ids(d, cap);
	d->prunes = gen;
	d->ids_pruned = d->nr_ids;
	d->ids_marked = marked;
	d->last_prune = monotonic_s();
	d->prune_asked = false;
	pthread_mutex_unlock(&d->lock);
}

static bool has_values(const struct prof_val *v)
{
	int i;

	for (i = 0; i < PROF_NR_VALUES; i++)
		if (v->v[i])
			return true;
	return false;
}

/* One profile record: its stack unwound here, remembered and counted under the lock. */
static int on_prof(void *ctx, void *data, size_t size)
{
	struct dwstacks *d = ctx;
	const struct prof_dwarf *r = data;
	__u64 ips[FNPROF_STACK_DEPTH];
	struct unwinder *uw;
	struct prof_key key;
	struct unwind_counts how = {};
	bool truncated = false;
	int n = 0;

	if (size < sizeof(*r) || r->user.stack_len > size - sizeof(*r))
		return 0;
	key = r->key;
	key.caller = 0;
	/* -a: the process's own unwinder (key.pid); a kernel thread has no user registers, none. */
	uw = !d->all ? d->uw : r->op == PDW_STACK && r->user.regs[FNPROF_REG_IP] ? unwinder_of(d, key.pid) : NULL;
	if (uw && r->op == PDW_STACK && r->key.caller) {  /* the leaf the copy no longer has */
		ips[0] = r->key.caller;
		n = 1 + unwinder_unwind(uw, &r->user, ips + 1, FNPROF_STACK_DEPTH - 1, &truncated, &how);
	} else if (uw && r->op == PDW_STACK) {
		n = unwinder_unwind(uw, &r->user, ips, FNPROF_STACK_DEPTH, &truncated, &how);
	}
	pthread_mutex_lock(&d->lock);
	if (r->op == PDW_BY_ID) {
		key.ustack = by_id_locked(d, r->id, true);
	} else {
		key.ustack = n ? intern(d, key.pid, ips, n) : -1;
		d->st.lost += n && key.ustack < 0;
		d->st.samples++;
		d->st.truncated += truncated;
		add_frames(&d->st, &how);
		if (r->id)
			remember_id(d, r->id, key.ustack);
	}
	if (has_values(&r->val))
		count_prof(d, &key, &r->val);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* After each pass of the reader, with the lock held: its CPU time so far; -a: once a second, exits. */
static void pass_done(void *ctx)
{
	struct dwstacks *d = ctx;
	double now = monotonic_s();
	size_t fresh;

	d->st.cpu_s = thread_cpu_s();
	d->st.unwinders = d->all ? d->nr_uws : 1;
	d->st.ids_held = d->nr_ids;
	if (d->all && now - d->last_sweep >= 1) {
		drop_exited(d);
		d->last_sweep = now;
	}
	/*
	 * Ids are dropped every DWSTACK_PRUNE_S, after a report, or sooner when
	 * more came since the last time than the map held then (and
	 * PRUNE_SOONER_IDS): a reading of the map costs no more than the ids
	 * that came meanwhile.
	 */
	fresh = d->nr_ids - d->ids_pruned;
	d->prune_due = d->refs.fd >= 0 && (now - d->last_prune >= DWSTACK_PRUNE_S ||
					   ((d->prune_asked || (fresh > PRUNE_SOONER_IDS && fresh > d->ids_marked)) &&
					    now - d->last_prune >= DWSTACK_PRUNE_S / 8));
}

/* After pass_done, without the lock: the map of ids read when due (that takes a while with many). */
static void pass_idle(void *ctx)
{
	struct dwstacks *d = ctx;

	if (d->prune_due)
		prune(d);
}

static struct dwstacks *dwstacks_new(pid_t pid)
{
	struct dwstacks *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	d->stack_index = calloc(2 * DWSTACK_MAX, sizeof(*d->stack_index));
	d->refs.fd = -1;
	d->all = !pid;   /* -a: an unwinder per process (unwinder_of) */
	d->uw = d->all ? NULL : unwinder_new(pid, NULL);
	if (d->stack_index && (d->uw || d->all))
		return d;
	dwstacks_stop(d);
	return NULL;
}

int dwstacks_start(int rb_fd, pid_t pid, bool per_thread, struct dwstacks **out)
{
	struct dwstacks *d = dwstacks_new(pid);
	int err = -ENOMEM;

	if (!d)
		return -ENOMEM;
	d->per_thread = per_thread;
	if (!kt_init(&d->counts, sizeof(struct dwstack_count), sizeof(struct sample_key)))
		err = rb_reader_start(&d->rd, rb_fd, on_sample, d, &d->lock, pass_done, NULL);
	if (err) {
		dwstacks_stop(d);
		return err;
	}
	*out = d;
	return 0;
}

int dwstacks_start_prof(int rb_fd, pid_t pid, const struct dwstacks_refs *refs, struct dwstacks **out)
{
	struct dwstacks *d = dwstacks_new(pid);
	int err = -ENOMEM;

	if (!d)
		return -ENOMEM;
	d->refs = refs ? *refs : (struct dwstacks_refs){ .fd = -1 };
	if (d->refs.fd >= 0 && d->refs.id_off + sizeof(__u64) > d->refs.value_size)
		d->refs.fd = -1;
	d->last_prune = monotonic_s();
	if (!rehash_ids(d, 1024) && !kt_init(&d->pc, sizeof(struct dwstack_prof), sizeof(struct prof_key)))
		err = rb_reader_start(&d->rd, rb_fd, on_prof, d, &d->lock, pass_done, pass_idle);
	if (err) {
		dwstacks_stop(d);
		return err;
	}
	*out = d;
	return 0;
}

void dwstacks_set_snapshots(struct dwstacks *d, struct mapsnap *m)
{
	d->snap = m;
}

void dwstacks_stop(struct dwstacks *d)
{
	size_t i;

	if (!d)
		return;
	rb_reader_stop(&d->rd);
	unwinder_free(d->uw);
	for (i = 0; i < d->nr_uws; i++)
		unwinder_free(d->uws[i].uw);
	for (i = 0; i < d->nr_stacks; i++)
		free(d->stacks[i].ips);
	free(d->stacks);
	free(d->stack_index);
	free(d->counts.e);
	free(d->pc.e);
	ids_free(d->ids, d->cap_ids);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void dwstacks_sync(struct dwstacks *d, bool final)
{
	pthread_mutex_lock(&d->lock);
	/* Behind: the samples it has not unwound yet are in a later report (or, at the end, in none). */
	d->st.sync_timeouts += !rb_reader_sync_locked(&d->rd, final);
	pthread_mutex_unlock(&d->lock);
}

/*
 * A copy of table t's entries, *n of them (the caller frees it; NULL, *n 0,
 * on failure), and the statistics as they are now: those of the copy.
 */
static void *copy_out(struct dwstacks *d, const struct ktable *t, size_t *n)
{
	char *c;
	size_t i;

	pthread_mutex_lock(&d->lock);
	c = calloc(t->nr ? t->nr : 1, t->esize);
	*n = 0;
	for (i = 0; c && i < t->cap; i++)
		if (t->used[i])
			memcpy(c + (*n)++ * t->esize, t->e + i * t->esize, t->esize);
	d->st_copied = d->st;
	pthread_mutex_unlock(&d->lock);
	return c;
}

size_t dwstacks_counts(struct dwstacks *d, struct dwstack_count **out)
{
	size_t n;

	*out = copy_out(d, &d->counts, &n);
	return n;
}

size_t dwstacks_prof_counts(struct dwstacks *d, struct dwstack_prof **out)
{
	size_t n;

	*out = copy_out(d, &d->pc, &n);
	return n;
}

__s32 dwstacks_by_id(struct dwstacks *d, __u64 id)
{
	__s32 s;

	pthread_mutex_lock(&d->lock);
	s = by_id_locked(d, id, false);
	pthread_mutex_unlock(&d->lock);
	return s;
}

void dwstacks_prune_soon(struct dwstacks *d)
{
	pthread_mutex_lock(&d->lock);
	d->prune_asked = true;
	pthread_mutex_unlock(&d->lock);
}

int dwstacks_stack(struct dwstacks *d, __s32 id, __u64 *ips, int max)
{
	const struct ustack *s;
	int n = -ENOENT;

	pthread_mutex_lock(&d->lock);
	if (id >= DWSTACK_BASE && (size_t)(id - DWSTACK_BASE) < d->nr_stacks) {
		s = &d->stacks[id - DWSTACK_BASE];
		n = s->nr < max ? s->nr : max;
		memcpy(ips, s->ips, n * sizeof(*ips));
	}
	pthread_mutex_unlock(&d->lock);
	return n;
}

void dwstacks_stats(struct dwstacks *d, struct dwstack_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->st_copied;
	pthread_mutex_unlock(&d->lock);
}

void dwstacks_print_frames(const struct dwstack_stats *st, FILE *out)
{
	fprintf(out, "; frames above the leaves: %llu by CFI, %llu by frame pointer, %llu by the code's epilogue\n", (unsigned long long)st->frames_cfi, (unsigned long long)st->frames_fp,
		(unsigned long long)st->frames_epilogue);
}

static void unwind_json(struct json *j, const struct dwstack_stats *st, const struct dwstack_json *x)
{
	const struct json_kv kv[] = {
		{ "stack_bytes", x->stack_bytes },
		{ "samples", st->samples },
		{ "truncated", st->truncated },
		{ "lost", st->lost },
		{ "ids_lost", st->ids_lost },
		{ "ids_reused", st->ids_reused },
		{ "ids_held", st->ids_held },
		{ "unwinders", st->unwinders },
		{ "unwinders_evicted", st->unwinders_evicted },
		{ "fp_fallback", st->fp_fallback + x->fp_fallback },
		{ "ringbuf_full", x->ringbuf_full },
		{ "sync_timeouts", st->sync_timeouts },
		{ "cpu_ns", (__u64)(st->cpu_s * 1e9) },
		{ "frames_cfi", st->frames_cfi },
		{ "frames_fp", st->frames_fp },
		{ "frames_epilogue", st->frames_epilogue },
	};

	json_obj_begin(j, "unwind");
	JSON_U64S(j, kv);
	if (x->inuse_lost)
		json_u64(j, "inuse_stacks_lost", *x->inuse_lost);
	json_obj_end(j);
}

void dwstacks_json(struct dwstacks *d, struct json *j, const struct dwstack_json *x)
{
	struct dwstack_stats st;

	dwstacks_stats(d, &st);
	unwind_json(j, &st, x);
}
