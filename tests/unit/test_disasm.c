// SPDX-License-Identifier: GPL-2.0
/* Exits found by disassembly: rets, tail calls direct and indirect, jump tables, cold parts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "target/arch.h"
#include "unit.h"

#define BASE 0x1000

/* The exits of code linked at BASE (and an optional cold part at BASE + 0x100). */
static int exits_of(const unsigned char *code, size_t size, const unsigned char *cold, size_t cold_size,
		    __u64 *out, int max)
{
	struct code_part parts[2] = { { code, size, BASE }, { cold, cold_size, BASE + 0x100 } };
	struct arch_code *a = arch_code_new(parts, cold ? 2 : 1);
	__u64 *addrs;
	int n = find_exits(a, &addrs), i;

	for (i = 0; i < n && i < max; i++)
		out[i] = addrs[i];
	free(addrs);
	arch_code_free(a);
	return n;
}

/* mov %edi,%edi; cmp $3; ja 1f; lea T(%rip),%rdx; movslq (%rdx,%rdi,4),%rax; add %rdx,%rax;
 * jmp *%rax; 1: mov $-1,%eax; ret -- a switch at entry height: the jmp stays inside. */
static void jump_table_is_not_an_exit(void)
{
	static const unsigned char f[] = { 0x89, 0xff, 0x83, 0xff, 0x03, 0x77, 0x10, 0x48, 0x8d, 0x15, 0x0f, 0x00,
					   0x00, 0x00, 0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xb8,
					   0xff, 0xff, 0xff, 0xff, 0xc3 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x101c);
}

/* push %rbp; mov %rsp,%rbp; mov %rdi,%rax; pop %rbp; jmp *%rax */
static void indirect_tail_call_is_an_exit(void)
{
	static const unsigned char f[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x5d, 0xff, 0xe0 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x1008);
}

/* push %rbp; mov %rsp,%rbp; sub $16,%rsp; leave; jmp *%rax: leave restores the entry height. */
static void leave_restores_the_height(void)
{
	static const unsigned char f[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc9, 0xff, 0xe0 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x1009);
}

/* push %rbp; mov %rsp,%rbp; jmp *%rdi; pop %rbp; ret: a computed goto with the frame set up. */
static void indirect_jump_inside_a_frame_is_not(void)
{
	static const unsigned char f[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xe7, 0x5d, 0xc3 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x1007);
}

/* push %rbx; test; je 1f; pop %rbx; jmp *%rsi; 1: mov %rsi,%rax; jmp *%rax -- heights per path. */
static void height_follows_each_path(void)
{
	static const unsigned char f[] = { 0x53, 0x85, 0xff, 0x74, 0x03, 0x5b, 0xff, 0xe6, 0x48, 0x89, 0xf0, 0xff, 0xe0 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x1006);
}

/* test; je 1f; jmp *8(%rdi); 1: jmp *0x10(,%rdi,8) -- through a pointer: exit; indexed: table. */
static void memory_operands(void)
{
	static const unsigned char f[] = { 0x85, 0xff, 0x74, 0x03, 0xff, 0x67, 0x08, 0xff, 0x24, 0xfd, 0x10, 0x00, 0x00, 0x00 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x1004);
}

/* 100 x (cmp $k,%edi; jne +1; ret), then ret: every one of the 101 exits. */
static void more_than_64_exits(void)
{
	unsigned char f[601];
	__u64 e[128];
	int k;

	for (k = 0; k < 100; k++) {
		unsigned char b[6] = { 0x83, 0xff, (unsigned char)k, 0x75, 0x01, 0xc3 };

		memcpy(&f[6 * k], b, 6);
	}
	f[600] = 0xc3;
	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 128) == 101);
	CHECK(e[100] == BASE + 600);
}

/*
 * push %rbp; mov %rsp,%rbp; test; jne COLD; xor %eax,%eax; pop %rbp; ret, and its cold part:
 * test; je 1f; jmp BACK; 1: pop %rbp; ret. Jumps between the parts are not exits; both rets are.
 */
static void cold_part(void)
{
	static const unsigned char f[] = { 0x55, 0x48, 0x89, 0xe5, 0x85, 0xff, 0x0f, 0x85, 0xf4, 0x00, 0x00, 0x00,
					   0x31, 0xc0, 0x5d, 0xc3 };
	static const unsigned char cold[] = { 0x85, 0xf6, 0x74, 0x05, 0xe9, 0x03, 0xff, 0xff, 0xff, 0x5d, 0xc3 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), cold, sizeof(cold), e, 4) == 2);
	CHECK(e[0] == 0x100f && e[1] == 0x110a);
	/* Without its cold part, the cold ret would go unprobed. */
	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
}

/* push %rbp; test; je 1f; pop %rbp; jmp OUT; 1: jmp OUT2: a tail call, then a jump inside the frame. */
static void direct_jump_out_needs_entry_height(void)
{
	static const unsigned char f[] = { 0x55, 0x85, 0xff, 0x74, 0x06, 0x5d, 0xe9, 0xf5, 0x0f, 0x00, 0x00,
					   0xe9, 0xf0, 0x1f, 0x00, 0x00 };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == 1);
	CHECK(e[0] == 0x1006);
}

/* Bytes that are no instruction: no exit can be trusted. */
static void garbage_is_refused(void)
{
	static const unsigned char f[] = { 0x55, 0x0f, 0x0b, 0xff, 0xff, 0xff };
	__u64 e[4];

	CHECK(exits_of(f, sizeof(f), NULL, 0, e, 4) == -EINVAL);
}

/* A jump table for the fake object: 4 entries at table_at, offsets from it (what read_table reads). */
static __s32 table[4];
static __u64 table_at;

static size_t read_table(void *ctx, __u64 vaddr, void *buf, size_t len)
{
	(void)ctx;
	if (vaddr != table_at || !table_at)
		return 0;
	len = len < sizeof(table) ? len : sizeof(table);
	memcpy(buf, table, len);
	return len;
}

/* Where the entry probe of code linked at BASE goes (and an optional cold part at BASE + 0x100). */
static size_t skip_args(const unsigned char *code, size_t size, const unsigned char *cold, size_t cold_size,
			bool keep_args)
{
	struct code_part parts[2] = { { code, size, BASE }, { cold, cold_size, BASE + 0x100 } };
	struct arch_code *a = arch_code_new(parts, cold ? 2 : 1);
	size_t skip = arch_entry_skip(a, keep_args, NULL, read_table, NULL);

	arch_code_free(a);
	return skip;
}

static size_t skip_of(const unsigned char *code, size_t size, const unsigned char *cold, size_t cold_size)
{
	return skip_args(code, size, cold, cold_size, false);
}

/* A probe that reads the arguments (the heap profile's) is not moved past a write to one. */
static void entry_keeps_the_arguments_when_asked(void)
{
	/* test %rdi,%rdi; je 1f; push %rbx; pop %rbx; 1: ret (glibc's free) */
	static const unsigned char free_like[] = { 0x48, 0x85, 0xff, 0x74, 0x02, 0x53, 0x5b, 0xc3 };
	/* mov %rdi,%rax; push %rbp; pop %rbp; ret */
	static const unsigned char to_rax[] = { 0x48, 0x89, 0xf8, 0x55, 0x5d, 0xc3 };
	/* mov (%rdi),%rdi; push %rbp; pop %rbp; ret */
	static const unsigned char sets_rdi[] = { 0x48, 0x8b, 0x3f, 0x55, 0x5d, 0xc3 };
	/* xor %ecx,%ecx; push %rbp; pop %rbp; ret */
	static const unsigned char sets_ecx[] = { 0x31, 0xc9, 0x55, 0x5d, 0xc3 };

	CHECK(skip_args(free_like, sizeof(free_like), NULL, 0, true) == 3);
	CHECK(skip_args(to_rax, sizeof(to_rax), NULL, 0, true) == 3);
	CHECK(skip_args(sets_rdi, sizeof(sets_rdi), NULL, 0, false) == 3);
	CHECK(skip_args(sets_rdi, sizeof(sets_rdi), NULL, 0, true) == 0);
	CHECK(skip_args(sets_ecx, sizeof(sets_ecx), NULL, 0, true) == 0);
}

/*
 * The entry probe skips a leading endbr64 when a push (emulated) follows and
 * nothing jumps to that push: endbr64; push %rbp; mov %rsp,%rbp; pop %rbp; ret.
 */
static void entry_skips_endbr64(void)
{
	static const unsigned char f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
	/* endbr64; mov %rdi,%rax (single-stepped anyway: nothing gained); ret */
	static const unsigned char stepped[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xf8, 0xc3 };
	/* endbr64; push %rbp; ... jmp back to the push (BASE + 4): it would fire as a call */
	static const unsigned char loop[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xeb, 0xf9 };
	/* push %rbp; pop %rbp; ret: no endbr64 */
	static const unsigned char plain[] = { 0x55, 0x5d, 0xc3 };

	CHECK(skip_of(f, sizeof(f), NULL, 0) == 4);
	CHECK(skip_of(stepped, sizeof(stepped), NULL, 0) == 0);
	CHECK(skip_of(loop, sizeof(loop), NULL, 0) == 0);
	CHECK(skip_of(plain, sizeof(plain), NULL, 0) == 0);
	CHECK(skip_of(f, 3, NULL, 0) == 0);
}

static void entry_skips_plain_instructions_before_a_push(void)
{
	/* mov %rdi,%rbx; push %rbp; pop %rbp; ret: the probe goes on the push */
	static const unsigned char mov_push[] = { 0x48, 0x89, 0xfb, 0x55, 0x5d, 0xc3 };
	/* endbr64; mov %rdi,%rbx; push %rbp; pop %rbp; ret */
	static const unsigned char endbr_mov_push[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xfb, 0x55, 0x5d, 0xc3 };
	/* mov %rdi,%rsp would move the return address away from the uretprobe: stays */
	static const unsigned char sets_rsp[] = { 0x48, 0x89, 0xfc, 0x55, 0x5d, 0xc3 };
	/* mov (%rdi),%rax may fault, as it would untraced: skipped */
	static const unsigned char loads[] = { 0x48, 0x8b, 0x07, 0x55, 0x5d, 0xc3 };
	/* mov %rdi,(%rsp) writes over the return address: stays */
	static const unsigned char stores_ret[] = { 0x48, 0x89, 0x3c, 0x24, 0x55, 0x5d, 0xc3 };
	/* mov %rdi,%r14 (Go's goroutine register, which the probe reads): stays */
	static const unsigned char sets_r14[] = { 0x49, 0x89, 0xfe, 0x55, 0x5d, 0xc3 };
	/* mov %rdi,%rbx; push %rbp; pop %rbp; jmp back to the push: it would fire as a call */
	static const unsigned char loop[] = { 0x48, 0x89, 0xfb, 0x55, 0x5d, 0xeb, 0xfc, 0xc3 };

	CHECK(skip_of(mov_push, sizeof(mov_push), NULL, 0) == 3);
	CHECK(skip_of(endbr_mov_push, sizeof(endbr_mov_push), NULL, 0) == 7);
	CHECK(skip_of(sets_rsp, sizeof(sets_rsp), NULL, 0) == 0);
	CHECK(skip_of(loads, sizeof(loads), NULL, 0) == 3);
	CHECK(skip_of(stores_ret, sizeof(stores_ret), NULL, 0) == 0);
	CHECK(skip_of(sets_r14, sizeof(sets_r14), NULL, 0) == 0);
	CHECK(skip_of(loop, sizeof(loop), NULL, 0) == 0);
}

/* Issue 22: the first emulated instruction of the entry block, a jcc, jmp, call or nop too. */
static void entry_goes_to_the_first_emulated_instruction(void)
{
	/* cmp 0x10(%r14),%rsp; jbe 1f; push %rbp; pop %rbp; ret; 1: ret (Go's stack check) */
	static const unsigned char go[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x03, 0x55, 0x5d, 0xc3, 0xc3 };
	/* test %rdi,%rdi; je 1f; push %rbx; pop %rbx; 1: ret (deflate) */
	static const unsigned char test_je[] = { 0x48, 0x85, 0xff, 0x74, 0x02, 0x53, 0x5b, 0xc3 };
	/* mov %edx,%edx; jmp elsewhere (adler32's tail call) */
	static const unsigned char tail[] = { 0x89, 0xd2, 0xe9, 0x00, 0x10, 0x00, 0x00 };
	/* mov %rdi,%rax; call elsewhere; ret */
	static const unsigned char call[] = { 0x48, 0x89, 0xf8, 0xe8, 0x00, 0x10, 0x00, 0x00, 0xc3 };
	/* mov %rdi,%rax; nopl 0(%rax); ret */
	static const unsigned char nop[] = { 0x48, 0x89, 0xf8, 0x0f, 0x1f, 0x40, 0x00, 0xc3 };
	/* sub $8,%rsp; test %rdi,%rdi; je ...: the stack pointer moves first, nothing skipped */
	static const unsigned char sub_rsp[] = { 0x48, 0x83, 0xec, 0x08, 0x48, 0x85, 0xff, 0x74, 0x00, 0x48,
						 0x83, 0xc4, 0x08, 0xc3 };
	/* mov $39,%eax; syscall; ret: a system call ends the block */
	static const unsigned char sys[] = { 0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	/* mov %rdi,%rax; 1: sub $1,%rax; jne 1b; ret: the loop lands on the skipped sub */
	static const unsigned char loop[] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0xc3 };

	CHECK(skip_of(go, sizeof(go), NULL, 0) == 4);
	CHECK(site_kind_of(go + 4, sizeof(go) - 4, NULL) == SITE_JCC);
	CHECK(skip_of(test_je, sizeof(test_je), NULL, 0) == 3);
	CHECK(skip_of(tail, sizeof(tail), NULL, 0) == 2);
	CHECK(site_kind_of(tail + 2, sizeof(tail) - 2, NULL) == SITE_JMP);
	CHECK(skip_of(call, sizeof(call), NULL, 0) == 3);
	CHECK(site_kind_of(call + 3, sizeof(call) - 3, NULL) == SITE_CALL);
	CHECK(skip_of(nop, sizeof(nop), NULL, 0) == 3);
	CHECK(site_kind_of(nop + 3, sizeof(nop) - 3, NULL) == SITE_NOP);
	CHECK(skip_of(sub_rsp, sizeof(sub_rsp), NULL, 0) == 0);
	CHECK(skip_of(sys, sizeof(sys), NULL, 0) == 0);
	CHECK(skip_of(loop, sizeof(loop), NULL, 0) == 0);
}

/* A leaf calls nothing: no call, no tail call, no indirect jmp but a switch's (issue 22's exits). */
static void leaves(void)
{
	static const unsigned char plain[] = { 0x48, 0x89, 0xf8, 0xc3 };                     /* mov; ret */
	static const unsigned char call[] = { 0x48, 0x89, 0xf8, 0xe8, 0x00, 0x10, 0x00, 0x00, 0xc3 };
	static const unsigned char tail[] = { 0x89, 0xd2, 0xe9, 0x00, 0x10, 0x00, 0x00 };    /* jmp out */
	static const unsigned char ind[] = { 0x48, 0x89, 0xf8, 0xff, 0xe0 };                 /* jmp *%rax */
	static const unsigned char garbage[] = { 0x0f, 0x0b, 0xff };
	const struct { const unsigned char *c; size_t n; bool leaf; } cases[] = {
		{ plain, sizeof(plain), true }, { call, sizeof(call), false }, { tail, sizeof(tail), false },
		{ ind, sizeof(ind), false }, { garbage, sizeof(garbage), false },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct code_part part = { cases[i].c, cases[i].n, BASE };
		struct arch_code *a = arch_code_new(&part, 1);

		CHECK(arch_is_leaf(a) == cases[i].leaf);
		arch_code_free(a);
	}
}

/* What the kernel refuses or steps is not taken for emulated: a 0x66 jcc, xchg %r8,%rax (41 90). */
static void site_kinds_follow_the_kernel(void)
{
	static const unsigned char j66[] = { 0x66, 0x74, 0x00 }, xchg[] = { 0x41, 0x90 }, pause[] = { 0xf3, 0x90 };
	static const unsigned char nopw[] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }, jcc32[] = { 0x0f, 0x84, 0, 0, 0, 0 };

	CHECK(site_kind_of(j66, sizeof(j66), NULL) == SITE_STEPPED);
	CHECK(site_kind_of(xchg, sizeof(xchg), NULL) == SITE_STEPPED);
	CHECK(site_kind_of(pause, sizeof(pause), NULL) == SITE_NOP);
	CHECK(site_kind_of(nopw, sizeof(nopw), NULL) == SITE_NOP);
	CHECK(site_kind_of(jcc32, sizeof(jcc32), NULL) == SITE_JCC);
}

/* Where an emulated branch lands, from the site: je +0x24, jne rel32 back, jmp, call (a hint prefix); else 0. */
static void branch_deltas(void)
{
	static const unsigned char je8[] = { 0x74, 0x24 }, jne32[] = { 0x0f, 0x85, 0xf0, 0xff, 0xff, 0xff };
	static const unsigned char jmp32[] = { 0xe9, 0x00, 0x01, 0x00, 0x00 }, jmp8[] = { 0xeb, 0xfe };
	static const unsigned char call[] = { 0x3e, 0xe8, 0x10, 0x00, 0x00, 0x00 }, mov[] = { 0x89, 0xf8 };
	static const unsigned char push[] = { 0x55 }, cut[] = { 0x0f, 0x84, 0x00 };

	CHECK(arch_branch_delta(je8, sizeof(je8)) == 2 + 0x24);
	CHECK(arch_branch_delta(jne32, sizeof(jne32)) == 6 - 16);
	CHECK(arch_branch_delta(jmp32, sizeof(jmp32)) == 5 + 256);
	CHECK(arch_branch_delta(jmp8, sizeof(jmp8)) == 0);      /* jmp . : lands on itself */
	CHECK(arch_branch_delta(call, sizeof(call)) == 6 + 16);
	CHECK(arch_branch_delta(mov, sizeof(mov)) == 0 && arch_branch_delta(push, sizeof(push)) == 0);
	CHECK(arch_branch_delta(cut, sizeof(cut)) == 0);       /* cut short: not read past the end */
}

/*
 * mov %edi,%edi; cmp $3,%edi; ja 1f; lea T(%rip),%rdx; movslq (%rdx,%rdi,4),%rax; add %rdx,%rax;
 * jmp *%rax; 1: mov $-1,%eax; ret -- the ja (5 bytes in) is the site unless a case of T lands
 * on the cmp or the ja; a table that cannot be read counts as one that does.
 */
static void jump_table_cases_are_read(void)
{
	static const unsigned char f[] = { 0x89, 0xff, 0x83, 0xff, 0x03, 0x77, 0x10, 0x48, 0x8d, 0x15, 0x0f, 0x00,
					   0x00, 0x00, 0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xb8,
					   0xff, 0xff, 0xff, 0xff, 0xc3 };
	__u64 t = BASE + 14 + 0x0f;
	int i;

	table_at = 0;
	CHECK(skip_of(f, sizeof(f), NULL, 0) == 0);
	table_at = t;
	for (i = 0; i < 4; i++)
		table[i] = (__s32)(BASE + 0x17 - t);   /* every case at the mov $-1 */
	CHECK(skip_of(f, sizeof(f), NULL, 0) == 5);
	table[2] = (__s32)(BASE + 2 - t);              /* one at the cmp */
	CHECK(skip_of(f, sizeof(f), NULL, 0) == 0);
	table[2] = (__s32)(BASE + 5 - t);              /* one at the ja itself */
	CHECK(skip_of(f, sizeof(f), NULL, 0) == 0);
	table_at = 0;
}

/*
 * Issue 37: the same dispatch with its table's address from a mov, not a rip-relative lea (nginx's
 * ngx_escape_json): a table fnprof cannot find. It counts as one that lands anywhere; it was a
 * division by zero (SIGFPE, fnprof's own death before attaching anything).
 */
static void jump_table_not_found(void)
{
	static const unsigned char f[] = { 0x89, 0xff, 0x83, 0xff, 0x03, 0x77, 0x10, 0x48, 0xc7, 0xc2, 0x00, 0x20,
					   0x00, 0x00, 0x48, 0x63, 0x04, 0xba, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xb8,
					   0xff, 0xff, 0xff, 0xff, 0xc3 };
	struct code_part part = { f, sizeof(f), BASE };
	struct arch_code *a = arch_code_new(&part, 1);

	table_at = BASE + 0x1000;
	CHECK(skip_of(f, sizeof(f), NULL, 0) == 0);
	CHECK(a && arch_entry_skip(a, false, NULL, NULL, NULL) == 0);
	arch_code_free(a);
	table_at = 0;
}

/* test %rdi,%rdi; je 1f; push %rbx; pop %rbx; 1: ret, with a cold part jumping back to the je. */
static void cold_part_landing_in_the_skipped_bytes(void)
{
	static const unsigned char f[] = { 0x48, 0x85, 0xff, 0x74, 0x02, 0x53, 0x5b, 0xc3 };
	/* at BASE + 0x100: jmp BASE + 3 */
	static const unsigned char back[] = { 0xe9, 0xfe, 0xfe, 0xff, 0xff };
	/* at BASE + 0x100: jmp BASE + 5 (after the site: harmless) */
	static const unsigned char after[] = { 0xe9, 0x00, 0xff, 0xff, 0xff };

	CHECK(skip_of(f, sizeof(f), back, sizeof(back)) == 0);
	CHECK(skip_of(f, sizeof(f), after, sizeof(after)) == 3);
}

static void pair_twin_on_a_second_stepped_instruction(void)
{
	/* movq $0,-8(%rsp); mov -8(%rsp),%rax; ret (bt's target_nop at -O2): the twin at 9 */
	static const unsigned char nop[] = { 0x48, 0xc7, 0x44, 0x24, 0xf8, 0, 0, 0, 0, 0x48, 0x8b, 0x44, 0x24, 0xf8, 0xc3 };
	/* mov $0x6e,%eax; syscall; ret (getppid): a twin on the syscall crashed the target */
	static const unsigned char sys[] = { 0xb8, 0x6e, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	/* mov %rdi,%rax; push %rbx; ...: the second one is emulated, no twin */
	static const unsigned char push2[] = { 0x48, 0x89, 0xf8, 0x53, 0x5b, 0xc3 };
	/* test %edi,%edi; je +0 ...: a branch after the entry, no twin */
	static const unsigned char branch[] = { 0x85, 0xff, 0x74, 0x00, 0xc3 };
	/* mov %rdi,%rax; add $1,%rax; jmp back to the add: the twin would fire again */
	static const unsigned char loop[] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xfa, 0xc3 };

	/* lea 0x1(%rdi,%rdi,2),%rax; ret (work's tiny): the twin on the ret */
	static const unsigned char lea_ret[] = { 0x48, 0x8d, 0x44, 0x3f, 0x01, 0xc3 };
	bool on_ret = true;

	CHECK(arch_pair_offset(nop, sizeof(nop), BASE, 0, NULL, &on_ret) == 9 && !on_ret);
	CHECK(arch_pair_offset(lea_ret, sizeof(lea_ret), BASE, 0, NULL, &on_ret) == 5 && on_ret);
	CHECK(arch_pair_offset(sys, sizeof(sys), BASE, 0, NULL, &on_ret) == 0);
	CHECK(arch_pair_offset(push2, sizeof(push2), BASE, 0, NULL, &on_ret) == 0);
	CHECK(arch_pair_offset(branch, sizeof(branch), BASE, 0, NULL, &on_ret) == 0);
	CHECK(arch_pair_offset(loop, sizeof(loop), BASE, 0, NULL, &on_ret) == 0);
	/* A site further in (past an endbr64, say): offsets from the function's start. */
	CHECK(arch_pair_offset(nop, sizeof(nop), BASE, 9, NULL, &on_ret) == 14 && on_ret);
}

/* The form of arch_insns whose name holds what, or -1. */
static int form_named(const char *what)
{
	unsigned int i;

	for (i = 0; i < arch_nr_insns; i++)
		if (strstr(arch_insns[i].name, what))
			return (int)i;
	return -1;
}

/*
 * Issue 34: the site follows what the running kernel was found to emulate.
 * `nopw; push %rbp`: on the nopw where the kernel emulates it (6.16 on, or
 * u NULL: as the newest kernel), on the push where it single-steps the nopw
 * (6.1), and where nothing could be probed (what every kernel emulates).
 * A 5-byte nop not optimized is an emulated nop, or a stepped one.
 */
static void site_follows_the_probed_kernel(void)
{
	static const unsigned char code[] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55, 0x48, 0x89, 0xe5,
					      0x5d, 0xc3 };
	static const unsigned char nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3 };
	struct code_part part = { code, sizeof(code), BASE };
	struct uprobe_insns k61 = { .probed = true }, k616 = { .probed = true }, unprobed = { .probed = false };
	int nopw = form_named("nopw"), nopl = form_named("nopl"), opt = form_named("5-byte nop");
	struct arch_code *a = arch_code_new(&part, 1);
	unsigned int i;

	CHECK(a && nopw >= 0 && nopl >= 0 && opt >= 0);
	for (i = 0; i < arch_nr_insns; i++)
		k61.how[i] = k616.how[i] = INSN_EMULATED;
	k61.how[nopw] = k61.how[nopl] = k61.how[opt] = INSN_STEPPED;
	k616.how[opt] = INSN_EMULATED;
	CHECK(site_kind_of(code, sizeof(code), NULL) == SITE_NOP && arch_entry_skip(a, false, NULL, NULL, NULL) == 0);
	CHECK(site_kind_of(code, sizeof(code), &k616) == SITE_NOP && arch_entry_skip(a, false, &k616, NULL, NULL) == 0);
	CHECK(site_kind_of(code, sizeof(code), &k61) == SITE_STEPPED);
	CHECK(arch_entry_skip(a, false, &k61, NULL, NULL) == 6 && site_kind_of(code + 6, 6, &k61) == SITE_EMULATED);
	CHECK(arch_entry_skip(a, false, &unprobed, NULL, NULL) == 6);
	CHECK(site_kind_of(nop5, sizeof(nop5), NULL) == SITE_NOP5);
	CHECK(site_kind_of(nop5, sizeof(nop5), &k616) == SITE_NOP);
	CHECK(site_kind_of(nop5, sizeof(nop5), &k61) == SITE_STEPPED);
	arch_code_free(a);
}

int main(void)
{
	RUN(jump_table_is_not_an_exit);
	RUN(entry_goes_to_the_first_emulated_instruction);
	RUN(site_kinds_follow_the_kernel);
	RUN(site_follows_the_probed_kernel);
	RUN(branch_deltas);
	RUN(leaves);
	RUN(entry_keeps_the_arguments_when_asked);
	RUN(jump_table_cases_are_read);
	RUN(jump_table_not_found);
	RUN(cold_part_landing_in_the_skipped_bytes);
	RUN(indirect_tail_call_is_an_exit);
	RUN(leave_restores_the_height);
	RUN(indirect_jump_inside_a_frame_is_not);
	RUN(height_follows_each_path);
	RUN(memory_operands);
	RUN(more_than_64_exits);
	RUN(cold_part);
	RUN(direct_jump_out_needs_entry_height);
	RUN(garbage_is_refused);
	RUN(entry_skips_endbr64);
	RUN(entry_skips_plain_instructions_before_a_push);
	RUN(pair_twin_on_a_second_stepped_instruction);
	UNIT_EXIT();
}
