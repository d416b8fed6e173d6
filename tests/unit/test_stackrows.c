// SPDX-License-Identifier: GPL-2.0
/*
 * The stack pipeline (stackrows.c) on stacks of this program's own
 * functions, kept in a BPF map as the profiles' stack maps keep them (needs
 * root): counts summed per key, values since the last take, rows per
 * function and process with self and total, each kind's ranking and table
 * from its descriptor, and thread names made safe for the terminal.
 */
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/json.h"
#include "stacks/stackrows.h"
#include "stacks/symbolize.h"
#include "unit.h"

static volatile unsigned long sink;

__attribute__((noinline)) void sr_leaf(void);
__attribute__((noinline)) void sr_mid(void);
__attribute__((noinline)) void sr_root(void);

__attribute__((noinline)) void sr_leaf(void)
{
	for (int i = 0; i < 64; i++)
		sink = sink * 3 + i;
}

__attribute__((noinline)) void sr_mid(void)
{
	for (int i = 0; i < 64; i++)
		sink = sink * 5 + i;
	sr_leaf();
}

__attribute__((noinline)) void sr_root(void)
{
	for (int i = 0; i < 64; i++)
		sink = sink * 7 + i;
	sr_mid();
}

/* As sample.c's: samples and CPU time, by self, kernel rows shown. */
static const struct prof_desc cpu = {
	.kind = PROF_CPU, .what = "samples", .nr_values = 2,
	.types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
	.rank = 0, .second = 1, .period_type = { "cpu", "nanoseconds" },
	.inlines = true, .kstack_at_event = true, .rank_self = true, .kernel_rows = true, .json_samples = true,
	.cols = { { "SAMPLES", 8, 0, COL_COUNT }, { "CORES", 6, 0, COL_CORES } },
};

/* As the offcpu profile's: a delay and a count, by total. */
static const struct prof_desc waits = {
	.kind = PROF_OFFCPU, .what = "waits", .nr_values = 2,
	.types = { { "delay", "nanoseconds" }, { "contentions", "count" } },
	.snapshot = { false, true }, .rank = 0, .second = 1, .period_type = { "delay", "nanoseconds" },
};

static int stacks_fd = -1;
static struct symbolizer *sym;

/* Stack 1: sr_leaf <- sr_mid <- sr_root; stack 2: sr_mid <- sr_root (leaf first, return addresses above). */
static int setup(void)
{
	__u64 ips[FNPROF_STACK_DEPTH] = { (uintptr_t)sr_leaf + 4, (uintptr_t)sr_mid + 5, (uintptr_t)sr_root + 5 };
	__u32 id = 1;

	if (stacks_fd >= 0)
		return 0;
	sym = symbolizer_new(getpid(), 0);
	stacks_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "sr_stacks", sizeof(__u32), sizeof(ips), 16, NULL);
	if (!sym || stacks_fd < 0 || bpf_map_update_elem(stacks_fd, &id, ips, 0))
		return -1;
	ips[0] = (uintptr_t)sr_mid + 4, ips[1] = (uintptr_t)sr_root + 5, ips[2] = 0;
	id = 2;
	return bpf_map_update_elem(stacks_fd, &id, ips, 0);
}

static struct stackrows *new_rows(const struct prof_desc *d, bool per_thread)
{
	struct stackrows_conf c = {
		.desc = d, .pid = getpid(), .sym = sym, .stacks_fd = stacks_fd, .kstacks_fd = -1,
		.per_thread = per_thread, .top = 10,
	};
	struct stackrows *r = NULL;

	return setup() || stackrows_new(&c, &r) ? NULL : r;
}

/* nr counts, malloc'd as stackrows_take wants them. */
static struct stack_count *counts(const struct stack_count *c, size_t nr)
{
	struct stack_count *e = malloc(nr * sizeof(*e));

	if (e)
		memcpy(e, c, nr * sizeof(*e));
	return e;
}

static const struct stack_row *row(const struct stack_rows *t, const char *func, __u32 pid)
{
	for (size_t i = 0; i < t->nr; i++)
		if (!strcmp(t->v[i].func, func) && t->v[i].pid == pid)
			return &t->v[i];
	return NULL;
}

static void cpu_rows_self_and_total(void)
{
	const struct stack_count c[] = {
		{ .key = { .ustack = 1, .kstack = -1 }, .total = { 3, 30 } },
		{ .key = { .ustack = 2, .kstack = -1 }, .total = { 1, 10 } },
		{ .key = { .ustack = 1, .kstack = -1 }, .total = { 2, 20 } },  /* the same key again: summed */
		{ .key = { .ustack = 9, .kstack = -1 }, .total = { 1, 10 } },  /* a stack not in the map */
	};
	struct stackrows *r = new_rows(&cpu, false);
	struct stack_rows t = { .per_core = 10 };
	const struct stack_row *leaf, *mid, *root, *lost;
	size_t nr;

	CHECK(r);
	stackrows_take(r, counts(c, 4), 4, 1, 1);
	CHECK(stackrows_counts(r, &nr) && nr == 3);
	CHECK(!stackrows_rows(r, &t));
	leaf = row(&t, "sr_leaf", 0), mid = row(&t, "sr_mid", 0), root = row(&t, "sr_root", 0);
	lost = row(&t, "[stack lost]", 0);
	CHECK(leaf && mid && root && lost && t.nr == 4);
	CHECK(t.sum[0] == 7 && t.sum[1] == 70);
	CHECK(leaf->self[0] == 5 && leaf->total[0] == 5 && mid->self[0] == 1 && mid->total[0] == 6);
	CHECK(root->self[0] == 0 && root->total[0] == 6 && lost->self[0] == 1);
	/* By self, then total: the leaf, the caller with as much self but more total, the lost stack, the root. */
	CHECK(leaf == &t.v[0] && mid == &t.v[1] && lost == &t.v[2] && root == &t.v[3]);
	free(t.v);
	stackrows_free(r);
}

static void deltas_since_the_last_take(void)
{
	const struct stack_count first[] = { { .key = { .ustack = 1, .kstack = -1 }, .total = { 5, 50 } } };
	const struct stack_count now[] = {
		{ .key = { .ustack = 1, .kstack = -1 }, .total = { 8, 80 } },
		{ .key = { .ustack = 2, .kstack = -1 }, .total = { 0, 0 } },
	};
	struct stackrows *r = new_rows(&cpu, false);
	struct stack_rows t = { .per_core = 1 };

	CHECK(r);
	stackrows_take(r, counts(first, 1), 1, 1, 1);
	stackrows_take(r, counts(now, 2), 2, 1, 1);
	CHECK(!stackrows_rows(r, &t));
	CHECK(t.sum[0] == 3 && t.nr == 3 && row(&t, "sr_leaf", 0)->self[0] == 3);
	CHECK(stackrows_counts(r, &(size_t){ 0 })[0].out[0] == 8);
	free(t.v);
	/* The run's total (-i's last report): the values since the start, not the last interval's. */
	t = (struct stack_rows){ .per_core = 1 };
	CHECK(!stackrows_total_rows(r, &t));
	CHECK(t.sum[0] == 8 && t.sum[1] == 80 && row(&t, "sr_leaf", 0)->self[0] == 8);
	free(t.v);
	stackrows_free(r);
}

/* The same stack in another process: rows of its own, after those of the process profiled. */
static void rows_per_process(void)
{
	const struct stack_count c[] = {
		{ .key = { .pid = 4242, .ustack = 1, .kstack = -1 }, .total = { 2, 20 } },
		{ .key = { .ustack = 1, .kstack = -1 }, .total = { 1, 10 } },
	};
	struct stackrows *r = new_rows(&cpu, false);
	struct stack_rows t = { .per_core = 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	CHECK(r && f);
	stackrows_take(r, counts(c, 2), 2, 1, 1);
	CHECK(!stackrows_rows(r, &t));
	CHECK(t.nr == 6 && row(&t, "sr_leaf", 0)->self[0] == 1 && row(&t, "sr_leaf", 4242)->self[0] == 2);
	CHECK(t.v[0].pid == 0 && t.v[5].pid == 4242);
	json_init(&j, f);
	json_obj_begin(&j, NULL);
	stackrows_json(r, &j, &t);
	json_obj_end(&j);
	json_finish(&j);
	fclose(f);
	CHECK(buf && strstr(buf, "\"pid\":4242") && !strstr(buf, "\"pid\":0"));
	free(buf);
	free(t.v);
	stackrows_free(r);
}

/* The offcpu-like kind: by total, then self, in its units, "-" for a value not known. */
static void waits_table_by_total(void)
{
	const struct stack_count c[] = {
		{ .key = { .ustack = 1, .kstack = -1 }, .total = { 3e6, 2 } },
		{ .key = { .ustack = 2, .kstack = -1 }, .total = { 1e6, 1 } },
	};
	struct stackrows *r = new_rows(&waits, false);
	struct stack_rows t = { .unknown = 1U << 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(r && f);
	stackrows_take(r, counts(c, 2), 2, 1, 1);
	CHECK(!stackrows_rows(r, &t));
	CHECK(!strcmp(t.v[0].func, "sr_mid") && !strcmp(t.v[1].func, "sr_root") && !strcmp(t.v[2].func, "sr_leaf"));
	stackrows_table(r, f, &t);
	fclose(f);
	CHECK(buf && strstr(buf, "delay") && strstr(buf, "contentions") && strstr(buf, "4.00ms"));
	CHECK(strstr(buf, " -\n") && !strstr(buf, "SAMPLES"));
	free(buf);
	free(t.v);
	stackrows_free(r);
}

/* A thread named with an escape sequence: its heading shows no escape character. */
static void thread_heading_sanitized(void)
{
	struct stack_count c[] = { { .key = { .ustack = 1, .kstack = -1 }, .total = { 1, 10 } } };
	struct stackrows *r = new_rows(&cpu, true);
	struct stack_rows t = { .per_core = 1 };
	char *buf = NULL, old[16] = "";
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(r && f);
	prctl(PR_GET_NAME, old);
	prctl(PR_SET_NAME, "sr\033[2Jx");
	c[0].key.tid = gettid();
	stackrows_take(r, counts(c, 1), 1, 1, 1);
	CHECK(!stackrows_rows(r, &t));
	stackrows_table(r, f, &t);
	prctl(PR_SET_NAME, old);
	fclose(f);
	CHECK(buf && strstr(buf, "\nthread ") && strstr(buf, "SAMPLES") && strstr(buf, "CORES"));
	CHECK(!strchr(buf, '\033'));
	free(buf);
	free(t.v);
	stackrows_free(r);
}

int main(void)
{
	if (setup()) {
		printf("FAIL setup: no symbolizer or BPF map (root needed)\n");
		return EXIT_FAILURE;
	}
	RUN(cpu_rows_self_and_total);
	RUN(deltas_since_the_last_take);
	RUN(rows_per_process);
	RUN(waits_table_by_total);
	RUN(thread_heading_sanitized);
	UNIT_EXIT();
}
