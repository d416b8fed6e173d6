// SPDX-License-Identifier: GPL-2.0
/*
 * The reading thread and the ring of kept records. The thread alone touches
 * the unwinder and the symbolizer; the ring is shared with the reports under
 * one lock.
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "base/rbreader.h"
#include "profile/slow.h"
#include "stacks/symbolize.h"
#include "stacks/unwind.h"

/* A process whose calls are named with its own objects. */
struct slow_proc {
	pid_t pid;
	struct unwinder *uw;       /* the thread's own, as is the symbolizer */
	struct symbolizer *sym;
	bool refreshed;            /* the symbolizer re-read the mappings in this pass */
};

struct slow {
	__u64 threshold_ns;
	struct rb_reader rd;       /* its thread: everything but the fields below the lock */
	struct slow_proc procs[SLOW_PROCS_MAX];   /* [0]: the target, and the calls of processes not listed */
	size_t nr_procs;
	struct unwinder *uw;       /* the record's process's, while the thread names it */
	struct symbolizer *sym;
	pthread_mutex_t lock;      /* everything below */
	struct slow_rec ring[SLOW_KEEP];   /* record seq at [(seq - 1) % SLOW_KEEP] */
	__u64 seq;                 /* the last record's */
	__u64 reported;            /* the last record an interval view took */
	__u64 seen_mark, no_block_mark, rate_mark, ringbuf_mark;  /* the kernel's counters then */
};

/*
 * Names n addresses (leaf first) into out, up to max, the probes' own kernel
 * frames left out. *cut is set when frames were left over: the caller passes
 * one address more than fits when there is one.
 */
static int name_frames(struct slow *s, const __u64 *ips, int n, bool kernel, const char **out, int max,
		       bool *cut)
{
	struct sym_stack t;
	int i, k = 0;

	if (symbolize_stack(s->sym, ips, n, kernel, false, max + 1, &t) == 0) {
		for (i = 0; i < t.nr; i++) {
			if (kernel && !k && symbolize_probe_frame(&t.f[i]))
				continue;
			if (k == max) {
				*cut = true;
				break;
			}
			out[k++] = t.f[i].func;
		}
	}
	free(t.f);
	free(t.ips);
	return k;
}

/*
 * The user frames of st, after lead (the function itself, 0: none), named
 * into out (max at most SLOW_FRAMES). *truncated when the walk ran past the
 * stack's copy or found more frames than max: a stack cut at the limit is
 * not the whole stack.
 */
static int user_frames(struct slow *s, const struct slow_stack *st, __u64 lead, const char **out, int max,
		       bool *truncated)
{
	__u64 ips[SLOW_FRAMES + 1];
	bool trunc = false;
	int n = 0;

	if (lead)
		ips[n++] = lead;
	/* One frame more than fits: it tells whether the stack went on. */
	if (st->user.stack_len <= FNPROF_SLOW_STACK)
		n += unwinder_unwind(s->uw, &st->user, ips + n, max + 1 - n, &trunc, NULL);
	*truncated |= trunc;
	return name_frames(s, ips, n, false, out, max, truncated);
}

/* The longest block's stack: kernel frames, then the user frames under them. */
static void blocked_frames(struct slow *s, const struct slow_stack *st, struct slow_rec *r)
{
	int nk = st->nr_kips < FNPROF_SLOW_KDEPTH ? st->nr_kips : FNPROF_SLOW_KDEPTH;

	r->nr_blocked = name_frames(s, st->kips, nk, true, r->blocked, SLOW_FRAMES, &r->truncated);
	r->nr_blocked += user_frames(s, st, 0, r->blocked + r->nr_blocked, SLOW_FRAMES - r->nr_blocked,
				     &r->truncated);
	r->has_blocked = true;
}

/*
 * Go's waitReason names (runtime/runtime2.go): the first 21, the same in
 * every release from 1.17 to 1.22 at least; later ones by number.
 */
static const char *const go_wait_reasons[] = {
	"", "GC assist marking", "IO wait", "chan receive (nil chan)", "chan send (nil chan)", "dumping heap",
	"garbage collection", "garbage collection scan", "panicwait", "select", "select (no cases)",
	"GC assist wait", "GC sweep wait", "GC scavenge wait", "chan receive", "chan send", "finalizer wait",
	"force gc (idle)", "semacquire", "sleep", "sync.Cond.Wait",
};

static void go_wait_reason(__u32 code, char *buf, size_t size)
{
	if (code && code < sizeof(go_wait_reasons) / sizeof(go_wait_reasons[0]))
		snprintf(buf, size, "%s", go_wait_reasons[code]);
	else
		snprintf(buf, size, "waitReason %u", code);
}

/* Go (SLOW_GO): both stacks are addresses already, leaf first, walked by frame pointer in the probe. */
static void go_frames(struct slow *s, const struct slow_call *c, struct slow_rec *r)
{
	int n = c->entry.nr_kips < FNPROF_SLOW_KDEPTH ? c->entry.nr_kips : FNPROF_SLOW_KDEPTH;

	r->go = true;
	/* A walk that filled its buffer may have had more frames. */
	r->truncated |= n == FNPROF_SLOW_KDEPTH;
	r->nr_stack = name_frames(s, c->entry.kips, n, false, r->stack, SLOW_FRAMES, &r->truncated);
	if (!(c->flags & SLOW_BLOCKED))
		return;
	n = c->blocked.nr_kips < FNPROF_SLOW_KDEPTH ? c->blocked.nr_kips : FNPROF_SLOW_KDEPTH;
	r->truncated |= n == FNPROF_SLOW_KDEPTH;
	r->nr_blocked = name_frames(s, c->blocked.kips, n, false, r->blocked, SLOW_FRAMES, &r->truncated);
	r->has_blocked = true;
	go_wait_reason(c->wait_reason, r->wait_reason, sizeof(r->wait_reason));
}

static void fill_figures(struct slow_rec *r, const struct slow_call *c)
{
	r->id = c->id;
	r->pid = c->pid;
	r->tid = c->tid;
	r->wall_ns = c->wall_ns;
	r->oncpu_ns = c->oncpu_ns;
	r->runq_ns = c->runq_ns;
	r->blocked_ns = c->blocked_ns;
	r->block_ns = c->block_ns;
	r->end_s = c->end_ns / 1e9;
}

/* A call kept per thread: its two stack copies unwound. */
static void thread_frames(struct slow *s, const struct slow_call *c, struct slow_rec *r)
{
	/* Taken at a uretprobe, the stack starts in the caller: the function goes first. */
	r->nr_stack = user_frames(s, &c->entry, c->flags & SLOW_AT_RET ? 0 : c->fn_ip, r->stack, SLOW_FRAMES,
				  &r->truncated);
	if (c->flags & SLOW_BLOCKED)
		blocked_frames(s, &c->blocked, r);
}

/* The unwinder and symbolizer of process pid's calls: its own in a -p list, else the target's. */
static void use_proc(struct slow *s, __u32 pid)
{
	struct slow_proc *p = &s->procs[0];

	for (size_t i = 1; i < s->nr_procs; i++)
		if ((__u32)s->procs[i].pid == pid)
			p = &s->procs[i];
	if (!p->refreshed)  /* objects loaded since the last pass */
		symbolizer_refresh(p->sym);
	p->refreshed = true;
	s->uw = p->uw;
	s->sym = p->sym;
}

/* One record from the ring buffer: unwound and named here, kept under the lock. */
static int on_record(void *ctx, void *data, size_t size)
{
	const struct slow_call *c = data;
	struct slow *s = ctx;
	struct slow_rec r = {};

	if (size < sizeof(*c))
		return 0;
	use_proc(s, c->pid);
	fill_figures(&r, c);
	if (c->flags & SLOW_GO)
		go_frames(s, c, &r);
	else
		thread_frames(s, c, &r);
	pthread_mutex_lock(&s->lock);
	r.seq = ++s->seq;
	s->ring[(r.seq - 1) % SLOW_KEEP] = r;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* After each pass of the reader: the next record may re-read the mappings again. */
static void pass_done(void *ctx)
{
	struct slow *s = ctx;

	for (size_t i = 0; i < s->nr_procs; i++)
		s->procs[i].refreshed = false;
}

/* Each process's unwinder and symbolizer. 0 or -errno. */
static int new_procs(struct slow *s, const struct slow_conf *c)
{
	size_t n = c->pids && c->nr_pids ? c->nr_pids : 1;

	if (n > SLOW_PROCS_MAX)
		return -E2BIG;
	for (s->nr_procs = 0; s->nr_procs < n; s->nr_procs++) {
		struct slow_proc *p = &s->procs[s->nr_procs];

		p->pid = c->pids && c->nr_pids ? c->pids[s->nr_procs] : c->pid;
		p->uw = unwinder_new(p->pid, NULL);
		p->sym = symbolizer_new(p->pid, c->max_memory);
		if (!p->uw || !p->sym) {
			s->nr_procs++;   /* freed with the others */
			return -ENOMEM;
		}
		/* One thread unwinds every process's calls in turn: one may exit before its first is read. */
		if (n > 1)
			unwinder_prepare(p->uw);
	}
	return 0;
}

int slow_start(struct slow *s, int rb_fd)
{
	return rb_reader_start(&s->rd, rb_fd, on_record, s, &s->lock, pass_done, NULL);
}

int slow_new(const struct slow_conf *c, struct slow **out)
{
	struct slow *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->threshold_ns = c->threshold_ns;
	pthread_mutex_init(&s->lock, NULL);
	err = new_procs(s, c);
	if (err) {
		slow_stop(s);
		return err;
	}
	*out = s;
	return 0;
}

void slow_stop(struct slow *s)
{
	if (!s)
		return;
	rb_reader_stop(&s->rd);
	for (size_t i = 0; i < s->nr_procs; i++) {
		unwinder_free(s->procs[i].uw);
		symbolizer_free(s->procs[i].sym);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int slow_view(struct slow *s, const __u64 kdrops[SLOWDROP_NR], bool total, bool final, struct slow_view *out)
{
	__u64 from, i;

	memset(out, 0, sizeof(*out));
	out->threshold_ns = s->threshold_ns;
	pthread_mutex_lock(&s->lock);
	rb_reader_sync_locked(&s->rd, final);
	from = total ? 0 : s->reported;
	if (s->seq > SLOW_KEEP && from < s->seq - SLOW_KEEP)
		from = s->seq - SLOW_KEEP;
	out->recs = calloc(s->seq > from ? s->seq - from : 1, sizeof(*out->recs));
	for (i = from; out->recs && i < s->seq; i++)
		out->recs[out->nr++] = s->ring[i % SLOW_KEEP];
	out->seen = kdrops[SLOWDROP_SEEN] - (total ? 0 : s->seen_mark);
	/* A record sent after the counters were read is in recs, not yet in seen. */
	out->dropped = out->seen > out->nr ? out->seen - out->nr : 0;
	out->no_block_stack = kdrops[SLOWDROP_NO_BLOCK] - (total ? 0 : s->no_block_mark);
	out->over_rate = kdrops[SLOWDROP_RATE] - (total ? 0 : s->rate_mark);
	out->ringbuf_full = kdrops[SLOWDROP_RINGBUF] - (total ? 0 : s->ringbuf_mark);
	if (!total && out->recs) {
		s->reported = s->seq;
		s->seen_mark = kdrops[SLOWDROP_SEEN];
		s->no_block_mark = kdrops[SLOWDROP_NO_BLOCK];
		s->rate_mark = kdrops[SLOWDROP_RATE];
		s->ringbuf_mark = kdrops[SLOWDROP_RINGBUF];
	}
	pthread_mutex_unlock(&s->lock);
	return out->recs ? 0 : -ENOMEM;
}

void slow_view_free(struct slow_view *v)
{
	free(v->recs);
	v->recs = NULL;
	v->nr = 0;
}
