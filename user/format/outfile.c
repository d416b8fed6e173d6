// SPDX-License-Identifier: GPL-2.0
/* New output files, through no link another user planted; written whole with a rename. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "format/outfile.h"
#include "base/sanitize.h"

#define MAX_LINKS 40   /* links followed in one path, as the kernel's limit */

/* The files this run claimed or wrote: only those may be replaced (an interval's file by the next). */
struct claim {
	char *path;
	struct stat st;   /* the file as this run left it: another writer's change makes it theirs */
	bool written;
};

static struct {
	struct claim *v;
	size_t nr, cap;
} claims;

/* The last link refused (-ENOLINK), for outfile_strerror. */
static char refused[PATH_MAX + 64];

bool outfile_is_stdout(const char *path)
{
	return !strcmp(path, "-") || !strcmp(path, "/dev/stdout");
}

static int walk(int at, const char *path, int *links);

/* Whether uid may create files in the directory st: its owner's write bit, or everyone's. */
static bool may_write(const struct stat *st, uid_t uid)
{
	return (st->st_uid == uid && (st->st_mode & S_IWUSR)) || (st->st_mode & S_IWOTH);
}

/*
 * comp's target, relative to cur (the link's directory). A link root does
 * not own may lead only where its owner could write: never does another
 * user's link (nor the invoking user's, under sudo) send root's file into a
 * directory that user could not write.
 */
static int follow(int cur, int fd, const char *comp, const struct stat *st, int *links)
{
	char target[PATH_MAX], clean[256];
	struct stat dst;
	ssize_t n;
	int dir;

	if (++*links > MAX_LINKS)
		return -ELOOP;
	n = readlinkat(fd, "", target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	dir = walk(cur, target, links);
	if (dir < 0 || st->st_uid == 0)
		return dir;
	if (!fstat(dir, &dst) && may_write(&dst, st->st_uid))
		return dir;
	close(dir);
	snprintf(refused, sizeof(refused), "'%s' is a symbolic link of uid %u to a directory that user cannot write",
		 sanitize_term(comp, clean, sizeof(clean)), (unsigned int)st->st_uid);
	return -ENOLINK;
}

/* The directory comp names in cur (an O_PATH fd), never through a link the kernel follows. */
static int step(int cur, const char *comp, int *links)
{
	int fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC), err;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		return fd;
	else
		err = S_ISLNK(st.st_mode) ? follow(cur, fd, comp, &st, links) : -ENOTDIR;
	close(fd);
	return err;
}

/* The directory path names (relative to at), as an O_PATH fd, one component at a time. */
static int walk(int at, const char *path, int *links)
{
	char buf[PATH_MAX], *save, *comp;
	int cur, next;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	cur = path[0] == '/' ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
			     : openat(at, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (!strcmp(comp, "."))
			continue;
		next = step(cur, comp, links);
		close(cur);
		if (next < 0)
			return next;
		cur = next;
	}
	return cur;
}

/* path's directory (an O_PATH fd) and its last component, into name. */
static int open_parent(const char *path, char *name, size_t size)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	int links = 0;

	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EISDIR;
	if (strlen(base) >= size || (size_t)(base - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	strcpy(name, base);
	if (!slash)
		return walk(AT_FDCWD, ".", &links);
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return walk(AT_FDCWD, dir, &links);
}

int outfile_create(const char *path)
{
	char name[NAME_MAX + 1];
	int dfd, fd;

	if (outfile_is_stdout(path)) {
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	dfd = open_parent(path, name, sizeof(name));
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	fd = fd < 0 ? -errno : fd;
	close(dfd);
	return fd;
}

static struct claim *find_claim(const char *path)
{
	size_t i;

	for (i = 0; i < claims.nr; i++)
		if (!strcmp(claims.v[i].path, path))
			return &claims.v[i];
	return NULL;
}

/* A new record for path, not yet counted (claims.nr): NULL when out of memory. */
static struct claim *new_claim(const char *path)
{
	struct claim *c;

	if (ARRAY_RESERVE(claims.v, claims.nr + 1, claims.cap))
		return NULL;
	c = &claims.v[claims.nr];
	*c = (struct claim){ .path = strdup(path) };
	return c->path ? c : NULL;
}

/* c (from new_claim) holds the file st now. */
static void keep_claim(struct claim *c, const struct stat *st)
{
	c->st = *st;
	if (c == &claims.v[claims.nr])
		claims.nr++;
}

/* Whether name in dfd is still the file c left there: same inode, same size, unmodified since. */
static bool still_ours(int dfd, const char *name, const struct claim *c)
{
	struct stat st;

	return c && !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == c->st.st_dev &&
	       st.st_ino == c->st.st_ino && st.st_size == c->st.st_size &&
	       st.st_mtim.tv_sec == c->st.st_mtim.tv_sec && st.st_mtim.tv_nsec == c->st.st_mtim.tv_nsec;
}

int outfile_claim(const char *path)
{
	struct claim *c = outfile_is_stdout(path) ? NULL : new_claim(path);
	struct stat st;
	int fd, err = 0;

	if (!c)
		return outfile_is_stdout(path) ? -EINVAL : -ENOMEM;
	fd = outfile_create(path);
	if (fd < 0) {
		free(c->path);
		return fd;
	}
	if (fstat(fd, &st))
		err = -errno;   /* never seen: the file stays, empty, and this run never replaces it */
	else
		keep_claim(c, &st);
	close(fd);
	return err;
}

/* A new file name.tmp.XXXXXXXX in dfd (its name into tmp), mode 0600 until it is whole. */
static int create_tmp(int dfd, const char *name, char *tmp, size_t size)
{
	unsigned int r;
	int i, fd = -EEXIST;

	for (i = 0; i < 100 && fd == -EEXIST; i++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (unsigned int)getpid() * 2654435761U + i;
		if (snprintf(tmp, size, "%s.tmp.%08x", name, r) >= (int)size)
			return -ENAMETOOLONG;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		fd = fd < 0 ? -errno : fd;
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t len, struct stat *st)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			p += n, len -= n;
	}
	return fchmod(fd, 0644) || fsync(fd) || fstat(fd, st) ? -errno : 0;
}

/* tmp to name in dfd: over name only when it is this run's file (c); else never over anything. */
static int put_in_place(int dfd, const char *tmp, const char *name, const struct claim *c)
{
	return renameat2(dfd, tmp, dfd, name, still_ours(dfd, name, c) ? 0 : RENAME_NOREPLACE) ? -errno : 0;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
	struct claim *c = find_claim(path);
	int dfd, fd, err;
	struct stat st;

	if (!c && !(c = new_claim(path)))
		return -ENOMEM;
	dfd = open_parent(path, name, sizeof(name));
	if (dfd < 0) {
		if (c == &claims.v[claims.nr])
			free(c->path);
		return dfd;
	}
	fd = create_tmp(dfd, name, tmp, sizeof(tmp));
	err = fd < 0 ? fd : write_all(fd, data, len, &st);
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err)
		err = put_in_place(dfd, tmp, name, c);
	if (fd >= 0 && err)
		unlinkat(dfd, tmp, 0);
	if (!err) {
		keep_claim(c, &st);
		c->written = true;
	} else if (c == &claims.v[claims.nr]) {
		free(c->path);  /* a record never kept */
	}
	close(dfd);
	return err;
}

void outfile_drop_unwritten(void)
{
	char name[NAME_MAX + 1];
	size_t i;
	int dfd;

	for (i = 0; i < claims.nr; i++) {
		struct claim *c = &claims.v[i];

		if (c->written || (dfd = open_parent(c->path, name, sizeof(name))) < 0)
			continue;
		/* Only the empty file this run made: whatever is there now may be someone else's. */
		if (still_ours(dfd, name, c))
			unlinkat(dfd, name, 0);
		close(dfd);
	}
}

const char *outfile_strerror(int err)
{
	static char msg[sizeof(refused) + 160];

	if (err == -EEXIST)
		return "it exists already (fnprof writes a new file: remove it or pick another name)";
	if (err != -ENOLINK)
		return strerror(-err);
	snprintf(msg, sizeof(msg), "%s: fnprof, as root, does not follow it (a user's link leads only where that "
		 "user may write; name the directory itself)", refused);
	return msg;
}
