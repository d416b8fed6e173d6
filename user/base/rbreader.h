/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A thread that reads a BPF ring buffer for its owner (sampling's DWARF
 * stacks, --slow's records), and a way to wait until what the buffer holds
 * now has been read.
 */
#ifndef FNPROF_RBREADER_H
#define FNPROF_RBREADER_H

#include <pthread.h>
#include <stdbool.h>

#include <bpf/libbpf.h>
#include <linux/types.h>

struct rb_reader {
	struct ring_buffer *rb;
	pthread_t thread;
	bool running;
	volatile bool stop;
	int wake_fd;               /* eventfd in the buffer's epoll set: written to stop the thread, or -1 */
	pthread_mutex_t *lock;     /* the owner's: held around each pass's end */
	pthread_cond_t passed;
	__u64 passes;              /* reads of the buffer completed */
	void (*after_pass)(void *ctx);   /* called with *lock held after each pass, or NULL */
	void (*idle)(void *ctx);         /* then called without it, or NULL: slow work that must not block readers */
	void *ctx;
	ring_buffer_sample_fn sample;    /* the owner's, called with ctx */
	unsigned int in_pass;            /* records read in this pass (the thread's own) */
	__u64 records;                   /* read so far (the thread writes it; a sync reads it for progress) */
	__u64 begun;                     /* records whose reading began: one more than records while one is read */
};

/*
 * Records in one read of the buffer at most: libbpf reads on for as long as
 * the producer writes, and a target that allocates as fast as fnprof reads
 * would hold off the end of a pass (its after_pass, idle and the reports'
 * waits) until it stopped.
 */
#define RB_PASS_MAX 4096
/* Passes at most when it stops: what the buffer can hold (64 MiB of 64-byte records), not what writers add on. */
#define RB_STOP_PASSES 256

/*
 * Reads ring buffer fd in a thread of its own, handing each record to
 * sample(ctx, ...); after each pass after_pass(ctx) with *lock held, then
 * idle(ctx) without (either may be NULL). 0 or -errno (nothing left running).
 */
int rb_reader_start(struct rb_reader *r, int fd, ring_buffer_sample_fn sample, void *ctx, pthread_mutex_t *lock,
		    void (*after_pass)(void *ctx), void (*idle)(void *ctx));
/* Stops the thread after it has read what is left. Safe on a reader that never started. */
void rb_reader_stop(struct rb_reader *r);
/*
 * Waits, with *lock held, until the records in the buffer now have been
 * read, or RB_SYNC_MAX_S passed: a reader far behind (a pass that takes
 * long) must not hold a report, nor the exit a signal asked for. final (the
 * run's last report): waits on while the reader gains, RB_SYNC_FINAL_WAITS
 * times at most, so that what a slow machine (emulation: each record's
 * stack unwound and named in seconds) has not read yet is still counted.
 * false: it timed out (the records not read yet are not in what the caller
 * sees).
 */
#define RB_SYNC_MAX_S 2.0
#define RB_SYNC_FINAL_WAITS 15
bool rb_reader_sync_locked(struct rb_reader *r, bool final);

/*
 * Before load, for stacks copied through a ring buffer (--call-graph
 * dwarf): one copy buffer per possible CPU in the per-CPU map bufs, and
 * ring buffer rb sized to the power of two, min or more, that holds want
 * bytes (1 GiB at most). 0 or -errno.
 */
int rb_reader_size(struct bpf_map *rb, struct bpf_map *bufs, double want, __u32 min);

#endif /* FNPROF_RBREADER_H */
