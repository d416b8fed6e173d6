/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Go programs (amd64, 1.17+ register ABI): a call belongs to a goroutine,
 * which the runtime moves between OS threads and whose stack it copies when
 * the stack grows. So the open calls are kept per goroutine, keyed by its g
 * (register r14 in Go code), and a frame is known by its distance from the
 * top of the goroutine's stack (g.stack.hi - sp), which a stack copy keeps.
 * The return is seen by a probe on the ret instruction, wherever it runs.
 *
 * Goroutines switch in user space, unseen by sched_switch: these calls have
 * wall and self time, no on/off-CPU split (user space shows it as unknown).
 *
 * --slow follows the goroutine too: a slow call's caller stack is a
 * frame-pointer walk from its ret (Go keeps frame pointers on amd64), and
 * its longest park (runtime.gopark to runtime.execute of the same g) is
 * kept with gopark's stack and reason (the go_park and go_run programs).
 *
 * Included by trace.bpf.c after account(); its hooks: the go_entry,
 * go_exit_ret, go_gone (and with --slow go_park, go_run) programs,
 * go_on_switch() in sched_switch while go_calls is set, and the gstacks and
 * gslow maps' sizes.
 */
#ifndef FNPROF_GO_BPF_H
#define FNPROF_GO_BPF_H

/* The open traced calls of one goroutine. */
struct go_stack {
	__u32 depth;         /* frames kept, at most FNPROF_MAX_DEPTH */
	__u32 lost;          /* open calls above those, not kept (counted as returns lost) */
	__u64 lost_off;      /* stack offset of the newest of those, 0 after one returned */
	__u32 gen;           /* probe generation the frames belong to */
	__u32 pad;
	struct fn_frame frames[FNPROF_MAX_DEPTH];  /* sp holds the offset from the stack's top */
};

/* g address -> its open calls; entries made at a goroutine's first traced call, gone at its exit. */
SIZED_HASH(gstacks, struct go_stack);
ZERO_VALUE(gstack_zero, struct go_stack);

/*
 * A thread that has just entered a Go call: the entry probe's return path
 * (the single step of the function's first instruction, the kernel's returns
 * to user space) may be switched out, which the call itself would not have
 * been. That time is taken out of the call, as in_entry_probe() does for
 * calls kept per thread.
 */
struct go_thread {
	__u64 g, off;        /* the call: its goroutine and stack offset */
	__u64 ip;            /* the function's address */
	__u64 entry_ns;      /* about when it was entered; 0: no call in its entry probe */
	__u64 out_ns;        /* when switched out there, 0 if not */
	/* The last switch out and back in, and the user ip it left (see go_ret_pause()). */
	__u64 sw_out_ns, sw_in_ns, sw_ip;
};

THREAD_MAP(go_threads, struct go_thread);

/*
 * Calls entered while gstacks was full, not returned yet: returns without a
 * stack of their goroutine's are theirs while any are open, not orphans.
 */
__u64 go_unkept = 0;

/*
 * A return without its goroutine's stack: one of the calls not kept? The
 * compare-and-swap fails when another CPU took one at the same moment: tried
 * again, a few times (a failure read 1 in 5000 returns as an orphan).
 */
static __always_inline bool go_was_refused(void)
{
	int i;

#pragma unroll
	for (i = 0; i < 8; i++) {
		__u64 n = go_unkept;

		if (!n)
			return false;
		if (__sync_bool_compare_and_swap(&go_unkept, n, n - 1))
			return true;
	}
	return false;
}

/* runtime.stack, the first field of runtime.g in every Go release. */
struct go_stack_bounds {
	__u64 lo, hi;
};

/*
 * The running goroutine (r14) and the offset of sp from the top of its
 * stack. False when sp is not on that stack: r14 is not a g here (assembly
 * that does not keep it), and the call cannot be kept.
 */
static __always_inline bool go_where(struct pt_regs *ctx, __u64 *g, __u64 *off)
{
	struct go_stack_bounds b;
	__u64 sp = PT_REGS_SP(ctx);

	*g = ARCH_GO_G(ctx);
	if (!*g || bpf_probe_read_user(&b, sizeof(b), (void *)*g))
		return false;
	if (sp <= b.lo || sp >= b.hi)
		return false;
	*off = b.hi - sp;
	return true;
}

/* The goroutine's stack of open calls, made on first use; NULL when the map is full. */
static __always_inline struct go_stack *go_stack_of(__u64 g)
{
	struct go_stack *gs = bpf_map_lookup_elem(&gstacks, &g);
	__u32 zero = 0;

	if (gs)
		return gs;
	gs = bpf_map_lookup_elem(&gstack_zero, &zero);
	if (!gs || bpf_map_update_elem(&gstacks, &g, gs, BPF_NOEXIST))
		return NULL;
	return bpf_map_lookup_elem(&gstacks, &g);
}

struct go_dead_ctx {
	struct go_stack *gs;
	__u64 off;
};

static long go_dead_step(__u32 i, struct go_dead_ctx *c)
{
	__u32 d = c->gs->depth;

	if (!d || c->gs->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)].sp < c->off)
		return 1;
	c->gs->depth = d - 1;
	return 0;
}

/*
 * Before a call at stack offset off: the frames at or beyond it are dead (a
 * panic unwound them, or the goroutine ended in them and its g was reused),
 * counted as abandoned; so are the calls not kept above them, counted as
 * lost when they were entered. A live caller is always nearer the top.
 */
static __always_inline void go_drop_dead(struct go_stack *gs, __u64 off)
{
	__u32 d = gs->depth;

	if (!d || gs->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)].sp < off)
		return;
	gs->lost = 0;
	bpf_loop(FNPROF_MAX_DEPTH, go_dead_step, &(struct go_dead_ctx){ .gs = gs, .off = off }, 0);
	count_drops(DROP_ABANDONED, d - gs->depth);
}

/*
 * A second entry of the call on top: the prologue found the stack too small,
 * the runtime grew (copied) it and ran the function again from its start; or
 * it preempted the goroutine there. Same function, same offset from the top.
 */
static __always_inline bool go_reentry(const struct go_stack *gs, __u32 id, __u64 off)
{
	const struct fn_frame *top = &gs->frames[(gs->depth - 1) & (FNPROF_MAX_DEPTH - 1)];

	if (gs->lost)
		return gs->lost_off && off == gs->lost_off;
	return gs->depth && top->sp == off && top->id == id;
}

static __always_inline void go_push(struct go_stack *gs, __u32 id, __u32 slot, __u64 off, struct pt_regs *ctx)
{
	__u32 d = gs->depth, i;
	struct fn_frame *f = &gs->frames[frame_idx(d)];

	__builtin_memset(f, 0, sizeof(*f));
	f->id = id;
	f->slot = slot;
	f->sp = off;
	f->ip = PT_REGS_IP(ctx);
	f->cpu = bpf_get_smp_processor_id();
	f->outer = 1;
	for (i = 0; i < FNPROF_MAX_DEPTH && i < d; i++) {
		if (gs->frames[i].id == id) {
			f->outer = 0;
			break;
		}
	}
	gs->depth = d + 1;
	f->start_ns = bpf_ktime_get_ns();
}

/* This thread is about to return from the entry probe of the call at (g, off). */
static __always_inline void go_note_entry(__u64 g, __u64 off, __u64 ip, __u64 now)
{
	struct go_thread *t = bpf_task_storage_get(&go_threads, bpf_get_current_task_btf(), NULL,
						   BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!t)
		return;
	t->g = g;
	t->off = off;
	t->ip = ip;
	t->entry_ns = now;
	t->out_ns = 0;
}

/* next is back: the time it was out in an entry probe's return path moves its call's start. */
static __always_inline void go_back_in(struct go_thread *t, __u64 now)
{
	struct go_stack *gs = bpf_map_lookup_elem(&gstacks, &t->g);
	__u64 off = now - t->out_ns;
	struct fn_frame *top;

	/*
	 * Still in that return path: a second switch there (a wakeup preempts it
	 * on its way out) is the probe's too. The time out moves the entry on,
	 * so that the window counts time on the CPU only.
	 */
	t->entry_ns += off;
	t->out_ns = 0;
	if (!gs || !gs->depth)
		return;
	top = &gs->frames[(gs->depth - 1) & (FNPROF_MAX_DEPTH - 1)];
	if (top->sp == t->off && !gs->lost)
		top->start_ns += off;
}

/* A thread of the target switched out: when, where, and whether in an entry probe's return path. */
static __always_inline void go_switch_out(struct task_struct *prev, __u64 now)
{
	struct go_thread *t = bpf_task_storage_get(&go_threads, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

	if (!t)
		return;
	t->sw_out_ns = now;
	t->sw_ip = regs ? ARCH_REGS_IP(regs) : 0;
	if (!t->entry_ns || t->out_ns)
		return;
	/*
	 * Go's entry probes sit on the stack check's jbe, taken only to grow the
	 * stack (a re-entry, go_reentry): the first-bytes rule alone. A nop5 or
	 * far branch site (a function without the check) is left to it too.
	 */
	if (in_entry_probe_of(prev, t->sw_ip, t->ip, ARCH_FIRST_INSN_SPAN, (__s64)(now - t->entry_ns), 0))
		t->out_ns = now;
	else
		t->entry_ns = 0;
}

/* sched_switch, while Go functions are traced: the probes' own return paths. */
static __always_inline void go_on_switch(struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	struct go_thread *t;

	if (is_tgid(prev->tgid))
		go_switch_out(prev, now);
	if (!is_tgid(next->tgid) || !(t = bpf_task_storage_get(&go_threads, next, NULL, 0)))
		return;
	t->sw_in_ns = now;
	if (t->out_ns) {
		go_back_in(t, now);
		t->out_ns = 0;
	}
}

/*
 * Time this thread spent switched out between the trap of the ret
 * instruction and this probe's program (the kernel reschedules on its way
 * back to user space before it runs the uprobe handlers): not the call's.
 * Known by the user ip the switch left: just past the breakpoint.
 */
static __always_inline __u64 go_ret_pause(struct pt_regs *ctx)
{
	struct go_thread *t = bpf_task_storage_get(&go_threads, bpf_get_current_task_btf(), NULL, 0);

	if (!t || t->sw_ip != PT_REGS_IP(ctx) + ARCH_BREAKPOINT_BYTES || t->sw_in_ns <= t->sw_out_ns)
		return 0;
	t->sw_ip = 0;
	return t->sw_in_ns - t->sw_out_ns;
}

/* --- --slow for Go: per goroutine, beside its go_stack ---------------------- */

/* Per open call, parallel to go_stack's frames: its longest park so far. */
struct go_slow_frame {
	__u64 park_ns;
	__u32 cap1;          /* the capture of that park + 1; 0: none */
	__u32 pad;
};

/* A park's stack (user addresses, leaf first: runtime.gopark, its callers) and why. */
struct go_park_cap {
	__u32 nr;
	__u32 reason;        /* gopark's waitReason */
	__u64 ips[FNPROF_SLOW_KDEPTH];
};

struct go_slow {
	struct go_slow_frame frames[FNPROF_MAX_DEPTH];
	__u64 park_start;    /* when the goroutine parked inside traced calls; 0: not parked */
	__u32 out_cap1;      /* the capture that park filled + 1; 0: none */
	__u32 pad;
	/* SLOW_CAPTURES used; one more, so that an index masked with 3 stays inside for the verifier. */
	struct go_park_cap caps[4];
};
_Static_assert(SLOW_CAPTURES <= 4, "go_cap masks the index with 3");

/* g address -> its parks; made at its first park inside a traced call, gone with its gstacks entry. */
SIZED_HASH(gslow, struct go_slow);
ZERO_VALUE(gslow_zero, struct go_slow);

struct go_fp_ctx {
	__u64 *ips;
	__u64 bp, lo, hi;
	__u32 n;
};

/* One frame of the walk: [bp] is the caller's bp, [bp + 8] its return address. */
static long go_fp_step(__u32 i, struct go_fp_ctx *c)
{
	__u64 fr[2];
	__u32 n = c->n;

	if (n >= FNPROF_SLOW_KDEPTH || c->bp < c->lo || c->bp + sizeof(fr) > c->hi ||
	    bpf_probe_read_user(fr, sizeof(fr), (void *)c->bp) || !fr[1])
		return 1;
	c->ips[n] = fr[1];
	c->n = n + 1;
	/* Callers' frames are higher on the goroutine's stack: anything else ends the walk. */
	if (fr[0] <= c->bp)
		return 1;
	c->bp = fr[0];
	return 0;
}

/*
 * The goroutine's stack into ips (FNPROF_SLOW_KDEPTH), leaf first, at a
 * function's first instruction or its ret: the ip, the return address at
 * [sp], then the frame-pointer chain from bp (the caller's, not yet saved or
 * already restored), inside the goroutine's stack. Returns how many.
 */
static __always_inline __u32 go_fp_walk(struct pt_regs *ctx, __u64 *ips)
{
	struct go_fp_ctx c = { .ips = ips, .bp = ARCH_FP(ctx), .n = 1 };
	struct go_stack_bounds b;
	__u64 ra = 0;

	ips[0] = PT_REGS_IP(ctx);
	if (bpf_probe_read_user(&b, sizeof(b), (void *)ARCH_GO_G(ctx)) ||
	    bpf_probe_read_user(&ra, sizeof(ra), (void *)PT_REGS_SP(ctx)) || !ra)
		return 1;
	ips[1] = ra;
	c.n = 2;
	c.lo = b.lo;
	c.hi = b.hi;
	bpf_loop(FNPROF_SLOW_KDEPTH, go_fp_step, &c, 0);
	return c.n;
}

/* A new call in frame d of goroutine g: no park yet. */
static __always_inline void go_slow_enter(__u64 g, __u32 d)
{
	struct go_slow *s = bpf_map_lookup_elem(&gslow, &g);

	if (s) {
		s->frames[frame_idx(d)].park_ns = 0;
		s->frames[frame_idx(d)].cap1 = 0;
	}
}

/* The goroutine's go_slow, made on first use; NULL when the map is full. */
static __always_inline struct go_slow *go_slow_of(__u64 g)
{
	struct go_slow *s = bpf_map_lookup_elem(&gslow, &g);
	__u32 zero = 0;

	if (s)
		return s;
	s = bpf_map_lookup_elem(&gslow_zero, &zero);
	if (!s || bpf_map_update_elem(&gslow, &g, s, BPF_NOEXIST))
		return NULL;
	return bpf_map_lookup_elem(&gslow, &g);
}

/* Capture cap1 - 1, NULL for 0. */
static __always_inline struct go_park_cap *go_cap(struct go_slow *s, __u32 cap1)
{
	__u32 c = cap1 - 1;

	if (c >= SLOW_CAPTURES)
		return NULL;
	return &s->caps[c & 3];
}

/* A capture none of the depth open calls points at (+ 1), 0 if all are taken. */
static __always_inline __u32 go_free_cap(const struct go_slow *s, __u32 depth)
{
	__u32 used = 0, i;

	for (i = 0; i < FNPROF_MAX_DEPTH && i < depth; i++)
		used |= 1U << (s->frames[i].cap1 & 7);
	for (i = 0; i < SLOW_CAPTURES; i++)
		if (!(used & 2U << i))
			return i + 1;
	return 0;
}

/*
 * runtime.gopark, first instruction: the running goroutine parks (sleep,
 * channel, select, mutex, network...). Inside traced calls, its stack and
 * reason go to a free capture; runtime.execute of the g ends the park.
 */
SEC("uprobe")
int BPF_KPROBE(go_park)
{
	__u64 g = ARCH_GO_G(ctx);
	struct go_stack *gs = bpf_map_lookup_elem(&gstacks, &g);
	struct go_park_cap *cap;
	struct go_slow *s;
	__u32 c;

	if (!gs || gs->gen != generation || !gs->depth)
		return 0;
	s = go_slow_of(g);
	if (!s)
		return 0;   /* its slow calls go without their park (slow_blocked_stacks_lost) */
	s->out_cap1 = c = go_free_cap(s, gs->depth);
	cap = go_cap(s, c);
	if (cap) {
		cap->reason = ARCH_GO_ARG3(ctx) & 0xff;
		cap->nr = go_fp_walk(ctx, cap->ips);
	}
	s->park_start = bpf_ktime_get_ns();
	return 0;
}

/* runtime.execute(gp): gp runs again; a park of gp inside traced calls ends here. */
SEC("uprobe")
int BPF_KPROBE(go_run)
{
	__u64 g = ARCH_GO_ARG1(ctx), now = bpf_ktime_get_ns(), dt;
	struct go_slow *s = bpf_map_lookup_elem(&gslow, &g);
	struct go_stack *gs;
	__u32 i;

	if (!s || !s->park_start)
		return 0;
	dt = now - s->park_start;
	s->park_start = 0;
	gs = bpf_map_lookup_elem(&gstacks, &g);
	for (i = 0; gs && i < FNPROF_MAX_DEPTH && i < gs->depth; i++) {
		if (dt > s->frames[i].park_ns) {
			s->frames[i].park_ns = dt;
			s->frames[i].cap1 = s->out_cap1;
		}
	}
	s->out_cap1 = 0;
	return 0;
}

/* The longest park of frame k into r: its time, reason and stack. */
static __always_inline void go_slow_park(struct slow_call *r, struct go_slow *s, __u32 k)
{
	struct go_slow_frame *sf;
	struct go_park_cap *cap;

	r->block_ns = 0;
	r->wait_reason = 0;
	r->blocked.nr_kips = 0;
	if (!s)
		return;
	sf = &s->frames[frame_idx(k)];
	r->block_ns = sf->park_ns;
	cap = go_cap(s, sf->cap1);
	if (!cap || bpf_probe_read_kernel(r->blocked.kips, sizeof(cap->ips), cap->ips)) {
		if (sf->park_ns)
			slow_count(SLOWDROP_NO_BLOCK);
		return;
	}
	r->wait_reason = cap->reason;
	r->blocked.nr_kips = cap->nr;
	r->flags |= SLOW_BLOCKED;
}

/* The call in frame k of goroutine g (f) took --slow or longer, closed at its ret (ctx): its record. */
static __always_inline void go_slow_emit(struct pt_regs *ctx, __u64 g, const struct fn_frame *f, __u32 k,
					 __u64 wall, __u64 now)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct slow_call *r;

	if (f->id >= slow_nr_ids)
		return;
	slow_count(SLOWDROP_SEEN);
	r = slow_reserve(now);
	if (!r)
		return;
	r->wall_ns = wall;
	r->oncpu_ns = r->runq_ns = r->blocked_ns = 0;
	r->end_ns = now;
	r->fn_ip = f->ip;
	r->id = f->id;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->flags = SLOW_AT_RET | SLOW_GO;
	r->entry.nr_kips = go_fp_walk(ctx, r->entry.kips);
	r->entry.user.stack_len = 0;
	r->blocked.user.stack_len = 0;
	go_slow_park(r, bpf_map_lookup_elem(&gslow, &g), k);
	bpf_ringbuf_submit(r, 0);
}

SEC("uprobe")
int BPF_KPROBE(go_entry)
{
	__u32 cookie = bpf_get_attach_cookie(ctx);
	__u32 id = cookie & FNPROF_COOKIE_ID_MASK;
	__u32 slot = cookie >> FNPROF_COOKIE_SLOT_SHIFT & FNPROF_COOKIE_SLOT_MASK;
	struct go_stack *gs;
	__u64 g, off;

	if (!entry_counts(cookie, &slot))
		return 0;
	if (cookie & FNPROF_COOKIE_ENTRY_ONLY) {
		count_entry(slot, id, true);
		return 0;
	}
	if (!go_where(ctx, &g, &off)) {
		count_entry(slot, id, false);
		count_drop(DROP_GO_NOT_G);
		return 0;
	}
	gs = go_stack_of(g);
	if (!gs) {
		count_entry(slot, id, false);
		count_drop(DROP_GO_STACKS);
		__sync_fetch_and_add(&go_unkept, 1);
		return 0;
	}
	if (gs->gen != generation) {
		gs->gen = generation;
		gs->depth = 0;
		gs->lost = 0;
	}
	/* Counted once: a second entry after the stack grew is the same call. */
	if (go_reentry(gs, id, off))
		return 0;
	count_entry(slot, id, false);
	go_note_entry(g, off, PT_REGS_IP(ctx), bpf_ktime_get_ns());
	go_drop_dead(gs, off);
	if (gs->depth >= FNPROF_MAX_DEPTH || gs->lost) {
		/* Not kept, but known: its return is told apart by its offset, and not an orphan. */
		gs->lost++;
		gs->lost_off = off;
		count_drop(DROP_DEPTH);
		return 0;
	}
	go_push(gs, id, slot, off, ctx);
	if (slow_ns)
		go_slow_enter(g, gs->depth - 1);
	return 0;
}

struct go_match_ctx {
	struct go_stack *gs;
	__u64 off;
	int k;
};

static long go_match_step(__u32 i, struct go_match_ctx *m)
{
	__u32 j = m->gs->depth - 1 - i;

	if (j >= FNPROF_MAX_DEPTH || m->gs->frames[j].sp < m->off)
		return 1;
	if (m->gs->frames[j].sp == m->off) {
		m->k = j;
		return 1;
	}
	return 0;
}

/* The kept frame at stack offset off (the ret probe's sp is the entry's), or -1. */
static __always_inline int go_match(struct go_stack *gs, __u64 off)
{
	struct go_match_ctx m = { .gs = gs, .off = off, .k = -1 };
	__u32 d = gs->depth;

	if (d && gs->frames[(d - 1) & (FNPROF_MAX_DEPTH - 1)].sp == off)
		return d - 1;
	bpf_loop(d, go_match_step, &m, 0);
	return m.k;
}

/* Closes frame k of goroutine g at its ret (ctx): its call measured (wall and self; on/off-CPU unknown) and accounted. */
static __always_inline void go_close(struct pt_regs *ctx, __u64 g, struct go_stack *gs, __u32 k, __u64 now)
{
	struct fn_frame *f = &gs->frames[frame_idx(k)], *parent;
	struct call c = {};

	c.wall = now > f->start_ns ? now - f->start_ns : 0;
	c.oncpu = c.wall;
	c.self = c.wall > f->child_wall ? c.wall - f->child_wall : 0;
	account(f->slot, f->id, &c, f);
	if (slow_ns && c.wall >= slow_ns)
		go_slow_emit(ctx, g, f, k, c.wall, now);
	if (k > 0) {
		parent = &gs->frames[frame_idx(k - 1)];
		call_to_caller(parent, f, &c);
	}
	if (k + 1 < gs->depth)
		count_drops(DROP_ABANDONED, gs->depth - k - 1);
	gs->depth = k;
}

/* A ret instruction of a traced Go function, on whatever thread the goroutine runs now. */
SEC("uprobe")
int BPF_KPROBE(go_exit_ret)
{
	__u64 now = bpf_ktime_get_ns(), g, off;
	struct go_stack *gs;
	int k;

	if (!links_per_process && proc_slot(current_tgid()) < 0)
		return 0;
	if (!go_where(ctx, &g, &off))
		return 0;   /* its entry was counted as not on a goroutine stack */
	gs = bpf_map_lookup_elem(&gstacks, &g);
	if (gs && gs->gen != generation)
		return 0;
	/* Beyond the kept frames: one of the calls not kept returns, or they were unwound. */
	if (gs && gs->lost) {
		if (gs->frames[(gs->depth - 1) & (FNPROF_MAX_DEPTH - 1)].sp < off) {
			gs->lost--;
			gs->lost_off = 0;
			return 0;
		}
		gs->lost = 0;
	}
	k = gs ? go_match(gs, off) : -1;
	if (k < 0 || k >= FNPROF_MAX_DEPTH) {
		if (!gs && go_was_refused())
			return 0;
		if (!paused)
			count_drop(DROP_ORPHAN_RET);
		return 0;
	}
	go_close(ctx, g, gs, k, now - go_ret_pause(ctx));
	return 0;
}

/*
 * runtime.goexit1: the goroutine ends (its function returned, or
 * runtime.Goexit). Its g goes back to the runtime for reuse: calls still
 * open never return, and are counted.
 */
SEC("uprobe")
int BPF_KPROBE(go_gone)
{
	__u64 g = ARCH_GO_G(ctx);
	struct go_stack *gs = bpf_map_lookup_elem(&gstacks, &g);

	if (!gs)
		return 0;
	if (gs->gen == generation && gs->depth)
		count_drops(DROP_ABANDONED, gs->depth);
	bpf_map_delete_elem(&gstacks, &g);
	if (slow_ns)
		bpf_map_delete_elem(&gslow, &g);
	return 0;
}

#endif /* FNPROF_GO_BPF_H */
