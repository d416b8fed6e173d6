// SPDX-License-Identifier: GPL-2.0
/*
 * The server thread polls the listening socket and every connection, all
 * non-blocking, each with a deadline: a client that sends slowly, never
 * reads, or sends too much costs one fixed buffer until its deadline, and
 * nothing else. Slow handlers (a CPU profile of N seconds) run one at a time
 * on a worker thread, which wakes the server through a pipe when done.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"
#include "report/http.h"
#include "base/log.h"

/* A request target's bytes, at most (its NUL included): longer ones are answered 414. */
#define TARGET_SIZE 1024

enum conn_state { CONN_FREE, CONN_READ, CONN_WAIT, CONN_WRITE, CONN_DRAIN };

struct conn {
	int fd;
	enum conn_state state;
	unsigned long serial;       /* tells a reused slot from the one a worker answers */
	double deadline;
	size_t len;
	char buf[HTTP_MAX_REQUEST + 1];
	char head[256];             /* the answer's status line and headers */
	size_t head_len;
	char *body;                 /* and its body (the handler's, not copied) */
	size_t body_len, off;       /* off: bytes of head, then body, written */
};

/* The slow handler's one job: the request (copied) and its answer. */
struct job {
	bool busy;                  /* from submission until the server takes the answer */
	bool pending, done;
	volatile int cancel;        /* the handler's req->stopping: the server stops, or its client hung up */
	unsigned long serial;
	http_handler fn;
	char path[1024], query[1024], accept[256];
	struct http_response resp;
};

struct http_server {
	struct http_conf conf;
	int lfd, wake[2];
	int reserve;                /* an fd given up when descriptors run out, to answer 503 with */
	double accept_after;        /* out of descriptors and no reserve: the listener rests until then */
	unsigned int fds_warned;
	pthread_t thread, worker;
	bool worker_started, thread_started;
	volatile int stopping;
	pthread_mutex_t lock;       /* job and stats */
	pthread_cond_t cond;
	struct job job;
	struct http_stats stats;
	unsigned long next_serial;
	struct conn conns[HTTP_MAX_CLIENTS];
};

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

void http_respond_text(struct http_response *resp, int status, const char *fmt, ...)
{
	va_list ap;
	int n;

	resp->status = status;
	resp->content_type = "text/plain; charset=utf-8";
	va_start(ap, fmt);
	n = vasprintf(&resp->body, fmt, ap);
	va_end(ap);
	resp->len = n > 0 ? (size_t)n : 0;
	if (n < 0)
		resp->body = NULL;
}

int http_query_get(const char *query, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key), n;
	const char *p = query;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == '=') {
			p += klen + 1;
			n = strcspn(p, "&");
			if (n >= size)
				return -E2BIG;
			memcpy(buf, p, n);
			buf[n] = 0;
			return 0;
		}
		p = strchr(p, '&');
		p = p ? p + 1 : NULL;
	}
	return -ENOENT;
}

int http_parse_addr(const char *s, struct http_conf *conf)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	struct sockaddr_in *in4 = (struct sockaddr_in *)&conf->addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&conf->addr;
	char *end;
	long port;
	size_t hl;

	if (!colon || (hl = colon - s) >= sizeof(host))
		return -EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 0 || port > 65535)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	memset(&conf->addr, 0, sizeof(conf->addr));
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = 0;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		conf->addr_len = sizeof(*in6);
		return inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	in4->sin_family = AF_INET;
	in4->sin_port = htons(port);
	conf->addr_len = sizeof(*in4);
	if (!hl) {
		in4->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	return inet_pton(AF_INET, host, &in4->sin_addr) == 1 ? 0 : -EINVAL;
}

/* --- connections ------------------------------------------------------------- */

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->body);
	c->body = NULL;
	c->fd = -1;
	c->state = CONN_FREE;
}

static void count(struct http_server *srv, unsigned long long *field)
{
	pthread_mutex_lock(&srv->lock);
	(*field)++;
	pthread_mutex_unlock(&srv->lock);
}

/* The outcome a handler's answer counts as: what it answered, not that a handler ran. */
static unsigned long long *outcome_of(struct http_stats *st, int status)
{
	if (status < 400)
		return &st->served;
	if (status == 404)
		return &st->not_found;
	if (status == 414)
		return &st->too_large;
	if (status == 503)
		return &st->busy;
	return status >= 500 ? &st->failed : &st->bad_request;
}

/* Queues status and body (taken over) for writing; the connection closes after. */
static void conn_respond(struct conn *c, int status, const char *type, char *body, size_t len)
{
	int n = snprintf(c->head, sizeof(c->head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\nCache-Control: no-store\r\n%s\r\n",
			 status, status_text(status), type ? type : "text/plain; charset=utf-8", len,
			 status == 405 ? "Allow: GET\r\n" : status == 503 ? "Retry-After: 5\r\n" : "");

	free(c->body);
	c->body = body;
	c->body_len = body ? len : 0;
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
	c->off = 0;
	c->state = CONN_WRITE;
	c->deadline = monotonic_s() + HTTP_WRITE_TIMEOUT_S;
}

static void conn_error(struct conn *c, int status, const char *why)
{
	char *body = strdup(why);

	conn_respond(c, status, NULL, body, body ? strlen(body) : 0);
}

/* A request over one of the limits: counted, and answered with the limit as the code has it. */
__attribute__((format(printf, 4, 5)))
static void conn_too_large(struct http_server *srv, struct conn *c, int status, const char *fmt, ...)
{
	char why[128];
	va_list ap;

	count(srv, &srv->stats.too_large);
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	conn_error(c, status, why);
}

static void conn_respond_with(struct conn *c, struct http_response *r)
{
	if (!r->status || (!r->body && r->len)) {
		free(r->body);
		conn_error(c, 500, "out of memory\n");
		return;
	}
	conn_respond(c, r->status, r->content_type, r->body, r->len);
}

/* The value of header name in the request head (NUL-terminated), into buf ("" if absent). */
static void header_value(const char *head, const char *name, char *buf, size_t size)
{
	size_t nl = strlen(name), n;
	const char *p = strstr(head, "\r\n");

	buf[0] = 0;
	while (p && p[2]) {
		p += 2;
		if (!strncasecmp(p, name, nl) && p[nl] == ':') {
			p += nl + 1;
			p += strspn(p, " \t");
			n = strcspn(p, "\r\n");
			n = n < size ? n : size - 1;
			memcpy(buf, p, n);
			buf[n] = 0;
			return;
		}
		p = strstr(p, "\r\n");
	}
}

static const struct http_route *find_route(struct http_server *srv, const char *path)
{
	size_t i;

	for (i = 0; i < srv->conf.nr_routes; i++)
		if (!strcmp(srv->conf.routes[i].path, path))
			return &srv->conf.routes[i];
	return NULL;
}

/* Hands the request to the worker thread, if it is free. */
static bool submit(struct http_server *srv, struct conn *c, const struct http_route *rt, const char *path,
		   const char *query, const char *accept)
{
	struct job *j = &srv->job;
	bool ok = false;

	pthread_mutex_lock(&srv->lock);
	if (!j->busy) {
		j->busy = j->pending = true;
		j->done = false;
		j->cancel = 0;
		j->serial = c->serial;
		j->fn = rt->fn;
		snprintf(j->path, sizeof(j->path), "%s", path);
		snprintf(j->query, sizeof(j->query), "%s", query);
		snprintf(j->accept, sizeof(j->accept), "%s", accept);
		pthread_cond_signal(&srv->cond);
		ok = true;
	} else {
		srv->stats.busy++;
	}
	pthread_mutex_unlock(&srv->lock);
	return ok;
}

/* Copies the n bytes at p into buf (size bytes) as a string; false if they do not fit. */
static bool copy_token(const char *p, size_t n, char *buf, size_t size)
{
	if (n >= size)
		return false;
	memcpy(buf, p, n);
	buf[n] = 0;
	return true;
}

/* "METHOD TARGET HTTP/1.x": 0, or the status to answer. */
static int parse_request_line(const char *line, char *method, char *target, char *version)
{
	size_t m = strcspn(line, " \r\n"), t, v;
	const char *p;

	if (line[m] != ' ')
		return 400;
	p = line + m + 1;
	t = strcspn(p, " \r\n");
	if (p[t] != ' ')
		return 400;
	v = strcspn(p + t + 1, " \r\n");
	if (!copy_token(line, m, method, 8) || !copy_token(p + t + 1, v, version, 16) ||
	    strncmp(version, "HTTP/1.", 7) || p[0] != '/')
		return 400;
	return copy_token(p, t, target, TARGET_SIZE) ? 0 : 414;
}

/* A complete request head is in c->buf: answer it (or hand it to the worker). */
static void handle(struct http_server *srv, struct conn *c)
{
	char method[8], target[TARGET_SIZE], version[16], accept[256], *query;
	struct http_response resp = { 0 };
	const struct http_route *rt;
	int status = parse_request_line(c->buf, method, target, version);

	if (status == 414)
		return conn_too_large(srv, c, 414, "request target longer than %d bytes\n", TARGET_SIZE - 1);
	if (status) {
		count(srv, &srv->stats.bad_request);
		return conn_error(c, 400, "malformed request line\n");
	}
	if (strcmp(method, "GET")) {
		count(srv, &srv->stats.bad_request);
		return conn_error(c, 405, "only GET is served\n");
	}
	query = strchr(target, '?');
	if (query)
		*query++ = 0;
	rt = find_route(srv, target);
	if (!rt) {
		count(srv, &srv->stats.not_found);
		return conn_error(c, 404, "not found: try /metrics or /debug/pprof/profile?seconds=N\n");
	}
	header_value(c->buf, "Accept", accept, sizeof(accept));
	if (rt->slow) {
		if (submit(srv, c, rt, target, query ? query : "", accept)) {
			c->state = CONN_WAIT;
			return;
		}
		return conn_error(c, 503, "busy: one profile at a time\n");
	}
	rt->fn(srv->conf.ctx, &(struct http_request){ .path = target, .query = query ? query : "", .accept = accept,
						      .stopping = &srv->stopping }, &resp);
	count(srv, outcome_of(&srv->stats, resp.status));
	conn_respond_with(c, &resp);
}

static void conn_read(struct http_server *srv, struct conn *c)
{
	ssize_t n = read(c->fd, c->buf + c->len, HTTP_MAX_REQUEST - c->len);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	if (c->state == CONN_DRAIN)
		return;   /* what a client sends after its answer is thrown away */
	c->len += n;
	c->buf[c->len] = 0;
	if (strstr(c->buf, "\r\n\r\n") || strstr(c->buf, "\n\n")) {
		handle(srv, c);
	} else if (c->len == HTTP_MAX_REQUEST) {
		conn_too_large(srv, c, 431, "request larger than %d bytes\n", HTTP_MAX_REQUEST);
	}
}

/* Writes what the socket takes of the head and the body, from where the last write ended. */
static ssize_t send_rest(struct conn *c)
{
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };
	size_t off = c->off;

	if (off < c->head_len) {
		iov[msg.msg_iovlen++] = (struct iovec){ c->head + off, c->head_len - off };
		off = c->head_len;
	}
	if (off - c->head_len < c->body_len)
		iov[msg.msg_iovlen++] = (struct iovec){ c->body + (off - c->head_len), c->body_len - (off - c->head_len) };
	return sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void conn_write(struct conn *c)
{
	ssize_t n;

	if (!c->head_len) {
		conn_close(c);
		return;
	}
	n = send_rest(c);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		conn_close(c);
		return;
	}
	c->off += n;
	if (c->off < c->head_len + c->body_len)
		return;
	/* Answered: read what the client still sends for a moment, so that closing does not reset the answer. */
	shutdown(c->fd, SHUT_WR);
	free(c->body);
	c->body = NULL;
	c->len = 0;
	c->state = CONN_DRAIN;
	c->deadline = monotonic_s() + 1;
}

static void conn_expire(struct http_server *srv, struct conn *c, double now)
{
	if (c->state == CONN_FREE || c->state == CONN_WAIT || now < c->deadline)
		return;
	if (c->state == CONN_READ) {
		count(srv, &srv->stats.timeouts);
		conn_error(c, 408, "request not received in time\n");
		return;
	}
	if (c->state == CONN_WRITE)
		count(srv, &srv->stats.timeouts);
	conn_close(c);
}

/* Best effort, never waiting: a connection that cannot be served is answered 503 at once and closed. */
static void refuse(struct http_server *srv, int fd)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\nRetry-After: 1\r\n\r\n";

	if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("http: refusing a connection: %s", strerror(errno));
	close(fd);
	count(srv, &srv->stats.refused);
}

/*
 * accept4 failed with EMFILE or ENFILE: the connection stays queued and poll
 * reports it again at once, so the thread would spin. The reserve descriptor
 * makes room to take it and answer 503; without one, the listener rests
 * 100 ms. Either way it is served again once descriptors are free.
 */
static void out_of_fds(struct http_server *srv, int err)
{
	int fd = -1;

	if (srv->reserve >= 0) {
		close(srv->reserve);
		fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			refuse(srv, fd);
		srv->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || srv->reserve < 0)
		srv->accept_after = monotonic_s() + 0.1;
	if (!srv->fds_warned++)
		log_warn("http: out of file descriptors (%s): connections are answered 503 until some are free",
			 strerror(err));
}

static void accept_all(struct http_server *srv)
{
	int fd, i, k;

	for (k = 0; k < 64; k++) {
		fd = accept4(srv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0 && (errno == EMFILE || errno == ENFILE))
			return out_of_fds(srv, errno);
		if (fd < 0) {
			/* EAGAIN: all taken; ENOBUFS, ENOMEM: rest a moment rather than spin. */
			if (errno != EAGAIN)
				srv->accept_after = monotonic_s() + 0.1;
			return;
		}
		for (i = 0; i < HTTP_MAX_CLIENTS && srv->conns[i].state != CONN_FREE; i++)
			;
		if (i == HTTP_MAX_CLIENTS) {
			refuse(srv, fd);
			continue;
		}
		srv->conns[i] = (struct conn){ .fd = fd, .state = CONN_READ, .serial = ++srv->next_serial,
					       .deadline = monotonic_s() + HTTP_READ_TIMEOUT_S };
	}
}

/* --- the worker's answers ---------------------------------------------------- */

static void take_answer(struct http_server *srv)
{
	struct job *j = &srv->job;
	struct http_response resp = { 0 };
	bool done;
	int i;

	pthread_mutex_lock(&srv->lock);
	done = j->done;
	if (done) {
		resp = j->resp;
		j->resp = (struct http_response){ 0 };
		j->done = j->busy = false;
		(*outcome_of(&srv->stats, resp.status))++;
	}
	pthread_mutex_unlock(&srv->lock);
	if (!done)
		return;
	for (i = 0; i < HTTP_MAX_CLIENTS; i++) {
		struct conn *c = &srv->conns[i];

		if (c->state == CONN_WAIT && c->serial == j->serial) {
			conn_respond_with(c, &resp);
			return;
		}
	}
	free(resp.body);   /* its client is gone */
}

static void *worker_main(void *arg)
{
	struct http_server *srv = arg;
	struct job *j = &srv->job;
	char c = 1;

	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		if (!j->pending) {
			pthread_cond_wait(&srv->cond, &srv->lock);
			continue;
		}
		j->pending = false;
		pthread_mutex_unlock(&srv->lock);
		struct http_response resp = { 0 };
		struct http_request req = { .path = j->path, .query = j->query, .accept = j->accept,
					    .stopping = &j->cancel };
		j->fn(srv->conf.ctx, &req, &resp);
		pthread_mutex_lock(&srv->lock);
		j->resp = resp;
		j->done = true;
		if (write(srv->wake[1], &c, 1) < 0)
			log_debug("http: cannot wake the server: %s", strerror(errno));
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* --- the server thread --------------------------------------------------------- */

/*
 * The client of a request on the worker closed its end (as Go's net/http
 * takes a read EOF): the handler is told to stop, its answer will be dropped,
 * and the worker is free for the next request within its handler's poll.
 */
static void hang_up(struct http_server *srv, struct conn *c)
{
	pthread_mutex_lock(&srv->lock);
	if (srv->job.busy && srv->job.serial == c->serial)
		srv->job.cancel = 1;
	srv->stats.hung_up++;
	pthread_mutex_unlock(&srv->lock);
	conn_close(c);
}

static short conn_events(const struct conn *c)
{
	switch (c->state) {
	case CONN_READ:
	case CONN_DRAIN: return POLLIN;
	case CONN_WRITE: return POLLOUT;
	case CONN_WAIT: return POLLRDHUP;   /* the client hanging up while its profile is taken */
	default: return 0;
	}
}

static int poll_timeout_ms(struct http_server *srv, double now)
{
	double first = now + 1;
	int i;

	if (srv->accept_after > now && srv->accept_after < first)
		first = srv->accept_after;
	for (i = 0; i < HTTP_MAX_CLIENTS; i++) {
		const struct conn *c = &srv->conns[i];

		if (c->state != CONN_FREE && c->state != CONN_WAIT && c->deadline < first)
			first = c->deadline;
	}
	return first > now ? (int)((first - now) * 1000) + 1 : 0;
}

static void serve_round(struct http_server *srv)
{
	struct pollfd pfd[2 + HTTP_MAX_CLIENTS];
	char drain[64];
	double now;
	int i;

	pfd[0] = (struct pollfd){ .fd = srv->wake[0], .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = monotonic_s() < srv->accept_after ? -1 : srv->lfd, .events = POLLIN };
	for (i = 0; i < HTTP_MAX_CLIENTS; i++)
		pfd[2 + i] = (struct pollfd){ .fd = conn_events(&srv->conns[i]) ? srv->conns[i].fd : -1,
					      .events = conn_events(&srv->conns[i]) };
	if (poll(pfd, 2 + HTTP_MAX_CLIENTS, poll_timeout_ms(srv, monotonic_s())) < 0)
		return;
	if (pfd[0].revents && read(srv->wake[0], drain, sizeof(drain)) > 0)
		take_answer(srv);
	for (i = 0; i < HTTP_MAX_CLIENTS; i++) {
		struct conn *c = &srv->conns[i];

		if (pfd[2 + i].fd < 0 || !pfd[2 + i].revents)
			continue;
		if (c->state == CONN_WRITE)
			conn_write(c);
		else if (c->state == CONN_WAIT)
			hang_up(srv, c);
		else
			conn_read(srv, c);
	}
	now = monotonic_s();
	for (i = 0; i < HTTP_MAX_CLIENTS; i++)
		conn_expire(srv, &srv->conns[i], now);
	if (pfd[1].revents)
		accept_all(srv);
}

static void *server_main(void *arg)
{
	struct http_server *srv = arg;

	while (!srv->stopping)
		serve_round(srv);
	return NULL;
}

static int open_listener(struct http_server *srv)
{
	int one = 1, fd = socket(srv->conf.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	srv->lfd = fd;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (srv->conf.addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&srv->conf.addr, srv->conf.addr_len) || listen(fd, 64))
		return -errno;
	return 0;
}

/* Threads that take no signal: Ctrl-C and SIGTERM stay the main loop's. */
static int start_threads(struct http_server *srv)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&srv->worker, NULL, worker_main, srv);
	srv->worker_started = !err;
	if (!err)
		err = pthread_create(&srv->thread, NULL, server_main, srv);
	srv->thread_started = srv->worker_started && !err;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

int http_start(const struct http_conf *conf, struct http_server **out)
{
	struct http_server *srv = calloc(1, sizeof(*srv));
	int err, i;

	if (!srv)
		return -ENOMEM;
	srv->conf = *conf;
	srv->lfd = srv->wake[0] = srv->wake[1] = -1;
	srv->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (i = 0; i < HTTP_MAX_CLIENTS; i++)
		srv->conns[i].fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	err = pipe2(srv->wake, O_CLOEXEC | O_NONBLOCK) ? -errno : open_listener(srv);
	if (err) {
		log_err("cannot listen on the --listen address: %s%s", strerror(-err),
			err == -EADDRINUSE ? " (another program has it: pick another port)" :
			err == -EADDRNOTAVAIL ? " (no interface of this machine has that address)" : "");
	} else if ((err = start_threads(srv))) {
		log_err("cannot start the HTTP server thread: %s", strerror(-err));
	}
	if (err) {
		http_stop(srv);
		return err;
	}
	*out = srv;
	return 0;
}

int http_port(const struct http_server *srv)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(srv->lfd, (struct sockaddr *)&ss, &len))
		return -1;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

void http_get_stats(struct http_server *srv, struct http_stats *out)
{
	pthread_mutex_lock(&srv->lock);
	*out = srv->stats;
	pthread_mutex_unlock(&srv->lock);
}

void http_stop(struct http_server *srv)
{
	char c = 1;
	int i;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->lock);
	srv->stopping = 1;
	srv->job.cancel = 1;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (srv->wake[1] >= 0 && write(srv->wake[1], &c, 1) < 0)
		log_debug("http: cannot wake the server: %s", strerror(errno));
	if (srv->thread_started)
		pthread_join(srv->thread, NULL);
	if (srv->worker_started)
		pthread_join(srv->worker, NULL);
	free(srv->job.resp.body);
	for (i = 0; i < HTTP_MAX_CLIENTS; i++)
		if (srv->conns[i].state != CONN_FREE)
			conn_close(&srv->conns[i]);
	for (i = 0; i < 2; i++)
		if (srv->wake[i] >= 0)
			close(srv->wake[i]);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->reserve >= 0)
		close(srv->reserve);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}
