/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small, hardened HTTP/1.x server for GET endpoints (--listen), on a thread
 * of its own so that no client can stall the tracing loop. Bounds: requests
 * of at most HTTP_MAX_REQUEST bytes, read within HTTP_READ_TIMEOUT_S, answers
 * written within HTTP_WRITE_TIMEOUT_S, HTTP_MAX_CLIENTS connections at once
 * (one request each, then close), one slow handler at a time on a worker
 * thread, stopped when its client closes its end (as Go's net/http does: a
 * client that half-closes after its request loses its answer). Out of file
 * descriptors, connections are answered 503 (a reserve descriptor makes room)
 * or wait 100 ms, never spinning. No authentication: deploy behind a proxy
 * that adds it.
 */
#ifndef FNPROF_HTTP_H
#define FNPROF_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define HTTP_MAX_REQUEST 8192
#define HTTP_MAX_CLIENTS 16
#define HTTP_READ_TIMEOUT_S 5.0
#define HTTP_WRITE_TIMEOUT_S 10.0

struct http_request {
	const char *path;            /* without the query */
	const char *query;           /* after '?', "" if none */
	const char *accept;          /* the Accept header's value, "" if none */
	/* Set when the server stops or (slow routes) the client hung up: long handlers return early. */
	const volatile int *stopping;
};

/* A handler's answer: status, type and a malloc'd body the server frees. */
struct http_response {
	int status;
	const char *content_type;
	char *body;
	size_t len;
};

typedef void (*http_handler)(void *ctx, const struct http_request *req, struct http_response *resp);

struct http_route {
	const char *path;
	http_handler fn;
	bool slow;   /* runs on the worker thread, one request at a time (others get 503) */
};

struct http_conf {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	const struct http_route *routes;  /* must outlive the server */
	size_t nr_routes;
	void *ctx;                        /* passed to the handlers */
};

/* Requests answered, by outcome, for fnprof's own metrics. */
struct http_stats {
	unsigned long long served, bad_request, not_found, too_large, timeouts, busy, refused;
	unsigned long long hung_up;   /* clients gone before their slow answer */
	unsigned long long failed;    /* a handler answered 5xx (other than busy): out of memory, profile failed */
};

struct http_server;

/*
 * Parses "ADDR:PORT" ("127.0.0.1:9100", "[::1]:9100", ":9100" for every
 * address) into conf->addr. 0 or -EINVAL.
 */
int http_parse_addr(const char *s, struct http_conf *conf);

/* Binds, listens and starts the server threads. 0, or -errno after a message. */
int http_start(const struct http_conf *conf, struct http_server **out);

/* The port bound (useful with port 0). */
int http_port(const struct http_server *srv);

void http_get_stats(struct http_server *srv, struct http_stats *out);

/* Stops the threads, closes every connection; safe with NULL. */
void http_stop(struct http_server *srv);

/* Helpers for handlers: a body formatted with printf, or a plain-text error. */
void http_respond_text(struct http_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The value of key in a query string ("seconds=5&x=1"), into buf. 0,
 * -ENOENT when key is absent, -E2BIG when its value does not fit in size
 * (an error to answer, never to read as absent).
 */
int http_query_get(const char *query, const char *key, char *buf, size_t size);

#endif /* FNPROF_HTTP_H */
