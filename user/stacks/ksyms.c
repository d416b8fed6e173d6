// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "stacks/ksyms.h"

struct ksym {
	__u64 addr;
	char *name;
};

struct ksyms {
	struct ksym *syms;
	size_t nr, cap;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add(struct ksyms *k, __u64 addr, const char *name)
{
	if (ARRAY_RESERVE(k->syms, k->nr + 1, k->cap))
		return -1;
	k->syms[k->nr].addr = addr;
	k->syms[k->nr].name = strdup(name);
	return k->syms[k->nr++].name ? 0 : -1;
}

struct ksyms *ksyms_load(void)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], type;
	unsigned long long addr;

	if (!k || !f) {
		free(k);
		if (f)
			fclose(f);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		/* Text symbols only: t/T (and weak w/W). */
		if (strchr("tTwW", type) && add(k, addr, name))
			break;
	}
	fclose(f);
	if (k->nr)
		qsort(k->syms, k->nr, sizeof(*k->syms), cmp_ksym);
	return k;
}

void ksyms_free(struct ksyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->nr; i++)
		free(k->syms[i].name);
	free(k->syms);
	free(k);
}

const char *ksyms_lookup(const struct ksyms *k, __u64 addr)
{
	size_t lo = 0, hi;

	if (!k || !k->nr || addr < k->syms[0].addr)
		return NULL;
	hi = k->nr;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->syms[lo].name;
}
