// SPDX-License-Identifier: GPL-2.0
/* Exits found by disassembly: rets, tail calls direct and indirect, jump tables, cold parts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "unit.h"

#define BASE 0x1000

/* The exits of code linked at BASE (and an optional cold part at BASE + 0x100). */
static int exits_of(const unsigned char *code, size_t size, const unsigned char *cold, size_t cold_size,
		    __u64 *out, int max)
{
	struct code_part parts[2] = { { code, size, BASE }, { cold, cold_size, BASE + 0x100 } };
	__u64 *addrs;
	int n = find_exits(parts, cold ? 2 : 1, &addrs), i;

	for (i = 0; i < n && i < max; i++)
		out[i] = addrs[i];
	free(addrs);
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

int main(void)
{
	RUN(jump_table_is_not_an_exit);
	RUN(indirect_tail_call_is_an_exit);
	RUN(leave_restores_the_height);
	RUN(indirect_jump_inside_a_frame_is_not);
	RUN(height_follows_each_path);
	RUN(memory_operands);
	RUN(more_than_64_exits);
	RUN(cold_part);
	RUN(direct_jump_out_needs_entry_height);
	RUN(garbage_is_refused);
	UNIT_EXIT();
}
