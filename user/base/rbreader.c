// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/rbreader.h"

#ifdef FNPROF_TEST_HOOKS
#include <stdlib.h>

/*
 * FNPROF_TEST_SLOW_FIRST_RECORD_MS=N: each reader takes N ms over its first
 * record, as the first record of a process takes under emulation (its
 * objects' CFI and symbols read): the run's last sync must wait for it.
 */
static void test_slow_first_record(const struct rb_reader *r)
{
	const char *env = getenv("FNPROF_TEST_SLOW_FIRST_RECORD_MS");
	long ms = env ? atol(env) : 0;
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	if (ms > 0 && r->begun == 1)
		nanosleep(&ts, NULL);
}
#else
static void test_slow_first_record(const struct rb_reader *r)
{
	(void)r;
}
#endif

/* The owner's sample(), then an end to the pass once it has read RB_PASS_MAX (the record read stays read). */
static int sample_bounded(void *arg, void *data, size_t size)
{
	struct rb_reader *r = arg;
	int err;

	__atomic_store_n(&r->begun, r->begun + 1, __ATOMIC_RELAXED);
	test_slow_first_record(r);
	err = r->sample(r->ctx, data, size);
	__atomic_store_n(&r->records, r->records + 1, __ATOMIC_RELAXED);
	return err ? err : ++r->in_pass >= RB_PASS_MAX ? -EAGAIN : 0;
}

static void *reader(void *arg)
{
	struct rb_reader *r = arg;
	int passes;

	while (!r->stop) {
		r->in_pass = 0;
		ring_buffer__poll(r->rb, 50);
		/* Records sent without a wake-up (BPF_RB_NO_WAKEUP) are read here: poll reads only rings it was woken for. */
		r->in_pass = 0;
		ring_buffer__consume(r->rb);
		pthread_mutex_lock(r->lock);
		r->passes++;
		if (r->after_pass)
			r->after_pass(r->ctx);
		pthread_cond_broadcast(&r->passed);
		pthread_mutex_unlock(r->lock);
		if (r->idle)
			r->idle(r->ctx);
	}
	/*
	 * What is in the buffer now, RB_PASS_MAX at a time; bounded, as programs
	 * still attached (the profiles stop their readers first) write on.
	 */
	for (passes = 0; passes < RB_STOP_PASSES; passes++) {
		r->in_pass = 0;
		if (ring_buffer__consume(r->rb) != -EAGAIN)
			break;
	}
	return NULL;
}

int rb_reader_size(struct bpf_map *rb, struct bpf_map *bufs, double want, __u32 min)
{
	int cpus = libbpf_num_possible_cpus();
	__u32 size = min ? min : 1;

	while (size < want && size < (1u << 30))
		size <<= 1;
	return bpf_map__set_max_entries(bufs, cpus > 0 ? cpus : 1) ?: bpf_map__set_max_entries(rb, size);
}

/*
 * An eventfd in the ring buffer's epoll set, so that rb_reader_stop() wakes
 * the thread at once rather than after its poll's timeout (50 ms at every
 * exit). Registered as ring 0: libbpf takes an event's data as the ring to
 * read, and reading ring 0 once more is harmless. Without it (no fd), the
 * thread stops at the timeout as before.
 */
static void add_wake(struct rb_reader *r)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = 0 };

	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake_fd >= 0 && epoll_ctl(ring_buffer__epoll_fd(r->rb), EPOLL_CTL_ADD, r->wake_fd, &ev)) {
		close(r->wake_fd);
		r->wake_fd = -1;
	}
}

/* Failing, the thread stops at its poll's timeout instead. */
static void wake(int fd)
{
	__u64 one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		log_debug("cannot wake a ring buffer's reader: %s", strerror(errno));
}

int rb_reader_start(struct rb_reader *r, int fd, ring_buffer_sample_fn sample, void *ctx, pthread_mutex_t *lock,
		    void (*after_pass)(void *ctx), void (*idle)(void *ctx))
{
	pthread_condattr_t attr;
	int err;

	*r = (struct rb_reader){ .lock = lock, .after_pass = after_pass, .idle = idle, .ctx = ctx, .sample = sample,
				 .wake_fd = -1 };
	/* Timed waits on the monotonic clock: a change of the wall clock neither ends them nor stretches them. */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->passed, &attr);
	pthread_condattr_destroy(&attr);
	r->rb = ring_buffer__new(fd, sample_bounded, r, NULL);
	if (!r->rb)
		return -errno;
	add_wake(r);
	err = -pthread_create(&r->thread, NULL, reader, r);
	r->running = !err;
	return err;
}

void rb_reader_stop(struct rb_reader *r)
{
	/* A reader never started has no buffer, and its wake_fd may read 0 (zeroed memory): not ours. */
	bool woken = r->rb && r->wake_fd >= 0;

	r->stop = true;
	if (woken)
		wake(r->wake_fd);
	if (r->running)
		pthread_join(r->thread, NULL);
	r->running = false;
	if (woken)
		close(r->wake_fd);
	r->wake_fd = -1;
	ring_buffer__free(r->rb);
	r->rb = NULL;
	pthread_cond_destroy(&r->passed);
}

bool rb_reader_sync_locked(struct rb_reader *r, bool final)
{
	/* The pass under way may have begun before the records now waiting: wait for the next one too. */
	__u64 want = r->passes + 2, read = __atomic_load_n(&r->records, __ATOMIC_RELAXED), now;
	int waits = final ? RB_SYNC_FINAL_WAITS : 1;
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)RB_SYNC_MAX_S;
	while (r->running && r->passes < want) {
		if (pthread_cond_timedwait(&r->passed, r->lock, &until) != ETIMEDOUT)
			continue;
		now = __atomic_load_n(&r->records, __ATOMIC_RELAXED);
		/*
		 * Gaining: records read since, or one being read now (the first of a
		 * process may take seconds: its objects' CFI and symbols read in an
		 * emulator). Stalled otherwise.
		 */
		if (--waits <= 0 || (now == read && __atomic_load_n(&r->begun, __ATOMIC_RELAXED) == now))
			return false;
		read = now;
		until.tv_sec += (time_t)RB_SYNC_MAX_S;
	}
	return true;
}
