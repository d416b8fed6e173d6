// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the x86-64 code reader (user/target/arch_x86.c) on arbitrary
 * bytes. fnprof decodes the code of every function it resolves, and the jump
 * tables that code points to, in objects it does not trust: no byte sequence
 * may crash it (issue 37: a table it could not find divided by zero).
 *
 * Input: a flags byte (bit 0: keep_args; bit 1: a cold part), two bytes
 * where the cold part starts, then the code. The whole input is the object
 * the jump tables are read from, linked so that the code is at BASE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "target/arch.h"

#define BASE 0x400000ULL
#define HDR 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct object {
	const uint8_t *data;
	size_t size;
};

/* The object's bytes at vaddr, as user/target/resolve.c's read_object gives them. */
static size_t read_object(void *ctx, __u64 vaddr, void *buf, size_t len)
{
	const struct object *o = ctx;
	__u64 start = BASE - HDR;

	if (vaddr < start || vaddr - start >= o->size)
		return 0;
	if (len > o->size - (vaddr - start))
		len = o->size - (vaddr - start);
	memcpy(buf, o->data + (vaddr - start), len);
	return len;
}

/* A kernel not probed: what every kernel emulates is assumed. */
static const struct uprobe_insns unprobed;

/* The byte-level questions, asked at every offset (what probe placement asks of a site). */
static void each_offset(const uint8_t *code, size_t size)
{
	size_t off;
	bool on_ret;

	for (off = 0; off < size && off < 512; off++) {
		site_kind_of(code + off, size - off, NULL);
		site_kind_of(code + off, size - off, &unprobed);
		arch_branch_delta(code + off, size - off);
	}
	arch_pair_offset(code, size, BASE, 0, NULL, &on_ret);
}

/* What resolve.c asks of a function's code: exits, their kinds, leaf or not, where the entry goes. */
static void whole_function(const struct code_part *parts, size_t nr, bool keep_args, struct object *o)
{
	struct arch_code *a = arch_code_new(parts, nr);
	__u64 *exits = NULL, target;
	size_t skip;
	bool on_ret;
	int n, i;

	if (!a)
		return;
	n = find_exits(a, &exits);
	for (i = 0; i < n; i++)
		arch_exit_kind(a, exits[i], &target);
	free(exits);
	arch_is_leaf(a);
	skip = arch_entry_skip(a, keep_args, NULL, read_object, o);
	arch_entry_skip(a, keep_args, &unprobed, NULL, NULL);
	arch_pair_offset(parts[0].code, parts[0].size, parts[0].vaddr, skip, &unprobed, &on_ret);
	arch_code_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct object o = { data, size };
	struct code_part parts[2];
	size_t code_size, split;

	if (size <= HDR)
		return 0;
	code_size = size - HDR;
	split = (size_t)(data[1] | data[2] << 8) % (code_size + 1);
	if (!(data[0] & 2))
		split = code_size;
	each_offset(data + HDR, code_size);
	parts[0] = (struct code_part){ data + HDR, split, BASE };
	/* The cold part elsewhere, as gcc places NAME.cold. */
	parts[1] = (struct code_part){ data + HDR + split, code_size - split, BASE + 0x10000 };
	whole_function(parts, split < code_size ? 2 : 1, data[0] & 1, &o);
	return 0;
}
