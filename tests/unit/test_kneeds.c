// SPDX-License-Identifier: GPL-2.0
/*
 * The refusal of a mode the kernel cannot run, decided from hand-made sets
 * of what a kernel has (the real kernels' answers are the VM matrix's):
 * what 5.10 and 5.15 lack, named newest first, one line, the hint only
 * where sampling runs.
 */
#include <stdio.h>
#include <string.h>

#include "target/kneeds.h"
#include "unit.h"

#define ALL ((1U << KNEED_NR) - 1)
#define MODE(x) (1U << KMODE_##x)
#define HAS(x) (1U << KNEED_##x)

/* Debian 11's 5.10: ring buffers, none of the rest. */
static const unsigned int has_5_10 = HAS(RINGBUF);
/* Ubuntu 22.04's 5.15: everything but bpf_loop and sched_switch's prev_state. */
static const unsigned int has_5_15 = ALL & ~(HAS(LOOP) | HAS(SWITCH_STATE));

static void a_kernel_with_everything_refuses_nothing(void)
{
	char msg[512] = "";
	unsigned int every = (1U << KMODE_NR) - 1;

	CHECK(kneeds_refusal(every, ALL, "6.18.0", msg, sizeof(msg)) == -1);
	CHECK(msg[0] == 0);
}

/* Tracing on 5.10: everything it lacks, newest first, and that sampling runs there. */
static void tracing_on_5_10_names_all_it_lacks_newest_first(void)
{
	char msg[512];
	const char *loop, *cookie, *storage;

	CHECK(kneeds_refusal(MODE(TRACE) | MODE(SAMPLE), has_5_10, "5.10.0-32-cloud-amd64", msg, sizeof(msg)) ==
	      KMODE_TRACE);
	CHECK(strstr(msg, "tracing (-f) needs what this kernel (5.10.0-32-cloud-amd64) lacks: bpf_loop (Linux 5.17), ") ==
	      msg);
	loop = strstr(msg, "bpf_loop");
	cookie = strstr(msg, "bpf_get_attach_cookie (5.15)");
	storage = strstr(msg, "task storage maps (5.11)");
	CHECK(cookie && storage && loop < cookie && cookie < storage);
	CHECK(strstr(msg, "BPF_FETCH atomics (5.12)"));
	CHECK(!strstr(msg, "ring buffers"));
	CHECK(!strchr(msg, '\n'));
	CHECK(strstr(msg, "; sampling (--sample) runs on it"));
}

/* 5.15: tracing lacks bpf_loop alone, the offcpu profile sched_switch's prev_state; the rest runs. */
static void on_5_15_tracing_lacks_bpf_loop_alone(void)
{
	char msg[512];

	CHECK(kneeds_refusal(MODE(TRACE), has_5_15, "5.15.0-91-generic", msg, sizeof(msg)) == KMODE_TRACE);
	CHECK(!strcmp(msg, "tracing (-f) needs what this kernel (5.15.0-91-generic) lacks: bpf_loop (Linux 5.17); "
			   "sampling (--sample) runs on it"));
	CHECK(kneeds_refusal(MODE(OFFCPU), has_5_15, "5.15", msg, sizeof(msg)) == KMODE_OFFCPU);
	CHECK(strstr(msg, "lacks: sched_switch's prev_state argument (Linux 5.18);"));
	CHECK(kneeds_refusal(MODE(SAMPLE) | MODE(MUTEX) | MODE(HEAP), has_5_15, "5.15", msg, sizeof(msg)) == -1);
}

/* What has fallbacks in the BPF programs needs nothing more than ring buffers: sampling and heap on 5.10. */
static void sampling_and_heap_run_on_5_10(void)
{
	char msg[512];

	CHECK(kneeds_refusal(MODE(SAMPLE) | MODE(HEAP), has_5_10, "5.10", msg, sizeof(msg)) == -1);
	CHECK(kneeds_refusal(MODE(SAMPLE) | MODE(OFFCPU), has_5_10, "5.10", msg, sizeof(msg)) == KMODE_OFFCPU);
	CHECK(strstr(msg, "the offcpu profile needs"));
	CHECK(kneeds_refusal(MODE(MUTEX), has_5_10, "5.10", msg, sizeof(msg)) == KMODE_MUTEX);
}

/* Where sampling cannot run either, no hint points to it. */
static void no_hint_where_sampling_cannot_run(void)
{
	char msg[512];

	CHECK(kneeds_refusal(MODE(SAMPLE), 0, "5.4.0", msg, sizeof(msg)) == KMODE_SAMPLE);
	CHECK(!strcmp(msg, "sampling (--sample) needs what this kernel (5.4.0) lacks: ring buffers (Linux 5.8)"));
	CHECK(kneeds_refusal(MODE(HEAP), 0, "5.4.0", msg, sizeof(msg)) == KMODE_HEAP);
	CHECK(!strstr(msg, "--sample"));
}

/* A short buffer: the line cut, terminated, never overrun (ASan). */
static void a_short_buffer_is_cut_not_overrun(void)
{
	char msg[40];

	CHECK(kneeds_refusal(MODE(TRACE), 0, "5.10.0-32-cloud-amd64", msg, sizeof(msg)) == KMODE_TRACE);
	CHECK(strlen(msg) == sizeof(msg) - 1);
}

static void each_mode_needs_what_its_table_says(void)
{
	CHECK(kneeds_of(KMODE_SAMPLE) == HAS(RINGBUF));
	CHECK(kneeds_of(KMODE_TRACE) == (ALL & ~HAS(SWITCH_STATE)));  /* its sched_switch takes three arguments */
	CHECK(kneeds_of(KMODE_OFFCPU) & HAS(SWITCH_STATE));
	CHECK(kneeds_of(KMODE_NR) == 0);
}

/* The compat trace object (what tracing takes where the full one's needs are lacking) runs on 5.10 and 5.15. */
static void compat_tracing_runs_on_5_10_and_5_15(void)
{
	char msg[512] = "";

	CHECK(kneeds_refusal(MODE(TRACE_COMPAT) | MODE(SAMPLE), has_5_10, "5.10.0-32-cloud-amd64", msg,
			     sizeof(msg)) == -1);
	CHECK(kneeds_refusal(MODE(TRACE_COMPAT), has_5_15, "5.15.0-91-generic", msg, sizeof(msg)) == -1);
	/* Without ring buffers (5.7) it is refused, in tracing's name. */
	CHECK(kneeds_refusal(MODE(TRACE_COMPAT), 0, "5.4.0", msg, sizeof(msg)) == KMODE_TRACE_COMPAT);
	CHECK(strstr(msg, "tracing (-f) needs what this kernel (5.4.0) lacks: ring buffers (Linux 5.8)") == msg);
}

int main(void)
{
	RUN(a_kernel_with_everything_refuses_nothing);
	RUN(tracing_on_5_10_names_all_it_lacks_newest_first);
	RUN(on_5_15_tracing_lacks_bpf_loop_alone);
	RUN(sampling_and_heap_run_on_5_10);
	RUN(no_hint_where_sampling_cannot_run);
	RUN(a_short_buffer_is_cut_not_overrun);
	RUN(each_mode_needs_what_its_table_says);
	RUN(compat_tracing_runs_on_5_10_and_5_15);
	UNIT_EXIT();
}
