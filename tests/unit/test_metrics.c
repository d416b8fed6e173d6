// SPDX-License-Identifier: GPL-2.0
/* The exported metrics: bucket layout, cumulative figures, both text formats; HTTP helpers. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/resource.h>

#include "base/hist.h"
#include "report/http.h"
#include "report/metrics.h"
#include "base/sanitize.h"
#include "unit.h"

/* Bucket b holds [le(b-1), le(b)); bounds grow by at most 12.5%, from 1.024 us to 2^35 ns. */
static void bucket_bounds(void)
{
	unsigned int b;
	double v;

	CHECK(metrics_bucket_le(0) == 1024);
	CHECK(metrics_bucket_le(METRICS_BUCKETS - 1) == ldexp(1, METRICS_MAX_POW));
	for (b = 1; b < METRICS_BUCKETS; b++)
		CHECK(metrics_bucket_le(b) > metrics_bucket_le(b - 1) &&
		      metrics_bucket_le(b) <= metrics_bucket_le(b - 1) * 1.125 + 1e-9);
	for (v = 0; v < ldexp(1, 36); v = v * 1.01 + 1) {
		b = metrics_bucket_of(v);
		if (b == METRICS_BUCKETS) {
			CHECK(v >= metrics_bucket_le(METRICS_BUCKETS - 1));
			continue;
		}
		CHECK(v < metrics_bucket_le(b));
		CHECK(b == 0 || v >= metrics_bucket_le(b - 1));
	}
}

static struct probe probes[2] = {
	{ .name = "work", .object = "/bin/x", .exit = EXIT_URETPROBE, .id = 0 },
	{ .name = "say \"hi\"\\", .object = "/bin/x", .exit = EXIT_NONE, .id = 1 },
};
static struct probe_list pl = { .probes = probes, .nr = 2 };

/* Calls of 2 us and 1 ms into stats (each value in its fine bucket). */
static void fill(struct fn_stats *s, unsigned int n_short, unsigned int n_long)
{
	memset(s, 0, 2 * sizeof(*s));
	s[0].calls = n_short + n_long;
	s[0].wall_sum = n_short * 2000ULL + n_long * 1000000ULL;
	s[0].wall_min = n_short ? 2000 : 1000000;
	s[0].wall_max = n_long ? 1000000 : 2000;
	s[0].blocked_sum = n_long * 900000ULL;
	s[0].outer_calls = s[0].calls;
	s[0].hist[hist_bucket_of(2000)] = n_short;
	s[0].hist[hist_bucket_of(1000000)] += n_long;
	s[1].calls = 7;
}

static char *render(struct metrics *m, bool om)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	metrics_write(m, f, om);
	fclose(f);
	return buf;
}

static double sample(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);

	return p ? strtod(p + strlen(prefix), NULL) : -1;
}

/* Two intervals add up; buckets are cumulative and end at the count; labels escaped. */
static void cumulative_text_format(void)
{
	struct metrics *m = metrics_new(&pl, BY_NONE, 100);
	struct fn_stats s[2];
	struct report r = { .pl = &pl, .stats = s, .nr_procs = 1 };
	char *t;

	CHECK(m);
	fill(s, 30, 10);
	r.drops[DROP_DEPTH] = 2;
	metrics_add(m, &r, NULL);
	fill(s, 5, 5);
	metrics_add(m, &r, NULL);
	t = render(m, false);
	CHECK(sample(t, "fnprof_calls_total{function=\"work\",object=\"/bin/x\"} ") == 50);
	CHECK(sample(t, "fnprof_calls_total{function=\"say \\\"hi\\\"\\\\\",object=\"/bin/x\"} ") == 14);
	CHECK(sample(t, "fnprof_latency_seconds_count{function=\"work\",object=\"/bin/x\"} ") == 50);
	CHECK(sample(t, "fnprof_latency_seconds_bucket{function=\"work\",object=\"/bin/x\",le=\"+Inf\"} ") == 50);
	CHECK(sample(t, "fnprof_latency_seconds_bucket{function=\"work\",object=\"/bin/x\",le=\"2.048e-06\"} ") == 35);
	CHECK(sample(t, "fnprof_latency_seconds_bucket{function=\"work\",object=\"/bin/x\",le=\"1.792e-06\"} ") == 0);
	CHECK(sample(t, "fnprof_latency_seconds_bucket{function=\"work\",object=\"/bin/x\",le=\"0.00098304\"} ") == 35);
	CHECK(sample(t, "fnprof_latency_seconds_bucket{function=\"work\",object=\"/bin/x\",le=\"0.00104858\"} ") == 50);
	CHECK(fabs(sample(t, "fnprof_latency_seconds_sum{function=\"work\",object=\"/bin/x\"} ") - 0.01507) < 1e-9);
	CHECK(fabs(sample(t, "fnprof_blocked_seconds_total{function=\"work\",object=\"/bin/x\"} ") - 0.0135) < 1e-9);
	CHECK(sample(t, "\nfnprof_dropped_total{reason=\"returns_lost\"} ") == 4);
	CHECK(strstr(t, "# TYPE fnprof_calls_total counter\n"));
	CHECK(!strstr(t, "fnprof_latency_seconds_bucket{function=\"say"));   /* --entry-only: calls only */
	CHECK(!strstr(t, "fnprof_probe_overhead_seconds_total "));           /* unknown without calibration */
	free(t);
	metrics_free(m);
}

/* OpenMetrics: counter families without _total, samples with it. */
static void openmetrics_names(void)
{
	struct metrics *m = metrics_new(&pl, BY_PID, 100);
	char *t;

	CHECK(m);
	t = render(m, true);
	CHECK(strstr(t, "# TYPE fnprof_calls counter\n"));
	CHECK(strstr(t, "# TYPE fnprof_latency_seconds histogram\n"));
	CHECK(strstr(t, "# TYPE fnprof_dropped counter\nfnprof_dropped_total{reason="));
	/* OpenMetrics HELP text has no bare double quote (its grammar wants them escaped). */
	for (const char *h = strstr(t, "# HELP"); h; h = strstr(h + 1, "# HELP"))
		CHECK(!memchr(h, '"', strcspn(h, "\n")));
	free(t);
	metrics_free(m);
}

/* --by: a series per function and label value up to --max-series, then "other", counted as folded. */
static void max_series_folds(void)
{
	struct metrics *m = metrics_new(&pl, BY_PID, 1);
	struct traced_proc procs[3] = { { .pid = 1 }, { .pid = 2 }, { .pid = 3 } };
	const char *labels[3] = { "1", "2", "3" };
	struct fn_stats s[6];
	struct report r = { .pl = &pl, .stats = s, .nr_procs = 3, .procs = procs };
	char *t;

	CHECK(m);
	fill(s, 1, 0);
	fill(s + 2, 2, 0);
	fill(s + 4, 3, 0);
	metrics_add(m, &r, labels);
	t = render(m, false);
	CHECK(sample(t, "fnprof_calls_total{function=\"work\",object=\"/bin/x\",pid=\"1\"} ") == 1);
	CHECK(sample(t, "fnprof_calls_total{function=\"work\",object=\"/bin/x\",pid=\"other\"} ") == 5);
	CHECK(!strstr(t, "pid=\"2\""));
	/* The entry-only function's series would be the second: all 3 x 7 calls are folded. */
	CHECK(sample(t, "fnprof_calls_total{function=\"say \\\"hi\\\"\\\\\",object=\"/bin/x\",pid=\"other\"} ") == 21);
	CHECK(sample(t, "\nfnprof_folded_calls_total ") == 5 + 21);
	free(t);
	metrics_free(m);
}

static char *label(const char *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	metrics_label_value(f, v);
	fclose(f);
	return buf;
}

/* Label values: Prometheus' three escapes, and valid UTF-8 whatever the process named itself. */
static void label_values_escaped_utf8(void)
{
	char *a = label("w\xff\xfe"), *b = label("q\"b\\s\nn"), *c = label("\xe2\x82"), *d = label("é€😀\x01");

	CHECK(a && b && c && d);
	CHECK(!strcmp(a, "w\xef\xbf\xbd\xef\xbf\xbd") && utf8_valid(a));
	CHECK(!strcmp(b, "q\\\"b\\\\s\\nn"));
	CHECK(!strcmp(c, "\xef\xbf\xbd\xef\xbf\xbd"));   /* a character cut short: each byte replaced */
	CHECK(!strcmp(d, "é€😀\x01"));
	free(a), free(b), free(c), free(d);
}

static void parse_addresses(void)
{
	struct http_conf c;
	char v[16];

	CHECK(!http_parse_addr("127.0.0.1:9464", &c) && c.addr.ss_family == AF_INET);
	CHECK(!http_parse_addr("[::1]:0", &c) && c.addr.ss_family == AF_INET6);
	CHECK(!http_parse_addr(":9464", &c));
	CHECK(http_parse_addr("localhost:9464", &c) == -EINVAL);   /* numeric only: binds where told */
	CHECK(http_parse_addr("127.0.0.1", &c) == -EINVAL);
	CHECK(http_parse_addr("127.0.0.1:65536", &c) == -EINVAL);
	CHECK(http_parse_addr("127.0.0.1:9x", &c) == -EINVAL);
	CHECK(!http_query_get("a=1&seconds=5", "seconds", v, sizeof(v)) && !strcmp(v, "5"));
	CHECK(http_query_get("xseconds=5", "seconds", v, sizeof(v)) == -ENOENT);
	/* A value too long for the buffer is an error to answer, not an absent key (then a default). */
	CHECK(http_query_get("seconds=12345678901234567890", "seconds", v, sizeof(v)) == -E2BIG);
	CHECK(http_query_get("pid=1&seconds=123456789012345", "seconds", v, sizeof(v)) == 0);
}

/* --- the HTTP server under stress ---------------------------------------------- */

static void fast_route(void *ctx, const struct http_request *req, struct http_response *resp)
{
	http_respond_text(resp, 200, "fast\n");
}

/* A slow route that waits up to 30 s for req->stopping, and counts the times it was stopped. */
static void slow_route(void *ctx, const struct http_request *req, struct http_response *resp)
{
	int *stopped = ctx, i;

	for (i = 0; i < 3000 && !*req->stopping; i++)
		usleep(10000);
	*stopped += *req->stopping != 0;
	http_respond_text(resp, 200, "slow\n");
}

static const struct http_route test_routes[] = {
	{ "/fast", fast_route, false },
	{ "/slow", slow_route, true },
};

static int stopped_count;

static struct http_server *test_server(void)
{
	struct http_conf c = { .routes = test_routes, .nr_routes = 2, .ctx = &stopped_count };
	struct http_server *srv = NULL;

	if (http_parse_addr("127.0.0.1:0", &c) || http_start(&c, &srv))
		return NULL;
	return srv;
}

/* A connected socket to the server's port (s: made before, when fds are scarce); -1 on failure. */
static int dial(struct http_server *srv, int s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(http_port(srv)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	if (s < 0)
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a))) {
		close(s);
		return -1;
	}
	return s;
}

/* The status of the answer on s within ms milliseconds, or 0. */
static int status_within(int s, int ms)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	char buf[64] = "";

	if (poll(&p, 1, ms) != 1 || read(s, buf, sizeof(buf) - 1) < 12)
		return 0;
	return atoi(buf + 9);
}

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Out of file descriptors (EMFILE), a connection is answered 503 at once and
 * the server thread does not spin; with descriptors back, it serves again.
 */
static void out_of_fds_no_spin(void)
{
	static const char get[] = "GET /fast HTTP/1.1\r\n\r\n";
	struct http_server *srv = test_server();
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fill[4096], n = 0, status;
	struct rlimit old, low;
	double cpu;

	CHECK(srv && s >= 0 && !getrlimit(RLIMIT_NOFILE, &old));
	/* A low limit, then every descriptor under it taken: the server can accept nothing. */
	low = (struct rlimit){ .rlim_cur = 256, .rlim_max = old.rlim_max };
	CHECK(!setrlimit(RLIMIT_NOFILE, &low));
	while (n < 4096 && (fill[n] = dup(0)) >= 0)
		n++;
	cpu = cpu_s();
	s = dial(srv, s);
	status = s >= 0 && write(s, get, sizeof(get) - 1) > 0 ? status_within(s, 2000) : -1;
	usleep(300000);
	cpu = cpu_s() - cpu;
	while (n > 0)
		close(fill[--n]);
	setrlimit(RLIMIT_NOFILE, &old);
	if (s >= 0)
		close(s);
	printf("# out of fds: answer %d, %.2f s of CPU\n", status, cpu);
	CHECK(status == 503 && cpu < 0.3);
	s = dial(srv, -1);
	status = s >= 0 && write(s, get, sizeof(get) - 1) > 0 ? status_within(s, 5000) : -1;
	if (s >= 0)
		close(s);
	http_stop(srv);
	CHECK(status == 200);
}

/* A client that hangs up while its slow answer is made frees the worker at once, not at the answer's end. */
static void hang_up_frees_worker(void)
{
	static const char get[] = "GET /slow HTTP/1.1\r\n\r\n";
	struct http_server *srv = test_server();
	int s, status = -1, i;

	CHECK(srv);
	stopped_count = 0;
	s = dial(srv, -1);
	CHECK(s >= 0 && write(s, get, sizeof(get) - 1) > 0);
	usleep(200000);
	close(s);
	/* The next slow request: 503 at once while the first holds the worker; taken (no answer yet) once free. */
	for (i = 0; i < 20 && status; i++) {
		s = dial(srv, -1);
		status = s >= 0 && write(s, get, sizeof(get) - 1) > 0 ? status_within(s, 100) : -1;
		if (s >= 0)
			close(s);   /* hangs up on the second too */
		if (status)
			usleep(100000);
	}
	http_stop(srv);
	if (status)
		printf("# a slow request after the hang-up: %d\n", status);
	CHECK(status == 0 && stopped_count >= 1);
}

int main(void)
{
	RUN(bucket_bounds);
	RUN(cumulative_text_format);
	RUN(openmetrics_names);
	RUN(max_series_folds);
	RUN(label_values_escaped_utf8);
	RUN(parse_addresses);
	RUN(out_of_fds_no_spin);
	RUN(hang_up_frees_worker);
	UNIT_EXIT();
}
