// SPDX-License-Identifier: GPL-2.0
/*
 * Finding separate debug files, in gdb's and perf's order. Every local
 * candidate is opened inside the target's root (openat2 RESOLVE_IN_ROOT on
 * /proc/PID/root): a container's /usr/lib/debug is its own, never the host's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <zlib.h>

#include "debuginfo.h"
#include "log.h"

#define DEBUG_DIR "/usr/lib/debug"

/* The module's state: its settings, and debuginfod's client once it is needed. */
static struct {
	struct debuginfo_conf conf;
	debuginfod_client *client;
	bool client_tried, unreachable;
	const char *fetching;     /* object being downloaded, for the progress line */
	struct timespec started;
	bool progress_shown;
} dbg;

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

/*
 * Opens the regular file path read-only as process pid sees it, without
 * escaping its root. O_NONBLOCK: a FIFO planted where a debug file is looked
 * for must not hang fnprof; only regular files are kept.
 */
static int open_in_root(pid_t pid, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK, .resolve = RESOLVE_IN_ROOT };
	char root[64];
	struct stat st;
	int rfd, fd;

	snprintf(root, sizeof(root), pid ? "/proc/%d/root" : "/", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	fd = fd < 0 ? -errno : fd;
	close(rfd);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		return -EINVAL;
	}
	return fd;
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
	fd = open_in_root(pid, found);
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
		fd = open_in_root(pid, found);
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

/*
 * Under sudo, the invoking user's cache ($XDG_CACHE_HOME or ~/.cache of that
 * user), unless DEBUGINFOD_CACHE_PATH says otherwise; a quick timeout unless
 * DEBUGINFOD_TIMEOUT does: a profiler should not wait 90 s for a server.
 */
static void client_env(void)
{
	const char *user = getenv("SUDO_USER");
	struct passwd *pw = user ? getpwnam(user) : NULL;
	char cache[PATH_MAX];

	setenv("DEBUGINFOD_TIMEOUT", "10", 0);
	if (pw && !getenv("DEBUGINFOD_CACHE_PATH")) {
		snprintf(cache, sizeof(cache), "%s/.cache/debuginfod_client", pw->pw_dir);
		setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	}
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

static debuginfod_client *client(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (dbg.client_tried)
		return dbg.client;
	dbg.client_tried = true;
	if (dbg.conf.no_debuginfod || !urls || !*urls) {
		if (!urls && getenv("SUDO_USER"))
			log_debug("no DEBUGINFOD_URLS: sudo drops it, keep it with sudo --preserve-env=DEBUGINFOD_URLS");
		return NULL;
	}
	if (load_debuginfod())
		return NULL;
	client_env();
	dbg.client = dl.begin();
	if (dbg.client)
		dl.set_progressfn(dbg.client, progress);
	return dbg.client;
}

/* Gives a file that root wrote into the invoking user's cache back to that user. */
static void chown_to_sudo_user(const char *file)
{
	static const char *const settings[] = { "cache_clean_interval_s", "max_unused_age_s" };
	const char *uid = getenv("SUDO_UID"), *gid = getenv("SUDO_GID");
	const char *cache = getenv("DEBUGINFOD_CACHE_PATH");
	char dir[PATH_MAX], *slash;
	size_t i;

	if (!uid || !gid || !cache)
		return;
	/* The file, its build-id directory, the cache root, and the settings files in it. */
	snprintf(dir, sizeof(dir), "%s", file);
	while (strlen(dir) >= strlen(cache) && !lchown(dir, atoi(uid), atoi(gid)) && (slash = strrchr(dir, '/')))
		*slash = 0;
	for (i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		snprintf(dir, sizeof(dir), "%s/%s", cache, settings[i]);
		if (lchown(dir, atoi(uid), atoi(gid)))
			log_debug("cannot give %s to %s: %s", dir, getenv("SUDO_USER"), strerror(errno));
	}
}

static int by_debuginfod(const char *id, const char *path, char *found, size_t size)
{
	debuginfod_client *c = dbg.unreachable ? NULL : client();
	char *file = NULL;
	int fd;

	if (!c)
		return -ENOENT;
	dbg.fetching = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	dbg.progress_shown = false;
	clock_gettime(CLOCK_MONOTONIC, &dbg.started);
	fd = dl.find_debuginfo(c, (const unsigned char *)id, 0, &file);
	if (dbg.progress_shown && isatty(STDERR_FILENO))
		fputc('\n', stderr);
	if (fd >= 0) {
		snprintf(found, size, "debuginfod:%s", file);
		chown_to_sudo_user(file);
		free(file);
		return fd;
	}
	if (fd == -ENOENT) {
		log_debug("debuginfod has no debug info for %s (build-id %s)", path, id);
		return -ENOENT;
	}
	/* Anything but "not there" is the servers' trouble: say it once, then go on without them. */
	dbg.unreachable = true;
	log_warn("debuginfod (DEBUGINFOD_URLS=%s) failed for %s: %s; going on without it "
		 "(--no-debuginfod turns it off)", getenv("DEBUGINFOD_URLS"), path, strerror(-fd));
	return -ENOENT;
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
	int fd;

	if (!strncmp(found, "debuginfod:", 11)) {
		fd = open(found + 11, O_RDONLY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	return open_in_root(pid, found);
}
