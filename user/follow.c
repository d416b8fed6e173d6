// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sanitize.h"
#include "follow.h"
#include "target/kneeds.h"
#include "target/resolve.h"

void follow_program_path(const struct run_target *t, char *path, size_t size)
{
	if (t->followed[0])
		snprintf(path, size, "%s", t->followed);
	else if (t->cmd)
		find_in_path(t->cmd[0], path, size);
	else
		snprintf(path, size, "/proc/%d/exe", t->pid);
}

void follow_remember_exe(struct run_target *t)
{
	char path[PATH_MAX];
	struct stat st;

	/* A followed script's program is already running, stopped at its exec. */
	if (t->followed[0])
		t->exe_seen = true;
	follow_program_path(t, path, sizeof(path));
	if (!stat(path, &st)) {
		t->exe_dev = st.st_dev;
		t->exe_ino = st.st_ino;
	}
}

/*
 * The program found in a fork child of the command (timeout's, a shell's):
 * the run watches it, and Ctrl-C goes to it; the command's status is taken
 * at the end, or now if it exited already. 1, or -1 (said).
 */
static int watch_program(struct run_target *t, pid_t pid)
{
	if (pid == t->pid)
		return 1;
	t->pid = pid;
	t->child_reaped = t->child.exited;
	t->child_status = t->child.status;
	close(t->pidfd);
	t->pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (t->pidfd >= 0)
		return 1;
	log_err("cannot watch process %d: %s", pid, strerror(errno));
	return -1;
}

/* Whether the command is a script or a wrapper that runs the program to trace. */
static bool wraps(const struct run_target *t)
{
	char path[PATH_MAX];

	return !find_in_path(t->cmd[0], path, sizeof(path)) && (launch_is_script(path) || resolve_is_wrapper(path));
}

/*
 * Where following the command stands after an exec: 1 it is the program
 * to trace, 0 go on (a wrapper; a fork child's program, let go), -1 the
 * command's own process runs a program without the functions (said).
 */
static int followed_exec(struct run_target *t, const struct resolve_conf *conf)
{
	char real[PATH_MAX], clean[PATH_MAX];
	pid_t pid = t->child.program;
	ssize_t n;

	snprintf(t->followed, sizeof(t->followed), "/proc/%d/exe", pid);
	n = readlink(t->followed, real, sizeof(real) - 1);
	real[n > 0 ? n : 0] = 0;
	if (resolve_program_fits(conf, t->followed, real)) {
		if (wraps(t))
			log_info("%s is a script or wrapper: tracing %s, the program it runs (pid %d)", t->cmd[0],
				 sanitize_term(real, clean, sizeof(clean)), pid);
		else
			log_debug("%s (pid %d) stopped at its exec: its mappings give the probes' addresses",
				  sanitize_term(real, clean, sizeof(clean)), pid);
		return watch_program(t, pid);
	}
	log_debug("following %s: %s (pid %d) is not the program to trace", t->cmd[0], real, pid);
	if (resolve_is_wrapper(real))
		return 0;
	if (pid != t->child.pid) {
		launch_follow_release(&t->child);
		return 0;
	}
	log_err("%s runs %s, which is not a wrapper (a shell, env, nice, taskset, timeout...) and lacks the "
		"functions asked for; name the program itself, or its library (-f LIB:NAME)", t->cmd[0],
		sanitize_term(real, clean, sizeof(clean)));
	return -1;
}

int follow_to_program(struct run_target *t, const char *const *funcs, size_t nr_funcs)
{
	const struct resolve_conf conf = { .funcs = funcs, .nr_funcs = nr_funcs };
	int err, status, hops, fits = 0;

	err = launch_follow_start(&t->child);
	for (hops = 0; !err && !fits && hops < 4096; hops++) {
		err = launch_follow_next(&t->child, &status);
		fits = err ? 0 : followed_exec(t, &conf);
	}
	if (fits > 0)
		return 0;
	t->followed[0] = 0;
	if (err == -ESRCH) {
		t->child_reaped = true;
		t->child_status = status;
		log_err("%s is a script or wrapper, and it exited (status %d) before it exec'd a program with the "
			"functions asked for; name the program itself (see -v for the programs it ran)", t->cmd[0],
			launch_exit_code(status));
	} else if (!fits) {
		log_err("cannot follow %s through exec: %s", t->cmd[0], err ? strerror(-err) : "too many execs");
	}
	return EXIT_FAIL;
}

bool follow_needed(const struct run_target *t, size_t nr_funcs)
{
	return t->cmd && nr_funcs && wraps(t);
}

bool follow_to_exec(const struct run_target *t, size_t nr_funcs)
{
	return t->cmd && nr_funcs && (wraps(t) || kneeds_trace_compat(NULL));
}

bool follow_exec_away(struct run_target *t)
{
	char path[64], now[PATH_MAX], clean[PATH_MAX];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", t->pid);
	if (stat(path, &st))
		return false;
	if (st.st_dev == t->exe_dev && st.st_ino == t->exe_ino) {
		t->exe_seen = true;
		return false;
	}
	if (!t->exe_seen)
		return false;
	n = readlink(path, now, sizeof(now) - 1);
	now[n > 0 ? n : 0] = 0;
	log_info("process %d exec'd %s: the probes were on the program it replaced", t->pid,
		 sanitize_term(now, clean, sizeof(clean)));
	t->gone = true;
	return true;
}
