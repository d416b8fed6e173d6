// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

/* Under sudo, the command runs as the user who invoked sudo, not as root. */
static int drop_to_sudo_user(void)
{
	const char *uid_s = getenv("SUDO_UID"), *gid_s = getenv("SUDO_GID"), *user = getenv("SUDO_USER");
	uid_t uid;
	gid_t gid;

	if (!uid_s || !gid_s || geteuid() != 0)
		return 0;
	uid = strtoul(uid_s, NULL, 10);
	gid = strtoul(gid_s, NULL, 10);
	if (!uid)
		return 0;
	if ((user && initgroups(user, gid)) || setgid(gid) || setuid(uid))
		return -errno;
	return 0;
}

/* In the child: wait for the go byte, then become cmd. Never returns. */
static void child_main(char **cmd, int go_rd)
{
	char b;
	ssize_t n;

	do {
		n = read(go_rd, &b, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);  /* fnprof gave up before the probes were in place */
	close(go_rd);
	if (drop_to_sudo_user()) {
		fprintf(stderr, "fnprof: cannot switch to user %s: %s\n", getenv("SUDO_USER"), strerror(errno));
		_exit(127);
	}
	execvp(cmd[0], cmd);
	fprintf(stderr, "fnprof: cannot run '%s': %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

int launch_prepare(char **cmd, struct child *c)
{
	int fds[2];

	memset(c, 0, sizeof(*c));
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (!c->pid) {
		close(fds[1]);
		child_main(cmd, fds[0]);
	}
	close(fds[0]);
	c->go_fd = fds[1];
	return 0;
}

int launch_release(struct child *c)
{
	ssize_t n = write(c->go_fd, "g", 1);

	close(c->go_fd);
	c->go_fd = -1;
	c->released = n == 1;
	return c->released ? 0 : -EIO;
}

void launch_abort(struct child *c)
{
	if (c->pid <= 0 || c->released)
		return;
	close(c->go_fd);
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	c->pid = 0;
}

int launch_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
