// SPDX-License-Identifier: GPL-2.0
/* x86-64: what user/target/arch.h asks of an architecture. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <pthread.h>

#include <capstone/capstone.h>

#include "target/arch.h"
#include "base/log.h"

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

const char arch_syscall_prefix[] = "__x64_sys_";

const char arch_lib_dirs[] = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64";

/* Legacy prefixes the kernel's decoder takes before an opcode (REX aside). */
static bool legacy_prefix(unsigned char b)
{
	return b == 0x66 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x3e || b == 0x26 || b == 0x64 ||
	       b == 0x65 || b == 0x36;
}

/*
 * What the newest kernel (arch/x86/kernel/uprobes.c, 6.18) does with a
 * probe on the instruction at insn: push %reg is emulated; so are nop (0x90,
 * 0x0f 0x1f, whatever their prefixes), jcc, jmp and call with a relative
 * target, which it refuses with a 0x66 prefix; the 5-byte nop is optimized
 * into a call; anything else is single-stepped out of line. Older kernels
 * emulate less (arch_insns below): site_kind_of follows what the running
 * one was found to do. A hit on an emulated instruction costs about a tenth
 * of a single step (the calibration measures both).
 */
/* Past insn's legacy prefixes (at most 14): the index of what follows; *p66 if one was 0x66. */
static size_t skip_prefixes(const unsigned char *insn, size_t len, bool *p66)
{
	size_t i;

	for (i = 0; i < len && i < 14 && legacy_prefix(insn[i]); i++)
		*p66 |= insn[i] == 0x66;
	return i;
}

/* The kind of site insn makes on the newest kernel (arch/x86/kernel/uprobes.c, 6.18). */
static enum site_kind kind_newest(const unsigned char *insn, size_t len)
{
	static const unsigned char nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	bool p66 = false, rex = false;
	size_t i;

	if (len >= 1 && insn[0] >= 0x50 && insn[0] <= 0x57)
		return SITE_EMULATED;                   /* push %rax..%rdi */
	if (len >= 2 && insn[0] == 0x41 && insn[1] >= 0x50 && insn[1] <= 0x57)
		return SITE_EMULATED;                   /* push %r8..%r15 */
	if (len >= 5 && !memcmp(insn, nop5, 5))
		return SITE_NOP5;
	i = skip_prefixes(insn, len, &p66);
	if (i < len && (insn[i] & 0xf0) == 0x40) {
		rex = true;
		i++;
	}
	if (i >= len)
		return SITE_STEPPED;
	if (insn[i] == 0x90 && !rex)                    /* with REX.B it is xchg %r8,%rax */
		return SITE_NOP;
	if (insn[i] == 0x0f && i + 1 < len && insn[i + 1] == 0x1f)
		return SITE_NOP;
	if (p66 || rex)
		return SITE_STEPPED;
	if ((insn[i] & 0xf0) == 0x70 || (insn[i] == 0x0f && i + 1 < len && (insn[i + 1] & 0xf0) == 0x80))
		return SITE_JCC;
	if (insn[i] == 0xeb || insn[i] == 0xe9)
		return SITE_JMP;
	return insn[i] == 0xe8 ? SITE_CALL : SITE_STEPPED;
}

/*
 * The instruction forms whose handling the kernel changed over the years:
 * which of them it emulates is probed on the running kernel (kfeatures.c),
 * each through a function of fnprof's own that starts with it (below).
 */
enum x86_form { F_PUSH, F_PUSH_REX, F_NOP90, F_NOP66, F_NOPL, F_NOPW, F_NOP5, F_ENDBR, F_JCC, F_JMP, F_CALL, F_NR };

void fnprof_insn_push(void);
void fnprof_insn_push_rex(void);
void fnprof_insn_nop90(void);
void fnprof_insn_nop66(void);
void fnprof_insn_nopl(void);
void fnprof_insn_nopw(void);
void fnprof_insn_nop5(void);
void fnprof_insn_endbr(void);
void fnprof_insn_jcc(void);
void fnprof_insn_jmp(void);
void fnprof_insn_call(void);

/*
 * since: the first kernel that runs the form without a single step; old:
 * every kernel fnprof runs on does (5.10, what is assumed when the probe
 * could not run). Push: 4.17 (push_setup_xol_ops); nop, jmp, jcc, call:
 * 3.15 (branch_setup_xol_ops); xchg %ax,%ax was refused (-ENOTSUPP, the
 * attach fails) until 6.2 ("Allow to probe a NOP instruction with 0x66
 * prefix", in the stable kernels of 2023 too); nopl and nopw (0f 1f) are
 * single-stepped until 6.16 ("Add support to emulate NOP instructions");
 * the 5-byte nop is optimized into a call from 6.18; endbr64 is stepped.
 */
const struct arch_insn arch_insns[] = {
	[F_PUSH] = { "emulates push %rbp", fnprof_insn_push, "4.17", true },
	[F_PUSH_REX] = { "emulates push %r12", fnprof_insn_push_rex, "4.17", true },
	[F_NOP90] = { "emulates nop", fnprof_insn_nop90, "3.15", true },
	[F_NOP66] = { "emulates xchg %ax,%ax", fnprof_insn_nop66, "6.2", false },
	[F_NOPL] = { "emulates nopl 0x0(%rax)", fnprof_insn_nopl, "6.16", false },
	[F_NOPW] = { "emulates nopw 0x0(%rax,%rax,1)", fnprof_insn_nopw, "6.16", false },
	[F_NOP5] = { "optimizes the 5-byte nop", fnprof_insn_nop5, "6.18", false },
	[F_ENDBR] = { "emulates endbr64", fnprof_insn_endbr, "none", false },
	[F_JCC] = { "emulates jcc", fnprof_insn_jcc, "3.15", true },
	[F_JMP] = { "emulates jmp", fnprof_insn_jmp, "3.15", true },
	[F_CALL] = { "emulates call", fnprof_insn_call, "3.15", true },
};
const unsigned int arch_nr_insns = F_NR;
_Static_assert(F_NR <= ARCH_INSNS_MAX, "struct uprobe_insns holds every form");

/* The form of an instruction of kind k (kind_newest) at insn, or -1: one no kernel runs without a step. */
static int form_of(const unsigned char *insn, size_t len, enum site_kind k)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	bool p66 = false;
	size_t i;

	switch (k) {
	case SITE_EMULATED:
		return insn[0] == 0x41 ? F_PUSH_REX : F_PUSH;
	case SITE_NOP5:
		return F_NOP5;
	case SITE_NOP:
		i = skip_prefixes(insn, len, &p66);
		if (insn[i] == 0x90)
			return p66 ? F_NOP66 : F_NOP90;
		return p66 ? F_NOPW : F_NOPL;
	case SITE_JCC:
		return F_JCC;
	case SITE_JMP:
		return F_JMP;
	case SITE_CALL:
		return F_CALL;
	default:
		return len >= sizeof(endbr64) && !memcmp(insn, endbr64, sizeof(endbr64)) ? F_ENDBR : -1;
	}
}

/* How this kernel takes form f: as probed, or as every kernel does when the probe could not tell. */
static enum insn_how form_how(int f, const struct uprobe_insns *u)
{
	if (u->probed && u->how[f] != INSN_UNKNOWN)
		return u->how[f];
	return arch_insns[f].old ? INSN_EMULATED : INSN_STEPPED;
}

enum site_kind site_kind_of(const unsigned char *insn, size_t len, const struct uprobe_insns *u)
{
	enum site_kind k = kind_newest(insn, len);
	int f = form_of(insn, len, k);
	enum insn_how how;

	if (!u || f < 0)
		return k;
	how = form_how(f, u);
	/* A 5-byte nop the kernel does not optimize is a nopl like any other. */
	if (f == F_NOP5 && how != INSN_OPTIMIZED) {
		how = form_how(F_NOPL, u);
		k = SITE_NOP;
	}
	if (how != INSN_EMULATED && how != INSN_OPTIMIZED)
		return SITE_STEPPED;
	return f == F_ENDBR ? SITE_NOP : k;
}

static __s32 rel32_at(const unsigned char *p)
{
	__s32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

__s32 arch_branch_delta(const unsigned char *insn, size_t len)
{
	enum site_kind k = kind_newest(insn, len);
	bool p66 = false;
	size_t i;

	if (k != SITE_JCC && k != SITE_JMP && k != SITE_CALL)
		return 0;
	i = skip_prefixes(insn, len, &p66);  /* no 0x66 and no REX: site_kind_of */
	if (((insn[i] & 0xf0) == 0x70 || insn[i] == 0xeb) && i + 2 <= len)
		return (__s32)(i + 2) + (signed char)insn[i + 1];           /* jcc, jmp rel8 */
	if (insn[i] == 0x0f && i + 6 <= len)
		return (__s32)(i + 6) + rel32_at(insn + i + 2);              /* jcc rel32 */
	if ((insn[i] == 0xe9 || insn[i] == 0xe8) && i + 5 <= len)
		return (__s32)(i + 5) + rel32_at(insn + i + 1);              /* jmp, call rel32 */
	return 0;
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

size_t arch_pair_offset(const unsigned char *code, size_t len, __u64 vaddr, size_t site,
			const struct uprobe_insns *u, bool *on_ret)
{
	size_t n, i, off = 0, at = 0;
	cs_insn *in;
	csh h;

	if (site >= len || site_kind_of(code + site, len - site, u) != SITE_STEPPED)
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
		if (site_kind_of(code + at, len - at, u) != SITE_STEPPED || branch_to(h, in, n, vaddr + at))
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
	CALIB_FN(fnprof_calib_jcc, "\tjne 1f\n1:" PUSH_POP_RET)
	CALIB_FN(fnprof_calib_jmp, "\tjmp 1f\n1:" PUSH_POP_RET)
	CALIB_FN(fnprof_calib_call, "\tcall 1f\n\tret\n1:\tret\n")
	/* A one-byte nop: every kernel emulates it (3.15 on), as it does any nop it gives SITE_NOP. */
	CALIB_FN(fnprof_calib_nop, "\tnop\n" PUSH_POP_RET)
	CALIB_FN(fnprof_calib_ret, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_entry_only, PUSH_POP_RET)
	CALIB_FN(fnprof_calib_tail_jmp, "\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tjmp fnprof_calib_tail_callee\n")
	CALIB_FN(fnprof_calib_tail_callee, "\tret\n"));

/*
 * The forms of arch_insns, one function each that starts with it and
 * returns. 16-byte aligned: the 5-byte nop is optimized only when it does
 * not cross a page.
 */
#define INSN_FN(name, body) ".p2align 4\n" CALIB_FN(name, body)

__asm__(".text\n"
	INSN_FN(fnprof_insn_push, "\tpush %rbp\n\tpop %rbp\n\tret\n")
	INSN_FN(fnprof_insn_push_rex, "\tpush %r12\n\tpop %r12\n\tret\n")
	INSN_FN(fnprof_insn_nop90, "\t.byte 0x90\n\tret\n")
	INSN_FN(fnprof_insn_nop66, "\t.byte 0x66,0x90\n\tret\n")
	INSN_FN(fnprof_insn_nopl, "\t.byte 0x0f,0x1f,0x40,0x00\n\tret\n")
	INSN_FN(fnprof_insn_nopw, "\t.byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n\tret\n")
	INSN_FN(fnprof_insn_nop5, "\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tret\n")
	INSN_FN(fnprof_insn_endbr, "\t.byte 0xf3,0x0f,0x1e,0xfa\n\tret\n")
	INSN_FN(fnprof_insn_jcc, "\tjne 1f\n1:\tret\n")
	INSN_FN(fnprof_insn_jmp, "\tjmp 1f\n1:\tret\n")
	INSN_FN(fnprof_insn_call, "\tcall 1f\n\tret\n1:\tret\n"));

/* The ret of PUSH_POP_RET: 1 + 3 + 1 bytes in; fnprof_calib_tail_jmp's jmp is where that ret is. */
const unsigned int arch_calib_ret_offset = 5;
const unsigned int arch_calib_jmp_offset = 5;

/* --- Exits of a function, for ret-mode probes ---------------------------- */

#define UNKNOWN INT_MIN   /* a stack height (bytes below the entry's) that cannot be followed */

enum kind { K_OTHER, K_RET, K_JMP, K_JCC, K_JMP_IND, K_STOP };

/* What the walk needs of one instruction. */
struct ins {
	__u64 addr, target;    /* target: of a direct jmp, jcc or call */
	enum kind kind;
	bool table;            /* K_JMP_IND through a switch's jump table */
	bool call;             /* a call, direct or indirect */
	__u64 table_base;      /* its table's address, when the code says (table_entry bytes an entry) */
	int table_entry;       /* 4: offsets from table_base; 8: addresses; 0: table not found */
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

/* The rip-relative lea that loaded reg at most 16 instructions before: its address, or 0. */
static __u64 lea_before(const cs_insn *prev, size_t nr_prev, x86_reg reg)
{
	size_t j;

	for (j = 0; j < nr_prev && j < 16; j++) {
		const cs_insn *p = &prev[nr_prev - 1 - j];
		const cs_x86 *x = &p->detail->x86;

		if (p->id == X86_INS_LEA && x->op_count == 2 && is_reg(&x->operands[0], reg) &&
		    x->operands[1].mem.base == X86_REG_RIP && x->operands[1].mem.index == X86_REG_INVALID)
			return p->address + p->size + x->operands[1].mem.disp;
	}
	return 0;
}

/*
 * Where the jump table of the dispatch in is: `jmp *T(,%idx,8)` (addresses
 * at T, non-PIC code), `lea T(%rip),%b; jmp *(%b,%idx,8)` (addresses, Go),
 * `lea T(%rip),%b; movslq (%b,%idx,4),%r; add %b,%r; jmp *%r` (offsets from
 * T, PIC code of gcc and clang). Unknown: table_entry stays 0.
 */
static void table_of(const cs_insn *in, const cs_insn *prev, size_t nr_prev, struct ins *s)
{
	const cs_x86_op *op = &in->detail->x86.operands[0];
	size_t i, j;

	if (op->type == X86_OP_MEM && op->mem.index != X86_REG_INVALID && op->mem.scale == 8) {
		s->table_base = op->mem.base == X86_REG_INVALID ? (__u64)op->mem.disp :
				op->mem.disp ? 0 : lea_before(prev, nr_prev, op->mem.base);
		s->table_entry = s->table_base ? 8 : 0;
		return;
	}
	for (i = 0; op->type == X86_OP_REG && i < nr_prev && i < 4; i++) {
		const cs_x86 *x = &prev[nr_prev - 1 - i].detail->x86;

		if (prev[nr_prev - 1 - i].id != X86_INS_MOVSXD)
			continue;
		for (j = 0; j < x->op_count; j++) {
			const x86_op_mem *m = &x->operands[j].mem;

			if (x->operands[j].type != X86_OP_MEM || m->index == X86_REG_INVALID || m->scale != 4 ||
			    m->disp || m->base == X86_REG_INVALID)
				continue;
			s->table_base = lea_before(prev, nr_prev - 1 - i, m->base);
			s->table_entry = s->table_base ? 4 : 0;
			return;
		}
	}
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
		if (s->table)
			table_of(in, prev, nr_prev, s);
	} else if (in->id == X86_INS_CALL || in->id == X86_INS_LCALL) {
		s->call = true;
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
			s->target = x->operands[0].imm;
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

/*
 * The function made of parts[0..nr) decoded into c and walked from its
 * entry, stack heights followed. 0, -EINVAL (it does not decode cleanly,
 * too many parts) or -ENOMEM; c->ins is the caller's to free either way.
 */
static int code_walked(const struct code_part *parts, size_t nr, struct code *c)
{
	bool ok = true;
	size_t k;
	csh h;

	*c = (struct code){ .table_height = UNKNOWN };
	if (!nr || nr > sizeof(c->part_start) / sizeof(c->part_start[0]) || open_x86(&h) != CS_ERR_OK)
		return -EINVAL;
	for (k = 0; k < nr && ok; k++)
		ok = decode_part(h, &parts[k], c);
	cs_close(&h);
	if (!ok)
		return -EINVAL;
	return walk(c, 0, 0, UNKNOWN) && walk_cases(c) ? 0 : -ENOMEM;
}

/* A function's code: its parts, and once asked for, their decoding and walk. */
struct arch_code {
	struct code_part parts[8];
	size_t nr;
	int walk_err;          /* code_walked's answer, once walked */
	bool walked;
	struct code c;
};

struct arch_code *arch_code_new(const struct code_part *parts, size_t nr)
{
	struct arch_code *a;

	if (!nr || nr > sizeof(a->parts) / sizeof(a->parts[0]) || !(a = calloc(1, sizeof(*a))))
		return NULL;
	memcpy(a->parts, parts, nr * sizeof(*parts));
	a->nr = nr;
	return a;
}

void arch_code_free(struct arch_code *a)
{
	if (a)
		free(a->c.ins);
	free(a);
}

/* The decoded and walked code, disassembled on the first question only; NULL if it cannot be trusted. */
static const struct code *walked(struct arch_code *a)
{
	if (!a->walked) {
		a->walk_err = code_walked(a->parts, a->nr, &a->c);
		a->walked = true;
	}
	return a->walk_err ? NULL : &a->c;
}

int find_exits(struct arch_code *a, __u64 **addrs)
{
	const struct code *c = walked(a);
	size_t i, n = 0;

	*addrs = NULL;
	if (!c)
		return a->walk_err;
	if (!(*addrs = malloc((c->nr ? c->nr : 1) * sizeof(**addrs))))
		return -ENOMEM;
	for (i = 0; i < c->nr; i++)
		if (is_exit(c, &c->ins[i]))
			(*addrs)[n++] = c->ins[i].addr;
	return (int)n;
}

enum arch_exit_kind arch_exit_kind(struct arch_code *a, __u64 addr, __u64 *target)
{
	const struct code *c = walked(a);
	long i = c ? index_of(c, addr) : -1;

	*target = 0;
	if (i < 0 || c->ins[i].kind == K_RET)
		return ARCH_EXIT_RET;
	if (c->ins[i].kind != K_JMP)
		return ARCH_EXIT_JMP_IND;
	*target = c->ins[i].target;
	return ARCH_EXIT_JMP;
}

bool arch_is_leaf(struct arch_code *a)
{
	const struct code *c = walked(a);
	size_t i;

	for (i = 0; c && i < c->nr; i++) {
		const struct ins *s = &c->ins[i];

		if (s->call || (s->kind == K_JMP && index_of(c, s->target) < 0) || (s->kind == K_JMP_IND && !s->table))
			return false;
	}
	return c != NULL;
}

/* --- Where the entry probe goes ------------------------------------------ */

static bool is_sp(x86_reg r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL;
}

/*
 * An instruction the entry probe may let run before it: straight (execution
 * goes on to the next), and leaving the stack pointer and the caller's
 * frame as they were, so that the return address is still at [sp] where the
 * uretprobe takes it and the call is matched to its return by sp. Nor may
 * it write r14, Go's goroutine register, which the probe reads, nor with
 * keep_args an argument register. It may read memory and fault: it would
 * fault untraced too.
 */
static bool entry_skippable(csh h, const cs_insn *in, bool keep_args)
{
	/* r14, and the argument registers of the SysV ABI, each at every width. */
	static const x86_reg kept[] = {
		X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B,
		X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL,
		X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH, X86_REG_RCX, X86_REG_ECX, X86_REG_CX,
		X86_REG_CL, X86_REG_CH, X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_R9, X86_REG_R9D,
		X86_REG_R9W, X86_REG_R9B,
	};
	size_t nr_kept = keep_args ? sizeof(kept) / sizeof(kept[0]) : 4;
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nr, nw, i;
	size_t k;

	if (!straight(h, in) || cs_regs_access(h, in, rd, &nr, wr, &nw) != CS_ERR_OK)
		return false;
	for (i = 0; i < nw; i++) {
		if (is_sp(wr[i]))
			return false;
		for (k = 0; k < nr_kept; k++)
			if (wr[i] == kept[k])
				return false;
	}
	for (i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].access & CS_AC_WRITE &&
		    is_sp(x->operands[i].mem.base) && x->operands[i].mem.disp >= 0)
			return false;
	return true;
}

/* Instructions of an entry block looked at for a site: beyond, the probe stays at the start. */
#define ENTRY_BLOCK_MAX 64

/*
 * The first instruction of the entry block (p: the function's entry part)
 * that the kernel emulates or optimizes, when every one before it is
 * entry_skippable: its offset, or 0. Only the block is decoded here: the
 * whole function is, and must decode cleanly, when a site is found.
 */
static size_t first_emulated(const struct code_part *p, bool keep_args, const struct uprobe_insns *u)
{
	size_t n = 0, i, off = 0, site = 0;
	cs_insn *in = NULL;
	csh h;

	if (open_x86(&h) != CS_ERR_OK)
		return 0;
	n = cs_disasm(h, p->code, p->size, p->vaddr, ENTRY_BLOCK_MAX, &in);
	for (i = 0; i < n; off += in[i++].size) {
		if (site_kind_of(p->code + off, p->size - off, u) != SITE_STEPPED) {
			site = off;
			break;
		}
		if (!entry_skippable(h, &in[i], keep_args))
			break;
	}
	if (n)
		cs_free(in, n);
	cs_close(&h);
	return site;
}

/* Entries of a jump table read to check where they go (4 KiB). */
#define TABLE_SCAN_BYTES 4096

/*
 * Whether the jump table of dispatch s can send execution into (lo, hi]:
 * also when it cannot be read, or was not found (table_entry 0: its base
 * came from anything but a rip-relative lea, as in nginx's ngx_escape_json).
 */
static bool table_lands_in(const struct ins *s, __u64 lo, __u64 hi, arch_read_fn read, void *ctx)
{
	union {
		__s32 rel[TABLE_SCAN_BYTES / 4];
		__u64 abs[TABLE_SCAN_BYTES / 8];
	} t;
	size_t n = s->table_entry && read ? read(ctx, s->table_base, &t, sizeof(t)) : 0, i;
	__u64 to;

	if (!s->table_entry || n < (size_t)s->table_entry)
		return true;
	for (i = 0; i < n / s->table_entry; i++) {
		to = s->table_entry == 4 ? s->table_base + (__s64)t.rel[i] : t.abs[i];
		if (to > lo && to <= hi)
			return true;
	}
	return false;
}

/*
 * Whether any branch of the function can land in (lo, hi], the bytes its
 * entry probe would skip and the probe's own: a direct jmp, jcc or call
 * there, a jump table that holds such a target (or cannot be read), or an
 * indirect jmp that is not a tail call (a computed goto: targets unknown).
 */
static bool lands_in(const struct code *c, __u64 lo, __u64 hi, arch_read_fn read, void *ctx)
{
	size_t i;

	for (i = 0; i < c->nr; i++) {
		const struct ins *s = &c->ins[i];

		if (s->target > lo && s->target <= hi)
			return true;
		if (s->kind != K_JMP_IND)
			continue;
		if (s->table ? table_lands_in(s, lo, hi, read, ctx) : !(s->seen && s->height == 0))
			return true;
	}
	return false;
}

size_t arch_entry_skip(struct arch_code *a, bool keep_args, const struct uprobe_insns *u, arch_read_fn read,
		       void *ctx)
{
	const struct code_part *p = &a->parts[0];
	const struct code *c;
	size_t site;

	if (!p->size || site_kind_of(p->code, p->size, u) != SITE_STEPPED || !(site = first_emulated(p, keep_args, u)))
		return 0;
	c = walked(a);
	return c && !lands_in(c, p->vaddr, p->vaddr + site, read, ctx) ? site : 0;
}

