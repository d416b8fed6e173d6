// SPDX-License-Identifier: GPL-2.0
/*
 * Debian's own libz under the probes: deflate() on 256 bytes, timed by its
 * caller, with a truth that no probe touches in the same run.
 *
 * Usage: zloop deflate N   N calls of libz's deflate (Z_FINISH on 256 bytes, after
 *                          deflateReset), each timed around the call ("truth deflate");
 *                          between them as many calls of the same deflate in a private
 *                          copy of libz (another inode: no probe fires there), timed the
 *                          same way ("truth deflate_untraced")
 *        zloop loop        prints "ready", then calls deflate until SIGTERM/SIGINT, and
 *                          a line "rate CALLS_PER_S" each second
 *
 * Ground truth goes to stderr as
 *   truth NAME calls=N wall_avg_ns=X p50_ns=Y p99_ns=Z min_ns=W
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define INPUT 256

typedef int (*deflate_fn)(z_streamp, int);
typedef int (*reset_fn)(z_streamp);

struct lib {
	deflate_fn deflate;
	reset_fn reset;
	z_stream s;
	unsigned long long *samples;
	unsigned long n;
	const char *name;
};

static unsigned char in[INPUT], out[2 * INPUT + 64];
static volatile sig_atomic_t stop;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One call of l's deflate on the input, timed around the call only. */
static unsigned long long one_call(struct lib *l)
{
	unsigned long long t0, t;
	int rc;

	l->reset(&l->s);
	l->s.next_in = in;
	l->s.avail_in = INPUT;
	l->s.next_out = out;
	l->s.avail_out = sizeof(out);
	t0 = now_ns();
	rc = l->deflate(&l->s, Z_FINISH);
	t = now_ns() - t0;
	if (rc != Z_STREAM_END) {
		fprintf(stderr, "zloop: deflate returned %d\n", rc);
		exit(1);
	}
	return t;
}

/* libz's copy at a path of its own, loaded privately: its functions are another inode's. */
static int load_copy(struct lib *l)
{
	char path[] = "/tmp/zloop-libz-XXXXXX";
	Dl_info info;
	struct stat st;
	int src, dst;
	void *h;

	if (!dladdr((void *)deflate, &info) || (src = open(info.dli_fname, O_RDONLY)) < 0 || fstat(src, &st))
		return -1;
	dst = mkstemp(path);
	if (dst < 0 || sendfile(dst, src, NULL, st.st_size) != st.st_size)
		return -1;
	close(src);
	close(dst);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	unlink(path);
	if (!h)
		return -1;
	l->deflate = (deflate_fn)dlsym(h, "deflate");
	l->reset = (reset_fn)dlsym(h, "deflateReset");
	return l->deflate && l->reset && deflateInit(&l->s, Z_DEFAULT_COMPRESSION) == Z_OK ? 0 : -1;
}

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static void print_truth(struct lib *l)
{
	unsigned long long sum = 0;
	unsigned long i;

	qsort(l->samples, l->n, sizeof(*l->samples), cmp_ull);
	for (i = 0; i < l->n; i++)
		sum += l->samples[i];
	fprintf(stderr, "truth %s calls=%lu wall_avg_ns=%.1f p50_ns=%llu p99_ns=%llu min_ns=%llu\n", l->name, l->n,
		(double)sum / l->n, l->samples[l->n / 2], l->samples[l->n * 99 / 100], l->samples[0]);
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void run_loop(struct lib *l)
{
	unsigned long long t0 = now_ns(), calls = 0;

	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		one_call(l);
		calls++;
		if (now_ns() - t0 >= 1000000000ULL) {
			printf("rate %.0f\n", calls * 1e9 / (now_ns() - t0));
			fflush(stdout);
			t0 = now_ns();
			calls = 0;
		}
	}
}

int main(int argc, char **argv)
{
	struct lib traced = { deflate, deflateReset, { 0 }, NULL, 0, "deflate" };
	struct lib copy = { .name = "deflate_untraced" };
	unsigned long i, n = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;

	/* Text that compresses like text: words from a small vocabulary. */
	for (i = 0; i < INPUT; i++)
		in[i] = "the quick brown fox jumps over the lazy dog "[(i * 7 + i / 13) % 44];
	if (deflateInit(&traced.s, Z_DEFAULT_COMPRESSION) != Z_OK)
		return 1;
	if (argc == 2 && !strcmp(argv[1], "loop")) {
		run_loop(&traced);
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "deflate") || !n) {
		fprintf(stderr, "usage: zloop deflate N | zloop loop\n");
		return 2;
	}
	if (load_copy(&copy)) {
		fprintf(stderr, "zloop: cannot load a private copy of libz\n");
		return 1;
	}
	traced.samples = calloc(n, sizeof(*traced.samples));
	copy.samples = calloc(n, sizeof(*copy.samples));
	if (!traced.samples || !copy.samples)
		return 1;
	for (i = 0; i < n; i++) {
		traced.samples[traced.n++] = one_call(&traced);
		copy.samples[copy.n++] = one_call(&copy);
	}
	print_truth(&traced);
	print_truth(&copy);
	printf("compressed %d bytes to %lu\n", INPUT, (unsigned long)traced.s.total_out);
	return 0;
}
