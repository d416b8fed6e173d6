// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "report/export.h"
#include "report/http.h"
#include "base/log.h"
#include "format/pprof.h"
#include "profile/sample.h"

/* The longest profile served: a client cannot hold the worker for longer. */
#define PROFILE_MAX_S 300
/* System-wide: processes profiled at once (a sampler each). */
#define PROFILE_MAX_PROCS 16
/* Go's net/http/pprof default, which go tool pprof and Parca assume without ?seconds. */
#define PROFILE_DEFAULT_S 30

/* A process's --by label value, read once per pid. */
struct label {
	pid_t pid;
	char *value;
};

struct export {
	struct export_conf conf;
	struct metrics *metrics;
	struct http_server *http;
	struct sampler_conf sample_conf; /* how the profiles served are sampled */
	char pid_names[EXPORT_LIST_MAX][12]; /* -p P1,P2,...: each pid as ?pid= gives it */
	struct label *labels;        /* per statistics slot */
	size_t nr_labels;
};

/* --- labels -------------------------------------------------------------------- */

/* The first line of path (or, with prefix, the rest of the first line that starts with it). */
static char *read_line(const char *path, const char *prefix)
{
	char buf[4096];
	FILE *f = fopen(path, "re");
	char *v = NULL;

	if (!f)
		return NULL;
	while (fgets(buf, sizeof(buf), f)) {
		if (prefix && strncmp(buf, prefix, strlen(prefix)))
			continue;
		buf[strcspn(buf, "\n")] = 0;
		v = strdup(buf + (prefix ? strlen(prefix) : 0));
		break;
	}
	fclose(f);
	return v;
}

/*
 * nftw() passes its callback no context: the cgroup id looked for, the root's
 * length and the path found (the main loop's thread only).
 */
static struct {
	unsigned long long wanted;
	size_t root_len;
	char *found;
} cg_walk;

static int cg_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_D || st->st_ino != cg_walk.wanted)
		return 0;
	/* As /proc/PID/cgroup says it: the path under the cgroup v2 root. */
	cg_walk.found = strdup(path[cg_walk.root_len] ? path + cg_walk.root_len : "/");
	return 1;
}

/* Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup, or its unified/ in a hybrid set-up. */
static const char *cgroup2_root(void)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	struct statfs sf;
	size_t i;

	for (i = 0; i < 2; i++)
		if (!statfs(roots[i], &sf) && sf.f_type == CGROUP2_SUPER_MAGIC)
			return roots[i];
	return NULL;
}

/*
 * The path of the cgroup v2 whose directory has inode id (the id BPF reads),
 * or NULL; the walk stays on that file system, where inode numbers are ids.
 */
static char *cgroup_path_of(unsigned long long id)
{
	const char *root = cgroup2_root();

	cg_walk.wanted = id;
	cg_walk.found = NULL;
	if (id && root) {
		cg_walk.root_len = strlen(root);
		nftw(root, cg_visit, 16, FTW_PHYS | FTW_MOUNT);
	}
	return cg_walk.found;
}

/*
 * The --by value of process p: its pid, its name, or its cgroup v2 path (the
 * container). From /proc while it runs; system-wide, a process may be gone
 * before its first drain: then what the BPF side read at its first call.
 */
static char *label_of(enum metrics_by by, const struct traced_proc *p)
{
	char path[64], *v = NULL;

	switch (by) {
	case BY_PID:
		return asprintf(&v, "%d", p->pid) < 0 ? NULL : v;
	case BY_COMM:
		if (p->comm[0])
			return strdup(p->comm);
		snprintf(path, sizeof(path), "/proc/%d/comm", p->pid);
		return read_line(path, NULL);
	case BY_CGROUP:
		snprintf(path, sizeof(path), "/proc/%d/cgroup", p->pid);
		v = read_line(path, "0::");
		return v ? v : cgroup_path_of(p->cgroup_id);
	default:
		return NULL;
	}
}

/* labels[k] for block k of r, refreshed where the slot's process changed. */
static const char **slot_labels(struct export *e, const struct report *r)
{
	size_t k, n = r->nr_procs ? r->nr_procs : 1;
	const char **out = calloc(n, sizeof(*out));
	struct label *l;

	if (!out)
		return NULL;
	if (n > e->nr_labels) {
		l = realloc(e->labels, n * sizeof(*l));
		if (!l)
			return out;
		memset(l + e->nr_labels, 0, (n - e->nr_labels) * sizeof(*l));
		e->labels = l;
		e->nr_labels = n;
	}
	for (k = 0; k < n; k++) {
		struct traced_proc one = { .pid = r->pid };
		const struct traced_proc *p = r->procs && r->nr_procs ? &r->procs[k] : &one;
		pid_t pid = p->pid;

		l = &e->labels[k];
		/* System-wide, slot 0 sums the processes beyond the slots. */
		if (!pid) {
			out[k] = "other";
			continue;
		}
		if (pid != l->pid) {
			free(l->value);
			l->value = label_of(e->conf.by, p);
			l->pid = pid;
		}
		out[k] = l->value;
	}
	return out;
}

void export_add(struct export *e, const struct report *r)
{
	const char **labels;

	if (!e || !e->metrics)
		return;
	labels = e->conf.by != BY_NONE ? slot_labels(e, r) : NULL;
	metrics_add(e->metrics, r, labels);
	free(labels);
}

/* --- /metrics -------------------------------------------------------------------- */

/* fnprof's own current resident memory, in bytes (0 if unknown). */
static unsigned long long self_rss_bytes(void)
{
	unsigned long long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%llu %llu", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

static void write_self(FILE *f, bool om)
{
	struct rusage ru;
	double cpu = 0;

	if (!getrusage(RUSAGE_SELF, &ru))
		cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	metrics_family(f, om, "fnprof_self_cpu_seconds_total", "counter",
		       "fnprof's own CPU time (user and system, all its threads), since it started.");
	fprintf(f, "fnprof_self_cpu_seconds_total %.6f\n", cpu);
	metrics_family(f, om, "fnprof_self_resident_memory_bytes", "gauge", "fnprof's own resident memory.");
	fprintf(f, "fnprof_self_resident_memory_bytes %llu\n", self_rss_bytes());
}

/* One sample per outcome: a table of the outcomes' labels and counts. */
static void write_outcomes(FILE *f, const struct http_stats *st)
{
	const struct {
		const char *outcome;
		unsigned long long n;
	} rows[] = {
		{ "served", st->served }, { "bad_request", st->bad_request }, { "not_found", st->not_found },
		{ "too_large", st->too_large }, { "timeout", st->timeouts }, { "busy", st->busy },
		{ "refused", st->refused }, { "hung_up", st->hung_up }, { "failed", st->failed },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		fprintf(f, "fnprof_http_requests_total{outcome=\"%s\"} %llu\n", rows[i].outcome, rows[i].n);
}

static void write_http(struct export *e, FILE *f, bool om)
{
	struct http_stats st;

	http_get_stats(e->http, &st);
	metrics_family(f, om, "fnprof_http_requests_total", "counter",
		       "Requests to fnprof's HTTP server, by outcome.");
	write_outcomes(f, &st);
}

/* OpenMetrics only when the scraper names it (Prometheus does, first); else the classic text format. */
static bool wants_openmetrics(const char *accept)
{
	return strstr(accept, "application/openmetrics-text") != NULL;
}

static void serve_metrics(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct export *e = ctx;
	bool om = wants_openmetrics(req->accept);
	size_t len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return http_respond_text(resp, 500, "out of memory\n");
	if (e->metrics)
		metrics_write(e->metrics, f, om);
	write_self(f, om);
	write_http(e, f, om);
	if (om)
		fputs("# EOF\n", f);
	if (fclose(f)) {
		free(buf);
		return http_respond_text(resp, 500, "out of memory\n");
	}
	resp->status = 200;
	resp->content_type = om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
				: "text/plain; version=0.0.4; charset=utf-8";
	resp->body = buf;
	resp->len = len;
}

/* --- /debug/pprof/profile ------------------------------------------------------ */

static int profile_seconds(const char *query, long *out)
{
	char buf[32], *end;
	int err = http_query_get(query, "seconds", buf, sizeof(buf));

	*out = PROFILE_DEFAULT_S;
	if (err == -ENOENT)
		return 0;
	if (err)
		return -EINVAL;   /* too long to be a number in range: an error, never the default */
	errno = 0;
	*out = strtol(buf, &end, 10);
	return errno || end == buf || *end || *out < 1 || *out > PROFILE_MAX_S ? -EINVAL : 0;
}

/* A file as the kernel knows it: what /proc/PID/maps shows of a mapping. */
struct file_id {
	dev_t dev;
	ino_t ino;
};

/* The files probed, as fnprof holds them open, into ids (at most max). How many. */
static size_t traced_files(const struct export *e, struct file_id *ids, size_t max)
{
	struct stat st;
	size_t i, n = 0;

	for (i = 0; e->conf.pl && i < e->conf.pl->nr && n < max; i++)
		if (!stat(e->conf.pl->probes[i].open_path, &st))
			ids[n++] = (struct file_id){ st.st_dev, st.st_ino };
	return n;
}

/* Whether process pid maps one of the n files. */
static bool maps_any(pid_t pid, const struct file_id *ids, size_t n)
{
	char path[64], line[4096];
	unsigned long long inode;
	unsigned int maj, min;
	bool found = false;
	size_t k;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &inode) != 3)
			continue;
		for (k = 0; k < n && !found; k++)
			found = inode == ids[k].ino && makedev(maj, min) == ids[k].dev;
	}
	if (f)
		fclose(f);
	return found;
}

/* System-wide: the processes (at most max, not fnprof) that map a traced file now, into pids. */
static size_t traced_pids(const struct export *e, pid_t *pids, size_t max)
{
	struct file_id ids[16];
	size_t n = 0, nr_ids = traced_files(e, ids, 16);
	DIR *d = opendir("/proc");
	struct dirent *de;
	char *end;
	long v;

	while (d && n < max && (de = readdir(d))) {
		v = strtol(de->d_name, &end, 10);
		if (!*end && v > 0 && v != getpid() && maps_any(v, ids, nr_ids))
			pids[n++] = v;
	}
	if (d)
		closedir(d);
	return n;
}

/* -p P1,P2,...: the one ?pid= names, if listed, else all of them. How many, or 0 after an error answer. */
static size_t listed_pids(const struct export *e, const char *query, pid_t *pids, struct http_response *resp)
{
	char buf[16];
	size_t k;
	int err = http_query_get(query, "pid", buf, sizeof(buf));

	if (err == -E2BIG) {
		http_respond_text(resp, 400, "pid must be a process id\n");
		return 0;
	}
	if (err) {
		memcpy(pids, e->conf.pids, e->conf.nr_pids * sizeof(*pids));
		return e->conf.nr_pids;
	}
	for (k = 0; k < e->conf.nr_pids; k++) {
		if (!strcmp(buf, e->pid_names[k])) {
			pids[0] = e->conf.pids[k];
			return 1;
		}
	}
	http_respond_text(resp, 404, "process %s is not one of -p's\n", buf);
	return 0;
}

/*
 * The processes a profile is of: the target; system-wide, the one ?pid=
 * names if it maps a traced file, else every one that does (up to
 * PROFILE_MAX_PROCS). How many, or 0 after an error answer.
 */
static size_t profile_pids(const struct export *e, const char *query, pid_t *pids, struct http_response *resp)
{
	struct file_id ids[16];
	char buf[16], *end;
	int err;
	size_t n;
	long v;

	if (e->conf.nr_pids > 1)
		return listed_pids(e, query, pids, resp);
	if (e->conf.pid || e->conf.all) {
		pids[0] = e->conf.pid;   /* -a: 0, every process */
		return 1;
	}
	err = http_query_get(query, "pid", buf, sizeof(buf));
	if (err == -E2BIG) {
		http_respond_text(resp, 400, "pid must be a process id\n");
		return 0;
	}
	if (err) {
		n = traced_pids(e, pids, PROFILE_MAX_PROCS);
		if (!n)
			http_respond_text(resp, 404, "no process maps a traced object now\n");
		return n;
	}
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || *end || v < 1 || v > INT_MAX || !maps_any(v, ids, traced_files(e, ids, 16))) {
		http_respond_text(resp, 404, "no process %s that maps a traced object\n", buf);
		return 0;
	}
	pids[0] = v;
	return 1;
}

/* Samples the n processes for secs seconds (or until the server stops), into one profile. */
static int profile(struct export *e, const pid_t *pids, size_t n, long secs, const volatile int *stopping,
		   unsigned char **out, size_t *len)
{
	struct sampler *s[EXPORT_LIST_MAX] = { 0 };
	struct pprof *p = NULL;
	size_t k, started = 0;
	int err = 0, i;

	for (k = 0; k < n; k++)   /* a process gone meanwhile is left out */
		started += !sampler_start(&e->sample_conf, pids[k], &s[k]);
	if (!started)
		return -ESRCH;
	for (i = 0; i < secs * 10 && !*stopping; i++) {
		usleep(100000);
		/* -a, -p list: the processes' names and mappings read while they run (they may exit before the answer). */
		for (k = 0; (e->conf.all || e->conf.nr_pids > 1) && i % 3 == 2 && k < n; k++)
			sampler_refresh(s[k]);
	}
	/* Stopped early (fnprof stops, the client hung up): nobody reads the answer, so none is made. */
	p = *stopping ? NULL : pprof_new(1000000000ULL / e->sample_conf.freq_hz, i * 100000000ULL);
	err = *stopping ? -ECANCELED : p ? 0 : -ENOMEM;
	for (k = 0; k < n && !err; k++)
		if (s[k])
			err = sampler_pprof_add(s[k], p);
	if (!err)
		err = pprof_encode(p, out, len);
	pprof_free(p);
	for (k = 0; k < n; k++)
		sampler_stop(s[k]);
	return err;
}

static void serve_profile(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct export *e = ctx;
	pid_t pids[EXPORT_LIST_MAX];
	unsigned char *data = NULL;
	size_t len = 0, n;
	long secs;
	int err;

	if (profile_seconds(req->query, &secs))
		return http_respond_text(resp, 400, "seconds must be a whole number from 1 to %d\n", PROFILE_MAX_S);
	n = profile_pids(e, req->query, pids, resp);
	if (!n)
		return;
	err = profile(e, pids, n, secs, req->stopping, &data, &len);
	if (err)
		return http_respond_text(resp, 500, "profile failed: %s\n", strerror(-err));
	resp->status = 200;
	resp->content_type = "application/octet-stream";
	resp->body = (char *)data;
	resp->len = len;
}

static void serve_index(void *ctx, const struct http_request *req, struct http_response *resp)
{
	http_respond_text(resp, 200, "fnprof\n/metrics\n/debug/pprof/profile?seconds=N (system-wide or -p P1,P2,...: "
			  "&pid=PID for one process; -a and -p lists: every process, labelled pid and comm)\n");
}

static const struct http_route routes[] = {
	{ "/metrics", serve_metrics, false },
	{ "/debug/pprof/profile", serve_profile, true },
	{ "/", serve_index, false },
};

/*
 * -p P1,P2,...: each process's metrics apart, labelled pid unless --by
 * asked for another label; the profiles' samples labelled too (a sampler
 * sharing its maps among the list's, stackrows_conf.name_process).
 */
static void take_list(struct export *e)
{
	size_t k;

	if (e->conf.by == BY_NONE)
		e->conf.by = BY_PID;
	e->sample_conf.share = e->conf.nr_pids;
	for (k = 0; k < e->conf.nr_pids && k < EXPORT_LIST_MAX; k++)
		snprintf(e->pid_names[k], sizeof(e->pid_names[k]), "%d", e->conf.pids[k]);
}

int export_start(const struct export_conf *conf, struct export **out)
{
	struct export *e = calloc(1, sizeof(*e));
	struct http_conf hc = { .routes = routes, .nr_routes = sizeof(routes) / sizeof(routes[0]) };
	int err;

	if (!e) {
		log_err("out of memory");
		return -ENOMEM;
	}
	e->conf = *conf;
	e->sample_conf.freq_hz = conf->freq_hz;
	e->sample_conf.dwarf = conf->dwarf;
	e->sample_conf.stack_bytes = conf->stack_bytes;
	e->sample_conf.all = conf->all;
	e->sample_conf.max_memory = conf->max_memory;
	hc.ctx = e;
	if (conf->nr_pids > 1)
		take_list(e);
	if (conf->pl && conf->pl->nr && !(e->metrics = metrics_new(conf->pl, e->conf.by, conf->max_series))) {
		log_err("out of memory");
		free(e);
		return -ENOMEM;
	}
	err = http_parse_addr(conf->listen, &hc);
	if (err)
		log_err("invalid --listen address '%s'", conf->listen);
	else
		err = http_start(&hc, &e->http);
	if (err) {
		export_stop(e);
		return err;
	}
	log_info("serving http://%.*s:%d/metrics", (int)(strrchr(conf->listen, ':') - conf->listen), conf->listen,
		 http_port(e->http));
	*out = e;
	return 0;
}

void export_stop(struct export *e)
{
	size_t k;

	if (!e)
		return;
	http_stop(e->http);
	metrics_free(e->metrics);
	for (k = 0; k < e->nr_labels; k++)
		free(e->labels[k].value);
	free(e->labels);
	free(e);
}
