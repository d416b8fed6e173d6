// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/launch.h"
#include "base/log.h"
#include "base/safeopen.h"

/* A decimal user or group id, all digits: 0, or -EINVAL. */
static int parse_id(const char *s, unsigned int *id)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= (uid_t)-1)
		return -EINVAL;
	*id = v;
	return 0;
}

/*
 * Under sudo, the command is to run as the user who invoked sudo: that user's
 * uid, gid and groups (from the password database, SUDO_USER is not trusted
 * for them), HOME, USER and LOGNAME. Looked up before the fork. Fails closed:
 * an id that does not parse or a uid without a user is an error, never root.
 */
static int lookup_sudo_user(struct run_as *u)
{
	const char *uid_s = getenv("SUDO_UID"), *gid_s = getenv("SUDO_GID");
	unsigned int uid, gid;
	struct passwd *pw;
	int n = 0;

	if (!uid_s || geteuid() != 0)
		return 0;
	if (parse_id(uid_s, &uid) || (gid_s && parse_id(gid_s, &gid))) {
		log_err("SUDO_UID '%s' or SUDO_GID '%s' is not a number: not running the command as root instead",
			uid_s, gid_s ? gid_s : "");
		return -EINVAL;
	}
	if (!uid)
		return 0;  /* sudo from root: root it is */
	pw = getpwuid(uid);
	if (!pw) {
		log_err("SUDO_UID %u is no user in the password database: not running the command as root instead", uid);
		return -EINVAL;
	}
	u->uid = uid;
	u->gid = gid_s ? gid : pw->pw_gid;
	u->name = strdup(pw->pw_name);
	u->home = strdup(pw->pw_dir);
	getgrouplist(pw->pw_name, u->gid, NULL, &n);
	u->groups = calloc(n + 1, sizeof(*u->groups));
	if (!u->name || !u->home || !u->groups || getgrouplist(u->name, u->gid, u->groups, &n) < 0)
		return -ENOMEM;
	u->nr_groups = n;
	u->drop = true;
	return 0;
}

/* In the child: becomes the user, for good (no way back to root), with that user's environment. */
static int become_user(const struct run_as *u)
{
	if (!u->drop)
		return 0;
	if (setgroups(u->nr_groups, u->groups) || setgid(u->gid) || setuid(u->uid))
		return -errno;
	if (!setuid(0) || getuid() != u->uid || geteuid() != u->uid || getegid() != u->gid)
		return -EPERM;
	if (setenv("HOME", u->home, 1) || setenv("USER", u->name, 1) || setenv("LOGNAME", u->name, 1))
		return -errno;
	return 0;
}

void launch_save_signals(struct launch_signals *s)
{
	struct sigaction sa;
	int sig;

	sigprocmask(SIG_SETMASK, NULL, &s->mask);
	if (getrlimit(RLIMIT_NOFILE, &s->nofile))
		s->nofile.rlim_cur = s->nofile.rlim_max = RLIM_INFINITY;   /* marks it unknown: left as is */
	for (sig = 1; sig < NSIG; sig++)
		s->ignored[sig] = !sigaction(sig, NULL, &sa) && sa.sa_handler == SIG_IGN;
}

/*
 * In the child (every signal blocked since the fork): the dispositions and
 * mask fnprof started with (it ignores SIGPIPE and handles SIGINT, SIGTERM,
 * SIGHUP itself). An ignored signal stays ignored across exec: the command
 * would inherit fnprof's.
 */
static void restore_signals(const struct launch_signals *s)
{
	struct sigaction sa = {};
	int sig;

	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		sa.sa_handler = s->ignored[sig] ? SIG_IGN : SIG_DFL;
		sigaction(sig, &sa, NULL);  /* fails only for the C library's own signals: fine */
	}
	sigprocmask(SIG_SETMASK, &s->mask, NULL);
	/* A program that uses select() may count on the usual 1024. */
	if (s->nofile.rlim_cur != RLIM_INFINITY)
		setrlimit(RLIMIT_NOFILE, &s->nofile);
}

/* In the child: wait for the go byte, then become cmd. Never returns. */
static void child_main(char **cmd, const struct child *c, int go_rd)
{
	char b;
	ssize_t n;
	int err;

	do {
		n = read(go_rd, &b, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);  /* fnprof gave up before the probes were in place */
	close(go_rd);
	err = become_user(&c->user);
	if (err) {
		fprintf(stderr, "fnprof: cannot switch to user %s: %s\n", c->user.name, strerror(-err));
		_exit(127);
	}
	restore_signals(&c->sigs);
	execvp(cmd[0], cmd);
	fprintf(stderr, "fnprof: cannot run '%s': %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

int launch_prepare(char **cmd, const struct launch_signals *sigs, struct child *c)
{
	sigset_t all, old;
	int fds[2], err;

	memset(c, 0, sizeof(*c));
	c->sigs = *sigs;
	err = lookup_sudo_user(&c->user);
	if (err)
		return err;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	/*
	 * The child starts with every signal blocked, until restore_signals: a
	 * SIGTERM fnprof passes on before the exec must not meet fnprof's own
	 * handler there (it was lost: the command never saw it, and fnprof
	 * waited for it forever). Pending, it takes its default action then.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	c->pid = fork();
	if (!c->pid) {
		close(fds[1]);
		child_main(cmd, c, fds[0]);
	}
	err = c->pid < 0 ? -errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(fds[0]);
		close(fds[1]);
		return err;
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

void launch_free(struct child *c)
{
	free(c->user.name);
	free(c->user.home);
	free(c->user.groups);
	memset(&c->user, 0, sizeof(c->user));
}

int launch_follow_start(struct child *c)
{
	/* EXITKILL: a command fnprof stops following half-way (fnprof killed) does not run untraced. */
	long opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_EXITKILL;

	if (ptrace(PTRACE_SEIZE, c->pid, NULL, (void *)opts))
		return -errno;
	c->following = true;
	/*
	 * Nothing stopped yet: the first launch_follow_next must not resume the
	 * command, which may already be stopped at its exec (released below):
	 * resumed, it ran past its exec unseen (1 run in 6 here).
	 */
	c->program = 0;
	c->traced[0] = c->pid;
	c->nr_traced = 1;
	return launch_release(c);
}

static void forget_traced(struct child *c, pid_t pid)
{
	size_t i;

	for (i = 0; i < c->nr_traced; i++)
		if (c->traced[i] == pid)
			c->traced[i] = c->traced[--c->nr_traced];
}

static void add_traced(struct child *c, pid_t parent);

/* Whether the process (a child of fnprof) exited: looked at, not reaped. */
static bool command_exited(pid_t pid)
{
	siginfo_t si = { 0 };

	return waitid(P_PID, pid, &si, WEXITED | WSTOPPED | WNOWAIT | __WALL) ||
	       si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
}

/* Lets a traced process that is not the program go on untraced, stopping it first (ptrace needs a stop). */
static void release_traced(struct child *c, pid_t pid)
{
	int st, sig;

	ptrace(PTRACE_INTERRUPT, pid, NULL, NULL);
	for (;;) {
		/* The command's own exit is left for fnprof's wait for its status. */
		if ((pid == c->pid && command_exited(pid)) || waitpid(pid, &st, __WALL) != pid || WIFEXITED(st) ||
		    WIFSIGNALED(st))
			break;
		/* A fork child it made meanwhile is traced too: it is released in turn. */
		if (st >> 16 == PTRACE_EVENT_FORK || st >> 16 == PTRACE_EVENT_VFORK)
			add_traced(c, pid);
		/* A signal it was about to get goes on to it; any other stop is left. */
		sig = st >> 16 ? 0 : WSTOPSIG(st);
		if (!ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig) || errno == ESRCH)
			break;
	}
	forget_traced(c, pid);
}

/* Releases every traced process but keep. */
static void release_others(struct child *c, pid_t keep)
{
	size_t i = 0;

	while (i < c->nr_traced) {
		if (c->traced[i] == keep)
			i++;
		else
			release_traced(c, c->traced[i]);
	}
}

/* A fork child of a traced process (at its fork event): traced from its start, or let go when too many. */
static void add_traced(struct child *c, pid_t parent)
{
	unsigned long child;

	if (ptrace(PTRACE_GETEVENTMSG, parent, NULL, &child))
		return;
	if (c->nr_traced < sizeof(c->traced) / sizeof(c->traced[0]))
		c->traced[c->nr_traced++] = child;
	else
		release_traced(c, child);
}

int launch_follow_next(struct child *c, int *status)
{
	pid_t pid = c->program;
	int sig = 0, st;

	for (;;) {
		if (pid && ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig) && errno != ESRCH)
			return -errno;
		pid = waitpid(-1, &st, __WALL);
		if (pid < 0)
			return -errno;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			forget_traced(c, pid);
			if (pid == c->pid) {
				c->exited = true;
				c->status = st;
			}
			/* The command's status once nothing it started can exec a program any more. */
			if (c->exited && !c->nr_traced) {
				*status = c->status;
				c->following = false;
				return -ESRCH;
			}
			pid = 0;
			continue;
		}
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			c->program = pid;
			return 0;
		}
		if (st >> 16 == PTRACE_EVENT_FORK || st >> 16 == PTRACE_EVENT_VFORK)
			add_traced(c, pid);
		/* A signal for the command goes on to it; a group stop or other event is passed over. */
		sig = st >> 16 ? 0 : WSTOPSIG(st);
	}
}

void launch_follow_release(struct child *c)
{
	/* Stopped at its exec already: no stop to wait for. */
	if (c->program != c->pid && !ptrace(PTRACE_DETACH, c->program, NULL, NULL))
		forget_traced(c, c->program);
	c->program = 0;
}

int launch_follow_stop(struct child *c)
{
	release_others(c, c->program);
	c->following = false;
	c->nr_traced = 0;
	return ptrace(PTRACE_DETACH, c->program, NULL, NULL) ? -errno : 0;
}

bool launch_is_script(const char *path)
{
	char magic[4];
	int fd = open_regular(AT_FDCWD, path, 0);
	ssize_t n = fd >= 0 ? read(fd, magic, sizeof(magic)) : -1;

	if (fd >= 0)
		close(fd);
	/* Not ELF: a "#!" script, or one that execvp hands to /bin/sh. */
	return n == (ssize_t)sizeof(magic) && memcmp(magic, "\x7f" "ELF", 4);
}

void launch_abort(struct child *c)
{
	if (c->pid > 0 && c->following) {
		/* Stopped at an exec, before the program it followed to ran a single instruction. */
		while (c->nr_traced)
			kill(c->traced[--c->nr_traced], SIGKILL);
		/* A command that exited was reaped: its pid may be another process's by now. */
		if (!c->exited) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, __WALL);
		}
		c->pid = 0;
		c->following = false;
		return;
	}
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
