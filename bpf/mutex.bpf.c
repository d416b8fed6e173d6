// SPDX-License-Identifier: GPL-2.0
/*
 * Mutex profile: contention on user-space locks, seen in futex system calls
 * (the slow path only: an uncontended lock never enters the kernel). A
 * thread's futex wait is timed from sys_enter to sys_exit; the last thread
 * that woke the same futex word is taken as the one that released the lock,
 * and the wait is charged to its stack (contentions, delay), as Go's mutex
 * profile does, and to the waiter's own (wait_contentions, wait_delay).
 * glibc waits on a mutex with FUTEX_WAIT and the value 2 (locked, with
 * waiters), or with the PI operations: those are labelled lock; other waits
 * (condition variables, semaphores, joins use FUTEX_WAIT_BITSET) are wait.
 *
 * --call-graph dwarf: a waker's stack is copied at its wake and sent under
 * an id, which the wakers map keeps (dw_id); a waiter's at its
 * wait's end (the same as at its start: it has not left the system call).
 * Each wait's values then go to user space, which counts them per unwound
 * stack: to the waiter's with its copy, to the waker's by id.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "arch.bpf.h"
#include "prof.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define ETIMEDOUT 110

enum {
	FUTEX_WAIT, FUTEX_WAKE, FUTEX_FD, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP, FUTEX_LOCK_PI,
	FUTEX_UNLOCK_PI, FUTEX_TRYLOCK_PI, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET, FUTEX_WAIT_REQUEUE_PI,
	FUTEX_CMP_REQUEUE_PI, FUTEX_LOCK_PI2,
};
#define FUTEX_CMD_MASK 0x7f   /* without FUTEX_PRIVATE_FLAG (128) and FUTEX_CLOCK_REALTIME (256) */

/* Waits begun before this time are not counted: a launched command's wait for its start. */
__u64 start_ns = 0;

struct waiting {
	__u64 since;        /* 0 when not in a futex wait */
	__u64 uaddr;
	struct prof_key key;  /* the waiter's stacks */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct waiting);
} waits SEC(".maps");

/* A futex word of a process: with -a, one address is many processes' words. */
struct waker_key {
	__u64 uaddr;
	__u32 tgid;         /* pkey_pid(): 0 but with -a */
	__u32 pad;
};

/* The futex word -> the stacks of the last thread that woke its waiters. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct waker_key);
	__type(value, struct prof_waker);
} wakers SEC(".maps");

static __always_inline bool is_wait(__u32 cmd)
{
	return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 ||
	       cmd == FUTEX_WAIT_REQUEUE_PI;
}

static __always_inline bool is_wake(__u32 cmd)
{
	return cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET || cmd == FUTEX_WAKE_OP || cmd == FUTEX_UNLOCK_PI ||
	       cmd == FUTEX_REQUEUE || cmd == FUTEX_CMP_REQUEUE || cmd == FUTEX_CMP_REQUEUE_PI;
}

static __always_inline void wait_begins(void *ctx, __u64 uaddr, __u32 cmd, __u32 val)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct waiting *w = bpf_task_storage_get(&waits, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	bool lock = (cmd == FUTEX_WAIT && val == 2) || cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2;

	if (!w) {
		pbump(PDROP_STATE);
		return;
	}
	if (dwarf)  /* the stack is copied at the end */
		w->key = (struct prof_key){ .tid = per_thread ? (__u32)bpf_get_current_pid_tgid() : 0,
					    .pid = pkey_pid(), .label = lock ? PROF_MUTEX_LOCK : PROF_MUTEX_WAIT, .ustack = -1, .kstack = -1 };
	else
		pkey_here(ctx, &w->key, lock ? PROF_MUTEX_LOCK : PROF_MUTEX_WAIT, false);
	w->uaddr = uaddr;
	w->since = bpf_ktime_get_ns();
}

static __always_inline void wakes(void *ctx, __u64 uaddr)
{
	struct prof_waker w = { .key = { .tid = per_thread ? (__u32)bpf_get_current_pid_tgid() : 0, .kstack = -1,
					 .pid = pkey_pid() } };
	struct prof_val none = {};
	struct waker_key wk = { .uaddr = uaddr, .tgid = pkey_pid() };

	if (dwarf) {
		w.dw_id = pdw_send((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()), &w.key, &none, true);
		if (w.dw_id) {
			w.key.ustack = PROF_DW_ID;
			bpf_map_update_elem(&wakers, &wk, &w, BPF_ANY);
			return;
		}
	}
	pkey_here(ctx, &w.key, 0, false);
	bpf_map_update_elem(&wakers, &wk, &w, BPF_ANY);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_enter, struct pt_regs *regs, long id)
{
	__u32 cmd;

	if (id != ARCH_NR_FUTEX || !pwanted(bpf_get_current_pid_tgid() >> 32))
		return 0;
	pnote_proc(bpf_get_current_task_btf());
	cmd = ARCH_SYSCALL_ARG2(regs) & FUTEX_CMD_MASK;
	if (is_wait(cmd))
		wait_begins(ctx, ARCH_SYSCALL_ARG1(regs), cmd, ARCH_SYSCALL_ARG3(regs));
	else if (is_wake(cmd))
		wakes(ctx, ARCH_SYSCALL_ARG1(regs));
	return 0;
}

/* The waiter's share: with its stack copied (dwarf), or its frame-pointer stack. */
static __always_inline void charge_waiter(void *ctx, struct waiting *w, const struct prof_val *v)
{
	if (dwarf) {
		if (pdw_send((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()), &w->key, v, false))
			return;
		pkey_here(ctx, &w->key, w->key.label, false);
	}
	pcount(&w->key, v);
}

/* The waker's share: by the id of its stack copy (dwarf), or with its frame-pointer stack. */
static __always_inline void charge_waker(const struct prof_key *k, __u64 id, const struct prof_val *v)
{
	struct prof_key lost;

	if (k->ustack != PROF_DW_ID) {
		pcount(k, v);
		return;
	}
	if (pdw_send_by_id(k, id, v))
		return;
	lost = *k;
	lost.ustack = -1;
	pcount(&lost, v);
}

/* The wait of d ns on w's futex: to the waker's stacks and to the waiter's. */
static __always_inline void charge(void *ctx, struct waiting *w, __u64 d, long ret)
{
	struct waker_key key = { .uaddr = w->uaddr, .tgid = pkey_pid() };
	struct prof_waker *wk = bpf_map_lookup_elem(&wakers, &key);
	struct prof_val v = {};
	struct prof_key k;
	__u64 id = 0;

	if (wk) {
		k = wk->key;
		id = wk->dw_id;
	} else {
		/* Timed out: nobody woke it. Otherwise the wake came before fnprof saw one. */
		k = (struct prof_key){ .ustack = PROF_STACK_NO_WAKER, .kstack = -1, .pid = w->key.pid };
		if (ret != -ETIMEDOUT)
			pbump(PDROP_NO_WAKER);
	}
	/* The waker's values and the waiter's are apart (v[0..1], v[2..3]): one key may hold both. */
	k.label = w->key.label;
	v.v[0] = PROF_FP_ONE;
	v.v[1] = d;
	charge_waker(&k, id, &v);
	v.v[0] = v.v[1] = 0;
	v.v[2] = PROF_FP_ONE;
	v.v[3] = d;
	charge_waiter(ctx, w, &v);
	pbump(PDROP_KEPT);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_exit, struct pt_regs *regs, long ret)
{
	struct waiting *w;
	__u64 since;

	if (ARCH_SYSCALL_NR(regs) != ARCH_NR_FUTEX || !pwanted(bpf_get_current_pid_tgid() >> 32))
		return 0;
	w = bpf_task_storage_get(&waits, bpf_get_current_task_btf(), 0, 0);
	if (!w || !w->since)
		return 0;
	since = w->since;
	w->since = 0;
	if (since < start_ns)
		return 0;
	pbump(PDROP_SEEN);
	charge(ctx, w, bpf_ktime_get_ns() - since, ret);
	return 0;
}
