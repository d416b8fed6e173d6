// SPDX-License-Identifier: GPL-2.0
#include "base/hist.h"
#include "base/sanitize.h"
#include "report/slow_report.h"

/* The traced function's name as the table shows it. */
static const char *function_name(const struct probe_list *pl, __u32 id, char *buf, size_t size)
{
	if (id < pl->nr)
		return probe_display_name(&pl->probes[id], buf, size);
	snprintf(buf, size, "[function %u]", id);
	return buf;
}

/* One stack on one line, innermost first: "a < b < c". */
static void print_frames(FILE *f, const char *label, const char *const *frames, int n)
{
	char clean[256];
	int i;

	fprintf(f, "    %-9s", label);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? " < " : "", sanitize_term(frames[i], clean, sizeof(clean)));
	fputc('\n', f);
}

/* Why a Go call's on-CPU/run-queue/blocked split is unknown: the table's reason. */
static const char *go_cpu_unknown(const struct probe_list *pl, __u32 id)
{
	if (id < pl->nr && pl->probes[id].cpu_unknown)
		return pl->probes[id].cpu_unknown;
	return "goroutines switch in user space";
}

/* Whether a Go call's parks were followed (runtime.gopark and runtime.execute found). */
static bool go_parks_known(const struct probe_list *pl)
{
	return pl->go_park_offset && pl->go_run_offset;
}

/* A Go call: wall, the split unknown and why, its longest park and its stack. */
static void print_go(const struct slow_rec *r, const struct probe_list *pl, FILE *f)
{
	char name[256], b[2][16];

	/* Why unknown: said once, under the section (go_note). */
	fprintf(f, "%s  pid %u tid %u  wall %s = on-CPU, run queue, blocked unknown", function_name(pl, r->id,
		name, sizeof(name)), r->pid, r->tid, fmt_ns(r->wall_ns, b[0], 16));
	if (!go_parks_known(pl))
		fprintf(f, "; parks unknown (runtime.gopark or runtime.execute not found)");
	else if (r->block_ns)
		fprintf(f, "; longest park %s (%s)", fmt_ns(r->block_ns, b[1], 16),
			r->has_blocked ? r->wait_reason : "reason not kept");
	else
		fprintf(f, "; never parked");
	fputc('\n', f);
	print_frames(f, "called:", r->stack, r->nr_stack);
	if (r->has_blocked)
		print_frames(f, "parked:", r->blocked, r->nr_blocked);
	else if (r->block_ns)
		fprintf(f, "    parked:  [stack not kept: no capture slot was free]\n");
}

static void print_one(const struct slow_rec *r, const struct probe_list *pl, FILE *f)
{
	char name[256], b[5][16];

	if (r->go) {
		print_go(r, pl, f);
		return;
	}
	fprintf(f, "%s  pid %u tid %u  wall %s = on-CPU %s + run queue %s + blocked %s", function_name(pl, r->id, name,
		sizeof(name)), r->pid, r->tid, fmt_ns(r->wall_ns, b[0], 16), fmt_ns(r->oncpu_ns, b[1], 16),
		fmt_ns(r->runq_ns, b[2], 16), fmt_ns(r->blocked_ns, b[3], 16));
	if (r->block_ns)
		fprintf(f, " (longest block %s)", fmt_ns(r->block_ns, b[4], 16));
	fputc('\n', f);
	print_frames(f, "called:", r->stack, r->nr_stack);
	if (r->has_blocked)
		print_frames(f, "blocked:", r->blocked, r->nr_blocked);
	else if (r->block_ns)
		fprintf(f, "    blocked: [stack not kept: no capture slot was free]\n");
}

/* Under Go calls' blocks: why their split is unknown, and what a park is. */
static void go_note(const struct slow_view *v, size_t first, const struct probe_list *pl, FILE *f)
{
	size_t i;

	for (i = first; i < v->nr && !v->recs[i].go; i++)
		;
	if (i == v->nr)
		return;
	fprintf(f, "(Go functions: on-CPU, run queue and blocked unknown: %s; a park runs from runtime.gopark to "
		   "the goroutine's next run, blocked and waiting for a thread together)\n", go_cpu_unknown(pl, v->recs[i].id));
}

/* Whether record r is one a group takes: of pid, or (pid 0) of none of the skip ones. */
static bool picked(const struct slow_rec *r, const struct slow_pick *k)
{
	if (!k)
		return true;
	if (k->pid)
		return r->pid == (__u32)k->pid;
	for (size_t i = 0; i < k->nr_skip; i++)
		if (r->pid == (__u32)k->skip[i])
			return false;
	return true;
}

/* The kept records of a group: how many, and from which index its last SLOW_SHOWN (*shown of them) are. */
static size_t count_picked(const struct slow_view *v, const struct slow_pick *k, size_t *first, size_t *shown)
{
	size_t i, n = 0;

	for (i = 0; i < v->nr; i++)
		n += picked(&v->recs[i], k);
	*first = v->nr;
	*shown = 0;
	for (i = v->nr; i-- > 0 && *shown < SLOW_SHOWN;)
		if (picked(&v->recs[i], k))
			++*shown, *first = i;
	return n;
}

/* A group's blocks, its latest SLOW_SHOWN; under a line of its own in a -p list. */
static void print_group(const struct slow_view *v, const struct probe_list *pl, const struct slow_pick *k,
			FILE *f)
{
	size_t first, shown, n = count_picked(v, k, &first, &shown), i;

	if (k)
		fprintf(f, "pid %d: %zu kept%s\n", (int)(k->pid ? k->pid : k->head), n,
			shown < n ? ", the last ones shown" : "");
	for (i = first; i < v->nr; i++)
		if (picked(&v->recs[i], k))
			print_one(&v->recs[i], pl, f);
}

/* The section's heading: how many, how many not kept and why. */
static void print_heading(const struct slow_view *v, size_t shown, FILE *f)
{
	char b[16];

	fprintf(f, "\nslow calls (%s or longer): %llu", fmt_ns(v->threshold_ns, b, sizeof(b)),
		(unsigned long long)v->seen);
	if (v->seen && shown < v->nr)
		fprintf(f, ", the last %zu; %zu earlier ones in --json", shown, v->nr - shown);
	if (v->dropped) {
		__u64 sent = v->over_rate + v->ringbuf_full;

		/* Sent but not in recs: older than the SLOW_KEEP kept (or sent after the counters were read). */
		fprintf(f, ", %llu not kept (%llu over the rate limit of %d/s, %llu with the ring buffer full, %llu "
			   "beyond the last %d kept)", (unsigned long long)v->dropped, (unsigned long long)v->over_rate,
			SLOW_RATE, (unsigned long long)v->ringbuf_full,
			(unsigned long long)(v->dropped > sent ? v->dropped - sent : 0), SLOW_KEEP);
	}
	fprintf(f, "%s\n", v->seen ? ":" : "");
}

void slow_print_table(const struct slow_view *v, const struct probe_list *pl, const pid_t *listed, size_t nr_listed,
		      FILE *f)
{
	struct slow_pick k[SLOW_PROCS_MAX];
	size_t i, n = nr_listed > 1 && nr_listed <= SLOW_PROCS_MAX ? nr_listed : 0, first, one, shown = 0;

	for (i = 0; i < n; i++)
		k[i] = i ? (struct slow_pick){ .pid = listed[i] } :
			   (struct slow_pick){ .skip = listed + 1, .nr_skip = n - 1, .head = listed[0] };
	for (i = 0; i < (n ? n : 1); i++) {
		count_picked(v, n ? &k[i] : NULL, &first, &one);
		shown += one;
	}
	print_heading(v, shown, f);
	for (i = 0; i < (n ? n : 1); i++)
		print_group(v, pl, n ? &k[i] : NULL, f);
	go_note(v, 0, pl, f);
	if (v->no_block_stack)
		fprintf(f, "(%llu slow calls without the stack of their longest block: no capture slot was free)\n",
			(unsigned long long)v->no_block_stack);
	fflush(f);
}

static void json_frames(struct json *j, const char *key, const char *const *frames, int n)
{
	int i;

	json_arr_begin(j, key);
	for (i = 0; i < n; i++)
		json_str(j, NULL, frames[i]);
	json_arr_end(j);
}

/*
 * The on-CPU/run-queue/blocked split and the longest block; for Go, the split
 * null (unknown: cpu_unknown says why), the block a park (wait_reason why).
 */
static void json_split(const struct slow_rec *r, const struct probe_list *pl, struct json *j)
{
	if (!r->go) {
		json_u64(j, "oncpu_ns", r->oncpu_ns);
		json_u64(j, "runq_ns", r->runq_ns);
		json_u64(j, "blocked_ns", r->blocked_ns);
		json_u64(j, "longest_block_ns", r->block_ns);
		return;
	}
	json_null(j, "oncpu_ns");
	json_null(j, "runq_ns");
	json_null(j, "blocked_ns");
	if (go_parks_known(pl))
		json_u64(j, "longest_block_ns", r->block_ns);
	else
		json_null(j, "longest_block_ns");
	json_str(j, "cpu_unknown", go_cpu_unknown(pl, r->id));
	if (r->has_blocked)
		json_str(j, "wait_reason", r->wait_reason);
	else
		json_null(j, "wait_reason");
}

static void json_one(const struct slow_rec *r, const struct probe_list *pl, struct json *j)
{
	char name[256];

	json_obj_begin(j, NULL);
	json_str(j, "function", function_name(pl, r->id, name, sizeof(name)));
	json_u64(j, "pid", r->pid);
	json_u64(j, "tid", r->tid);
	json_u64(j, "wall_ns", r->wall_ns);
	json_split(r, pl, j);
	json_f64(j, "end_s", r->end_s);
	json_frames(j, "stack", r->stack, r->nr_stack);
	if (r->has_blocked)
		json_frames(j, "blocked_stack", r->blocked, r->nr_blocked);
	else
		json_null(j, "blocked_stack");
	json_bool(j, "stack_truncated", r->truncated);
	json_obj_end(j);
}

void slow_print_json_calls(const struct slow_view *v, const struct probe_list *pl, const struct slow_pick *k,
			   struct json *j)
{
	json_arr_begin(j, "slow_calls");
	for (size_t i = 0; i < v->nr; i++)
		if (picked(&v->recs[i], k))
			json_one(&v->recs[i], pl, j);
	json_arr_end(j);
}

void slow_print_json(const struct slow_view *v, const struct probe_list *pl, const struct slow_pick *k,
		     struct json *j)
{
	json_u64(j, "slow_threshold_ns", v->threshold_ns);
	slow_print_json_calls(v, pl, k, j);
	json_u64(j, "slow_calls_seen", v->seen);
	json_u64(j, "slow_calls_dropped", v->dropped);
	json_u64(j, "slow_calls_over_rate", v->over_rate);
	json_u64(j, "slow_calls_ringbuf_full", v->ringbuf_full);
	json_u64(j, "slow_blocked_stacks_lost", v->no_block_stack);
}
