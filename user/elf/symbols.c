// SPDX-License-Identifier: GPL-2.0
/* ELF function symbols: loading with libelf, lookup by address and by name. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "elf/debuginfo.h"
#include "elf/demangle.h"
#include "elf/ehframe.h"
#include "elf/elfcheck.h"
#include "base/safeopen.h"
#include "elf/symbols.h"

/* Where the object is for the target, to look for its debug file there; NULL path: don't. */
struct target_obj {
	const char *path;
	pid_t pid;
};

static int read_segments(Elf *elf, struct symtab *st)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	st->segs = calloc(n ? n : 1, sizeof(*st->segs));
	if (!st->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		st->segs[st->nr_segs++] = (struct segment){
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
			.offset = ph.p_offset, .filesz = ph.p_filesz,
			.exec = ph.p_flags & PF_X,
		};
	}
	return 0;
}

/* File offset of a function address; only executable, file-backed bytes qualify. */
static bool vaddr_to_off(const struct symtab *st, __u64 vaddr, __u64 *off)
{
	size_t i;

	for (i = 0; i < st->nr_segs; i++) {
		const struct segment *s = &st->segs[i];

		if (s->exec && vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*off = vaddr - s->vaddr + s->offset;
			return true;
		}
	}
	return false;
}

__u64 symtab_vaddr_to_off(const struct symtab *st, __u64 vaddr, __u64 *off)
{
	size_t i;

	for (i = 0; i < st->nr_segs; i++) {
		const struct segment *s = &st->segs[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*off = vaddr - s->vaddr + s->offset;
			return s->vaddr + s->filesz - vaddr;
		}
	}
	return 0;
}

int symtab_off_to_vaddr(const struct symtab *st, __u64 off, __u64 *vaddr)
{
	size_t i;

	for (i = 0; i < st->nr_segs; i++) {
		const struct segment *s = &st->segs[i];

		if (off >= s->offset && off < s->offset + s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}


struct loader {
	size_t cap;          /* of st->syms */
	size_t name_budget;  /* bytes of names (demangled ones too) still allowed */
};

/* Charges a name and its demangled forms to the budget. -E2BIG past a limit. */
static int charge_name(struct loader *l, const struct sym *e, size_t len)
{
	size_t n = len + (e->pretty ? strlen(e->pretty) : 0) + (e->base ? strlen(e->base) : 0);

	if (n > l->name_budget)
		return -E2BIG;
	l->name_budget -= n;
	return 0;
}

static int add_sym(struct symtab *st, struct loader *l, const char *name, const GElf_Sym *s)
{
	size_t len = strlen(name);
	struct sym *e;
	__u64 off;

	if (!vaddr_to_off(st, s->st_value, &off))
		return 0;
	if (st->nr >= SYMTAB_MAX_FUNCTIONS || len > SYMTAB_MAX_NAME_LEN)
		return -E2BIG;
	if (ARRAY_RESERVE(st->syms, st->nr + 1, l->cap))
		return -ENOMEM;
	e = &st->syms[st->nr];
	/*
	 * A .symtab with symbol versions (a debug file's of a versioned library) says
	 * "memcpy@@GLIBC_2.14": the name is what comes before, as in .dynsym.
	 */
	e->name = name[0] != '@' && strchr(name, '@') ? strndup(name, strchr(name, '@') - name) : strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->pretty = demangle(e->name);
	e->base = demangle_base(e->name);
	if (charge_name(l, e, len)) {
		free(e->name);
		free(e->pretty);
		free(e->base);
		return -E2BIG;
	}
	e->addr = s->st_value;
	e->size = s->st_size;
	e->offset = off;
	e->ifunc = GELF_ST_TYPE(s->st_info) == STT_GNU_IFUNC;
	e->global = GELF_ST_BIND(s->st_info) != STB_LOCAL;
	e->go = false;
	st->nr++;
	return 0;
}

/* Reads the functions of one symbol table section (SHT_SYMTAB or SHT_DYNSYM). */
static int read_table(Elf *elf, Elf_Scn *scn, struct symtab *st, struct loader *l)
{
	GElf_Shdr sh, strsh;
	Elf_Data *data;
	size_t i, n;
	GElf_Sym s;
	int err;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -EINVAL;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -EINVAL;
	/* Names are charged against a budget proportional to the string table they come from. */
	if (gelf_getshdr(elf_getscn(elf, sh.sh_link), &strsh))
		l->name_budget += 4 * strsh.sh_size;
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n; i++) {
		const char *name;
		int type;

		if (!gelf_getsym(data, i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		err = add_sym(st, l, name, &s);
		if (err)
			return err;
	}
	return 0;
}

struct go_syms {
	struct symtab *st;
	struct loader *l;
};

static int add_go_func(void *arg, const char *name, __u64 addr, __u64 size, bool abi0)
{
	struct go_syms *g = arg;
	GElf_Sym s = { .st_value = addr, .st_size = size,
		       .st_info = GELF_ST_INFO(STB_GLOBAL, STT_FUNC) };
	size_t nr = g->st->nr;
	char buf[512];
	int err;

	/* As .symtab names it: -f NAME is the function, not the wrapper assembly calls it through. */
	if (abi0 && snprintf(buf, sizeof(buf), "%s.abi0", name) < (int)sizeof(buf))
		name = buf;
	err = add_sym(g->st, g->l, name, &s);
	if (!err && g->st->nr > nr)
		g->st->syms[nr].go = true;
	return err;
}

static int cmp_addr(const void *key, const void *elem)
{
	__u64 a = *(const __u64 *)key, b = ((const struct sym *)elem)->addr;

	return a < b ? -1 : a > b;
}

/* Marks the symbol at addr a Go function: the code of a cgo program's C parts is not in the table. */
static int mark_go_func(void *arg, const char *name, __u64 addr, __u64 size, bool abi0)
{
	struct symtab *st = arg;
	struct sym *s = bsearch(&addr, st->syms, st->nr, sizeof(*st->syms), cmp_addr);

	(void)name, (void)size, (void)abi0;
	if (s)
		s->go = true;
	return 0;
}

/* A stripped Go binary still has the runtime's table of functions: their names from there. */
static int read_gopclntab(Elf *elf, struct symtab *st, struct loader *l)
{
	struct go_syms g = { .st = st, .l = l };
	int err = go_pclntab_funcs(elf, add_go_func, &g);

	if (err == -ENOENT || err == -EINVAL)
		return 0;   /* no table, or one of a layout not known: stripped as any other */
	if (!err && st->nr)
		st->source = SYMS_GOPCLNTAB;
	return err;
}

static Elf_Scn *find_section(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	return NULL;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Among aliases prefer the global name with a size, then the shortest. */
	if (x->global != y->global)
		return x->global ? -1 : 1;
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	return (int)strlen(x->name) - (int)strlen(y->name);
}

/* Sorts by address and keeps one symbol per address; a zero size extends to the next. */
static void sort_and_merge(struct symtab *st)
{
	size_t i, j = 0;

	if (!st->nr)
		return;
	qsort(st->syms, st->nr, sizeof(*st->syms), cmp_sym);
	for (i = 0; i < st->nr; i++) {
		if (j && st->syms[j - 1].addr == st->syms[i].addr) {
			free(st->syms[i].name);
			free(st->syms[i].pretty);
			free(st->syms[i].base);
			continue;
		}
		st->syms[j++] = st->syms[i];
	}
	st->nr = j;
	for (i = 0; i + 1 < st->nr; i++)
		if (!st->syms[i].size)
			st->syms[i].size = st->syms[i + 1].addr - st->syms[i].addr;
}

static bool name_in(const char *name, const char *const *names, size_t n)
{
	size_t k;

	for (k = 0; name && k < n; k++)
		if (!strcmp(name, names[k]))
			return true;
	return false;
}

#define NAME_IN(name, names) name_in(name, names, sizeof(names) / sizeof(names[0]))

/*
 * Whether the object takes part in unwinding that walks return addresses
 * (C++ exceptions, Rust panics) or moves stacks (Go): a uretprobe replaces
 * the return address on the stack, which such code cannot cope with. And
 * whether it runs code on stacks of its own making (coroutines with
 * swapcontext, signal handlers on an alternate stack), or longjmps: imports
 * only, since the C library defines these for everyone.
 */
static void find_markers(Elf *elf, struct symtab *st)
{
	static const char *const sections[] = { ".gcc_except_table", ".gopclntab", ".go.buildinfo" };
	static const char *const symbols[] = { "__cxa_throw", "__gxx_personality_v0", "_Unwind_RaiseException",
					       "rust_panic", "__rust_start_panic", "runtime.goexit" };
	static const char *const stack_switch[] = { "swapcontext", "setcontext", "sigaltstack" };
	static const char *const jumps[] = { "longjmp", "siglongjmp", "_longjmp", "__longjmp_chk" };
	Elf_Scn *scn = NULL;
	size_t shstrndx, i;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (NAME_IN(elf_strptr(elf, shstrndx, sh.sh_name), sections))
			st->unwinds = true;
		if ((sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *sname = gelf_getsym(data, i, &sym) ? elf_strptr(elf, sh.sh_link, sym.st_name) : NULL;

			if (NAME_IN(sname, symbols))
				st->unwinds = true;
			else if (sym.st_shndx == SHN_UNDEF && NAME_IN(sname, stack_switch))
				st->switches_stacks = true;
			else if (sym.st_shndx == SHN_UNDEF && NAME_IN(sname, jumps))
				st->longjmps = true;
		}
	}
}

/* The .symtab of the object's separate debug file: the object's own segments give the offsets. */
static int read_debug_file(Elf *elf, const struct target_obj *t, struct symtab *st, struct loader *l)
{
	char found[PATH_MAX];
	Elf_Scn *scn;
	Elf *dbg;
	int fd, err = 0;

	fd = debuginfo_open(elf, t->path, t->pid, found, sizeof(found));
	if (fd < 0)
		return 0;
	dbg = elfcheck_begin(fd, found);
	scn = dbg && elf_kind(dbg) == ELF_K_ELF ? find_section(dbg, SHT_SYMTAB) : NULL;
	if (scn) {
		err = read_table(dbg, scn, st, l);
		st->debug_file = strdup(found);
		if (!err && st->nr)
			st->source = st->debug_file ? SYMS_DEBUG_FILE : SYMS_NONE;
		err = err ? err : st->debug_file ? 0 : -ENOMEM;
	}
	if (dbg)
		elf_end(dbg);
	close(fd);
	return err;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Functions no symbol covers, from the unwind tables' FDEs: "object+0xADDR". */
static int add_unnamed(Elf *elf, const char *objpath, struct symtab *st, struct loader *l)
{
	struct fde_range *r;
	size_t i, n = ehframe_ranges(elf, &r), before = st->nr;
	char name[PATH_MAX + 32];
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		GElf_Sym s = { .st_value = r[i].start, .st_size = r[i].size };
		/* Looked up among the named ones only: those added here are not sorted yet. */
		struct symtab named = { .syms = st->syms, .nr = before };
		size_t was = st->nr;

		if (!r[i].start || symtab_lookup(&named, r[i].start))
			continue;
		snprintf(name, sizeof(name), "%s+0x%llx", base_name(objpath), (unsigned long long)r[i].start);
		err = add_sym(st, l, name, &s);
		if (!err && st->nr > was) {
			st->syms[was].unnamed = true;
			st->nr_unnamed++;
		}
	}
	free(r);
	return err;
}

static int read_symbols(Elf *elf, const struct target_obj *t, struct symtab *st, struct loader *l)
{
	Elf_Scn *scn = find_section(elf, SHT_SYMTAB);
	int err = 0;

	if (scn) {
		err = read_table(elf, scn, st, l);
		st->source = st->nr ? SYMS_SYMTAB : SYMS_NONE;
	}
	if (!err && !st->nr && t->path)
		err = read_debug_file(elf, t, st, l);
	/*
	 * A stripped Go binary still has the runtime's table of every function,
	 * before .dynsym: a cgo program's (Debian's go command) exports a few.
	 */
	if (!err && !st->nr)
		err = read_gopclntab(elf, st, l);
	if (!err && !st->nr) {
		scn = find_section(elf, SHT_DYNSYM);
		if (scn) {
			err = read_table(elf, scn, st, l);
			st->source = st->nr ? SYMS_DYNSYM : SYMS_NONE;
		}
	}
	return err;
}

static int load_elf(Elf *elf, const struct target_obj *t, const char *path, struct symtab *st)
{
	struct loader l = { .name_budget = 64u << 20 };
	GElf_Ehdr eh;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -EINVAL;
	st->dyn = eh.e_type == ET_DYN;
	st->entry = eh.e_entry;
	err = read_segments(elf, st);
	if (!err)
		err = read_symbols(elf, t, st, &l);
	if (err)
		return err;
	sort_and_merge(st);
	if (st->nr && st->source != SYMS_GOPCLNTAB)
		go_pclntab_funcs(elf, mark_go_func, st);   /* none in other programs (-ENOENT) */
	/* Only where symbols are missing: a full .symtab (or Go's own table) names every function already. */
	if (st->source != SYMS_SYMTAB && st->source != SYMS_DEBUG_FILE && st->source != SYMS_GOPCLNTAB) {
		err = add_unnamed(elf, t->path ? t->path : path, st, &l);
		sort_and_merge(st);
	}
	find_markers(elf, st);
	/* A Go binary whose .go.buildinfo cannot be read is one still (its version unknown). */
	st->go = go_info_read(elf, &st->go_info) != -ENOENT || st->source == SYMS_GOPCLNTAB;
	return err;
}

int symtab_open(const char *path)
{
	return open_regular(AT_FDCWD, path, 0);
}

/* Whether the file was truncated or rewritten while it was read: what was read may be cut short. */
static bool changed_since(int fd, const struct stat *before)
{
	struct stat now;

	return fstat(fd, &now) || now.st_size != before->st_size ||
	       now.st_mtim.tv_sec != before->st_mtim.tv_sec || now.st_mtim.tv_nsec != before->st_mtim.tv_nsec;
}

static int load(const char *path, const struct target_obj *t, struct symtab **out)
{
	struct stat before;
	struct symtab *st;
	Elf *elf;
	int fd, err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = symtab_open(path);
	if (fd < 0)
		return fd;
	if (fstat(fd, &before)) {
		close(fd);
		return -errno;
	}
	st = calloc(1, sizeof(*st));
	/* Read, not mapped: a file truncated while it is parsed gives short reads, not SIGBUS. */
	elf = elfcheck_begin(fd, t->path ? t->path : path);
	if (!st || !elf) {
		err = st ? -EINVAL : -ENOMEM;
		goto out;
	}
	st->path = strdup(path);
	err = st->path ? load_elf(elf, t, path, st) : -ENOMEM;
	if (!err && changed_since(fd, &before))
		err = -ESTALE;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err) {
		symtab_free(st);
		return err;
	}
	*out = st;
	return 0;
}

int symtab_markers(const char *path, struct symtab *out)
{
	Elf *elf;
	int fd;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = symtab_open(path);
	if (fd < 0)
		return fd;
	elf = elfcheck_begin(fd, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		find_markers(elf, out);
		out->go = go_info_read(elf, &out->go_info) != -ENOENT;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return elf ? 0 : -EINVAL;
}

int symtab_load(const char *path, struct symtab **out)
{
	struct target_obj none = {};

	return load(path, &none, out);
}

int symtab_load_target(const char *open_path, const char *target_path, pid_t pid, struct symtab **out)
{
	struct target_obj t = { .path = target_path, .pid = pid };

	return load(open_path, &t, out);
}

void symtab_free(struct symtab *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->nr; i++) {
		free(st->syms[i].name);
		free(st->syms[i].pretty);
		free(st->syms[i].base);
	}
	free(st->syms);
	free(st->segs);
	free(st->path);
	free(st->debug_file);
	free(st);
}

const struct sym *symtab_lookup(const struct symtab *st, __u64 vaddr)
{
	size_t lo = 0, hi = st->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (vaddr - st->syms[lo - 1].addr < (st->syms[lo - 1].size ? st->syms[lo - 1].size : 1))
		return &st->syms[lo - 1];
	return NULL;
}

static bool name_matches(const char *pattern, bool glob, const char *name)
{
	return name && (glob ? !fnmatch(pattern, name, 0) : !strcmp(pattern, name));
}

const char *sym_display_name(const struct sym *s)
{
	return s->pretty ? s->pretty : s->name;
}

bool pattern_is_glob(const char *pattern)
{
	return strpbrk(pattern, "*?[") != NULL;
}

size_t symtab_match(const struct symtab *st, const char *pattern, const struct sym ***out)
{
	bool glob = pattern_is_glob(pattern);
	const struct sym **res;
	size_t i, n = 0;

	res = calloc(st->nr ? st->nr : 1, sizeof(*res));
	if (!res) {
		*out = NULL;
		return 0;
	}
	for (i = 0; i < st->nr; i++) {
		const struct sym *sym = &st->syms[i];

		if (name_matches(pattern, glob, sym->name) || name_matches(pattern, glob, sym->pretty) ||
		    name_matches(pattern, glob, sym->base))
			res[n++] = sym;
	}
	*out = res;
	return n;
}

/* Levenshtein distance, capped: names longer than 255 count as far away. */
static unsigned int edit_distance(const char *a, const char *b)
{
	unsigned int row[256], i, j, la = strlen(a), lb = strlen(b);

	if (la > 255 || lb > 255)
		return 1000;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		unsigned int diag = row[0], tmp;

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned int best = diag + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			diag = tmp;
		}
	}
	return row[lb];
}

size_t symtab_suggest(const struct symtab *st, const char *name, const char **out, size_t max)
{
	unsigned int score[16];
	size_t i, j, n = 0;

	if (max > 16)
		max = 16;
	for (i = 0; i < st->nr; i++) {
		const char *cand = st->syms[i].base ? st->syms[i].base : st->syms[i].name;
		unsigned int d = edit_distance(name, cand);

		/* A name that contains what was typed is a good guess too. */
		if (strlen(name) >= 3 && strstr(cand, name))
			d = d < 2 ? d : 2;
		if (d > strlen(name) / 2 + 1)
			continue;
		for (j = n; j > 0 && score[j - 1] > d; j--)
			;
		if (j >= max)
			continue;
		if (n < max)
			n++;
		memmove(&out[j + 1], &out[j], (n - 1 - j) * sizeof(*out));
		memmove(&score[j + 1], &score[j], (n - 1 - j) * sizeof(*score));
		out[j] = cand;
		score[j] = d;
	}
	return n;
}
