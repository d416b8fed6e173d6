/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF programs assume of the machine's architecture, in one place:
 * a port adds one block here (and vmlinux/ARCH/vmlinux.h; user space has
 * user/arch_ARCH.c). __TARGET_ARCH_* comes from the Makefile's ARCH.
 */
#ifndef FNPROF_ARCH_BPF_H
#define FNPROF_ARCH_BPF_H

#include <bpf/bpf_core_read.h>

#if defined(__TARGET_ARCH_x86)

/*
 * The call pushed the return address: after the return (and at a ret
 * instruction, once it has run) the stack pointer is this far above the
 * one at the function's entry.
 */
#define ARCH_RET_ADDR_BYTES 8
/* A task's out-of-line slot for single steps (the kernel's UPROBE_XOL_SLOT_BYTES). */
#define ARCH_XOL_SLOT_BYTES 128
/*
 * A page: the kernel's uprobe trampolines take one (for probes on 5-byte
 * nops: 6.18's optimized uprobes); user stacks are read a page at a time.
 */
#define ARCH_PAGE_SIZE 4096
/* The function's first instruction and the start of the next: x86 instructions are at most 15 bytes. */
#define ARCH_FIRST_INSN_SPAN 16
/* The user instruction pointer in a task's saved registers (struct pt_regs). */
#define ARCH_REGS_IP(regs) BPF_CORE_READ(regs, ip)
#define ARCH_REGS_SP(regs) BPF_CORE_READ(regs, sp)
/* A breakpoint's size: a task trapped at one has its instruction pointer this far past it. */
#define ARCH_BREAKPOINT_BYTES 1
/* Go's register ABI (1.17+ on amd64) keeps the running goroutine's g in r14. */
#define ARCH_GO_G(regs) ((regs)->r14)
/* Its integer arguments 1 and 3 (rax, rbx, rcx, ...): runtime.execute's gp, runtime.gopark's reason. */
#define ARCH_GO_ARG1(regs) ((regs)->ax)
#define ARCH_GO_ARG3(regs) ((regs)->cx)
/* The frame pointer: Go keeps one in every frame on amd64. */
#define ARCH_FP(regs) ((regs)->bp)
/* System calls (mutex.bpf.c): futex's number; a call's number and arguments in its pt_regs. */
#define ARCH_NR_FUTEX 202
#define ARCH_SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#define ARCH_SYSCALL_ARG1(regs) BPF_CORE_READ(regs, di)
#define ARCH_SYSCALL_ARG2(regs) BPF_CORE_READ(regs, si)
#define ARCH_SYSCALL_ARG3(regs) BPF_CORE_READ(regs, dx)

/*
 * Before bpf_task_pt_regs (kernel 5.15): a task's user registers are where
 * the kernel saved them on entry, at the top of its kernel stack
 * (task_pt_regs in arch/x86/include/asm/processor.h: task->stack +
 * THREAD_SIZE - TOP_OF_KERNEL_STACK_PADDING, the padding 0 on x86-64 until
 * FRED, 6.9). THREAD_SIZE is 16 KiB, 32 with KASAN (THREAD_SIZE_ORDER in
 * page_64_types.h): the first whose copy holds user registers is the one:
 * code and stack segments of privilege 3 (RPL), an instruction and a stack
 * pointer in user space (the lower half), a test that a stack's middle
 * rarely passes. False when neither does (a kernel thread's are zeroes).
 */
#define ARCH_KSTACK_SIZES { 16384, 32768 }
static __always_inline bool arch_saved_user_regs(struct task_struct *t, struct pt_regs *buf)
{
	const __u64 sizes[] = ARCH_KSTACK_SIZES;
	__u64 top = (__u64)BPF_CORE_READ(t, stack);
	int i;

	for (i = 0; top && i < 2; i++) {
		if (bpf_probe_read_kernel(buf, sizeof(*buf), (void *)(top + sizes[i] - sizeof(*buf))))
			continue;
		if ((BPF_CORE_READ(buf, cs) & 3) == 3 && (BPF_CORE_READ(buf, ss) & 3) == 3 && (__s64)buf->ip > 0 &&
		    (__s64)buf->sp > 0)
			return true;
	}
	return false;
}

#else
#error "fnprof: bpf/arch.bpf.h has no block for this architecture"
#endif

#endif /* FNPROF_ARCH_BPF_H */
