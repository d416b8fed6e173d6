// SPDX-License-Identifier: GPL-2.0
/* x86-64: what user/arch.h asks of an architecture. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <pthread.h>

#include <capstone/capstone.h>

#include "arch.h"
#include "log.h"

/*
 * Capstone, loaded when a function's code must be read: its 6.6 MB and
 * 80k relocations cost 1.4 ms of every start here (an empty program linked
 * with it starts in 2.3 ms, without it 0.8), more than fnprof's margin on
 * funclatency's attach time, while a function that starts with a push needs
 * no disassembly at all. Every call below goes through cs_api.
 */
static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
	void (*free)(cs_insn *, size_t);
	cs_err (*close)(csh *);
	bool (*insn_group)(csh, const cs_insn *, unsigned int);
	cs_err (*regs_access)(csh, const cs_insn *, cs_regs, uint8_t *, cs_regs, uint8_t *);
} cs_api;

#define CS_STR2(x) #x
#define CS_STR(x) CS_STR2(x)
#define CAPSTONE_SONAME "libcapstone.so." CS_STR(CS_API_MAJOR)

static void capstone_load(void)
{
	void *h = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		log_warn("cannot load %s (%s): functions' code cannot be read (ret probes, entry placement)",
			 CAPSTONE_SONAME, dlerror());
		return;
	}
	*(void **)&cs_api.option = dlsym(h, "cs_option");
	*(void **)&cs_api.disasm = dlsym(h, "cs_disasm");
	*(void **)&cs_api.free = dlsym(h, "cs_free");
	*(void **)&cs_api.close = dlsym(h, "cs_close");
	*(void **)&cs_api.insn_group = dlsym(h, "cs_insn_group");
	*(void **)&cs_api.regs_access = dlsym(h, "cs_regs_access");
	/* Last: open is what says the rest is there. */
	if (cs_api.option && cs_api.disasm && cs_api.free && cs_api.close && cs_api.insn_group && cs_api.regs_access)
		*(void **)&cs_api.open = dlsym(h, "cs_open");
}

/* An x86-64 handle with instruction details, Capstone loaded at the first call. */
static cs_err open_x86(csh *h)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, capstone_load);
	if (!cs_api.open || cs_api.open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK)
		return CS_ERR_HANDLE;
	cs_api.option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	return CS_ERR_OK;
}

#define cs_disasm cs_api.disasm
#define cs_free cs_api.free
#define cs_close cs_api.close
#define cs_insn_group cs_api.insn_group
#define cs_regs_access cs_api.regs_access

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

/* The function's code decoded whole, or NULL (then nothing about it can be trusted). */
static cs_insn *decode_all(csh *h, const unsigned char *code, size_t len, __u64 vaddr, size_t *n)
{
	cs_insn *in = NULL;
	size_t i, used = 0;

	*n = 0;
	if (open_x86(h) != CS_ERR_OK)
		return NULL;
	*n = cs_disasm(*h, code, len, vaddr, 0, &in);
	for (i = 0; i < *n; i++)
		used += in[i].size;
	if (used == len && *n)
		return in;
	cs_free(in, *n);
	cs_close(h);
	*n = 0;
	return NULL;
}

static void decode_free(csh *h, cs_insn *in, size_t n)
{
	cs_free(in, n);
	cs_close(h);
}

/* Whether a jump or call of the function goes to addr: a probe there would fire mid-function. */
static bool branch_to(csh h, const cs_insn *in, size_t n, __u64 addr)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const cs_x86 *x = &in[i].detail->x86;

		if ((cs_insn_group(h, &in[i], CS_GRP_JUMP) || cs_insn_group(h, &in[i], CS_GRP_CALL)) &&
		    x->op_count == 1 && x->operands[0].type == X86_OP_IMM && (__u64)x->operands[0].imm == addr)
			return true;
	}
	return false;
}

/* Not a change of control: execution goes on at the next instruction. */
static bool straight(csh h, const cs_insn *in)
{
	static const int groups[] = { CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT, CS_GRP_IRET,
				      CS_GRP_PRIVILEGE, CS_GRP_BRANCH_RELATIVE };
	size_t i;

	for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (cs_insn_group(h, in, groups[i]))
			return false;
	return in->id != X86_INS_SYSCALL && in->id != X86_INS_SYSENTER && in->id != X86_INS_UD2 &&
	       in->id != X86_INS_HLT;
}

/*
 * An instruction the entry probe may run before it: straight, registers only
 * (lea computes an address without reading it), so it cannot fault, and it
 * leaves the stack pointer as it was, so that the return address is still
 * at [sp] where the uretprobe takes it.
 */
static bool skippable(csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nr, nw, i;
	const cs_x86 *x = &in->detail->x86;

	if (!straight(h, in) || in->id == X86_INS_DIV || in->id == X86_INS_IDIV ||
	    cs_regs_access(h, in, rd, &nr, wr, &nw) != CS_ERR_OK)
		return false;
	for (i = 0; i < nw; i++)
		if (wr[i] == X86_REG_RSP || wr[i] == X86_REG_ESP || wr[i] == X86_REG_SP)
			return false;
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && in->id != X86_INS_LEA)
			return false;
	return true;
}

size_t arch_entry_skip(const unsigned char *code, size_t len, __u64 vaddr)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t n, skip = 0, i = 0;
	cs_insn *in;
	csh h;

	/* An entry the kernel emulates already, and no endbr64: nothing to read. */
	if (len && site_kind_of(code, len) != SITE_STEPPED)
		return 0;
	in = decode_all(&h, code, len, vaddr, &n);
	if (!in)
		return 0;
	/* An endbr64 (a hint nop, as every function of a -fcf-protection build starts). */
	if (len > sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)) && n > 1) {
		skip = in[0].size;
		i = 1;
	}
	/* Then one plain instruction before a push or a 5-byte nop: `mov %rdi,%rbx; push %rbp`. */
	if (i + 1 < n && site_kind_of(code + skip, len - skip) == SITE_STEPPED && skippable(h, &in[i]) &&
	    site_kind_of(code + skip + in[i].size, len - skip - in[i].size) != SITE_STEPPED)
		skip += in[i].size;
	if (skip && (site_kind_of(code + skip, len - skip) == SITE_STEPPED || branch_to(h, in, n, vaddr + skip)))
		skip = 0;
	decode_free(&h, in, n);
	return skip;
}

/*
 * A twin's instruction: one of the common ones every kernel that has
 * uprobes steps out of line (no VEX encoding, no system call, nothing the
 * kernel might refuse and so fail the whole attach).
 */
static bool twin_ok(csh h, const cs_insn *in)
{
	static const unsigned int ids[] = {
		X86_INS_MOV, X86_INS_MOVABS, X86_INS_MOVZX, X86_INS_MOVSX, X86_INS_MOVSXD, X86_INS_LEA,
		X86_INS_ADD, X86_INS_SUB, X86_INS_AND, X86_INS_OR, X86_INS_XOR, X86_INS_CMP, X86_INS_TEST,
		X86_INS_INC, X86_INS_DEC, X86_INS_NEG, X86_INS_NOT, X86_INS_SHL, X86_INS_SHR, X86_INS_SAR,
		X86_INS_IMUL, X86_INS_MOVAPS, X86_INS_MOVUPS, X86_INS_MOVDQA, X86_INS_MOVDQU, X86_INS_MOVQ,
		X86_INS_MOVD, X86_INS_PXOR, X86_INS_XORPS,
	};
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (in->id == ids[i])
			return straight(h, in) && !(in->detail->x86.prefix[0] == X86_PREFIX_LOCK);
	return false;
}

size_t arch_pair_offset(const unsigned char *code, size_t len, __u64 vaddr, size_t site, bool *on_ret)
{
	size_t n, i, off = 0, at = 0;
	cs_insn *in;
	csh h;

	if (site >= len || site_kind_of(code + site, len - site) != SITE_STEPPED)
		return 0;
	in = decode_all(&h, code, len, vaddr, &n);
	if (!in)
		return 0;
	for (i = 0; i < n && off < site; i++)
		off += in[i].size;
	/*
	 * The site's instruction goes on to the next, a plain one the kernel
	 * single-steps too (twin_ok: a twin on a syscall, stepped out of line,
	 * crashed the target here), and no branch goes there.
	 */
	*on_ret = false;
	if (off == site && i + 1 < n && straight(h, &in[i]) &&
	    (twin_ok(h, &in[i + 1]) || (in[i + 1].id == X86_INS_RET && in[i + 1].size == 1))) {
		*on_ret = in[i + 1].id == X86_INS_RET;
		at = site + in[i].size;
		if (site_kind_of(code + at, len - at) != SITE_STEPPED || branch_to(h, in, n, vaddr + at))
			at = 0;
	}
	decode_free(&h, in, n);
	return at;
}

#define CALIB_FN(name, body) \
	".globl " #name "\n.type " #name ",@function\n" #name ":\n" body ".size " #name ", .-" #name "\n"
#define PUSH_POP_RET "\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"

__asm__(".text\n"
	CALIB_FN(fnprof_calib_emulated, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_stepped, "\tlea 0x1(%rdi),%rax\n\tret\n")
	CALIB_FN(fnprof_calib_pair, "\tlea 0x1(%rdi),%rax\n\tlea 0x2(%rdi),%rax\n\tret\n")
	CALIB_FN(fnprof_calib_pair_ret, "\tlea 0x3(%rdi),%rax\n\tret\n")
	CALIB_FN(fnprof_calib_nop5, "\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tret\n")
	CALIB_FN(fnprof_calib_ret, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_entry_only, PUSH_POP_RET));

/* The ret of PUSH_POP_RET: 1 + 3 + 1 bytes in. */
const unsigned int arch_calib_ret_offset = 5;

/* --- Exits of a function, for ret-mode probes ---------------------------- */

#define UNKNOWN INT_MIN   /* a stack height (bytes below the entry's) that cannot be followed */

enum kind { K_OTHER, K_RET, K_JMP, K_JCC, K_JMP_IND, K_STOP };

/* What the walk needs of one instruction. */
struct ins {
	__u64 addr, target;    /* target: of a direct jmp or jcc */
	enum kind kind;
	bool table;            /* K_JMP_IND through a switch's jump table */
	bool seen;
	int height;            /* stack height on arrival, UNKNOWN, or conflicting paths */
	int delta;             /* what it does to the stack height (see sp_effect) */
	int sp_op, rbp_op;     /* SP_* / RBP_*: effects delta cannot say */
};

enum { SP_DELTA, SP_FROM_RBP, SP_LEAVE, SP_LOST };
enum { RBP_KEEP, RBP_FROM_SP, RBP_LOST };

struct code {
	struct ins *ins;
	size_t nr;
	size_t part_start[8], part_end[8];   /* indexes of each part's instructions */
	size_t nr_parts;
	int table_height;      /* height at the first jump-table dispatch, UNKNOWN if none */
};

static bool is_reg(const cs_x86_op *op, x86_reg r)
{
	return op->type == X86_OP_REG && op->reg == r;
}

/* A jmp through a switch's jump table: indexed memory, notrack, or a register loaded by movsxd from one. */
static bool jump_table(const cs_insn *in, const cs_insn *prev, size_t nr_prev)
{
	const cs_x86_op *op = &in->detail->x86.operands[0];
	size_t i, j;

	if (in->bytes[0] == 0x3e || (op->type == X86_OP_MEM && op->mem.index != X86_REG_INVALID))
		return true;
	for (i = 0; op->type == X86_OP_REG && i < nr_prev && i < 4; i++) {
		const cs_x86 *x = &prev[nr_prev - 1 - i].detail->x86;

		if (prev[nr_prev - 1 - i].id != X86_INS_MOVSXD)
			continue;
		for (j = 0; j < x->op_count; j++)
			if (x->operands[j].type == X86_OP_MEM && x->operands[j].mem.index != X86_REG_INVALID)
				return true;
	}
	return false;
}

/* How in moves the stack pointer (and the frame pointer, which leave restores it from). */
static void sp_effect(csh h, const cs_insn *in, struct ins *s)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *o = x->operands;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0, i;

	s->sp_op = SP_DELTA;
	s->rbp_op = RBP_KEEP;
	switch (in->id) {
	case X86_INS_PUSH: case X86_INS_PUSHFQ:
		s->delta = -8;
		return;
	case X86_INS_POP: case X86_INS_POPFQ:
		s->delta = 8;
		if (x->op_count && is_reg(&o[0], X86_REG_RBP))
			s->rbp_op = RBP_LOST;
		if (x->op_count && is_reg(&o[0], X86_REG_RSP))
			s->sp_op = SP_LOST;
		return;
	case X86_INS_CALL: case X86_INS_RET: case X86_INS_JMP:
		return;
	case X86_INS_LEAVE:
		s->sp_op = SP_LEAVE;
		s->rbp_op = RBP_LOST;
		return;
	}
	if (x->op_count == 2 && is_reg(&o[0], X86_REG_RSP) && o[1].type == X86_OP_IMM &&
	    (in->id == X86_INS_SUB || in->id == X86_INS_ADD)) {
		s->delta = in->id == X86_INS_SUB ? -(int)o[1].imm : (int)o[1].imm;
		return;
	}
	if (x->op_count == 2 && is_reg(&o[0], X86_REG_RSP) && in->id == X86_INS_LEA &&
	    o[1].mem.base == X86_REG_RSP && o[1].mem.index == X86_REG_INVALID) {
		s->delta = (int)o[1].mem.disp;
		return;
	}
	if (x->op_count == 2 && in->id == X86_INS_MOV && is_reg(&o[0], X86_REG_RSP) && is_reg(&o[1], X86_REG_RBP)) {
		s->sp_op = SP_FROM_RBP;
		return;
	}
	if (x->op_count == 2 && in->id == X86_INS_MOV && is_reg(&o[0], X86_REG_RBP) && is_reg(&o[1], X86_REG_RSP)) {
		s->rbp_op = RBP_FROM_SP;
		return;
	}
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr))
		return;
	for (i = 0; i < nwr; i++) {
		if (wr[i] == X86_REG_RSP)
			s->sp_op = SP_LOST;
		else if (wr[i] == X86_REG_RBP)
			s->rbp_op = RBP_LOST;
	}
}

static void classify(csh h, const cs_insn *in, const cs_insn *prev, size_t nr_prev, struct ins *s)
{
	const cs_x86 *x = &in->detail->x86;

	s->addr = in->address;
	s->height = UNKNOWN;
	sp_effect(h, in, s);
	if (in->id == X86_INS_RET)
		s->kind = K_RET;
	else if (in->id == X86_INS_HLT || in->id == X86_INS_UD2 || in->id == X86_INS_INT3)
		s->kind = K_STOP;
	else if (cs_insn_group(h, in, CS_GRP_JUMP) && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		s->kind = in->id == X86_INS_JMP ? K_JMP : K_JCC;
		s->target = x->operands[0].imm;
	} else if (in->id == X86_INS_JMP) {
		s->kind = K_JMP_IND;
		s->table = jump_table(in, prev, nr_prev);
	}
}

/* Decodes one part into c->ins; false if it does not decode cleanly to its end. */
static bool decode_part(csh h, const struct code_part *p, struct code *c)
{
	cs_insn *in = NULL;
	size_t n = cs_disasm(h, p->code, p->size, p->vaddr, 0, &in), i, used = 0;
	struct ins *grown = n ? realloc(c->ins, (c->nr + n) * sizeof(*c->ins)) : NULL;

	if (grown) {
		c->ins = grown;
		memset(&c->ins[c->nr], 0, n * sizeof(*c->ins));
		for (i = 0; i < n; i++) {
			classify(h, &in[i], in, i, &c->ins[c->nr + i]);
			used += in[i].size;
		}
		c->part_start[c->nr_parts] = c->nr;
		c->nr += n;
		c->part_end[c->nr_parts++] = c->nr;
	}
	if (n)
		cs_free(in, n);
	return grown && used == p->size;
}

/* Index of the instruction at addr in any part, or -1 (outside the function, or mid-instruction). */
static long index_of(const struct code *c, __u64 addr)
{
	size_t k, lo, hi, mid;

	for (k = 0; k < c->nr_parts; k++) {
		lo = c->part_start[k];
		hi = c->part_end[k];
		while (lo < hi) {
			mid = (lo + hi) / 2;
			if (c->ins[mid].addr < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < c->part_end[k] && c->ins[lo].addr == addr)
			return lo;
	}
	return -1;
}

static bool part_end(const struct code *c, size_t i)
{
	size_t k;

	for (k = 0; k < c->nr_parts; k++)
		if (c->part_end[k] == i)
			return true;
	return false;
}

/* The stack height after s, arriving with h (frame pointer at rbp). */
static int height_after(const struct ins *s, int h, int *rbp)
{
	int out = h == UNKNOWN ? UNKNOWN : h + s->delta;

	if (s->sp_op == SP_FROM_RBP)
		out = *rbp;
	else if (s->sp_op == SP_LEAVE)
		out = *rbp == UNKNOWN ? UNKNOWN : *rbp + 8;
	else if (s->sp_op == SP_LOST)
		out = UNKNOWN;
	if (s->rbp_op == RBP_FROM_SP)
		*rbp = h;
	else if (s->rbp_op == RBP_LOST)
		*rbp = UNKNOWN;
	return out;
}

/* A place the walk still has to go: instruction i, reached with stack height h and frame pointer rbp. */
struct todo {
	size_t i;
	int h, rbp;
};

struct worklist {
	struct todo *t;
	size_t nr, cap;
	bool failed;
};

static void push(struct worklist *w, size_t i, int h, int rbp)
{
	struct todo *grown;

	if (w->nr == w->cap) {
		grown = realloc(w->t, (w->cap = w->cap ? 2 * w->cap : 64) * sizeof(*w->t));
		if (!grown) {
			w->failed = true;
			return;
		}
		w->t = grown;
	}
	w->t[w->nr++] = (struct todo){ i, h, rbp };
}

/*
 * Follows the code from instruction i in straight line, to its end or a
 * jump; the targets of direct branches go on the worklist. An instruction
 * reached again with another height gets none (UNKNOWN), and so does what
 * follows it.
 */
static void walk_from(struct code *c, struct worklist *w, size_t i, int h, int rbp)
{
	struct ins *s;
	long t;

	for (; i < c->nr; i++) {
		s = &c->ins[i];
		if (s->seen && (s->height == h || s->height == UNKNOWN))
			return;
		s->height = s->seen ? UNKNOWN : h;
		h = s->height;
		s->seen = true;
		if (s->kind == K_JMP_IND && s->table && c->table_height == UNKNOWN)
			c->table_height = h;
		h = height_after(s, h, &rbp);
		if ((s->kind == K_JMP || s->kind == K_JCC) && (t = index_of(c, s->target)) >= 0)
			push(w, t, h, rbp);
		if (s->kind == K_RET || s->kind == K_JMP || s->kind == K_JMP_IND || s->kind == K_STOP ||
		    part_end(c, i + 1))
			return;
	}
}

/* Walks from instruction i, then everywhere its branches lead. */
static bool walk(struct code *c, size_t i, int h, int rbp)
{
	struct worklist w = { 0 };
	struct todo t;

	push(&w, i, h, rbp);
	while (w.nr && !w.failed) {
		t = w.t[--w.nr];
		walk_from(c, &w, t.i, t.h, t.rbp);
	}
	free(w.t);
	return !w.failed;
}

/*
 * A direct jmp out of the function with its frame still set up goes to a
 * part of it that has no symbol of its own (a cold part in a stripped
 * object): not a tail call. Where the height is not known, it is taken for one.
 */
static bool is_exit(const struct code *c, const struct ins *s)
{
	bool flat = !s->seen || s->height == UNKNOWN || s->height == 0;

	if (s->kind == K_RET)
		return true;
	if (s->kind == K_JMP)
		return index_of(c, s->target) < 0 && flat;
	return s->kind == K_JMP_IND && !s->table && s->seen && s->height == 0;
}

/*
 * Code reached only through a jump table (a switch's cases) is walked with
 * the height of the table's jmp: each block that follows a terminator.
 */
static bool walk_cases(struct code *c)
{
	bool ok = true;
	size_t i;

	for (i = 1; ok && c->table_height != UNKNOWN && i < c->nr; i++) {
		enum kind k = c->ins[i - 1].kind;

		if (!c->ins[i].seen && !part_end(c, i) &&
		    (k == K_RET || k == K_JMP || k == K_JMP_IND || k == K_STOP))
			ok = walk(c, i, c->table_height, UNKNOWN);
	}
	return ok;
}

int find_exits(const struct code_part *parts, size_t nr, __u64 **addrs)
{
	struct code c = { .table_height = UNKNOWN };
	bool ok = true;
	size_t i, k, n = 0;
	int err = 0;
	csh h;

	*addrs = NULL;
	if (!nr || nr > sizeof(c.part_start) / sizeof(c.part_start[0]) ||
	    open_x86(&h) != CS_ERR_OK)
		return -EINVAL;
	for (k = 0; k < nr && ok; k++)
		ok = decode_part(h, &parts[k], &c);
	cs_close(&h);
	if (!ok)
		err = -EINVAL;
	else if (!walk(&c, 0, 0, UNKNOWN) || !walk_cases(&c) ||
		 !(*addrs = malloc((c.nr ? c.nr : 1) * sizeof(**addrs))))
		err = -ENOMEM;
	for (i = 0; !err && i < c.nr; i++)
		if (is_exit(&c, &c.ins[i]))
			(*addrs)[n++] = c.ins[i].addr;
	free(c.ins);
	return err ? err : (int)n;
}

/*
 * glibc's free starts with "test %rdi,%rdi; je ...": a uprobe on the test
 * is single-stepped (~10 us a call here), one on the conditional jump after
 * it is emulated (~0.5 us) and sees the same %rdi.
 */
size_t arch_free_probe_offset(const unsigned char *code, size_t len)
{
	static const unsigned char test_rdi[] = { 0x48, 0x85, 0xff };

	if (len >= 5 && !memcmp(code, test_rdi, 3) &&
	    ((code[3] & 0xf0) == 0x70 || (code[3] == 0x0f && (code[4] & 0xf0) == 0x80)))
		return 3;
	return 0;
}
