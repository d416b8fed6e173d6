// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the DWARF unwinder (user/stacks/unwind.c) on arbitrary stack
 * copies. Every byte of a sampled stack, and every register but the ones
 * the kernel sets, is the target's: no stack may crash fnprof or walk it
 * out of the copy.
 *
 * Input: the registers (17 x 8 bytes, DWARF order: the ip is taken inside
 * this program's own code, so that the walk meets real CFI), the pending
 * uretprobe returns (a count, then slots and addresses), then the stack.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>

#include "fnprof.h"
#include "stacks/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR (FNPROF_NR_REGS * 8 + 1 + FNPROF_MAX_RETS * 16)

/* The sample the input describes (malloc'd, the stack after it), or NULL. */
static struct dwarf_sample *sample_of(const uint8_t *data, size_t size)
{
	size_t len = (size - HDR) & ~(size_t)7;
	struct dwarf_sample *s = calloc(1, sizeof(*s) + len);

	if (!s)
		return NULL;
	s->pid = s->tid = getpid();
	s->kstack = s->ufp = -1;
	memcpy(s->regs, data, sizeof(s->regs));
	/* An ip in this program's text: code with CFI (a return address at the least). */
	s->regs[16] = (__u64)(uintptr_t)&LLVMFuzzerTestOneInput + s->regs[16] % 65536;
	s->nr_rets = data[FNPROF_NR_REGS * 8] % (FNPROF_MAX_RETS + 1);
	memcpy(s->ret_slot, data + FNPROF_NR_REGS * 8 + 1, sizeof(s->ret_slot));
	memcpy(s->ret_addr, data + FNPROF_NR_REGS * 8 + 1 + sizeof(s->ret_slot), sizeof(s->ret_addr));
	s->stack_len = len;
	memcpy(s + 1, data + HDR, len);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct unwinder *u;
	struct dwarf_sample *s;
	__u64 ips[128];
	bool truncated;

	if (!u)
		u = unwinder_new(getpid(), NULL);
	if (!u || size < HDR || !(s = sample_of(data, size)))
		return 0;
	unwinder_unwind(u, s, ips, 128, &truncated, NULL);
	free(s);
	return 0;
}
