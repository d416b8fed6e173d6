// SPDX-License-Identifier: GPL-2.0
/* Frames without CFI: epilogues decoded, steps by epilogue and frame pointer, and the checks that refuse. */
#include <string.h>

#include "stacks/framestep.h"
#include "unit.h"

#define SP 0x7000     /* the stack copy's start (the sampled rsp) */
#define WORDS 64
#define CODE 0x400000 /* executable: [CODE, CODE + 0x1000) */

static __u64 stack[WORDS];

static bool rd(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (addr < SP || addr + 8 > SP + sizeof(stack) || addr & 7)
		return false;
	*val = stack[(addr - SP) / 8];
	return true;
}

static bool ex(void *ctx, __u64 addr)
{
	(void)ctx;
	return addr >= CODE && addr < CODE + 0x1000;
}

static const struct fs_mem mem = { rd, ex, NULL };

static struct fs_regs regs(__u64 ip, __u64 sp, __u64 bp)
{
	struct fs_regs r = { .mask = 1u << FS_REG_IP | 1u << FS_REG_SP | 1u << FS_REG_BP | 1u << 3 };

	r.regs[FS_REG_IP] = ip;
	r.regs[FS_REG_SP] = sp;
	r.regs[FS_REG_BP] = bp;
	r.regs[3] = 0x3333;  /* rbx: the caller's where nothing pops it */
	return r;
}

/* Python 3.12's trampoline after its call: add $8,%rsp; ret. */
static void python_trampoline(void)
{
	static const unsigned char code[] = { 0x48, 0x83, 0xc4, 0x08, 0xc3, 0xcc };
	struct fs_epilogue e;
	struct fs_regs r = regs(0x7f0006, SP, 0xdead0000), out;

	framestep_decode(code, sizeof(code), &e);
	CHECK(e.ok && !e.from_bp && e.ret_off == 8 && !e.nr_pops);
	memset(stack, 0, sizeof(stack));
	stack[1] = CODE + 0x10;
	CHECK(framestep(&r, &e, &mem, &out) == FS_EPILOGUE);
	CHECK(out.regs[FS_REG_IP] == CODE + 0x10 && out.regs[FS_REG_SP] == SP + 16);
	/* rbp is not popped: the caller's as it was (garbage here, but the caller's CFI may use it) */
	CHECK(out.mask & 1u << FS_REG_BP && out.regs[FS_REG_BP] == 0xdead0000 && out.regs[3] == 0x3333);
}

/* pop %rbx; pop %rbp; pop %r12; ret, and leave; ret. */
static void pops_and_leave(void)
{
	static const unsigned char pops[] = { 0x5b, 0x5d, 0x41, 0x5c, 0xc3 }, leave[] = { 0xc9, 0xc3 };
	struct fs_epilogue e;
	struct fs_regs r = regs(0x7f0000, SP, SP + 64), out;

	framestep_decode(pops, sizeof(pops), &e);
	CHECK(e.ok && e.nr_pops == 3 && e.ret_off == 24);
	CHECK(e.pop_reg[0] == 3 && e.pop_reg[1] == FS_REG_BP && e.pop_reg[2] == 12 && e.pop_off[2] == 16);
	memset(stack, 0, sizeof(stack));
	stack[0] = 0xb0b;
	stack[1] = SP + 256;
	stack[2] = 0x1212;
	stack[3] = CODE + 0x20;
	CHECK(framestep(&r, &e, &mem, &out) == FS_EPILOGUE);
	CHECK(out.regs[3] == 0xb0b && out.regs[FS_REG_BP] == SP + 256 && out.regs[12] == 0x1212);
	CHECK(out.regs[FS_REG_SP] == SP + 32 && out.regs[FS_REG_IP] == CODE + 0x20);
	framestep_decode(leave, sizeof(leave), &e);
	CHECK(e.ok && e.from_bp && e.ret_off == 8);
	stack[8] = SP + 128;      /* [rbp]: the caller's rbp */
	stack[9] = CODE + 0x30;   /* [rbp+8] */
	CHECK(framestep(&r, &e, &mem, &out) == FS_EPILOGUE);
	CHECK(out.regs[FS_REG_BP] == SP + 128 && out.regs[FS_REG_SP] == SP + 80 && out.regs[FS_REG_IP] == CODE + 0x30);
}

/* Code that is no epilogue (a loop, a call, pop %rsp, a negative add): not decoded. */
static void not_epilogues(void)
{
	static const unsigned char loop[] = { 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3 }, popsp[] = { 0x5c, 0xc3 },
				   neg[] = { 0x48, 0x83, 0xc4, 0xf8, 0xc3 }, call[] = { 0xff, 0xd1, 0xc3 };
	struct fs_epilogue e;

	framestep_decode(loop, sizeof(loop), &e);
	CHECK(!e.ok);
	framestep_decode(popsp, sizeof(popsp), &e);
	CHECK(!e.ok);
	framestep_decode(neg, sizeof(neg), &e);
	CHECK(!e.ok);
	framestep_decode(call, sizeof(call), &e);
	CHECK(!e.ok);
	framestep_decode(call, 0, &e);  /* nothing read */
	CHECK(!e.ok);
}

/* The frame pointer: [rbp+8] and [rbp]; only rbp carried (the others are unknown to the caller's CFI). */
static void frame_pointer(void)
{
	struct fs_regs r = regs(0x7f0000, SP, SP + 32), out;

	memset(stack, 0, sizeof(stack));
	stack[4] = SP + 96;
	stack[5] = CODE + 0x40;
	CHECK(framestep(&r, NULL, &mem, &out) == FS_FP);
	CHECK(out.regs[FS_REG_IP] == CODE + 0x40 && out.regs[FS_REG_SP] == SP + 48 && out.regs[FS_REG_BP] == SP + 96);
	CHECK(!(out.mask & 1u << 3));
}

/* Refused: rbp below the stack pointer, misaligned, outside the copy, a return address not executable. */
static void checks_refuse(void)
{
	struct fs_regs below = regs(0x7f0000, SP + 64, SP + 32), odd = regs(0x7f0000, SP, SP + 36),
		       out_of_copy = regs(0x7f0000, SP, SP + 8 * WORDS), ok = regs(0x7f0000, SP, SP + 32), out;

	memset(stack, 0, sizeof(stack));
	stack[4] = SP + 96;
	stack[5] = CODE + 0x40;
	CHECK(framestep(&below, NULL, &mem, &out) == FS_NONE);
	CHECK(framestep(&odd, NULL, &mem, &out) == FS_NONE);
	CHECK(framestep(&out_of_copy, NULL, &mem, &out) == FS_NONE);
	stack[5] = 0x1234;  /* not in executable memory */
	CHECK(framestep(&ok, NULL, &mem, &out) == FS_NONE);
	ok.mask &= ~(1u << FS_REG_BP);  /* rbp unknown */
	stack[5] = CODE + 0x40;
	CHECK(framestep(&ok, NULL, &mem, &out) == FS_NONE);
}

int main(void)
{
	RUN(python_trampoline);
	RUN(pops_and_leave);
	RUN(not_epilogues);
	RUN(frame_pointer);
	RUN(checks_refuse);
	UNIT_EXIT();
}
