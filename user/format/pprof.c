// SPDX-License-Identifier: GPL-2.0
/*
 * profile.proto, field numbers as in github.com/google/pprof/proto/profile.proto:
 * Profile{1 sample_type, 2 sample, 3 mapping, 4 location, 5 function,
 * 6 string_table, 9 time_nanos, 10 duration_nanos, 11 period_type, 12 period,
 * 14 default_sample_type}.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "base/array.h"
#include "format/pprof.h"
#include "base/sanitize.h"

/* A growable byte buffer, and the protobuf wire format on it. */
struct buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void put(struct buf *b, const void *data, size_t n)
{
	if (b->err || !n)  /* nothing to add: an empty message may have no buffer yet */
		return;
	if (ARRAY_RESERVE(b->p, b->len + n, b->cap)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put_varint(struct buf *b, __u64 v)
{
	unsigned char c[10];
	int n = 0;

	do {
		c[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	put(b, c, n);
}

/* Field with a varint (wire type 0); zero values are left out, as proto3 does. */
static void pb_uint(struct buf *b, int field, __u64 v)
{
	if (!v)
		return;
	put_varint(b, (__u64)field << 3);
	put_varint(b, v);
}

/* Field with bytes (wire type 2): strings, nested messages, packed arrays. */
static void pb_bytes(struct buf *b, int field, const void *data, size_t n)
{
	put_varint(b, (__u64)field << 3 | 2);
	put_varint(b, n);
	put(b, data, n);
}

static void pb_msg(struct buf *b, int field, struct buf *m)
{
	pb_bytes(b, field, m->p, m->len);
	if (m->err)
		b->err = m->err;
	m->len = 0;
}

static void pb_packed(struct buf *b, int field, const __u64 *v, int n, struct buf *tmp)
{
	int i;

	for (i = 0; i < n; i++)
		put_varint(tmp, v[i]);
	pb_msg(b, field, tmp);
}

/* Interned strings, functions, mappings and locations, each with its pprof id (index + 1). */
struct str_tab {
	char **s;
	size_t nr, cap;
	size_t *hash;   /* open addressing: index + 1, 0 = empty */
	size_t hcap;
};

struct function { __u64 name; };
struct mapping_ent { __u64 start, limit, pgoff, file; };
#define MAX_LINES 16  /* functions per location: inlined ones, then the one they are in */

/* function: the id of the first line's function, or of the chain's hash when inlined. */
struct location { __u64 ip, mapping, function; __u64 lines[MAX_LINES]; int nr_lines; };

/* Open addressing over (a, b) pairs -> id (0 = empty): functions by name, locations by (ip, function). */
struct id_index {
	__u64 *id;
	size_t cap;
};

struct pprof {
	struct str_tab strs;
	struct function *funcs;
	size_t nr_funcs, cap_funcs;
	struct id_index func_idx;
	struct mapping_ent *maps;
	size_t nr_maps, cap_maps;
	struct location *locs;
	size_t nr_locs, cap_locs;
	struct id_index loc_idx;
	struct buf samples;   /* encoded Sample messages, field 2 each */
	struct buf tmp, tmp2;
	__u64 period_ns, duration_ns;
	struct pprof_type types[PPROF_MAX_TYPES], period_type;
	int nr_types;
	const char *default_type;   /* NULL: readers take the last sample type */
};

static __u64 fnv(const char *s)
{
	__u64 h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int str_grow(struct str_tab *t)
{
	size_t i, ncap = t->hcap ? t->hcap * 2 : 1024;
	size_t *nh = calloc(ncap, sizeof(*nh));

	if (!nh)
		return -ENOMEM;
	for (i = 0; i < t->nr; i++) {
		size_t h = fnv(t->s[i]) & (ncap - 1);

		while (nh[h])
			h = (h + 1) & (ncap - 1);
		nh[h] = i + 1;
	}
	free(t->hash);
	t->hash = nh;
	t->hcap = ncap;
	return 0;
}

/* intern() for a string known to be valid UTF-8. */
static __u64 intern_valid(struct str_tab *t, const char *s)
{
	size_t h;

	if ((t->nr + 1) * 2 > t->hcap && str_grow(t))
		return 0;
	for (h = fnv(s) & (t->hcap - 1); t->hash[h]; h = (h + 1) & (t->hcap - 1))
		if (!strcmp(t->s[t->hash[h] - 1], s))
			return t->hash[h] - 1;
	if (ARRAY_RESERVE(t->s, t->nr + 1, t->cap))
		return 0;
	t->s[t->nr] = strdup(s);
	if (!t->s[t->nr])
		return 0;
	t->hash[h] = t->nr + 1;
	return t->nr++;
}

/* Index of s in the string table (string_table[0] is ""). */
static __u64 intern(struct pprof *p, const char *s)
{
	char *clean = NULL;
	__u64 id;

	/* profile.proto strings are UTF-8; target-provided names may not be, and may hold escapes. */
	if (!text_clean(s)) {
		clean = sanitize_text_dup(s);
		if (!clean)
			return 0;
	}
	id = intern_valid(&p->strs, clean ? clean : s);
	free(clean);
	return id;
}

struct pprof *pprof_new_types(const struct pprof_type *types, int nr, struct pprof_type period_type,
			      __u64 period, __u64 duration_ns)
{
	struct pprof *p = nr > 0 && nr <= PPROF_MAX_TYPES ? calloc(1, sizeof(*p)) : NULL;

	if (!p)
		return NULL;
	memcpy(p->types, types, nr * sizeof(*types));
	p->nr_types = nr;
	p->period_type = period_type;
	p->period_ns = period;
	p->duration_ns = duration_ns;
	intern(p, "");
	return p;
}

void pprof_default_type(struct pprof *p, const char *type)
{
	p->default_type = type;
}

struct pprof *pprof_new(__u64 period_ns, __u64 duration_ns)
{
	static const struct pprof_type cpu[] = { { "samples", "count" }, { "cpu", "nanoseconds" } };

	return pprof_new_types(cpu, 2, cpu[1], period_ns, duration_ns);
}

void pprof_free(struct pprof *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->strs.nr; i++)
		free(p->strs.s[i]);
	free(p->strs.s);
	free(p->strs.hash);
	free(p->funcs);
	free(p->func_idx.id);
	free(p->maps);
	free(p->locs);
	free(p->loc_idx.id);
	free(p->samples.p);
	free(p->tmp.p);
	free(p->tmp2.p);
	free(p);
}

static size_t pair_hash(__u64 a, __u64 b, size_t cap)
{
	return ((a * 0x9e3779b97f4a7c15ULL) ^ (b * 0xc2b2ae3d27d4eb4fULL)) >> 17 & (cap - 1);
}

/*
 * The id stored for (a, b) by key(), or the empty slot where it would go.
 * key(p, id, &a, &b) gives an id's pair back, so the index holds only ids.
 */
typedef void (*key_fn)(const struct pprof *p, __u64 id, __u64 *a, __u64 *b);

static __u64 *idx_slot(const struct pprof *p, const struct id_index *x, key_fn key, __u64 a, __u64 b)
{
	size_t h = pair_hash(a, b, x->cap);
	__u64 ka, kb;

	for (; x->id[h]; h = (h + 1) & (x->cap - 1)) {
		key(p, x->id[h], &ka, &kb);
		if (ka == a && kb == b)
			break;
	}
	return &x->id[h];
}

/* Keeps the index at most half full for nr ids. 0 or -ENOMEM. */
static int idx_reserve(const struct pprof *p, struct id_index *x, key_fn key, size_t nr)
{
	struct id_index n = { .cap = x->cap ? 2 * x->cap : 1024 };
	__u64 a, b;
	size_t i;

	if (2 * nr <= x->cap)
		return 0;
	n.id = calloc(n.cap, sizeof(*n.id));
	if (!n.id)
		return -ENOMEM;
	for (i = 0; i < x->cap; i++) {
		if (!x->id[i])
			continue;
		key(p, x->id[i], &a, &b);
		*idx_slot(p, &n, key, a, b) = x->id[i];
	}
	free(x->id);
	*x = n;
	return 0;
}

static void func_key(const struct pprof *p, __u64 id, __u64 *a, __u64 *b)
{
	*a = p->funcs[id - 1].name;
	*b = 0;
}

static void loc_key(const struct pprof *p, __u64 id, __u64 *a, __u64 *b)
{
	*a = p->locs[id - 1].ip;
	*b = p->locs[id - 1].function;
}

static __u64 function_id(struct pprof *p, const char *name)
{
	__u64 n = intern(p, name), *slot;

	if (idx_reserve(p, &p->func_idx, func_key, p->nr_funcs + 1))
		return 0;
	slot = idx_slot(p, &p->func_idx, func_key, n, 0);
	if (*slot)
		return *slot;
	if (ARRAY_RESERVE(p->funcs, p->nr_funcs + 1, p->cap_funcs))
		return 0;
	p->funcs[p->nr_funcs++].name = n;
	return *slot = p->nr_funcs;
}

static __u64 mapping_id(struct pprof *p, const char *object, __u64 start, __u64 limit, __u64 pgoff)
{
	__u64 file = intern(p, object);
	size_t i;

	if (!start)
		return 0;
	for (i = 0; i < p->nr_maps; i++)
		if (p->maps[i].start == start && p->maps[i].file == file)
			return i + 1;
	if (ARRAY_RESERVE(p->maps, p->nr_maps + 1, p->cap_maps))
		return 0;
	p->maps[p->nr_maps++] = (struct mapping_ent){ start, limit, pgoff, file };
	return p->nr_maps;
}

void pprof_mapping(struct pprof *p, const char *object, __u64 start, __u64 limit, __u64 pgoff)
{
	mapping_id(p, object, start, limit, pgoff);
}

__u64 pprof_location_inlined(struct pprof *p, __u64 ip, const char *const *funcs, int nr, const char *object,
			     __u64 map_start, __u64 map_limit, __u64 map_pgoff)
{
	__u64 mid = mapping_id(p, object, map_start, map_limit, map_pgoff), lines[MAX_LINES], key, *slot;
	int i;

	if (nr > MAX_LINES)
		nr = MAX_LINES;
	for (i = 0, key = 0; i < nr; i++) {
		lines[i] = function_id(p, funcs[i]);
		key = nr == 1 ? lines[i] : (key ^ lines[i]) * 0x100000001b3ULL + (1ULL << 63);
	}
	if (idx_reserve(p, &p->loc_idx, loc_key, p->nr_locs + 1))
		return 0;
	slot = idx_slot(p, &p->loc_idx, loc_key, ip, key);
	if (*slot)
		return *slot;
	if (ARRAY_RESERVE(p->locs, p->nr_locs + 1, p->cap_locs))
		return 0;
	p->locs[p->nr_locs] = (struct location){ .ip = ip, .mapping = mid, .function = key, .nr_lines = nr };
	memcpy(p->locs[p->nr_locs].lines, lines, nr * sizeof(*lines));
	return *slot = ++p->nr_locs;
}

__u64 pprof_location(struct pprof *p, __u64 ip, const char *func, const char *object, __u64 map_start,
		     __u64 map_limit, __u64 map_pgoff)
{
	return pprof_location_inlined(p, ip, &func, 1, object, map_start, map_limit, map_pgoff);
}

int pprof_sample(struct pprof *p, const __u64 *locs, int nr, __u64 count)
{
	__u64 values[2] = { count, count * p->period_ns };

	return pprof_sample_values(p, locs, nr, values, NULL, NULL);
}

int pprof_sample_values(struct pprof *p, const __u64 *locs, int nr, const __u64 *values, const char *label_key,
			const char *label_str)
{
	struct buf *m = &p->tmp, label = {};

	pb_packed(m, 1, locs, nr, &p->tmp2);
	pb_packed(m, 2, values, p->nr_types, &p->tmp2);
	if (label_key) {  /* Label{1 key, 2 str} */
		pb_uint(&label, 1, intern(p, label_key));
		pb_uint(&label, 2, intern(p, label_str));
		pb_msg(m, 3, &label);
		free(label.p);
	}
	pb_msg(&p->samples, 2, m);
	return p->samples.err;
}

int pprof_sample_process(struct pprof *p, const __u64 *locs, int nr, const __u64 *values, __u32 pid,
			 const char *comm, const char *label_key, const char *label_str)
{
	struct buf *m = &p->tmp, label = {};

	pb_packed(m, 1, locs, nr, &p->tmp2);
	pb_packed(m, 2, values, p->nr_types, &p->tmp2);
	pb_uint(&label, 1, intern(p, "pid"));   /* Label{1 key, 3 num} */
	pb_uint(&label, 3, pid);
	pb_msg(m, 3, &label);
	pb_uint(&label, 1, intern(p, "comm"));  /* Label{1 key, 2 str} */
	pb_uint(&label, 2, intern(p, comm));
	pb_msg(m, 3, &label);
	if (label_key) {
		pb_uint(&label, 1, intern(p, label_key));
		pb_uint(&label, 2, intern(p, label_str));
		pb_msg(m, 3, &label);
	}
	free(label.p);
	pb_msg(&p->samples, 2, m);
	return p->samples.err;
}

static void value_type(struct pprof *p, struct buf *out, int field, const char *type, const char *unit)
{
	struct buf *m = &p->tmp;

	pb_uint(m, 1, intern(p, type));
	pb_uint(m, 2, intern(p, unit));
	pb_msg(out, field, m);
}

static void encode_tables(struct pprof *p, struct buf *out)
{
	struct buf *m = &p->tmp, *line = &p->tmp2;
	size_t i;
	int k;

	for (i = 0; i < p->nr_maps; i++) {
		pb_uint(m, 1, i + 1);
		pb_uint(m, 2, p->maps[i].start);
		pb_uint(m, 3, p->maps[i].limit);
		pb_uint(m, 4, p->maps[i].pgoff);
		pb_uint(m, 5, p->maps[i].file);
		pb_uint(m, 7, 1);  /* has_functions */
		pb_msg(out, 3, m);
	}
	for (i = 0; i < p->nr_locs; i++) {
		pb_uint(m, 1, i + 1);
		pb_uint(m, 2, p->locs[i].mapping);
		pb_uint(m, 3, p->locs[i].ip);
		for (k = 0; k < p->locs[i].nr_lines; k++) {
			pb_uint(line, 1, p->locs[i].lines[k]);
			pb_msg(m, 4, line);
		}
		pb_msg(out, 4, m);
	}
	for (i = 0; i < p->nr_funcs; i++) {
		pb_uint(m, 1, i + 1);
		pb_uint(m, 2, p->funcs[i].name);
		pb_uint(m, 3, p->funcs[i].name);
		pb_msg(out, 5, m);
	}
}

static int gzip(const struct buf *in, unsigned char **out, size_t *len)
{
	z_stream z = {};
	uLong cap = compressBound(in->len) + 64;
	int ret;

	*out = malloc(cap);
	/* windowBits 15 + 16: a gzip header and trailer, as pprof readers expect. */
	if (!*out || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(*out);
		return -ENOMEM;
	}
	z.next_in = in->p;
	z.avail_in = in->len;
	z.next_out = *out;
	z.avail_out = cap;
	ret = deflate(&z, Z_FINISH);
	*len = z.total_out;
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(*out);
		return -EIO;
	}
	return 0;
}

int pprof_encode(struct pprof *p, unsigned char **out, size_t *len)
{
	struct buf b = {};
	struct timespec ts;
	size_t i;
	int err;

	for (i = 0; i < (size_t)p->nr_types; i++)
		value_type(p, &b, 1, p->types[i].type, p->types[i].unit);
	put(&b, p->samples.p, p->samples.len);
	encode_tables(p, &b);
	value_type(p, &b, 11, p->period_type.type, p->period_type.unit);
	pb_uint(&b, 12, p->period_ns);
	clock_gettime(CLOCK_REALTIME, &ts);
	pb_uint(&b, 9, ts.tv_sec * 1000000000ULL + ts.tv_nsec - p->duration_ns);
	pb_uint(&b, 10, p->duration_ns);
	if (p->default_type)
		pb_uint(&b, 14, intern(p, p->default_type));
	/* Last: the strings interned while encoding the rest are all there. */
	for (i = 0; i < p->strs.nr; i++)
		pb_bytes(&b, 6, p->strs.s[i], strlen(p->strs.s[i]));
	err = b.err ? b.err : p->samples.err ? p->samples.err : gzip(&b, out, len);
	free(b.p);
	return err;
}
