/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Copies of the user stack and registers for DWARF unwinding in user space
 * (struct dwarf_sample): what sampling (profile.bpf.c) and slow calls
 * (slow.bpf.h) send.
 */
#ifndef FNPROF_USTACK_BPF_H
#define FNPROF_USTACK_BPF_H

#include <bpf/bpf_core_read.h>

#include "arch.bpf.h"
#include "fnprof.h"

_Static_assert(FNPROF_STACK_SLACK >= ARCH_PAGE_SIZE, "a page-sized read at any offset below a copy's end fits");

/*
 * Copies up to want bytes of the user stack from sp into buf (max +
 * FNPROF_STACK_SLACK bytes: the slack lets a page-sized read follow any
 * offset below max), a page at a time: a read that runs past the stack's
 * last page fails whole, so the copy stops at the first page that cannot be
 * read (the top of the stack). Returns the bytes copied, at most max.
 */
static __always_inline __u32 ustack_copy(__u8 *buf, __u64 sp, __u64 want, const __u32 max)
{
	__u64 got = 0, chunk;
	int i;

	if (want > max)
		want = max;
	for (i = 0; i < max / ARCH_PAGE_SIZE + 1; i++) {
		chunk = ARCH_PAGE_SIZE - ((sp + got) & (ARCH_PAGE_SIZE - 1));
		if (chunk > want - got)
			chunk = want - got;
		/* Checked on the very registers passed on: the verifier must see both bounds. */
		asm volatile("" : "+r"(chunk), "+r"(got));
		if (!chunk || chunk > ARCH_PAGE_SIZE || got >= max)
			break;
		if (bpf_probe_read_user(&buf[got], chunk, (void *)(sp + got)))
			break;
		got += chunk;
	}
	return got;
}

/* A task's user registers in DWARF order (struct dwarf_sample's regs). */
static __always_inline void ustack_regs(__u64 *g, const struct pt_regs *r)
{
	g[0] = r->ax, g[1] = r->dx, g[2] = r->cx, g[3] = r->bx, g[4] = r->si, g[5] = r->di;
	g[6] = r->bp, g[FNPROF_REG_SP] = r->sp, g[8] = r->r8, g[9] = r->r9, g[10] = r->r10, g[11] = r->r11;
	g[12] = r->r12, g[13] = r->r13, g[14] = r->r14, g[15] = r->r15, g[FNPROF_REG_IP] = r->ip;
}

/* The thread's pending uretprobe returns: where each return address was replaced, and by what. */
static __always_inline void pending_returns(struct task_struct *t, struct dwarf_sample *h)
{
	struct return_instance *ri = BPF_CORE_READ(t, utask, return_instances);
	int i;

	for (i = 0; i < FNPROF_MAX_RETS && ri; i++) {
		h->ret_slot[i] = BPF_CORE_READ(ri, stack);
		h->ret_addr[i] = BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	h->nr_rets = i;
}

/*
 * The current thread's user registers into *r: bpf_task_pt_regs' (kernel
 * 5.15, commit dd6e10fbd9fb "bpf: Add bpf_task_pt_regs() helper"), or before
 * it a copy into *buf of those saved on its kernel stack. The choice is made
 * at load time, from the kernel's own list of helpers (its BTF): the
 * verifier drops the other branch, so that a kernel without the helper never
 * sees its call. False when there are none (a kernel thread, before 5.15):
 * a constant true with the helper, so that the caller's check costs nothing
 * there either.
 */
static __always_inline bool ustack_user_regs(struct pt_regs *buf, const struct pt_regs **r)
{
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		*r = (const struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		return true;
	}
	*r = buf;
	return arch_saved_user_regs((struct task_struct *)bpf_get_current_task(), buf);
}

/*
 * The header of current thread's sample h (registers r, its tid, pending
 * returns) and up to want bytes of its user stack into stack (max +
 * FNPROF_STACK_SLACK bytes). Returns the bytes copied, h->stack_len: in a register, so that the
 * verifier sees the bound where the record's size is made of it.
 */
static __always_inline __u32 ustack_fill(struct dwarf_sample *h, __u8 *stack, const struct pt_regs *r, __u64 want,
					 const __u32 max)
{
	__u32 len;

	ustack_regs(h->regs, r);
	h->tid = (__u32)bpf_get_current_pid_tgid();
	/* Read with probes either way: the plain pointer costs the same and works before 5.11. */
	pending_returns((struct task_struct *)bpf_get_current_task(), h);
	len = ustack_copy(stack, r->sp, want, max);
	if (len > max)
		len = max;
	h->stack_len = len;
	return len;
}

#endif /* FNPROF_USTACK_BPF_H */
