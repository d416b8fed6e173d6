// SPDX-License-Identifier: GPL-2.0
/*
 * Finding separate debug files, in gdb's and perf's order. Every local
 * candidate is opened inside the target's root (openat2 RESOLVE_IN_ROOT on
 * /proc/PID/root): a container's /usr/lib/debug is its own, never the host's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <zlib.h>

#include "elf/debuginfo.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/safeopen.h"

#define DEBUG_DIR "/usr/lib/debug"

/*
 * The module's state: its settings, and debuginfod's client once it is
 * needed. lock: downloads come from the main thread and the HTTP server's.
 */
static struct {
	struct debuginfo_conf conf;
	pthread_mutex_t lock;
	debuginfod_client *client;
	bool client_tried, usable, unreachable;
	const char *fetching;     /* object being downloaded, for the progress line */
	struct timespec started;
	bool progress_shown;
} dbg = { .lock = PTHREAD_MUTEX_INITIALIZER };

void debuginfo_configure(const struct debuginfo_conf *c)
{
	dbg.conf = *c;
}

bool debuginfo_build_id(Elf *elf, char *buf, size_t size)
{
	const unsigned char *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, (const void **)&id);
	ssize_t i;

	if (n <= 0 || (size_t)n * 2 + 1 > size)
		return false;
	for (i = 0; i < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", id[i]);
	return true;
}

/* Whether the ELF file fd carries the build-id want (hex). */
static bool has_build_id(int fd, const char *want)
{
	char id[2 * 64 + 1];
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	bool ok = elf && debuginfo_build_id(elf, id, sizeof(id)) && !strcmp(id, want);

	if (elf)
		elf_end(elf);
	return ok;
}

/* Whether the file's CRC-32 (zlib's, as .gnu_debuglink uses) is crc. */
static bool has_crc(int fd, GElf_Word crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, n);
		off += n;
	}
	return n == 0 && (GElf_Word)c == crc;
}

static int by_build_id(const char *id, pid_t pid, char *found, size_t size)
{
	int fd;

	if (strlen(id) < 3)
		return -ENOENT;
	snprintf(found, size, DEBUG_DIR "/.build-id/%.2s/%s.debug", id, id + 2);
	fd = proc_open_in_root(pid, found);
	if (fd >= 0 && !has_build_id(fd, id)) {
		log_warn("%s does not have the build-id of its name: ignored", found);
		close(fd);
		return -ENOENT;
	}
	return fd >= 0 ? fd : -ENOENT;
}

/* The .gnu_debuglink file: beside the object, in its .debug/, under /usr/lib/debug/<dir>/. */
static int by_debuglink(Elf *elf, const char *path, pid_t pid, char *found, size_t size)
{
	static const char *const prefix[] = { "", "", DEBUG_DIR }, *const sub[] = { "", "/.debug", "" };
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	GElf_Word crc;
	const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
	size_t i;
	int fd;

	if (!link || !*link || strchr(link, '/') || !slash)
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(found, size, "%s%s%s/%s", prefix[i], dir, sub[i], link);
		fd = proc_open_in_root(pid, found);
		if (fd < 0)
			continue;
		if (has_crc(fd, crc))
			return fd;
		log_debug("%s: CRC does not match the .gnu_debuglink of %s, skipped", found, path);
		close(fd);
	}
	return -ENOENT;
}

/* --- debuginfod ------------------------------------------------------------- */

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A progress line once a download has taken a second; redrawn in place on a terminal. */
static int progress(debuginfod_client *c, long done, long total)
{
	bool tty = isatty(STDERR_FILENO);

	(void)c;
	if (since(&dbg.started) < 1.0 || (!tty && dbg.progress_shown))
		return 0;
	fprintf(stderr, "%sfnprof: downloading debug info of %s from debuginfod: %ld KiB", tty ? "\r" : "",
		dbg.fetching, done / 1024);
	if (total > 0)
		fprintf(stderr, " of %ld KiB", total / 1024);
	fputs(tty ? "\033[K" : "\n", stderr);
	dbg.progress_shown = true;
	return 0;
}

/* A quick timeout unless DEBUGINFOD_TIMEOUT says otherwise: a profiler should not wait 90 s for a server. */
static void client_env(void)
{
	setenv("DEBUGINFOD_TIMEOUT", "10", 0);
}

/*
 * libdebuginfod, loaded when a download is first wanted: linked, it and
 * what it needs (curl, gnutls, kerberos: ~30 libraries) cost every fnprof
 * start ~5 ms before main(), most of the time to the first breakpoint.
 */
static struct {
	debuginfod_client *(*begin)(void);
	void (*set_progressfn)(debuginfod_client *c, debuginfod_progressfn_t fn);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int id_len, char **path);
} dl;

/* Fills dl from libdebuginfod.so.1: 0, or -ENOENT (said once, as a warning). */
static int load_debuginfod(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (h) {
		*(void **)&dl.begin = dlsym(h, "debuginfod_begin");
		*(void **)&dl.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
		*(void **)&dl.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	}
	if (h && dl.begin && dl.set_progressfn && dl.find_debuginfo)
		return 0;
	log_warn("DEBUGINFOD_URLS is set but libdebuginfod.so.1 cannot be used (%s): no downloads "
		 "(install libdebuginfod1)", h ? "a function is missing" : dlerror());
	return -ENOENT;
}

/* Whether downloads are wanted and libdebuginfod is there; decided once, in fnprof itself. */
static bool debuginfod_usable(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (dbg.client_tried)
		return dbg.usable;
	dbg.client_tried = true;
	if (dbg.conf.no_debuginfod || !urls || !*urls) {
		if (!urls && getenv("SUDO_USER"))
			log_debug("no DEBUGINFOD_URLS: sudo drops it, keep it with sudo --preserve-env=DEBUGINFOD_URLS");
		return false;
	}
	dbg.usable = !load_debuginfod();
	return dbg.usable;
}

/* The client, made on first use in the process that downloads (fnprof, or its child under sudo). */
static debuginfod_client *client(void)
{
	if (!dbg.client) {
		client_env();
		dbg.client = dl.begin();
		if (dbg.client)
			dl.set_progressfn(dbg.client, progress);
	}
	return dbg.client;
}

/* --- under sudo: the cache is the user's, so only the user writes it --- */

/*
 * Under sudo the cache (~/.cache/debuginfod_client of the invoking user, or
 * DEBUGINFOD_CACHE_PATH) is a directory that user controls: root writing
 * there follows the user's symlinks (a root escalation). So each download
 * and each reopen of a cached file runs in a child that has become the user,
 * and hands back only a descriptor. 1 and the ids under sudo, 0 when not,
 * -EPERM when SUDO_UID/SUDO_GID are set but unusable (no downloads then).
 */
static int sudo_ids(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	char *end1 = NULL, *end2 = NULL;
	unsigned long lu, lg;

	if (geteuid() != 0 || (!u && !g))
		return 0;
	errno = 0;
	lu = u ? strtoul(u, &end1, 10) : 0;
	lg = g ? strtoul(g, &end2, 10) : 0;
	if (!u || !g || errno || *end1 || *end2 || end1 == u || end2 == g || lu >= (uid_t)-1 || lg >= (gid_t)-1)
		return -EPERM;
	if (lu == 0)
		return 0;  /* root ran sudo: nothing to hand over */
	*uid = lu;
	*gid = lg;
	return 1;
}

/*
 * The user's own cache, as libdebuginfod run by that user would choose it
 * (unless DEBUGINFOD_CACHE_PATH says): looked up before the fork, since the
 * password database may need NSS modules loaded, not safe in a forked child.
 */
static void user_cache(uid_t uid, char *cache, size_t size)
{
	const char *user = getenv("SUDO_USER");
	struct passwd *pw = user ? getpwnam(user) : NULL;

	cache[0] = 0;
	if (pw && pw->pw_uid == uid && !getenv("DEBUGINFOD_CACHE_PATH"))
		snprintf(cache, size, "%s/.cache/debuginfod_client", pw->pw_dir);
}

/* Becomes uid:gid for good, and checks that root cannot be had back. 0 or -errno. */
static int become_user(uid_t uid, gid_t gid, const char *cache)
{
	if (setgroups(1, &gid) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	if (setuid(0) == 0 || geteuid() == 0)
		return -EPERM;
	if (*cache)
		setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	return 0;
}

/* What a child sends back: its result (an fd goes along as SCM_RIGHTS) and "found". */
struct job_result {
	int err;
	char found[PATH_MAX];
};

static void send_result(int sock, int fd, const char *found)
{
	struct job_result r = { .err = fd < 0 ? fd : 0 };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	snprintf(r.found, sizeof(r.found), "%s", found);
	if (fd >= 0) {
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		_exit(1);
}

/* The child's answer: an fd or -errno; found filled. A child that died without one: -EIO. */
static int recv_result(int sock, char *found, size_t size)
{
	struct job_result r;
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (n == (ssize_t)sizeof(r) && fd >= 0 && !r.err) {
		r.found[sizeof(r.found) - 1] = 0;
		snprintf(found, size, "%s", r.found);
		return fd;
	}
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(r) && r.err < 0 ? r.err : -EIO;
}

typedef int (*job_fn)(const char *arg, char *found, size_t size);

/* Runs fn(arg) in a child that has become uid:gid; the fd it opened, or -errno. */
static int run_as_user(job_fn fn, const char *arg, uid_t uid, gid_t gid, char *found, size_t size)
{
	char cache[PATH_MAX];
	int sv[2], fd, err;
	pid_t child;

	user_cache(uid, cache, sizeof(cache));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	child = fork();
	if (child == 0) {
		close(sv[0]);
		err = become_user(uid, gid, cache);
		/* After the change of user, which clears it: the child goes when fnprof does. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = err ? err : fn(arg, found, size);
		send_result(sv[1], fd, found);
		_exit(0);
	}
	close(sv[1]);
	fd = child < 0 ? -errno : recv_result(sv[0], found, size);
	close(sv[0]);
	while (child > 0 && waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	return fd;
}

/* fn(arg) as the invoking user under sudo, else right here. found is set ("" when nothing). */
static int run_job(job_fn fn, const char *arg, char *found, size_t size)
{
	uid_t uid;
	gid_t gid;
	int sudo = sudo_ids(&uid, &gid);

	found[0] = 0;
	if (sudo < 0) {
		log_warn("SUDO_UID '%s' or SUDO_GID '%s' is not a usable user: no debuginfod downloads",
			 getenv("SUDO_UID") ?: "", getenv("SUDO_GID") ?: "");
		return -EPERM;
	}
	return sudo ? run_as_user(fn, arg, uid, gid, found, size) : fn(arg, found, size);
}

/* A job: downloads (or finds in the cache) the debug file of build-id arg. found: the cache file. */
static int download(const char *id, char *found, size_t size)
{
	debuginfod_client *c = client();
	char *file = NULL;
	int fd;

	if (!c)
		return -ENOMEM;
	fd = dl.find_debuginfo(c, (const unsigned char *)id, 0, &file);
	if (dbg.progress_shown && isatty(STDERR_FILENO))
		fputc('\n', stderr);
	if (fd >= 0)
		snprintf(found, size, "%s", file);
	free(file);
	return fd;
}

/* A job: opens a file of the cache again (a path the user may have changed since: regular files only). */
static int open_cached(const char *path, char *found, size_t size)
{
	snprintf(found, size, "%s", path);
	return open_regular(AT_FDCWD, path, 0);
}

/* An fd from a job, kept only if it is a regular file: what the user handed over may be anything. */
static int regular_only(int fd)
{
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int by_debuginfod(const char *id, const char *path, char *found, size_t size)
{
	char file[PATH_MAX];
	int fd;

	pthread_mutex_lock(&dbg.lock);
	if (dbg.unreachable || !debuginfod_usable()) {
		pthread_mutex_unlock(&dbg.lock);
		return -ENOENT;
	}
	dbg.fetching = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	dbg.progress_shown = false;
	clock_gettime(CLOCK_MONOTONIC, &dbg.started);
	fd = regular_only(run_job(download, id, file, sizeof(file)));
	if (fd >= 0) {
		snprintf(found, size, "debuginfod:%s", file);
	} else if (fd == -ENOENT) {
		log_debug("debuginfod has no debug info for %s (build-id %s)", path, id);
	} else if (fd != -EPERM) {
		/* Anything but "not there" is the servers' trouble: say it once, then go on without them. */
		dbg.unreachable = true;
		log_warn("debuginfod (DEBUGINFOD_URLS=%s) failed for %s: %s; going on without it "
			 "(--no-debuginfod turns it off)", getenv("DEBUGINFOD_URLS"), path, strerror(-fd));
	}
	pthread_mutex_unlock(&dbg.lock);
	return fd >= 0 ? fd : -ENOENT;
}

int debuginfo_open(Elf *elf, const char *path, pid_t pid, char *found, size_t size)
{
	char id[2 * 64 + 1];
	bool has_id = debuginfo_build_id(elf, id, sizeof(id));
	int fd;

	if (has_id && (fd = by_build_id(id, pid, found, size)) >= 0)
		return fd;
	if ((fd = by_debuglink(elf, path, pid, found, size)) >= 0)
		return fd;
	if (has_id && (fd = by_debuginfod(id, path, found, size)) >= 0)
		return fd;
	found[0] = 0;
	return -ENOENT;
}

int debuginfo_reopen(const char *found, pid_t pid)
{
	char again[PATH_MAX];

	if (!strncmp(found, "debuginfod:", 11))
		return regular_only(run_job(open_cached, found + 11, again, sizeof(again)));
	return proc_open_in_root(pid, found);
}
