// SPDX-License-Identifier: GPL-2.0
/*
 * The processes' mappings in a small array, searched in order: at most
 * MAPSNAP_MAX, looked up once per sample read by an unwinder at most.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/rbreader.h"
#include "fnprof.h"
#include "target/mapsnap.h"
#include "target/procmaps.h"

struct snap {
	pid_t pid;
	__u64 exec_id;
	__u64 tick;              /* when read: the oldest goes first at the cap */
	struct procmaps *pm;
	size_t bytes;            /* pm's size */
};

struct mapsnap {
	pthread_mutex_t lock;    /* everything below */
	struct snap v[MAPSNAP_MAX];
	size_t nr;
	size_t bytes;            /* of all held */
	__u64 tick;
	struct mapsnap_stats st;
	struct rb_reader rd;     /* its thread calls mapsnap_take */
};

struct mapsnap *mapsnap_new(void)
{
	struct mapsnap *m = calloc(1, sizeof(*m));

	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct fnprof_proc_event *e = data;

	if (size >= sizeof(*e))
		mapsnap_take(ctx, e->pid, e->exec_id);
	return 0;
}

int mapsnap_start(struct mapsnap *m, int rb_fd)
{
	return rb_reader_start(&m->rd, rb_fd, on_event, m, &m->lock, NULL, NULL);
}

void mapsnap_free(struct mapsnap *m)
{
	size_t i;

	if (!m)
		return;
	rb_reader_stop(&m->rd);
	for (i = 0; i < m->nr; i++)
		procmaps_free(m->v[i].pm);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static struct snap *find_locked(struct mapsnap *m, pid_t pid)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->v[i].pid == pid)
			return &m->v[i];
	return NULL;
}

static size_t size_of(const struct procmaps *pm)
{
	size_t i, n = sizeof(*pm) + pm->nr * sizeof(*pm->maps) + pm->nr_anon * sizeof(*pm->anon);

	for (i = 0; i < pm->nr; i++)
		n += strlen(pm->maps[i].path) + 1;
	return n;
}

static void drop_locked(struct mapsnap *m, struct snap *s)
{
	procmaps_free(s->pm);
	m->bytes -= s->bytes;
	*s = m->v[--m->nr];
	m->v[m->nr] = (struct snap){ 0 };   /* moved: its pm is s's now */
}

/* Room for bytes more, the oldest given up (counted) while there is none. false: over the caps alone. */
static bool make_room_locked(struct mapsnap *m, size_t bytes)
{
	struct snap *old;
	size_t i;

	if (bytes > MAPSNAP_MAX_BYTES)
		return false;
	while (m->nr && (m->nr >= MAPSNAP_MAX || m->bytes + bytes > MAPSNAP_MAX_BYTES)) {
		for (old = &m->v[0], i = 1; i < m->nr; i++)
			if (m->v[i].tick < old->tick)
				old = &m->v[i];
		drop_locked(m, old);
		m->st.evicted++;
	}
	return true;
}

/* pid's mappings of image exec_id kept (pm then the store's): the older ones of pid go. */
static bool keep_locked(struct mapsnap *m, pid_t pid, __u64 exec_id, struct procmaps *pm)
{
	struct snap *s = find_locked(m, pid);
	size_t bytes = size_of(pm);

	if (s)
		drop_locked(m, s);
	if (!make_room_locked(m, bytes)) {
		m->st.evicted++;
		return false;
	}
	m->v[m->nr++] = (struct snap){ .pid = pid, .exec_id = exec_id, .tick = ++m->tick, .pm = pm, .bytes = bytes };
	m->bytes += bytes;
	m->st.read++;
	return true;
}

int mapsnap_take(struct mapsnap *m, pid_t pid, __u64 exec_id)
{
	struct procmaps *pm = NULL;
	struct snap *s;
	int err;

	pthread_mutex_lock(&m->lock);
	s = find_locked(m, pid);
	err = s && s->exec_id == exec_id ? -EEXIST : 0;
	pthread_mutex_unlock(&m->lock);
	if (err)
		return 0;
	/* Read without the lock: 0.1 ms for a small process, while unwinders may want theirs. */
	err = procmaps_load(pid, &pm);
	if (!err && !pm->nr)
		err = -ESRCH;   /* its first thread gone: nothing to name frames with */
	pthread_mutex_lock(&m->lock);
	if (err && (s = find_locked(m, pid)))
		drop_locked(m, s);   /* the image before the exec: its mappings are not the new one's */
	if (err)
		m->st.missed++;
	else if (keep_locked(m, pid, exec_id, pm))
		pm = NULL;
	pthread_mutex_unlock(&m->lock);
	procmaps_free(pm);
	if (err)
		log_debug("mappings of new process %d not read (%s)", pid, strerror(-err));
	return err;
}

int mapsnap_get(struct mapsnap *m, pid_t pid, struct procmaps **out)
{
	struct snap *s;
	int err;

	pthread_mutex_lock(&m->lock);
	s = find_locked(m, pid);
	err = s ? procmaps_dup(s->pm, out) : -ENOENT;
	pthread_mutex_unlock(&m->lock);
	return err;
}

__u64 mapsnap_exec_id(struct mapsnap *m, pid_t pid)
{
	struct snap *s;
	__u64 id;

	pthread_mutex_lock(&m->lock);
	s = find_locked(m, pid);
	id = s ? s->exec_id : 0;
	pthread_mutex_unlock(&m->lock);
	return id;
}

void mapsnap_forget(struct mapsnap *m, pid_t pid)
{
	struct snap *s;

	pthread_mutex_lock(&m->lock);
	s = find_locked(m, pid);
	if (s)
		drop_locked(m, s);
	pthread_mutex_unlock(&m->lock);
}

void mapsnap_stats(struct mapsnap *m, struct mapsnap_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->st;
	out->held = m->nr;
	out->bytes = m->bytes;
	pthread_mutex_unlock(&m->lock);
}
