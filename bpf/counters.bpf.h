/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Perf counters per traced call (-e): per-thread counting with per-CPU
 * counters. The counts that accrue on this CPU while the thread runs inside
 * a traced call are added to its ctr_cum; the reading is restarted whenever
 * the thread comes back on a CPU (sched.bpf.h). A frame keeps ctr_cum at its
 * entry, and its call's counts are the difference at its return.
 *
 * Included by trace.bpf.c after its maps and helpers (thread_entry,
 * frame_idx, count_drop; nr_events and nr_cpus).
 */
#ifndef FNPROF_COUNTERS_BPF_H
#define FNPROF_COUNTERS_BPF_H

#include "fnprof.h"
#include "maps.bpf.h"
#include "trace.bpf.h"
#include "figures.h"

/* With -e, each thread state's counter frames, at the same index (else one unused entry). */
SIZED_ARRAY(tctrs, struct thread_ctrs);

/* Per-CPU perf counters opened by user space: [event * nr_cpus + cpu]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} counters SEC(".maps");

/* Frame d's counts start from the thread's totals now. */
static __always_inline void snapshot_counters(struct thread_state *ts, __u32 d, struct fn_frame *f)
{
	struct thread_ctrs *tc = thread_entry(&tctrs, ts);
	struct ctr_frame *cf;
	__u32 e;

	f->scaled0 = ts->scaled_seq;
	if (!tc)
		return;
	cf = &tc->frames[frame_idx(d)];
	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		cf->ctr0[e] = ts->ctr_cum[e];
		cf->child_ctr[e] = 0;
	}
}

/*
 * d * num / den without the product's overflow (a cycle count of seconds
 * times ns passes 2^64): the remainder's share in 20-bit fixed point
 * (num < 2^44: hours of ns).
 */
static __always_inline __u64 scale(__u64 d, __u64 num, __u64 den)
{
	__u64 q = d / den, r = d % den;

	if (den >= (1ULL << 44)) {
		r >>= 20;
		den >>= 20;
	}
	return q * num + ((((r << 20) / den) * num) >> 20);
}

/*
 * Reads the thread's counters on this CPU. With accumulate, what each
 * counted since the last reading goes to ctr_cum: part / whole of it, the
 * share of that time that was the thread's.
 */
static __always_inline void ctr_read_part(struct thread_state *ts, bool accumulate, __u64 part, __u64 whole)
{
	struct bpf_perf_event_value v;
	struct ctr_reading *last;
	__u32 e, cpu = bpf_get_smp_processor_id();
	__u64 d, en, run;

	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		if (e >= nr_events)
			break;
		if (bpf_perf_event_read_value(&counters, e * nr_cpus + cpu, &v, sizeof(v))) {
			count_drop(DROP_CTR_READ);
			continue;
		}
		last = &ts->ctr_last[e];
		if (accumulate && v.counter >= last->counter && whole) {
			d = v.counter - last->counter;
			en = v.enabled - last->enabled;
			run = v.running - last->running;
			/* Multiplexed: the counter ran part of the time; scale up, and say so. */
			if (run < en) {
				ts->scaled_seq++;
				if (run)
					d = scale(d, en, run);
			}
			/* Only part of the time since the last reading was the thread's: its share, said so. */
			if (part < whole) {
				ts->scaled_seq++;
				d = scale(d, part, whole);
			}
			ts->ctr_cum[e] += d;
		}
		last->counter = v.counter;
		last->enabled = v.enabled;
		last->running = v.running;
	}
}

/* The same, all the time since the last reading the thread's. */
static __always_inline void ctr_read(struct thread_state *ts, bool accumulate)
{
	ctr_read_part(ts, accumulate, 1, 1);
}

/* Call c's counts into its function's statistics st. */
static __always_inline void add_counters(struct fn_stats *st, const struct call *c)
{
	__u32 e;

	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		if (e >= nr_events)
			break;
		__sync_fetch_and_add(&st->ctr[e], c->ctr[e]);
		__sync_fetch_and_add(&st->ctr_self[e], c->ctr_self[e]);
		if (c->scaled)
			__sync_fetch_and_add(&st->ctr_scaled[e], 1);
	}
}

/*
 * Per-call counts of frame k: the thread's totals since entry; the parent
 * (when it is one) learns what its child used.
 */
static __always_inline void call_counters(struct thread_state *ts, struct thread_ctrs *tc, __u32 k,
					  bool parent, struct call *c)
{
	struct ctr_frame *cf, *pf;
	__u32 e;

	c->scaled = ts->scaled_seq != ts->frames[frame_idx(k)].scaled0;
	if (!tc) {
		count_drop(DROP_CTR_READ);
		return;
	}
	cf = &tc->frames[frame_idx(k)];
	pf = &tc->frames[frame_idx(k - 1)];
	for (e = 0; e < FNPROF_MAX_EVENTS; e++) {
		if (e >= nr_events)
			break;
		c->ctr[e] = ts->ctr_cum[e] - cf->ctr0[e];
		c->ctr_self[e] = c->ctr[e] > cf->child_ctr[e] ? c->ctr[e] - cf->child_ctr[e] : 0;
		if (parent)
			pf->child_ctr[e] += c->ctr[e];
	}
}

#endif /* FNPROF_COUNTERS_BPF_H */
