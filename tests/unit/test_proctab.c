// SPDX-License-Identifier: GPL-2.0
/*
 * -a's table of processes (proctab.h) past its cap: fed through a real BPF
 * hash map, as the sampler's is, with pids of no living process (each seen
 * exiting at once), then more than PROCTAB_MAX_PROCS of them. The exited
 * ones used least are forgotten, here and in the map, and the index still
 * finds every one known after the entries moved (ASan build).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "fnprof.h"
#include "profile/proctab.h"
#include "stacks/symbolize.h"
#include "unit.h"

/* Pids above any the kernel gives (pid_max is at most 2^22): never alive. */
#define FAKE_PID0 (1U << 23)

static int fake_map(void)
{
	return bpf_map_create(BPF_MAP_TYPE_HASH, "procs_test", sizeof(__u32), sizeof(struct proc_seen),
			      2 * PROCTAB_MAX_PROCS, NULL);
}

static void put(int fd, __u32 pid)
{
	struct proc_seen v = {};

	snprintf(v.comm, sizeof(v.comm), "p%u", pid - FAKE_PID0);
	bpf_map_update_elem(fd, &pid, &v, BPF_ANY);
}

static size_t map_len(int fd)
{
	__u32 key, next, *cur = NULL;
	size_t n = 0;

	while (!bpf_map_get_next_key(fd, cur, &next)) {
		key = next;
		cur = &key;
		n++;
	}
	return n;
}

static void forgets_exited_past_the_cap(void)
{
	struct symbolizer *parent = symbolizer_new(getpid(), 0);
	struct proctab *t = parent ? proctab_new(parent) : NULL;
	struct proctab_stats st;
	int fd = fake_map();
	__u32 i, n = PROCTAB_MAX_PROCS + 100;
	char want[16];

	CHECK(t && fd >= 0);
	for (i = 0; i < n; i++) {
		put(fd, FAKE_PID0 + i);
		if (i % 1024 == 1023)
			proctab_scan(t, fd);
	}
	proctab_scan(t, fd);
	proctab_scan(t, fd);   /* at the cap now: half of them forgotten, here and in the map */
	proctab_stats(t, &st);
	CHECK(st.forgotten > 0 && st.procs + st.forgotten == n && st.exited == n);
	CHECK(map_len(fd) == st.procs);
	/* Every one still known is found by the index, with its name; the forgotten ones are not. */
	for (i = 0; i < n; i++) {
		__u32 pid = FAKE_PID0 + i, v;
		bool known = !bpf_map_lookup_elem(fd, &pid, &v);

		snprintf(want, sizeof(want), "p%u", i);
		CHECK(!strcmp(proctab_comm(t, pid), known ? want : "[unknown]"));
	}
	/* And new ones still go in. */
	put(fd, FAKE_PID0 + n);
	proctab_scan(t, fd);
	snprintf(want, sizeof(want), "p%u", n);
	CHECK(!strcmp(proctab_comm(t, FAKE_PID0 + n), want));
	proctab_free(t);
	symbolizer_free(parent);
	close(fd);
}

/* A process seen again after an exec (another exec generation) takes the new image's name. */
static void renamed_after_exec(void)
{
	struct symbolizer *parent = symbolizer_new(getpid(), 0);
	struct proctab *t = parent ? proctab_new(parent) : NULL;
	struct proc_seen v = { .comm = "shim.sh", .exec_id = 3 };
	struct proctab_stats st;
	__u32 pid = FAKE_PID0 + 7;
	int fd = fake_map();

	CHECK(t && fd >= 0);
	bpf_map_update_elem(fd, &pid, &v, BPF_ANY);
	proctab_scan(t, fd);
	CHECK(!strcmp(proctab_comm(t, pid), "shim.sh"));
	snprintf(v.comm, sizeof(v.comm), "python3");
	v.exec_id = 4;
	bpf_map_update_elem(fd, &pid, &v, BPF_ANY);
	proctab_scan(t, fd);
	proctab_scan(t, fd);   /* once per exec, not per scan */
	proctab_stats(t, &st);
	CHECK(!strcmp(proctab_comm(t, pid), "python3") && st.execs == 1 && st.procs == 1);
	proctab_free(t);
	symbolizer_free(parent);
	close(fd);
}

int main(void)
{
	RUN(forgets_exited_past_the_cap);
	RUN(renamed_after_exec);
	UNIT_EXIT();
}
