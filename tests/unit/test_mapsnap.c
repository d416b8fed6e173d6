// SPDX-License-Identifier: GPL-2.0
/*
 * -a's mappings read at first sight (mapsnap.h), on real processes: a child
 * whose mappings were taken keeps them after it exited and was reaped; a
 * second take of the same image reads nothing, one of a new image (exec)
 * reads again; a new image gone before it is read is counted missed, and
 * the old image's mappings go; forget drops.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/mapsnap.h"
#include "target/procmaps.h"
#include "unit.h"

/* A child that waits to be killed. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (!pid) {
		pause();
		_exit(0);
	}
	return pid;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void keeps_mappings_after_exit(void)
{
	struct mapsnap *m = mapsnap_new();
	struct mapsnap_stats st;
	struct procmaps *pm = NULL;
	pid_t pid = sleeper();

	CHECK(m && pid > 0);
	CHECK(!mapsnap_take(m, pid, 7));
	end(pid);
	CHECK(!mapsnap_get(m, pid, &pm));
	/* The child's image is this test's: its own code is among the mappings kept. */
	CHECK(pm && pm->nr > 0 && procmaps_find(pm, (__u64)(unsigned long)keeps_mappings_after_exit));
	CHECK(mapsnap_exec_id(m, pid) == 7);
	procmaps_free(pm);
	mapsnap_stats(m, &st);
	CHECK(st.read == 1 && st.held == 1 && st.bytes > 0);
	mapsnap_forget(m, pid);
	CHECK(mapsnap_get(m, pid, &pm) == -ENOENT && mapsnap_exec_id(m, pid) == 0);
	mapsnap_stats(m, &st);
	CHECK(st.held == 0 && st.bytes == 0);
	mapsnap_free(m);
}

/* A new image (exec) whose mappings cannot be read: the old image's go too, they are not its. */
static void gone_after_exec_keeps_nothing(void)
{
	struct mapsnap *m = mapsnap_new();
	struct mapsnap_stats st;
	struct procmaps *pm = NULL;
	pid_t pid = sleeper();

	CHECK(m && pid > 0);
	CHECK(!mapsnap_take(m, pid, 1));
	end(pid);
	CHECK(mapsnap_take(m, pid, 2) == -ESRCH);
	mapsnap_stats(m, &st);
	CHECK(st.read == 1 && st.missed == 1 && st.held == 0);
	CHECK(mapsnap_get(m, pid, &pm) == -ENOENT);
	mapsnap_free(m);
}

static void reads_again_only_after_exec(void)
{
	struct mapsnap *m = mapsnap_new();
	struct mapsnap_stats st;
	pid_t a = sleeper(), b = sleeper();

	CHECK(m && a > 0 && b > 0);
	CHECK(!mapsnap_take(m, a, 1) && !mapsnap_take(m, b, 1));
	CHECK(!mapsnap_take(m, a, 1));   /* the same image: not read again */
	mapsnap_stats(m, &st);
	CHECK(st.read == 2 && st.held == 2);
	CHECK(!mapsnap_take(m, a, 2));   /* exec'd: read again, in place of the old */
	mapsnap_stats(m, &st);
	CHECK(st.read == 3 && st.held == 2 && mapsnap_exec_id(m, a) == 2 && mapsnap_exec_id(m, b) == 1);
	/* Forgetting one moves the other: it is still found, whole. */
	mapsnap_forget(m, a);
	CHECK(mapsnap_exec_id(m, b) == 1 && mapsnap_exec_id(m, a) == 0);
	CHECK(!mapsnap_take(m, a, 3));
	mapsnap_stats(m, &st);
	CHECK(st.held == 2 && st.evicted == 0);
	end(a);
	end(b);
	mapsnap_free(m);
}

int main(void)
{
	RUN(keeps_mappings_after_exit);
	RUN(reads_again_only_after_exec);
	RUN(gone_after_exec_keeps_nothing);
	UNIT_EXIT();
}
