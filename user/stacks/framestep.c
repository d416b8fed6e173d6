// SPDX-License-Identifier: GPL-2.0
/*
 * A frame without CFI: its caller from its code's epilogue, else from its
 * frame pointer. The epilogue decoder knows only the instructions that
 * compilers and JITs end functions with; anything else (a branch, a call,
 * an instruction it does not know) leaves the frame to the frame pointer.
 */
#include <string.h>

#include "stacks/framestep.h"

#define MAX_INSNS 12               /* an epilogue longer than this is not one */
/* rbx, rbp, r12-r15: what a callee keeps for its caller (the System V ABI). */
#define CALLEE_SAVED (1u << 3 | 1u << FS_REG_BP | 0xfu << 12)

/* x86's register numbers (in opcodes: rax rcx rdx rbx rsp rbp rsi rdi r8..r15) to DWARF's. */
static const __u8 hw_to_dwarf[16] = { 0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15 };

static bool add_pop(struct fs_epilogue *e, unsigned int hw, __u32 *off)
{
	if (hw == 4 || e->nr_pops == FS_MAX_POPS)  /* pop %rsp: not an epilogue's */
		return false;
	e->pop_reg[e->nr_pops] = hw_to_dwarf[hw];
	e->pop_off[e->nr_pops++] = *off;
	*off += 8;
	return true;
}

/*
 * One instruction at c: its length, 0 at the ret (e->ret_off set), -1 when
 * it is none an epilogue has. off: how far above the base rsp now is.
 */
static int decode_one(const unsigned char *c, size_t len, struct fs_epilogue *e, __u32 *off, bool first)
{
	__s32 imm;

	if (c[0] == 0xc3 || (len >= 2 && c[0] == 0xf3 && c[1] == 0xc3)) {  /* ret, rep ret */
		e->ret_off = *off;
		return 0;
	}
	if (c[0] == 0x90)                                                   /* nop */
		return 1;
	if (c[0] >= 0x58 && c[0] <= 0x5f)                                   /* pop %reg */
		return add_pop(e, c[0] - 0x58, off) ? 1 : -1;
	if (len >= 2 && c[0] == 0x41 && c[1] >= 0x58 && c[1] <= 0x5f)        /* pop %r8..%r15 */
		return add_pop(e, c[1] - 0x58 + 8, off) ? 2 : -1;
	if (first && (c[0] == 0xc9 || (len >= 3 && !memcmp(c, "\x48\x89\xec", 3)))) {  /* leave; mov %rbp,%rsp */
		e->from_bp = true;
		return c[0] == 0xc9 ? (add_pop(e, 5, off) ? 1 : -1) : 3;
	}
	if (len >= 4 && !memcmp(c, "\x48\x83\xc4", 3) && (__s8)c[3] >= 0) { /* add $imm8,%rsp */
		*off += c[3];
		return 4;
	}
	if (len >= 7 && !memcmp(c, "\x48\x81\xc4", 3)) {                    /* add $imm32,%rsp */
		memcpy(&imm, c + 3, sizeof(imm));
		if (imm < 0 || imm > 1 << 20)
			return -1;
		*off += imm;
		return 7;
	}
	return -1;
}

void framestep_decode(const unsigned char *code, size_t len, struct fs_epilogue *e)
{
	__u32 off = 0;
	size_t i = 0;
	int k, n;

	memset(e, 0, sizeof(*e));
	for (k = 0; k < MAX_INSNS && i < len; k++, i += n) {
		n = decode_one(code + i, len - i, e, &off, k == 0);
		if (n <= 0) {
			e->ok = !n;
			return;
		}
	}
}

static bool known(const struct fs_regs *r, int reg)
{
	return r->mask & 1u << reg;
}

static void set(struct fs_regs *r, int reg, __u64 v)
{
	r->regs[reg] = v;
	r->mask |= 1u << reg;
}

/* The caller found: a return address in executable memory (its call just before it), its stack above. */
static bool plausible(const struct fs_regs *r, const struct fs_regs *out, const struct fs_mem *m)
{
	__u64 ip = out->regs[FS_REG_IP];

	return ip > 1 && out->regs[FS_REG_SP] > r->regs[FS_REG_SP] && m->exec(m->ctx, ip - 1);
}

/* Straight to the ret: the registers it does not pop are the caller's as they are. */
static bool epilogue_step(const struct fs_regs *r, const struct fs_epilogue *e, const struct fs_mem *m,
			  struct fs_regs *out)
{
	__u64 base, v;
	int i;

	if (e->from_bp && (!known(r, FS_REG_BP) || r->regs[FS_REG_BP] < r->regs[FS_REG_SP]))
		return false;
	base = e->from_bp ? r->regs[FS_REG_BP] : r->regs[FS_REG_SP];
	out->mask = 0;
	for (i = 0; i < FS_NR_REGS; i++)
		if (known(r, i) && (CALLEE_SAVED >> i & 1))
			set(out, i, r->regs[i]);
	for (i = 0; i < e->nr_pops; i++) {
		if (!m->read(m->ctx, base + e->pop_off[i], &v))
			return false;
		out->mask &= ~(1u << e->pop_reg[i]);
		if (CALLEE_SAVED >> e->pop_reg[i] & 1)
			set(out, e->pop_reg[i], v);
	}
	if (!m->read(m->ctx, base + e->ret_off, &v))
		return false;
	set(out, FS_REG_IP, v);
	set(out, FS_REG_SP, base + e->ret_off + 8);
	return plausible(r, out, m);
}

/* rbp's frame: the frame at or above the stack pointer, aligned, in the copy (read() says). */
static bool fp_step(const struct fs_regs *r, const struct fs_mem *m, struct fs_regs *out)
{
	__u64 bp = r->regs[FS_REG_BP], prev, ret;

	if (!known(r, FS_REG_BP) || bp < r->regs[FS_REG_SP] || bp & 7)
		return false;
	if (!m->read(m->ctx, bp + 8, &ret) || !m->read(m->ctx, bp, &prev))
		return false;
	out->mask = 0;
	set(out, FS_REG_BP, prev);
	set(out, FS_REG_SP, bp + 16);
	set(out, FS_REG_IP, ret);
	return plausible(r, out, m);
}

enum fs_method framestep(const struct fs_regs *r, const struct fs_epilogue *e, const struct fs_mem *m,
			 struct fs_regs *out)
{
	if (!known(r, FS_REG_SP))
		return FS_NONE;
	if (e && e->ok && epilogue_step(r, e, m, out))
		return FS_EPILOGUE;
	return fp_step(r, m, out) ? FS_FP : FS_NONE;
}
