// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/runcache.h"
#include "trace/core_relos.h"
#include "trace/kernel_types.h"

#define MAX_ROOTS 64      /* distinct root types of the relocations */
#define MAX_ACCESS 64     /* an access string's indexes (libbpf's BPF_CORE_SPEC_MAX_LEN) */

/* A relocation's root type, by kind and essential name. */
struct root {
	const char *name;
	size_t len;
	bool is_enum;
	__u16 kind;
	bool found;
};

/* A kernel type that is a root's candidate. */
struct cand {
	__u32 id;
	size_t root;
};

struct build {
	const struct btf *local, *kern;
	__u32 nr_kern;
	unsigned char **keep;   /* per kernel composite: the members kept (a bit each), NULL if none */
	__u32 *new_id;          /* per kernel type: its id in out, 0 while not there */
	struct root roots[MAX_ROOTS];
	size_t nr_roots;
	struct cand *cands;
	size_t nr_cands, cap_cands;
	struct btf *out;
	int err;
};

/* libbpf's bpf_core_essential_name_len(): a name less its ___flavour. */
static size_t essential_len(const char *name)
{
	size_t n = strlen(name);
	int i;

	for (i = (int)n - 5; i >= 0; i--)
		if (name[i] != '_' && name[i + 1] == '_' && name[i + 2] == '_' && name[i + 3] == '_' &&
		    name[i + 4] != '_')
			return i + 1;
	return n;
}

static bool is_enum_kind(__u16 kind)
{
	return kind == BTF_KIND_ENUM || kind == BTF_KIND_ENUM64;
}

static const struct btf_type *skip_mods(const struct btf *btf, __u32 id, __u32 *out)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		id = t->type;
		t = btf__type_by_id(btf, id);
	}
	*out = id;
	return t;
}

/* The kinds of relocation whose outcome the kept types give as the whole BTF does. */
static bool supported_kind(__u32 kind)
{
	return kind <= BPF_CORE_FIELD_RSHIFT_U64 || kind == BPF_CORE_TYPE_ID_LOCAL ||
	       kind == BPF_CORE_ENUMVAL_EXISTS || kind == BPF_CORE_ENUMVAL_VALUE;
}

/* Notes r's root type (core_relos_each): false, with b->err, for a relocation the kept types cannot serve. */
static bool add_root(void *ctx, const char *sec, const struct bpf_core_relo *r)
{
	struct build *b = ctx;
	const struct btf_type *t = btf__type_by_id(b->local, r->type_id);
	const char *name = t ? btf__name_by_offset(b->local, t->name_off) : NULL;
	size_t i, len;

	(void)sec;
	if (r->kind == BPF_CORE_TYPE_ID_LOCAL)
		return true;
	if (!supported_kind(r->kind) || !name || !*name ||
	    !(btf_is_composite(t) || is_enum_kind(btf_kind(t)))) {
		b->err = -EOPNOTSUPP;
		return false;
	}
	len = essential_len(name);
	for (i = 0; i < b->nr_roots; i++)
		if (b->roots[i].len == len && !strncmp(b->roots[i].name, name, len) &&
		    (b->roots[i].kind == btf_kind(t) || (b->roots[i].is_enum && is_enum_kind(btf_kind(t)))))
			return true;
	if (b->nr_roots == MAX_ROOTS) {
		b->err = -E2BIG;
		return false;
	}
	b->roots[b->nr_roots++] = (struct root){
		.name = name, .len = len, .kind = btf_kind(t), .is_enum = is_enum_kind(btf_kind(t)),
	};
	return true;
}

static int push_cand(struct build *b, __u32 id, size_t root)
{
	if (b->nr_cands == b->cap_cands) {
		size_t cap = b->cap_cands ? 2 * b->cap_cands : 16;
		struct cand *c = realloc(b->cands, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		b->cands = c;
		b->cap_cands = cap;
	}
	b->cands[b->nr_cands++] = (struct cand){ .id = id, .root = root };
	return 0;
}

/* One pass over the kernel's types: every candidate of every root (libbpf searches once per root). */
static int find_cands(struct build *b)
{
	__u32 id;
	size_t i, len;
	int err;

	for (id = 1; id < b->nr_kern; id++) {
		const struct btf_type *t = btf__type_by_id(b->kern, id);
		const char *name;

		if (!t || !t->name_off || !(btf_is_composite(t) || is_enum_kind(btf_kind(t))))
			continue;
		name = btf__name_by_offset(b->kern, t->name_off);
		len = name ? essential_len(name) : 0;
		for (i = 0; len && i < b->nr_roots; i++) {
			struct root *r = &b->roots[i];

			if (r->len != len || strncmp(r->name, name, len) ||
			    !(r->kind == btf_kind(t) || (r->is_enum && is_enum_kind(btf_kind(t)))))
				continue;
			r->found = true;
			err = push_cand(b, id, i);
			if (err)
				return err;
		}
	}
	for (i = 0; i < b->nr_roots; i++)
		if (!b->roots[i].found)
			return -EOPNOTSUPP;   /* libbpf would look in the modules' BTF */
	return 0;
}

/* Keeps member m of the kernel's composite id. */
static int keep_member(struct build *b, __u32 id, __u32 m)
{
	const struct btf_type *t = btf__type_by_id(b->kern, id);

	if (!b->keep[id] && !(b->keep[id] = calloc(btf_vlen(t) / 8 + 1, 1)))
		return -ENOMEM;
	b->keep[id][m / 8] |= 1 << m % 8;
	return 0;
}

/*
 * As libbpf's bpf_core_match_member(): the member of composite id named
 * name, looked for through anonymous members too, each kept on the way.
 * Its type into *next; 1 if found, 0 if not, or -errno.
 */
static int match_member(struct build *b, __u32 id, const char *name, __u32 *next)
{
	const struct btf_type *t = skip_mods(b->kern, id, &id);
	const struct btf_member *m;
	int i, found;

	if (!t || !btf_is_composite(t))
		return 0;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *mname = btf__name_by_offset(b->kern, m->name_off);

		if (!mname || !*mname) {
			found = match_member(b, m->type, name, next);
			if (found)
				return found < 0 ? found : keep_member(b, id, i) ? -ENOMEM : 1;
		} else if (!strcmp(mname, name)) {
			*next = m->type;
			return keep_member(b, id, i) ? -ENOMEM : 1;
		}
	}
	return 0;
}

/* The root of the relocation on local type id: its index, or nr_roots. */
static size_t root_of(const struct build *b, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(b->local, id);
	const char *name = t ? btf__name_by_offset(b->local, t->name_off) : NULL;
	size_t i, len = name ? essential_len(name) : 0;

	for (i = 0; len && i < b->nr_roots; i++)
		if (b->roots[i].len == len && !strncmp(b->roots[i].name, name, len) &&
		    (b->roots[i].kind == btf_kind(t) || (b->roots[i].is_enum && is_enum_kind(btf_kind(t)))))
			return i;
	return b->nr_roots;
}

/* An access string ("0:19:2") into acc: how many indexes, or -EINVAL. */
static int parse_access(const char *s, __u32 *acc)
{
	int n = 0;
	char *end;

	while (s && *s && n < MAX_ACCESS) {
		acc[n++] = strtoul(s, &end, 10);
		if (end == s || (*end && *end != ':'))
			return -EINVAL;
		s = *end ? end + 1 : end;
	}
	return n && s && !*s ? n : -EINVAL;
}

/*
 * Keeps what access acc[0..n) on local type lid reads in the kernel's
 * candidate kid, as libbpf's bpf_core_spec_match() walks it: named members
 * by name (a local anonymous member is only a step of the local type),
 * array elements by index. 0 or -errno.
 */
static int walk(struct build *b, __u32 lid, __u32 kid, const __u32 *acc, int n)
{
	const struct btf_type *lt, *kt;
	int i, found;

	for (i = 1; i < n; i++) {
		lt = skip_mods(b->local, lid, &lid);
		if (lt && btf_is_composite(lt) && acc[i] < btf_vlen(lt)) {
			const struct btf_member *m = btf_members(lt) + acc[i];
			const char *name = btf__name_by_offset(b->local, m->name_off);

			lid = m->type;
			if (!name || !*name)
				continue;
			found = match_member(b, kid, name, &kid);
			if (found <= 0)
				return found;
		} else if (lt && btf_is_array(lt)) {
			kt = skip_mods(b->kern, kid, &kid);
			if (!kt || !btf_is_array(kt))
				return 0;
			lid = btf_array(lt)->type;
			kid = btf_array(kt)->type;
		} else {
			return -EINVAL;
		}
	}
	return 0;
}

/* Keeps what field relocation r reads in each candidate of its root (core_relos_each). */
static bool keep_relo(void *ctx, const char *sec, const struct bpf_core_relo *r)
{
	struct build *b = ctx;
	__u32 acc[MAX_ACCESS];
	size_t i, root;
	int n;

	(void)sec;
	/* Enum values: the candidate enums are kept whole. */
	if (r->kind > BPF_CORE_FIELD_RSHIFT_U64)
		return true;
	n = parse_access(btf__name_by_offset(b->local, r->access_str_off), acc);
	root = root_of(b, r->type_id);
	b->err = n < 0 ? n : root == b->nr_roots ? -EINVAL : 0;
	for (i = 0; !b->err && i < b->nr_cands; i++)
		if (b->cands[i].root == root)
			b->err = walk(b, r->type_id, b->cands[i].id, acc, n);
	return !b->err;
}

static int emit(struct build *b, __u32 id);

static bool kept(const struct build *b, __u32 id, int m)
{
	return b->keep[id] && b->keep[id][m / 8] & 1 << m % 8;
}

/* A struct or union with its kept members, each member's type first (embedded types: no cycle). */
static int emit_composite(struct build *b, __u32 id, const struct btf_type *t)
{
	const struct btf_member *m = btf_members(t);
	const char *name = t->name_off ? btf__name_by_offset(b->kern, t->name_off) : NULL;
	int n = btf_vlen(t), i, err = 0, new_id;
	int *types = calloc(n + 1, sizeof(*types));

	if (!types)
		return -ENOMEM;
	for (i = 0; i < n && err >= 0; i++)
		if (kept(b, id, i))
			err = types[i] = emit(b, m[i].type);
	new_id = err < 0 ? err : btf_is_struct(t) ? btf__add_struct(b->out, name, t->size) :
						    btf__add_union(b->out, name, t->size);
	for (i = 0, err = new_id; i < n && err >= 0; i++)
		if (kept(b, id, i))
			err = btf__add_field(b->out, btf__name_by_offset(b->kern, m[i].name_off), types[i],
					     btf_member_bit_offset(t, i), btf_member_bitfield_size(t, i));
	free(types);
	return err < 0 ? err : new_id;
}

/* An enum with all its values. */
static int emit_enum(struct build *b, const struct btf_type *t)
{
	const char *name = t->name_off ? btf__name_by_offset(b->kern, t->name_off) : NULL;
	int i, err, new_id;

	if (btf_is_enum(t)) {
		const struct btf_enum *e = btf_enum(t);

		new_id = err = btf__add_enum(b->out, name, t->size);
		for (i = 0; i < btf_vlen(t) && err >= 0; i++, e++)
			err = btf__add_enum_value(b->out, btf__name_by_offset(b->kern, e->name_off),
						  btf_kflag(t) ? (__s64)e->val : (__s64)(__u32)e->val);
	} else {
		const struct btf_enum64 *e = btf_enum64(t);

		new_id = err = btf__add_enum64(b->out, name, t->size, btf_kflag(t));
		for (i = 0; i < btf_vlen(t) && err >= 0; i++, e++)
			err = btf__add_enum64_value(b->out, btf__name_by_offset(b->kern, e->name_off),
						    btf_enum64_value(e));
	}
	return err < 0 ? err : new_id;
}

/*
 * Kernel type id in the kept types, as far as CO-RE looks at it: typedefs
 * and modifiers left out (CO-RE skips them), pointers to void (CO-RE takes
 * any two pointers for compatible). Its new id, or -errno.
 */
static int emit_new(struct build *b, const struct btf_type *t, __u32 id)
{
	const char *name = btf__name_by_offset(b->kern, t->name_off);
	int elem, index;

	if (btf_is_mod(t) || btf_is_typedef(t))
		return emit(b, t->type);
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
		if (btf_int_offset(t) || btf_int_bits(t) != 8 * t->size)
			return -EOPNOTSUPP;
		return btf__add_int(b->out, name, t->size, btf_int_encoding(t));
	case BTF_KIND_PTR:
		return btf__add_ptr(b->out, 0);
	case BTF_KIND_ARRAY:
		elem = emit(b, btf_array(t)->type);
		index = elem < 0 ? elem : emit(b, btf_array(t)->index_type);
		return index < 0 ? index : btf__add_array(b->out, index, elem, btf_array(t)->nelems);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return emit_composite(b, id, t);
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		return emit_enum(b, t);
	case BTF_KIND_FWD:
		return btf__add_fwd(b->out, name, btf_kflag(t) ? BTF_FWD_UNION : BTF_FWD_STRUCT);
	case BTF_KIND_FLOAT:
		return btf__add_float(b->out, name, t->size);
	default:
		return -EOPNOTSUPP;
	}
}

static int emit(struct build *b, __u32 id)
{
	const struct btf_type *t;
	int new_id;

	if (!id)
		return 0;
	if (id >= b->nr_kern || !(t = btf__type_by_id(b->kern, id)))
		return -EINVAL;
	if (b->new_id[id])
		return b->new_id[id];
	new_id = emit_new(b, t, id);
	if (new_id > 0)
		b->new_id[id] = new_id;
	return new_id;
}

/* The kept types of the relocations of ext (local's names) from the kernel's BTF, into b->out. */
static int build(struct build *b, const __u32 *ext, size_t len)
{
	size_t i;
	int err = 0;

	b->nr_kern = btf__type_cnt(b->kern);
	b->keep = calloc(b->nr_kern, sizeof(*b->keep));
	b->new_id = calloc(b->nr_kern, sizeof(*b->new_id));
	b->out = btf__new_empty();
	if (!b->keep || !b->new_id || !b->out)
		return -ENOMEM;
	if (!core_relos_each(b->local, ext, len, add_root, b))
		return b->err ? b->err : -EINVAL;
	err = find_cands(b);
	if (!err && !core_relos_each(b->local, ext, len, keep_relo, b))
		err = b->err ? b->err : -EINVAL;
	for (i = 0; !err && i < b->nr_cands; i++) {
		int id = emit(b, b->cands[i].id);

		err = id < 0 ? id : 0;
	}
	return err;
}

static void build_free(struct build *b)
{
	for (__u32 i = 0; b->keep && i < b->nr_kern; i++)
		free(b->keep[i]);
	free(b->keep);
	free(b->new_id);
	free(b->cands);
	btf__free(b->out);
	btf__free((struct btf *)b->kern);
	btf__free((struct btf *)b->local);
}

/* The file's name: the boot, and the object's types and relocations (FNV-1a). */
static void cache_name(char *name, size_t size, const void *btf_raw, size_t btf_len, const __u32 *ext, size_t len)
{
	const unsigned char *parts[2] = { btf_raw, (const unsigned char *)ext };
	size_t lens[2] = { btf_len, len }, i, k;
	__u64 h = 0xcbf29ce484222325ULL;
	char boot[64];

	for (k = 0; k < 2; k++)
		for (i = 0; i < lens[k]; i++)
			h = (h ^ parts[k][i]) * 0x100000001b3ULL;
	runcache_boot_id(boot, sizeof(boot));
	snprintf(name, size, "kernel-types-%s-%016llx", boot, (unsigned long long)h);
}

/*
 * An fd of the kept file name, if libbpf can read it as BTF; -EOPNOTSUPP if
 * it is empty: this boot's first run found that the whole BTF is needed.
 * Else -errno.
 */
static int open_kept(const char *name)
{
	int fd = runcache_open(name);
	struct stat st;
	char path[64];
	struct btf *btf;

	if (fd < 0)
		return fd;
	if (!fstat(fd, &st) && !st.st_size) {
		close(fd);
		return -EOPNOTSUPP;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	btf = btf__parse_raw(path);
	if (!btf || btf__type_cnt(btf) < 2) {
		close(fd);
		fd = -EINVAL;
	}
	btf__free(btf);
	return fd;
}

/* The built types as name (or, where /run/fnprof is not ours, in memory): an fd, or -errno. */
static int keep(const char *name, const struct btf *out)
{
	__u32 size = 0;
	const void *raw = btf__raw_data(out, &size);
	int fd;

	if (!raw)
		return -ENOMEM;
	if (!runcache_write(name, raw, size))
		return open_kept(name);
	fd = memfd_create("fnprof-kernel-types", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, raw, size) != (ssize_t)size) {
		close(fd);
		return -EIO;
	}
	return fd < 0 ? -errno : fd;
}

int kernel_types_open(const void *btf_raw, size_t btf_len, const __u32 *ext, size_t len)
{
	double t0 = monotonic_s();
	struct build b = {};
	char name[160];
	int fd;

	cache_name(name, sizeof(name), btf_raw, btf_len, ext, len);
	fd = open_kept(name);
	if (fd >= 0 || fd == -EOPNOTSUPP) {
		log_debug("kernel types for CO-RE: as this boot's first run found them (%s%s, %.2f ms)", name,
			  fd < 0 ? ": the whole BTF" : "", (monotonic_s() - t0) * 1e3);
		return fd;
	}
	b.local = btf__new(btf_raw, btf_len);
	b.kern = b.local ? btf__load_vmlinux_btf() : NULL;
	fd = b.kern ? build(&b, ext, len) : -errno;
	if (!fd) {
		log_debug("kernel types for CO-RE: %u of the kernel's %u types, for %zu types read (%s, built in %.1f ms)",
			  btf__type_cnt(b.out) - 1, b.nr_kern - 1, b.nr_roots, name, (monotonic_s() - t0) * 1e3);
		fd = keep(name, b.out);
	} else if (b.kern && fd != -ENOMEM) {
		/* Said once a boot (a type it lacks, or one the kept types cannot hold): no run need try again. */
		log_debug("kernel types for CO-RE: none (%s): the whole BTF, this boot", strerror(-fd));
		runcache_write(name, "", 0);
		fd = -EOPNOTSUPP;
	}
	build_free(&b);
	return fd;
}
