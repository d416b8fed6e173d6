// SPDX-License-Identifier: GPL-2.0
/*
 * A closed-loop HTTP load: THREADS clients, each making one request per
 * connection (connect, GET, read to the end, close) to 127.0.0.1:PORT for
 * SECONDS; prints "requests=N seconds=S rps=R errors=E".
 * Usage: httpload PORT THREADS SECONDS
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port;
static double end_s;

struct client {
	pthread_t th;
	unsigned long requests, errors;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* One request on a connection of its own: 0, or -1 when it failed. */
static int request(void)
{
	static const char req[] = "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char buf[4096];
	ssize_t n, got = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) || write(fd, req, sizeof(req) - 1) != sizeof(req) - 1) {
		close(fd);
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		got += n;
	close(fd);
	return n == 0 && got > 12 && !memcmp(buf, "HTTP/1.1 200", 12) ? 0 : -1;
}

static void *run(void *arg)
{
	struct client *c = arg;

	while (now_s() < end_s) {
		if (request())
			c->errors++;
		else
			c->requests++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long requests = 0, errors = 0;
	struct client *c;
	double t0, secs;
	int i, n;

	if (argc != 4)
		return fprintf(stderr, "usage: httpload PORT THREADS SECONDS\n"), 2;
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	secs = atof(argv[3]);
	c = calloc(n, sizeof(*c));
	t0 = now_s();
	end_s = t0 + secs;
	for (i = 0; i < n; i++)
		pthread_create(&c[i].th, NULL, run, &c[i]);
	for (i = 0; i < n; i++) {
		pthread_join(c[i].th, NULL);
		requests += c[i].requests;
		errors += c[i].errors;
	}
	secs = now_s() - t0;
	printf("requests=%lu seconds=%.3f rps=%.1f errors=%lu\n", requests, secs, requests / secs, errors);
	free(c);
	return 0;
}
