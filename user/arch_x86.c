// SPDX-License-Identifier: GPL-2.0
/* x86-64: what user/arch.h asks of an architecture. */
#include <string.h>

#include <capstone/capstone.h>

#include "arch.h"

const char arch_lib_dirs[] = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64";

enum site_kind site_kind_of(const unsigned char *insn, size_t len)
{
	static const unsigned char nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

	if (len >= 1 && insn[0] >= 0x50 && insn[0] <= 0x57)
		return SITE_EMULATED;                   /* push %rax..%rdi */
	if (len >= 2 && insn[0] == 0x41 && insn[1] >= 0x50 && insn[1] <= 0x57)
		return SITE_EMULATED;                   /* push %r8..%r15 */
	if (len >= 5 && !memcmp(insn, nop5, 5))
		return SITE_NOP5;
	return SITE_STEPPED;
}

#define CALIB_FN(name, body) \
	".globl " #name "\n.type " #name ",@function\n" #name ":\n" body ".size " #name ", .-" #name "\n"
#define PUSH_POP_RET "\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"

__asm__(".text\n"
	CALIB_FN(fnprof_calib_emulated, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_stepped, "\tlea 0x1(%rdi),%rax\n\tret\n")
	CALIB_FN(fnprof_calib_nop5, "\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tret\n")
	CALIB_FN(fnprof_calib_ret, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_entry_only, PUSH_POP_RET));

/* The ret of PUSH_POP_RET: 1 + 3 + 1 bytes in. */
const unsigned int arch_calib_ret_offset = 5;

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
