/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the offcpu, mutex and heap programs share: their stack map, the
 * weighted counts per stack and the drop counters. Each object that includes
 * this has maps of its own.
 */
#ifndef FNPROF_PROF_BPF_H
#define FNPROF_PROF_BPF_H

#include <bpf/bpf_core_read.h>

#include "fnprof.h"
#include "maps.bpf.h"
#include "ustack.bpf.h"

#define EFAULT 14  /* not in vmlinux.h: errno values are macros */

const volatile __u32 target_tgid = 0;
/* -a: every process but the idle task (tgid 0) and fnprof (self_tgid), each key with its tgid. */
const volatile bool all_procs = false;
const volatile __u32 self_tgid = 0;
const volatile bool per_thread = false;
/* --call-graph dwarf: user stacks copied (stack_bytes of them) and sent with their values (pdw_send). */
const volatile bool dwarf = false;
const volatile __u32 stack_bytes = FNPROF_DEFAULT_STACK_COPY;

STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FNPROF_COUNTS_ENTRIES);
	__type(key, struct prof_key);
	__type(value, struct prof_val);
} counts SEC(".maps");

PERCPU_COUNTERS(pdrops, PDROP_NR);

PROCS_SEEN(procs);

/* Whether process tgid is profiled: the target, or with -a every one but the idle task and fnprof. */
static __always_inline bool pwanted(__u32 tgid)
{
	if (!all_procs)
		return tgid == target_tgid;
	return tgid && tgid != self_tgid;
}

/* The current process's tgid as keys carry it: with -a its own, else 0 (the target). */
static __always_inline __u32 pkey_pid(void)
{
	return all_procs ? bpf_get_current_pid_tgid() >> 32 : 0;
}

/* -a: task's process and its name, the first time it is seen (the group leader's name). */
static __always_inline void pnote_proc(struct task_struct *task)
{
	struct proc_seen v = {};
	__u32 tgid = task->tgid;

	if (!all_procs || bpf_map_lookup_elem(&procs, &tgid))
		return;
	BPF_CORE_READ_STR_INTO(&v.comm, task, group_leader, comm);
	bpf_map_update_elem(&procs, &tgid, &v, BPF_NOEXIST);
}

static __always_inline void pbump(__u32 idx)
{
	percpu_add(&pdrops, idx, 1);
}

/* A stack id, or the reason there is none: -EFAULT only means "no such stack" (a kernel thread's user stack). */
static __always_inline __s32 pstack_id(void *ctx, __u64 flags, __u32 drop)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 && id != -EFAULT)
		pbump(drop);
	return id;
}

/* The current thread's key: its stacks now, and label. */
static __always_inline void pkey_here(void *ctx, struct prof_key *k, __u32 label, bool kernel)
{
	k->tid = per_thread ? (__u32)bpf_get_current_pid_tgid() : 0;
	k->label = label;
	k->ustack = pstack_id(ctx, BPF_F_USER_STACK, PDROP_USTACK);
	k->kstack = kernel ? pstack_id(ctx, 0, PDROP_KSTACK) : -1;
	k->caller = 0;
	k->pid = pkey_pid();
	k->pad = 0;
}

/* Adds v to the counts of k; a full map is counted, never silent. */
static __always_inline void pcount(const struct prof_key *k, const struct prof_val *v)
{
	struct prof_val *c = bpf_map_lookup_elem(&counts, k);
	int i;

	if (!c && bpf_map_update_elem(&counts, k, v, BPF_NOEXIST) == 0)
		return;
	if (!c)  /* another CPU may have inserted it meanwhile; otherwise the map is full */
		c = bpf_map_lookup_elem(&counts, k);
	if (!c) {
		pbump(PDROP_COUNTS_FULL);
		return;
	}
	for (i = 0; i < PROF_NR_VALUES; i++)
		if (v->v[i])
			__sync_fetch_and_add(&c->v[i], v->v[i]);
}

/* --call-graph dwarf: events with their stack copies to user space (its size set by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FNPROF_RB_MIN);
} pdw_rb SEC(".maps");

/* One record in the making per CPU (by CPU number: per-CPU values are limited to 32 KiB). */
struct pdw_buf {
	struct prof_dwarf hdr;
	__u8 stack[FNPROF_MAX_STACK_COPY + FNPROF_STACK_SLACK];
	__u64 seq;                /* the ids this CPU gave so far */
	__u32 busy;               /* a record is being made in it (see pdw_claim) */
};

SIZED_ARRAY(pdw_bufs, struct pdw_buf);   /* one per CPU */

/*
 * This CPU's buffer, claimed for one record, or NULL. A uprobe program runs
 * with preemption enabled (migration only is disabled): one preempted while
 * it copies a stack into the buffer (heap's uretprobe on malloc) can see
 * another program of this object, on this CPU, make its record in the same
 * buffer meanwhile. The second one finds the buffer busy and leaves it alone,
 * as it would a full ring buffer.
 */
static __always_inline struct pdw_buf *pdw_claim(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct pdw_buf *b = bpf_map_lookup_elem(&pdw_bufs, &cpu);

	if (!b)
		return NULL;
	/*
	 * An add, then a look, not a fetch-and-add: the kernels before 5.12
	 * refuse BPF_FETCH anywhere in a program. Of two claims at once, the
	 * second to add sees 2, and so may the first: both back off (counted),
	 * never both hold it. x86's locked add orders the look after it.
	 */
	__sync_fetch_and_add(&b->busy, 1);
	if (*(volatile __u32 *)&b->busy != 1) {
		__sync_fetch_and_add(&b->busy, -1);
		return NULL;
	}
	return b;
}

static __always_inline void pdw_release(struct pdw_buf *b)
{
	__sync_fetch_and_add(&b->busy, -1);
}

/*
 * Sends k and v with the current thread's user registers r and a copy of
 * its stack; with_id: under a new id, returned (user space remembers the
 * stack by it for as long as a map holds the id); else 1. 0 when nothing
 * was sent (a full ring buffer, counted): the caller counts the event with
 * its frame-pointer stack instead.
 */
static __always_inline __u64 pdw_send(const struct pt_regs *r, const struct prof_key *k, const struct prof_val *v,
				      bool with_id)
{
	__u32 cpu = bpf_get_smp_processor_id(), len;
	struct pdw_buf *b = pdw_claim();
	__u64 id = 1;

	if (!b) {
		pbump(PDROP_DW_FP);
		return 0;
	}
	/* A sequence number from 1 (an id is never 0), and the CPU: no two CPUs give the same id. */
	if (with_id)
		id = (__u64)cpu << PROF_DW_SEQ_BITS | (++b->seq & ((1ULL << PROF_DW_SEQ_BITS) - 1));
	b->hdr.key = *k;
	b->hdr.val = *v;
	b->hdr.op = PDW_STACK;
	b->hdr.id = with_id ? id : 0;
	len = ustack_fill(&b->hdr.user, b->stack, r, stack_bytes, FNPROF_MAX_STACK_COPY);
	b->hdr.user.kstack = k->kstack;
	b->hdr.user.ufp = -1;
	if (bpf_ringbuf_output(&pdw_rb, b, sizeof(b->hdr) + len, rb_wakeup(&pdw_rb))) {
		pdw_release(b);
		pbump(PDROP_RINGBUF);
		pbump(PDROP_DW_FP);
		return 0;
	}
	pdw_release(b);
	return id;
}

/*
 * v for the stack sent before under id (PDW_BY_ID), with key k. False when
 * not sent (counted). A record of a fixed size, made in the ring buffer
 * itself: no per-CPU buffer to find busy.
 */
static __always_inline bool pdw_send_by_id(const struct prof_key *k, __u64 id, const struct prof_val *v)
{
	struct prof_dwarf *r = bpf_ringbuf_reserve(&pdw_rb, sizeof(*r), 0);

	if (!r) {
		pbump(PDROP_RINGBUF);
		return false;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->key = *k;
	r->val = *v;
	r->op = PDW_BY_ID;
	r->id = id;
	bpf_ringbuf_submit(r, rb_wakeup(&pdw_rb));
	return true;
}

#endif /* FNPROF_PROF_BPF_H */
