// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/budget.h"
#include "report/http.h"
#include "base/log.h"
#include "opts.h"
#include "format/outfile.h"
#include "target/resolve.h"
#include "trace/tracer.h"
#include "stacks/prof_kind.h"

/* The help text gives the default stack copy in words. */
_Static_assert(FNPROF_DEFAULT_STACK_COPY == 16384, "update usage_text");

/* The options' limits: each written here once, and printed from here in its error message. */
#define MAX_FREQ_HZ 100000           /* -F */
#define MAX_TOP 100000               /* -n */
#define MIN_INTERVAL_S 0.01          /* -i */
#define MAX_THREADS_OPT (1 << 16)    /* --max-threads */
#define MIN_OVERHEAD_PCT 0.1         /* --max-overhead */
#define MAX_OVERHEAD_PCT 100.0
#define MAX_SERIES_OPT 1000000       /* --max-series */
#define MIN_SLOW_NS 1.0              /* --slow */
#define MAX_SLOW_NS 3600e9
#define MIN_OFFCPU_RATE_NS 1.0       /* --offcpu-rate */
#define MAX_OFFCPU_RATE_NS 10e9
#define MAX_HEAP_RATE (1ULL << 32)   /* --heap-rate, bytes */
#define MAX_MEMORY_OPT (1ULL << 40)  /* --max-memory, bytes (at least BUDGET_MIN) */

static const char usage_text[] =
"Usage: fnprof [OPTIONS] -p PID[,PID...] [-f FUNC]...\n"
"       fnprof [OPTIONS] [-f FUNC]... -- COMMAND [ARGS]...\n"
"       fnprof [OPTIONS] -f /path/obj:FUNC|LIB:NAME...   (system-wide)\n"
"       fnprof [OPTIONS] -a   (every process: sampling)\n"
"\n"
"Per-function latency, on-CPU time and CPU% of a running process or a launched\n"
"command, measured in the kernel with eBPF uprobes. Without -f, samples the CPU.\n"
"\n"
"Target:\n"
"  -p, --pid PID[,PID...] trace every thread of process PID (threads started later too);\n"
"                         several: each process traced or sampled and reported on its own\n"
"                         (--slow, --listen, --max-overhead: per process; --pprof, --folded,\n"
"                         --svg: one file for all, each stack labelled with its pid)\n"
"  -- COMMAND ARGS        launch COMMAND and trace it from its first instruction; a script or\n"
"                         wrapper (sh -c, env, nice, taskset, timeout...) is followed to the\n"
"                         program with the -f functions\n"
"  -a, --all              sample every process on every CPU (not fnprof itself, not the idle\n"
"                         task): the table gets PID and COMM columns, pprof samples the\n"
"                         labels pid and comm; at most 512 processes hold their symbols at\n"
"                         once, 64 an unwinder; --profile offcpu and mutex too. No -p,\n"
"                         command, -f, --svg, --by or --profile heap\n"
"  (neither)              system-wide: every process that maps the -f objects, running or\n"
"                         started later; an upgraded file (new inode) is probed again\n"
"      --follow-forks     trace processes forked after the start too, each with its own pid\n"
"      --max-threads N    threads traced at once: a thread holds a state (~8.5 KiB of kernel\n"
"                         memory) from its first traced call until it exits (default: "
			 LOG_STR(TRACER_THREADS_DEFAULT) ", or\n"
"                         twice the target's threads at the start; system-wide "
			 LOG_STR(TRACER_THREADS_SYSTEM) "); in a Go\n"
"                         program also the goroutines whose calls are kept at once (at least "
			 LOG_STR(TRACER_GOROUTINES_MIN) ")\n"
"\n"
"Functions (-f is repeatable):\n"
"  -f, --func NAME        a function of the main executable ('parse_*' globs work)\n"
"  -f LIB:NAME            a function of a mapped shared object (libc:malloc, libfoo.so.1:bar;\n"
"                         LIB: a soname, a file name or a prefix, or the program's own name)\n"
"  -f /path/obj:NAME      a function of the object at this path\n"
"      --list             print what the -f patterns match and exit: object, address, file\n"
"                         offset, size, site kind, bytes skipped, exit mode, function\n"
"\n"
"Report:\n"
"  -d, --duration SEC     stop after SEC seconds, or 500ms, 10s, 2m (units: ns, us, ms, s, m)\n"
"                         (default: Ctrl-C, SIGTERM, SIGHUP or the target's exit)\n"
"  -i, --interval SEC     a report every SEC seconds (or 500ms, 1m) with that interval's\n"
"                         figures; a total follows at the end\n"
"      --hist             add latency histograms\n"
"      --json             one JSON object per report, on one line, to stdout (for jq)\n"
"  -o, --output FILE      write reports to FILE, a new file; - for stdout (default: the\n"
"                         table to stderr, --json to stdout; messages always to stderr)\n"
"      --raw              do not subtract the probes' own time (the bias) from the figures\n"
"      --calibrate        measure and print the probe bias of this machine, then exit\n"
"      --exit=MODE        how returns are seen: auto (default), uretprobe, or ret (uprobes on\n"
"                         the ret instructions: safe with C++ exceptions, Rust, Go)\n"
"      --entry-only       count calls only (no return probes, no latency)\n"
"      --stepped=MODE     single-stepped entries: pair (default: a twin probe on the next\n"
"                         instruction times each call's step) or single (one probe, cheaper)\n"
"      --slow DURATION    for each call of a -f function that takes DURATION or longer\n"
"                         (500us, 2ms, 1s: a unit is needed): its on-CPU, run-queue and\n"
"                         blocked time, its caller's stack and the stack where it blocked\n"
"                         longest (at most 100 a second; the last 20 shown after the table,\n"
"                         256 in --json)\n"
"      --max-overhead PCT keep the probes' cost under PCT% of the target's CPU time: attach\n"
"                         them in bursts and extrapolate (figures marked as estimates)\n"
"\n"
"Counters:\n"
"  -e, --events LIST      per-call counters: cycles,instructions,branch-misses,page-faults,...\n"
"      --list-events      what this machine can count, and why not the rest\n"
"\n"
"Export (no authentication: bind to 127.0.0.1, or put a proxy in front):\n"
"      --listen ADDR:PORT serve GET /metrics (Prometheus, OpenMetrics) and\n"
"                         GET /debug/pprof/profile?seconds=N (pprof) while tracing\n"
"      --by pid|comm|cgroup  a label per process on every function's metrics\n"
"      --max-series N     label values kept apart (default 100); the rest are summed\n"
"                         into the value \"other\"\n"
"\n"
"Sampling:\n"
"      --sample           also sample the CPU while tracing -f functions\n"
"  -F, --freq HZ          sampling frequency (default 99)\n"
"  -n, --top N            rows in the sampling table (default 20)\n"
"      --per-thread       break the sampling table out per thread\n"
"      --pprof FILE       write a pprof profile (gzip-compressed profile.proto)\n"
"      --folded FILE      write folded stacks for flamegraph.pl\n"
"      --svg FILE         write pictures, one self-contained SVG file: a flame graph of the\n"
"                         samples, a latency heatmap per -f function (open it in a browser)\n"
"      --call-graph MODE  how user stacks are walked: fp (frame pointers, in the kernel),\n"
"                         dwarf[,SIZE] (SIZE bytes of stack copied per sample or kept event,\n"
"                         default 16384, unwound with the objects' CFI), auto (default: dwarf,\n"
"                         fp for Go programs)\n"
"\n"
"Symbols:\n"
"      --no-debuginfod    do not download debug info (DEBUGINFOD_URLS) for stripped objects\n"
"      --max-memory SIZE  what the targets can make fnprof hold for naming their code (default\n"
"                         256M; units K, M, G), half for JIT perf maps, half for names; past it,\n"
"                         idle perf maps are evicted or a map is not read, names are dropped\n"
"                         and read again, counted on a \"memory:\" line (each profile's own)\n"
"\n"
"Profiles (--profile is repeatable; without it and without -f: cpu):\n"
"      --profile KIND     cpu: sampled on-CPU stacks; offcpu: where threads wait off the CPU\n"
"                         (blocked or in the run queue) and for how long; mutex: futex lock\n"
"                         contention, charged to the waker's stack; heap: sampled allocations\n"
"                         (malloc, calloc, realloc, posix_memalign, aligned_alloc), live and total.\n"
"                         With several, --pprof FILE writes FILE with .KIND before its extension\n"
"                         (out.pb.gz: out.cpu.pb.gz, out.offcpu.pb.gz, ...)\n"
"      --offcpu-rate NS   waits of NS ns or more are all kept, shorter ones sampled with\n"
"                         probability wait/NS and scaled (default 100000: 100 us; units:\n"
"                         1us, 2ms)\n"
"      --heap-rate BYTES  mean bytes between heap samples (default 512K: 524288)\n"
"\n"
"  -v, --verbose          show libbpf's messages and debug output\n"
"      --version          print fnprof's version (with -v: libbpf's, the kernel's and its features)\n"
"  -h, --help             show this help\n"
"\n"
"Examples:\n"
"  sudo fnprof -p 1234 -f hot_func                  # trace until Ctrl-C\n"
"  sudo fnprof -p 1234 -f 'parse_*' -f libc:malloc -d 10 -i 1\n"
"  sudo fnprof -f hot_func --hist -- ./prog arg1    # launch and trace\n"
"  sudo fnprof -p 1234 -F 999 -d 10 --pprof cpu.pb.gz\n"
"  sudo fnprof -f hot_func --sample --svg run.svg -- ./prog   # flame graph + heatmap\n"
"  sudo fnprof -p 1234 -f 'parse_*' --listen 127.0.0.1:9464   # Prometheus exporter\n"
"  sudo fnprof -a --listen 127.0.0.1:9464   # every process's pprof, labelled pid and comm\n"
"\n"
"Exit status: 0 on success (the command's own status in launch mode),\n"
"1 when tracing failed, 2 on a usage error.\n";

enum {
	OPT_HIST = 256, OPT_JSON, OPT_LIST, OPT_SAMPLE, OPT_PPROF, OPT_FOLDED,
	OPT_PER_THREAD, OPT_LIST_EVENTS, OPT_CALIBRATE, OPT_RAW, OPT_MAX_OVERHEAD, OPT_EXIT, OPT_ENTRY_ONLY,
	OPT_FOLLOW_FORKS, OPT_MAX_THREADS, OPT_CALL_GRAPH, OPT_NO_DEBUGINFOD,
	OPT_PROFILE, OPT_OFFCPU_RATE, OPT_HEAP_RATE, OPT_LISTEN, OPT_BY, OPT_MAX_SERIES, OPT_SVG, OPT_STEPPED,
	OPT_VERSION, OPT_SLOW, OPT_MAX_MEMORY,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, 'a' },
	{ "func", required_argument, NULL, 'f' },
	{ "duration", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "events", required_argument, NULL, 'e' },
	{ "freq", required_argument, NULL, 'F' },
	{ "top", required_argument, NULL, 'n' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "hist", no_argument, NULL, OPT_HIST },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "sample", no_argument, NULL, OPT_SAMPLE },
	{ "pprof", required_argument, NULL, OPT_PPROF },
	{ "folded", required_argument, NULL, OPT_FOLDED },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "list-events", no_argument, NULL, OPT_LIST_EVENTS },
	{ "calibrate", no_argument, NULL, OPT_CALIBRATE },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "stepped", required_argument, NULL, OPT_STEPPED },
	{ "slow", required_argument, NULL, OPT_SLOW },
	{ "max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD },
	{ "exit", required_argument, NULL, OPT_EXIT },
	{ "entry-only", no_argument, NULL, OPT_ENTRY_ONLY },
	{ "follow-forks", no_argument, NULL, OPT_FOLLOW_FORKS },
	{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "by", required_argument, NULL, OPT_BY },
	{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
	{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
	{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "offcpu-rate", required_argument, NULL, OPT_OFFCPU_RATE },
	{ "heap-rate", required_argument, NULL, OPT_HEAP_RATE },
	{ "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
	{},
};

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fnprof: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'fnprof --help' for more information.\n");
	return EXIT_USAGE;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e7)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_duration(const char *s, double bare_ns, double *out_ns)
{
	static const char *const units[] = { "ns", "us", "ms", "s", "m" };
	static const double mult[] = { 1, 1e3, 1e6, 1e9, 60e9 };
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	/* Plain decimals only: no sign, exponent, hex, inf or nan. */
	if (errno || end == s || strspn(s, "0123456789.") != (size_t)(end - s))
		return -EINVAL;
	if (!*end) {
		*out_ns = v * bare_ns;
		return bare_ns ? 0 : -ENOENT;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i])) {
			*out_ns = v * mult[i];
			return 0;
		}
	}
	return -EINVAL;
}

/* -d, -i: seconds when bare, as perf and bpftrace take them. 0 or -EINVAL outside [min_s, 1e7 s]. */
static int parse_run_time(const char *s, double min_s, double *out_s)
{
	double ns;

	if (parse_duration(s, 1e9, &ns) || ns < min_s * 1e9 || ns > 1e16)
		return -EINVAL;
	*out_s = ns / 1e9;
	return 0;
}

/* A unit to print a limit in: the limit divided by mult. */
struct unit {
	const char *name;
	double mult;
};

static const struct unit print_time_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 }, { NULL, 0 },
};
static const struct unit print_size_units[] = {
	{ "", 1 }, { "K", 1 << 10 }, { "M", 1 << 20 }, { "G", 1 << 30 }, { "T", 1ULL << 40 }, { NULL, 0 },
};

/* v in the largest of units that holds it whole ("1h", "10ms", "4G"), into buf (16 bytes). */
static const char *in_unit(double v, const struct unit *units, char buf[16])
{
	const struct unit *best = units;

	for (; units->name; units++)
		if (v >= units->mult && fmod(v, units->mult) == 0)
			best = units;
	snprintf(buf, 16, "%g%s", v / best->mult, best->name);
	return buf;
}

/* --call-graph fp|dwarf[,SIZE]|auto. 0 or -EINVAL. */
static int parse_call_graph(const char *arg, struct opts *o)
{
	const char *comma = strchr(arg, ',');
	size_t n = comma ? (size_t)(comma - arg) : strlen(arg);
	long v;

	if (n == 2 && !strncmp(arg, "fp", 2) && !comma)
		o->call_graph = CG_FP;
	else if (n == 4 && !strncmp(arg, "auto", 4) && !comma)
		o->call_graph = CG_AUTO;
	else if (n == 5 && !strncmp(arg, "dwarf", 5))
		o->call_graph = CG_DWARF;
	else
		return -EINVAL;
	if (comma) {
		/* A multiple of 8, as perf asks: the copy holds whole words. */
		if (parse_long(comma + 1, 8, FNPROF_MAX_STACK_COPY, &v) || v % 8)
			return -EINVAL;
		o->stack_bytes = v;
	}
	return 0;
}

/*
 * A number with an optional unit suffix: units[i] multiplies by mult[i]
 * ("100us", "2ms", "512K"). 0 or -EINVAL outside [min, max].
 */
static int parse_scaled(const char *s, const char *const *units, const unsigned long long *mult,
			unsigned long long min, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;
	int i;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	for (i = 0; *end && units[i]; i++)
		if (!strcmp(end, units[i]))
			break;
	if (*end && !units[i])
		return -EINVAL;
	if (*end) {
		if (v > max / mult[i])
			return -EINVAL;
		v *= mult[i];
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * --slow: a unit is required; a bare number would be nanoseconds, a trap
 * for whoever means seconds as with -d (--slow 2 caught every call over 2 ns).
 */
static int parse_slow(const char *arg, struct opts *o)
{
	char lo[16], hi[16];
	double ns = 0;
	int err = parse_duration(arg, 0, &ns);

	if (err == -ENOENT)
		return usage_error("invalid --slow '%s': a number needs a unit (ns, us, ms, s or m): 500us, 2ms, 1s",
				   arg);
	if (err || ns < MIN_SLOW_NS || ns > MAX_SLOW_NS)
		return usage_error("invalid --slow '%s' (a duration, %s to %s: 500us, 2ms, 1s)", arg,
				   in_unit(MIN_SLOW_NS, print_time_units, lo), in_unit(MAX_SLOW_NS, print_time_units, hi));
	o->slow_ns = llround(ns);
	return -1;
}

/* The options with units: the profiles' rates, --slow. */
static int parse_profile_opt(int c, const char *arg, struct opts *o)
{
	static const char *const size_units[] = { "K", "KiB", "M", "MiB", "G", "GiB", NULL };
	static const unsigned long long size_mult[] = { 1 << 10, 1 << 10, 1 << 20, 1 << 20, 1 << 30, 1 << 30 };
	char lo[16], hi[16];
	unsigned long long v;
	double ns;
	int k;

	switch (c) {
	case OPT_PROFILE:
		k = prof_kind_parse(arg);
		if (k < 0)
			return usage_error("invalid --profile '%s' (cpu, offcpu, mutex or heap)", arg);
		o->profiles |= 1U << k;
		break;
	case OPT_OFFCPU_RATE:
		/* Bare: nanoseconds, as its name (NS) and its default (100000) say. */
		if (parse_duration(arg, 1, &ns) || ns < MIN_OFFCPU_RATE_NS || ns > MAX_OFFCPU_RATE_NS)
			return usage_error("invalid --offcpu-rate '%s' (%s to %s: ns, or with a unit: 100us, 2ms)", arg,
					   in_unit(MIN_OFFCPU_RATE_NS, print_time_units, lo),
					   in_unit(MAX_OFFCPU_RATE_NS, print_time_units, hi));
		o->offcpu_rate_ns = llround(ns);
		break;
	case OPT_SLOW:
		return parse_slow(arg, o);
	case OPT_HEAP_RATE:
		if (parse_scaled(arg, size_units, size_mult, 1, MAX_HEAP_RATE, &o->heap_rate))
			return usage_error("invalid --heap-rate '%s' (bytes, %s to %s; units K, M, G)", arg,
					   in_unit(1, print_size_units, lo), in_unit(MAX_HEAP_RATE, print_size_units, hi));
		break;
	case OPT_MAX_MEMORY:
		if (parse_scaled(arg, size_units, size_mult, BUDGET_MIN, MAX_MEMORY_OPT, &v))
			return usage_error("invalid --max-memory '%s' (bytes, %s to %s; units K, M, G)", arg,
					   in_unit(BUDGET_MIN, print_size_units, lo), in_unit(MAX_MEMORY_OPT, print_size_units, hi));
		o->max_memory = v;
		break;
	}
	return -1;
}

/* -p PID[,PID...]: -1 to go on, or EXIT_USAGE. */
static int parse_pids(const char *arg, struct opts *o)
{
	char buf[32];
	const char *s = arg, *comma;
	size_t n, i;
	long v;

	o->nr_pids = 0;
	do {
		comma = strchr(s, ',');
		n = comma ? (size_t)(comma - s) : strlen(s);
		if (n >= sizeof(buf))
			return usage_error("invalid PID in '%s'", arg);
		memcpy(buf, s, n);
		buf[n] = 0;
		if (parse_long(buf, 1, INT_MAX, &v))
			return usage_error("invalid PID '%s' in -p '%s'", buf, arg);
		if (o->nr_pids == MAX_PIDS)
			return usage_error("too many PIDs in -p (at most %d)", MAX_PIDS);
		for (i = 0; i < o->nr_pids; i++)
			if (o->pids[i] == v)
				return usage_error("PID %ld is given twice in -p '%s'", v, arg);
		o->pids[o->nr_pids++] = v;
		s = comma + 1;
	} while (comma);
	o->pid = o->pids[0];
	return -1;
}

/* The options without an argument: -1, or 0 when c is not one of them. */
static int parse_flag(int c, struct opts *o)
{
	switch (c) {
	case 'v': o->verbose = true; break;
	case 'a': o->all = true; break;
	case OPT_VERSION: o->version = true; break;
	case OPT_HIST: o->hist = true; break;
	case OPT_JSON: o->json = true; break;
	case OPT_LIST: o->list = true; break;
	case OPT_SAMPLE: o->sample = true; break;
	case OPT_PER_THREAD: o->per_thread = true; break;
	case OPT_LIST_EVENTS: o->list_events = true; break;
	case OPT_CALIBRATE: o->calibrate = true; break;
	case OPT_RAW: o->raw = true; break;
	case OPT_ENTRY_ONLY: o->exit_mode = EXIT_NONE; break;
	case OPT_FOLLOW_FORKS: o->follow_forks = true; break;
	case OPT_NO_DEBUGINFOD: o->no_debuginfod = true; break;
	default: return 0;
	}
	return -1;
}

/* The options that take a number or a duration, each checked against its range. */
static int parse_number_opt(int c, const char *arg, struct opts *o)
{
	char lo[16];
	long v;

	switch (c) {
	case 'd':
		if (parse_run_time(arg, 1e-9, &o->duration_s))
			return usage_error("invalid duration '%s' (> 0: seconds, or with a unit: 500ms, 10s, 2m)", arg);
		break;
	case 'i':
		if (parse_run_time(arg, MIN_INTERVAL_S, &o->interval_s))
			return usage_error("invalid interval '%s' (>= %s: seconds, or with a unit: 500ms, 10s, 1m)", arg,
					   in_unit(MIN_INTERVAL_S * 1e9, print_time_units, lo));
		break;
	case 'F':
		if (parse_long(arg, 1, MAX_FREQ_HZ, &v))
			return usage_error("invalid frequency '%s' (1-%d Hz)", arg, MAX_FREQ_HZ);
		o->freq_hz = v;
		break;
	case 'n':
		if (parse_long(arg, 1, MAX_TOP, &v))
			return usage_error("invalid --top '%s' (1-%d)", arg, MAX_TOP);
		o->top = v;
		break;
	case OPT_MAX_THREADS:
		if (parse_long(arg, 1, MAX_THREADS_OPT, &v))
			return usage_error("invalid --max-threads '%s' (1-%d)", arg, MAX_THREADS_OPT);
		o->max_threads = v;
		break;
	case OPT_MAX_OVERHEAD:
		if (parse_seconds(arg, &o->max_overhead_pct) || o->max_overhead_pct < MIN_OVERHEAD_PCT ||
		    o->max_overhead_pct > MAX_OVERHEAD_PCT)
			return usage_error("invalid --max-overhead '%s' (percent, %g-%g)", arg, MIN_OVERHEAD_PCT,
					   MAX_OVERHEAD_PCT);
		break;
	case OPT_MAX_SERIES:
		if (parse_long(arg, 1, MAX_SERIES_OPT, &v))
			return usage_error("invalid --max-series '%s' (1-%d)", arg, MAX_SERIES_OPT);
		o->max_series = v;
		break;
	}
	return -1;
}

/* The options that take one of a few words, or an address. */
static int parse_mode_opt(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case OPT_EXIT:
		if (!strcmp(arg, "auto"))
			o->exit_mode = EXIT_AUTO;
		else if (!strcmp(arg, "uretprobe"))
			o->exit_mode = EXIT_URETPROBE;
		else if (!strcmp(arg, "ret"))
			o->exit_mode = EXIT_RET;
		else
			return usage_error("invalid --exit '%s' (auto, uretprobe or ret)", arg);
		break;
	case OPT_STEPPED:
		if (strcmp(arg, "pair") && strcmp(arg, "single"))
			return usage_error("invalid --stepped '%s' (pair or single)", arg);
		o->step_single = !strcmp(arg, "single");
		break;
	case OPT_CALL_GRAPH:
		if (parse_call_graph(arg, o))
			return usage_error("invalid --call-graph '%s' (fp, dwarf, dwarf,SIZE with SIZE a multiple of 8 "
					   "up to %d, or auto)", arg, FNPROF_MAX_STACK_COPY);
		break;
	case OPT_LISTEN:
		if (http_parse_addr(arg, &(struct http_conf){ 0 }))
			return usage_error("invalid --listen '%s' (ADDR:PORT with a numeric address: 127.0.0.1:9464, "
					   "[::1]:9464, or :9464 for every address)", arg);
		o->listen = arg;
		break;
	case OPT_BY:
		if (!strcmp(arg, "pid"))
			o->by = BY_PID;
		else if (!strcmp(arg, "comm"))
			o->by = BY_COMM;
		else if (!strcmp(arg, "cgroup"))
			o->by = BY_CGROUP;
		else
			return usage_error("invalid --by '%s' (pid, comm or cgroup)", arg);
		break;
	}
	return -1;
}

/* One option; returns -1 to go on, or an exit code. */
static int parse_one(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case 'p':
		return parse_pids(arg, o);
	case 'f':
		if (o->nr_funcs == MAX_FUNC_SPECS)
			return usage_error("too many -f options (at most %d; use a glob)", MAX_FUNC_SPECS);
		if (!*arg)
			return usage_error("empty function name");
		o->funcs[o->nr_funcs++] = arg;
		return -1;
	case 'o': o->output = arg; return -1;
	case 'e': o->events = arg; return -1;
	case OPT_PPROF: o->pprof_path = arg; return -1;
	case OPT_FOLDED: o->folded_path = arg; return -1;
	case OPT_SVG:
		if (!*arg)
			return usage_error("empty --svg file name");
		o->svg_path = arg;
		return -1;
	case 'd': case 'i': case 'F': case 'n': case OPT_MAX_THREADS: case OPT_MAX_OVERHEAD: case OPT_MAX_SERIES:
		return parse_number_opt(c, arg, o);
	case OPT_EXIT: case OPT_STEPPED: case OPT_CALL_GRAPH: case OPT_LISTEN: case OPT_BY:
		return parse_mode_opt(c, arg, o);
	case OPT_PROFILE: case OPT_OFFCPU_RATE: case OPT_HEAP_RATE: case OPT_SLOW: case OPT_MAX_MEMORY:
		return parse_profile_opt(c, arg, o);
	case 'h':
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (parse_flag(c, o))
		return -1;
	fprintf(stderr, "Try 'fnprof --help' for more information.\n");
	return EXIT_USAGE;
}

/* Every -f names its object: "/path/obj:FUNC" or "LIB:NAME". */
static bool all_specs_name_objects(const struct opts *o)
{
	char obj[PATH_MAX];
	const char *name;
	size_t i;

	for (i = 0; i < o->nr_funcs; i++) {
		split_func_spec(o->funcs[i], obj, sizeof(obj), &name);
		if (!obj[0])
			return false;
	}
	return o->nr_funcs > 0;
}

/* Neither -p nor a command: system-wide, every process that maps the -f objects. 0 or EXIT_USAGE. */
static int check_system_wide(struct opts *o)
{
	if (!all_specs_name_objects(o))
		return usage_error("no target: give -p PID, -- COMMAND, or, for every process that maps an object, "
				   "only -f /path/obj:FUNC or -f LIB:NAME patterns");
	if (o->follow_forks)
		return usage_error("--follow-forks: system-wide mode traces every process already");
	if (o->events || o->sample || o->profiles || o->pprof_path || o->folded_path || o->per_thread ||
	    o->max_overhead_pct)
		return usage_error("system-wide mode (no -p, no command) does not take -e, sampling, --profile or "
				   "--max-overhead");
	o->system_wide = true;
	return 0;
}

/*
 * -a: every process is the target, so none is named, and -f (probes need
 * objects, the system-wide mode has them) is another mode. The heap profile,
 * the pictures and --by are per process. 0 or EXIT_USAGE.
 */
static int check_all(struct opts *o)
{
	if (o->pid || o->cmd)
		return usage_error("-a samples every process: it takes no -p PID or command");
	if (o->nr_funcs)
		return usage_error("-a samples every process's CPU; to trace -f functions in every process that "
				   "maps them, leave -a out (system-wide tracing)");
	/*
	 * The heap profile's probes sit on one allocator's malloc and free and cost
	 * ~2 us a pair in the calling thread; --max-overhead bounds that by one
	 * target's own work, which a whole machine does not give.
	 */
	if (o->profiles & 1U << PROF_HEAP)
		return usage_error("-a does not take --profile heap: its probes would slow every malloc and free of "
				   "every process (~2 us a pair), and --max-overhead can bound that only against one "
				   "target's work; give -p PID or a command");
	if (o->svg_path)
		return usage_error("--svg draws one process: give -p PID or a command instead of -a");
	if (o->by || o->max_series)
		return usage_error("-a labels each pprof sample with pid and comm; --by and --max-series label "
				   "the metrics of -f functions");
	if (!o->profiles)   /* else the profiles asked for: cpu among them or not, as with -p */
		o->sample = true;
	return 0;
}

/* -p P1,P2,...: what each process reported on its own takes. */
static int cross_check_pids(const struct opts *o)
{
	if (o->nr_pids < 2)
		return 0;
	return 0;
}

static int cross_check_export(struct opts *o)
{
	if ((o->by || o->max_series) && !o->listen)
		return usage_error("--by and --max-series label the metrics of --listen: add --listen ADDR:PORT");
	/* Metrics are drained every half second: bursts keep their own account of the buffers. */
	if (o->listen && o->max_overhead_pct)
		return usage_error("--listen and --max-overhead cannot be used together");
	if (!o->max_series)
		o->max_series = DEFAULT_MAX_SERIES;
	return -1;
}

/* Two of -o, --pprof, --folded, --svg naming one file: each would replace the other. */
static int same_output_twice(const struct opts *o)
{
	const char *const paths[] = { o->output, o->pprof_path, o->folded_path, o->svg_path };
	const char *const flags[] = { "-o", "--pprof", "--folded", "--svg" };
	size_t i, j, n = sizeof(paths) / sizeof(paths[0]);

	/* Standard output is the report's (-o -); the other files are files. */
	for (i = 1; i < n; i++)
		if (paths[i] && outfile_is_stdout(paths[i]))
			return usage_error("%s %s: only -o writes to standard output; give %s a file", flags[i],
					   paths[i], flags[i]);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (paths[i] && paths[j] && !strcmp(paths[i], paths[j]))
				return usage_error("%s and %s name the same file '%s': give each its own", flags[i],
						   flags[j], paths[i]);
	return 0;
}

/* Checks that need every option: what goes together, what excludes what. */
static int cross_check(struct opts *o)
{
	if (o->list_events || o->calibrate || o->version)
		return -1;
	if (o->all && check_all(o))
		return EXIT_USAGE;
	if (o->pid && o->cmd)
		return usage_error("give either -p PID or -- COMMAND, not both");
	if (!o->all && !o->pid && !o->cmd && check_system_wide(o))
		return EXIT_USAGE;
	if (same_output_twice(o))
		return EXIT_USAGE;
	if (o->list && !o->nr_funcs)
		return usage_error("--list needs at least one -f pattern");
	if (!o->nr_funcs && !o->profiles)
		o->sample = true;
	if (o->profiles & 1U << PROF_CPU)
		o->sample = true;
	if (o->sample)
		o->profiles |= 1U << PROF_CPU;
	if (o->interval_s && o->duration_s && o->interval_s > o->duration_s)
		return usage_error("interval longer than the duration");
	if ((o->pprof_path || o->folded_path || o->per_thread) && !o->profiles)
		return usage_error("--pprof, --folded and --per-thread need sampling (no -f, or --sample) "
				   "or a --profile");
	if (o->folded_path && !o->sample)
		return usage_error("--folded writes the cpu profile's stacks: add --profile cpu");
	if (o->svg_path && !o->sample && !o->nr_funcs)
		return usage_error("--svg draws the cpu profile (a flame graph) and -f functions (heatmaps): "
				   "add --profile cpu or -f FUNC");
	o->pprof_base = o->pprof_path;
	if (o->pprof_path && o->sample && prof_file_name(o->pprof_path, PROF_CPU, o->profiles != 1U << PROF_CPU,
							  o->cpu_pprof, sizeof(o->cpu_pprof)))
		return usage_error("--pprof '%s': name too long", o->pprof_path);
	if (o->pprof_path && o->sample)
		o->pprof_path = o->cpu_pprof;
	if (o->max_overhead_pct && !o->nr_funcs && !(o->profiles & 1U << PROF_HEAP))
		return usage_error("--max-overhead bounds the cost of tracing -f functions and of the heap profile");
	/* Both: each holds half of the budget. */
	if (o->max_overhead_pct && o->profiles & 1U << PROF_HEAP) {
		if (o->nr_funcs)
			o->max_overhead_pct /= 2;
		o->heap_overhead_pct = o->max_overhead_pct;
		if (!o->nr_funcs)
			o->max_overhead_pct = 0;
	}
	if (o->follow_forks && !o->nr_funcs)
		return usage_error("--follow-forks traces the -f functions in fork children: add -f FUNC");
	/* Probes attached in bursts would not be inherited by the children forked while detached. */
	if (o->follow_forks && o->max_overhead_pct)
		return usage_error("--follow-forks and --max-overhead cannot be used together");
	if (o->slow_ns && !o->nr_funcs)
		return usage_error("--slow reports slow calls of traced functions: add -f FUNC");
	if (o->slow_ns && !o->pid && !o->cmd)
		return usage_error("--slow needs a target (-p PID or a command): system-wide it is not supported");
	if (o->slow_ns && o->exit_mode == EXIT_NONE)
		return usage_error("--slow times calls to their return: it cannot go with --entry-only");
	if (o->events && !o->nr_funcs)
		return usage_error("-e counts events per call of traced functions: add -f FUNC");
	if (cross_check_pids(o))
		return EXIT_USAGE;
	return cross_check_export(o);
}

int opts_parse(int argc, char **argv, struct opts *o)
{
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->freq_hz = 99;
	o->top = 20;
	o->max_memory = BUDGET_DEFAULT;
	o->stack_bytes = DEFAULT_STACK_BYTES;
	o->offcpu_rate_ns = 100000;
	o->heap_rate = 512 * 1024;
	opterr = 1;
	optind = 0;  /* full re-initialisation: the parser may run more than once */
	/* '+': stop at the first non-option, so the command's own options stay its own. */
	while ((c = getopt_long(argc, argv, "+ap:f:d:i:o:e:F:n:vh", long_opts, NULL)) != -1) {
		ret = parse_one(c, optarg, o);
		if (ret >= 0)
			return ret;
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			return usage_error("unexpected argument '%s' (a command goes after --)", argv[optind]);
		o->cmd = &argv[optind];
	}
	return cross_check(o);
}
