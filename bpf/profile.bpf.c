// SPDX-License-Identifier: GPL-2.0
/*
 * Sampling: a perf_event program on every CPU (cpu-clock, or cycles with a
 * PMU) counts the target process's samples per (thread, user stack, kernel
 * stack) in a hash map. No per-sample copy to user space, no signal.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "fnprof.h"
#include "maps.bpf.h"
#include "ustack.bpf.h"

#define EFAULT 14  /* not in vmlinux.h: errno values are macros */

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
/* -a: every process, except the idle task (tgid 0) and fnprof itself (self_tgid): its own work is not the machine's. */
const volatile bool all_procs = false;
const volatile __u32 self_tgid = 0;
const volatile bool per_thread = false;
const volatile bool dwarf = false;        /* --call-graph dwarf: copy registers and stack */
const volatile __u32 stack_bytes = FNPROF_DEFAULT_STACK_COPY;  /* how much of the user stack, a multiple of 8 */

STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FNPROF_COUNTS_ENTRIES);
	__type(key, struct sample_key);
	__type(value, __u64);
} counts SEC(".maps");

PROCS_SEEN(procs);

/* -a: processes new, or exec'd, since user space last looked (struct fnprof_proc_event). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FNPROF_PROC_EVENTS_RB);
} proc_events SEC(".maps");

/* --call-graph dwarf: the samples to unwind (its size is set by user space). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FNPROF_SAMPLES_RB_MIN);
} samples SEC(".maps");

/*
 * One sample's record in the making, one per CPU (by CPU number: a per-CPU
 * map's values are limited to 32 KiB); the slack lets a page-sized read
 * follow any offset. Samples on one CPU do not nest.
 */
struct sample_buf {
	struct dwarf_sample hdr;
	__u8 stack[FNPROF_MAX_STACK_COPY + FNPROF_STACK_SLACK];
};

SIZED_ARRAY(bufs, struct sample_buf);   /* one per CPU */

/* [SDROP_*], plus the total of samples seen at SDROP_NR. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SDROP_NR + 1);
	__type(key, __u32);
	__type(value, __u64);
} sdrops SEC(".maps");

static __always_inline void bump(__u32 idx)
{
	percpu_add(&sdrops, idx, 1);
}

/* A stack id, or the reason there is none: -EFAULT only means "no such stack". */
static __always_inline __s32 stack_id(struct bpf_perf_event_data *ctx, __u64 flags, __u32 drop)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 && id != -EFAULT)
		bump(drop);
	return id;
}

/*
 * --call-graph dwarf: the registers and the stack copy to user space, which
 * unwinds and counts. False when the thread has no user registers to send
 * (before kernel 5.15: ustack_user_regs): the caller counts the sample with
 * its frame-pointer stack instead.
 */
static __always_inline bool send_sample(struct bpf_perf_event_data *ctx, __u32 pid)
{
	struct pt_regs copy;
	const struct pt_regs *r;
	__u32 cpu = bpf_get_smp_processor_id(), len;
	struct sample_buf *b = bpf_map_lookup_elem(&bufs, &cpu);

	if (!ustack_user_regs(&copy, &r))
		return false;
	if (!b)
		return true;
	len = ustack_fill(&b->hdr, b->stack, r, stack_bytes, FNPROF_MAX_STACK_COPY);
	b->hdr.pid = pid;
	b->hdr.kstack = stack_id(ctx, 0, SDROP_KSTACK);
	b->hdr.ufp = all_procs ? stack_id(ctx, BPF_F_USER_STACK, SDROP_USTACK) : -1;
	if (bpf_ringbuf_output(&samples, b, sizeof(b->hdr) + len, rb_wakeup(&samples)))
		bump(SDROP_RINGBUF);
	return true;
}

/*
 * -a: the process's name the first time it is sampled and after each exec
 * (the group leader's: a thread's may differ), and user space woken to read
 * its mappings while it runs: once per process image, so the wake-up costs
 * what rb_wakeup's comment fears once per process, not per sample.
 */
static __always_inline void note_proc(__u32 tgid)
{
	/* not _btf (5.11): read with probes either way */
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct proc_seen v = {}, *old = bpf_map_lookup_elem(&procs, &tgid);
	struct fnprof_proc_event ev = { .pid = tgid };
	__u64 exec_id = 0;

	/* Read at its size on the running kernel: a u32 before 5.7 ("signal: Extend exec_id to 64bits"). */
	bpf_core_read(&exec_id, bpf_core_field_size(task->self_exec_id), &task->self_exec_id);
	ev.exec_id = exec_id;
	if (old && old->exec_id == exec_id)
		return;
	v.exec_id = exec_id;
	BPF_CORE_READ_STR_INTO(&v.comm, task, group_leader, comm);
	bpf_map_update_elem(&procs, &tgid, &v, BPF_ANY);
	/* A kernel thread maps nothing: no mappings to read. */
	if (BPF_CORE_READ(task, mm) && bpf_ringbuf_output(&proc_events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP))
		bump(SDROP_PROC_EVENTS);
}

/* Whether the current process is sampled: the target, or with -a every one but the idle task and fnprof. */
static __always_inline bool wanted(__u32 tgid)
{
	if (!all_procs)
		return tgid == target_tgid;
	return tgid && tgid != self_tgid;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), one = 1, *n;
	__u32 tgid = pid_tgid >> 32;
	struct sample_key key = {};

	if (!wanted(tgid))
		return 0;
	if (all_procs)
		note_proc(tgid);
	bump(SDROP_NR);
	if (dwarf && send_sample(ctx, tgid))
		return 0;
	key.pid = all_procs ? tgid : 0;
	key.tid = per_thread ? (__u32)pid_tgid : 0;
	key.ustack = stack_id(ctx, BPF_F_USER_STACK, SDROP_USTACK);
	key.kstack = stack_id(ctx, 0, SDROP_KSTACK);
	n = bpf_map_lookup_elem(&counts, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		/* Another CPU may have inserted it meanwhile; otherwise the map is full. */
		n = bpf_map_lookup_elem(&counts, &key);
		if (n)
			__sync_fetch_and_add(n, 1);
		else
			bump(SDROP_COUNTS_FULL);
	}
	return 0;
}
