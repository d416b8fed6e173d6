// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/log.h"
#include "target/kbtf.h"
#include "target/kneeds.h"

/* How a need is asked for: libbpf's probe of a helper or a map type, or a probe of ours. */
enum ask_by { BY_HELPER, BY_MAP, BY_ATOMICS, BY_SWITCH_ARG };

/* The one table: each need, how to ask for it, the first kernel with it (oldest first). */
static const struct need {
	const char *name;
	enum ask_by by;
	int id;                 /* BY_HELPER: BPF_FUNC_*; BY_MAP: BPF_MAP_TYPE_* */
	const char *since;
} needs[KNEED_NR] = {
	[KNEED_RINGBUF] = { "ring buffers", BY_MAP, BPF_MAP_TYPE_RINGBUF, "5.8" },
	[KNEED_TASK_STORAGE] = { "task storage maps", BY_MAP, BPF_MAP_TYPE_TASK_STORAGE, "5.11" },
	[KNEED_TASK_BTF] = { "bpf_get_current_task_btf", BY_HELPER, BPF_FUNC_get_current_task_btf, "5.11" },
	[KNEED_ATOMICS] = { "BPF_FETCH atomics", BY_ATOMICS, 0, "5.12" },
	[KNEED_TASK_PT_REGS] = { "bpf_task_pt_regs", BY_HELPER, BPF_FUNC_task_pt_regs, "5.15" },
	[KNEED_ATTACH_COOKIE] = { "bpf_get_attach_cookie", BY_HELPER, BPF_FUNC_get_attach_cookie, "5.15" },
	[KNEED_LOOP] = { "bpf_loop", BY_HELPER, BPF_FUNC_loop, "5.17" },
	[KNEED_SWITCH_STATE] = { "sched_switch's prev_state argument", BY_SWITCH_ARG, 0, "5.18" },
};

#define NEED(x) (1U << KNEED_##x)

/* What each mode's BPF object calls or creates, from the helpers it calls (llvm-objdump -d | grep call). */
static const struct mode {
	const char *name;
	unsigned int needs;
} modes[KMODE_NR] = {
	[KMODE_TRACE] = { "tracing (-f)", NEED(RINGBUF) | NEED(TASK_STORAGE) | NEED(TASK_BTF) | NEED(ATOMICS) |
						  NEED(TASK_PT_REGS) | NEED(ATTACH_COOKIE) | NEED(LOOP) },
	[KMODE_SAMPLE] = { "sampling (--sample)", NEED(RINGBUF) },
	[KMODE_OFFCPU] = { "the offcpu profile", NEED(RINGBUF) | NEED(TASK_STORAGE) | NEED(TASK_BTF) |
						 NEED(TASK_PT_REGS) | NEED(SWITCH_STATE) },
	[KMODE_MUTEX] = { "the mutex profile", NEED(RINGBUF) | NEED(TASK_STORAGE) | NEED(TASK_BTF) |
						NEED(TASK_PT_REGS) },
	[KMODE_HEAP] = { "the heap profile", NEED(RINGBUF) },
	/* bpf/compat.bpf.h: tp_btf (5.5), hash and queue maps, BPF_XADD; fork events through a ring buffer. */
	[KMODE_TRACE_COMPAT] = { "tracing (-f)", NEED(RINGBUF) },
};

unsigned int kneeds_of(enum kmode mode)
{
	return mode < KMODE_NR ? modes[mode].needs : 0;
}

/*
 * 1 when the kernel takes an atomic fetch-and-add (BPF_ATOMIC with
 * BPF_FETCH, 5.12), 0 when it refuses it, -errno when it cannot be told.
 * Before 5.12 the verifier refuses any such instruction, even unreached.
 */
static int probe_atomics(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0 },
		{ .code = BPF_STX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1, .off = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1, .off = -8,
		  .imm = BPF_ADD | BPF_FETCH },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "fnprof_atomics", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd >= 0) {
		close(fd);
		return 1;
	}
	return errno == EINVAL ? 0 : -errno;
}

/* 1 when the kernel has need n, 0 when not, -errno when it cannot be told. */
static int ask_kernel(enum kneed n)
{
	switch (needs[n].by) {
	case BY_HELPER:
		return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, needs[n].id, NULL);
	case BY_MAP:
		return libbpf_probe_bpf_map_type(needs[n].id, NULL);
	case BY_ATOMICS:
		return probe_atomics();
	default:
		return kbtf_facts()->switch_state;
	}
}

/* ask_kernel(n), asked once a run: the refusals and the choice of trace object ask for the same needs. */
static int probe_one(enum kneed n)
{
	static int answer[KNEED_NR];
	static bool asked[KNEED_NR];

	if (!asked[n]) {
		answer[n] = ask_kernel(n);
		asked[n] = true;
	}
	return answer[n];
}

/*
 * Whether libbpf's probes can tell anything: they load a program or make a
 * map, and read a refusal (no privilege) as "no", or a helper as "yes".
 * 0, or -EPERM when a kprobe program or an array, which every kernel has,
 * cannot be made.
 */
static int bpf_usable(void)
{
	static int usable = 1;

	if (usable == 1)
		usable = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL) == 1 &&
				 libbpf_probe_bpf_map_type(BPF_MAP_TYPE_ARRAY, NULL) == 1 ? 0 : -EPERM;
	return usable;
}

const char *kneeds_name(enum kneed n)
{
	return n < KNEED_NR ? needs[n].name : "?";
}

const char *kneeds_since(enum kneed n)
{
	return n < KNEED_NR ? needs[n].since : "?";
}

unsigned int kneeds_probe(unsigned int want, unsigned int *unknown)
{
	unsigned int has = 0;
	int n, r;

	*unknown = 0;
	if (bpf_usable()) {
		*unknown = want;
		log_debug("cannot ask the kernel what its BPF has: %s", strerror(EPERM));
		return 0;
	}
	for (n = 0; n < KNEED_NR; n++) {
		if (!(want & 1U << n))
			continue;
		r = probe_one(n);
		if (r > 0)
			has |= 1U << n;
		else if (r < 0)
			*unknown |= 1U << n;
		if (r < 0)
			log_debug("cannot tell whether the kernel has %s: %s", needs[n].name, strerror(-r));
	}
	return has;
}

void kneeds_list(unsigned int lack, char *msg, size_t size)
{
	size_t len = strlen(msg);
	bool first = true;
	int n;

	for (n = KNEED_NR - 1; n >= 0 && len < size; n--) {
		if (!(lack & 1U << n))
			continue;
		snprintf(msg + len, size - len, "%s%s (%s%s)", first ? "" : ", ", needs[n].name,
			 first ? "Linux " : "", needs[n].since);
		len += strlen(msg + len);
		first = false;
	}
}

int kneeds_refusal(unsigned int modes_set, unsigned int has, const char *release, char *msg, size_t size)
{
	unsigned int lack;
	size_t len;
	int m;

	for (m = 0; m < KMODE_NR; m++) {
		lack = modes_set & 1U << m ? modes[m].needs & ~has : 0;
		if (!lack)
			continue;
		snprintf(msg, size, "%s needs what this kernel (%s) lacks: ", modes[m].name, release);
		kneeds_list(lack, msg, size);
		len = strlen(msg);
		if (m != KMODE_SAMPLE && !(modes[KMODE_SAMPLE].needs & ~has))
			snprintf(msg + len, size - len, "; sampling (--sample) runs on it");
		return m;
	}
	return -1;
}

bool kneeds_trace_compat(unsigned int *lack)
{
	static int compat = -1;
	static unsigned int lacks;
	const char *env = getenv("FNPROF_TRACE_COMPAT");
	unsigned int unknown, has;

	if (compat < 0) {
		/* What cannot be asked about is taken as there: the full object's load will tell. */
		has = kneeds_probe(modes[KMODE_TRACE].needs, &unknown);
		lacks = modes[KMODE_TRACE].needs & ~(has | unknown);
		compat = lacks || (env && !strcmp(env, "1"));
		if (compat)
			log_debug("tracing with the compat trace object (bpf/compat.bpf.h)%s", lacks ? "" :
				  ": FNPROF_TRACE_COMPAT=1");
	}
	if (lack)
		*lack = lacks;
	return compat;
}

const char *kneeds_compat_sched_why(void)
{
	/* What the full object's sched_switch program needs that the compat one does without. */
	const unsigned int sched = NEED(TASK_STORAGE) | NEED(TASK_BTF) | NEED(TASK_PT_REGS);
	static char why[256];
	unsigned int lack;
	struct utsname u;

	if (why[0])
		return why;
	kneeds_trace_compat(&lack);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	/* FNPROF_TRACE_COMPAT=1 on a kernel that has them all: the compat object leaves them out anyway. */
	if (!(lack & sched)) {
		snprintf(why, sizeof(why), "the compat trace object (FNPROF_TRACE_COMPAT=1) follows no switch");
		return why;
	}
	snprintf(why, sizeof(why), "this kernel (%s) lacks ", u.release);
	kneeds_list(lack & sched, why, sizeof(why));
	snprintf(why + strlen(why), sizeof(why) - strlen(why), ", which sched_switch's bookkeeping needs");
	return why;
}

int kneeds_check(unsigned int modes_set)
{
	unsigned int want = 0, unknown, has;
	struct utsname u;
	char msg[512];
	int m;

	if (modes_set & 1U << KMODE_TRACE && kneeds_trace_compat(NULL))
		modes_set = (modes_set & ~(1U << KMODE_TRACE)) | 1U << KMODE_TRACE_COMPAT;
	for (m = 0; m < KMODE_NR; m++)
		if (modes_set & 1U << m)
			want |= modes[m].needs;
	want |= modes[KMODE_SAMPLE].needs;  /* for the hint */
	has = kneeds_probe(want, &unknown);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	/* What could not be asked about is not refused: the load will tell. */
	if (kneeds_refusal(modes_set, has | unknown, u.release, msg, sizeof(msg)) < 0)
		return 0;
	log_err("%s", msg);
	return -ENOTSUP;
}
