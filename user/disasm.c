// SPDX-License-Identifier: GPL-2.0
#include <capstone/capstone.h>

#include "disasm.h"

/* A direct jmp whose target lies outside [vaddr, vaddr + size): the function's frame is gone. */
static bool is_tail_call(const cs_insn *in, __u64 vaddr, size_t size)
{
	const cs_x86 *x = &in->detail->x86;
	__u64 target;

	if (in->id != X86_INS_JMP || x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	target = x->operands[0].imm;
	return target < vaddr || target >= vaddr + size;
}

int find_exits(const unsigned char *code, size_t size, __u64 vaddr, __u64 *offs, int max)
{
	const uint8_t *p = code;
	uint64_t addr = vaddr;
	size_t left = size;
	int n = 0, ok = 1;
	cs_insn *in;
	csh h;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -1;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(h);
	while (left && ok) {
		/* Decoding one at a time: it stops at bytes that are not an instruction. */
		ok = in && cs_disasm_iter(h, &p, &left, &addr, in);
		if (!ok)
			break;
		if ((in->id == X86_INS_RET || is_tail_call(in, vaddr, size)) && n < max)
			offs[n++] = in->address - vaddr;
	}
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	/* Padding after the last instruction (int3, nop) still decodes; anything else is suspect. */
	return ok ? n : -1;
}
