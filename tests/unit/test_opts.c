// SPDX-License-Identifier: GPL-2.0
/* Command-line parsing: accepted forms, range checks, cross-checks, exit codes. */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "opts.h"
#include "stacks/prof_kind.h"
#include "unit.h"

static int parse(struct opts *o, const char *line)
{
	static char buf[1024];
	char *argv[64];
	int argc = 0;
	char *tok;

	snprintf(buf, sizeof(buf), "fnprof %s", line);
	for (tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return opts_parse(argc, argv, o);
}

static void attach_with_functions(void)
{
	struct opts o;

	CHECK(parse(&o, "-p 123 -f hot -f libc:malloc -d 10 -i 1 --hist --json") == -1);
	CHECK(o.pid == 123 && o.nr_funcs == 2);
	CHECK(!strcmp(o.funcs[1], "libc:malloc"));
	CHECK(o.duration_s == 10 && o.interval_s == 1 && o.hist && o.json && !o.sample);
}

static void launch_keeps_command_options(void)
{
	struct opts o;

	CHECK(parse(&o, "-f hot -- ./prog -p 5 --json") == -1);
	CHECK(!o.pid && o.cmd && !strcmp(o.cmd[0], "./prog") && !strcmp(o.cmd[1], "-p"));
	CHECK(!o.json);
}

static void no_function_means_sampling(void)
{
	struct opts o;

	CHECK(parse(&o, "-p 1 -F 999 --pprof x.pb.gz") == -1);
	CHECK(o.sample && o.freq_hz == 999 && !strcmp(o.pprof_path, "x.pb.gz"));
	CHECK(parse(&o, "-p 1") == -1 && o.freq_hz == 99);
}

static void call_graph_modes(void)
{
	struct opts o;

	CHECK(parse(&o, "-p 1") == -1 && o.call_graph == CG_AUTO && o.stack_bytes == DEFAULT_STACK_BYTES);
	CHECK(parse(&o, "-p 1 --call-graph fp") == -1 && o.call_graph == CG_FP);
	CHECK(parse(&o, "-p 1 --call-graph dwarf") == -1 && o.call_graph == CG_DWARF);
	CHECK(parse(&o, "-p 1 --call-graph dwarf,4096") == -1 && o.stack_bytes == 4096);
	CHECK(parse(&o, "-p 1 --call-graph dwarf,65536 --no-debuginfod") == -1 && o.stack_bytes == 65536 &&
	      o.no_debuginfod);
	CHECK(parse(&o, "-p 1 --call-graph dwarf,100") == EXIT_USAGE);    /* not a multiple of 8 */
	CHECK(parse(&o, "-p 1 --call-graph dwarf,131072") == EXIT_USAGE); /* over the copy's limit */
	CHECK(parse(&o, "-p 1 --call-graph fp,8") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 --call-graph lbr") == EXIT_USAGE);
}

static void usage_errors_exit_2(void)
{
	struct opts o;

	CHECK(parse(&o, "-f hot") == EXIT_USAGE);               /* no target */
	CHECK(parse(&o, "-p abc -f hot") == EXIT_USAGE);
	CHECK(parse(&o, "-p 0 -f hot") == EXIT_USAGE);
	CHECK(parse(&o, "-p -5 -f hot") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 -f hot -d 0") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 -f hot -d 1x") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 -f hot -i 5 -d 1") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 -f hot -F 0") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 -f hot --pprof x") == EXIT_USAGE);  /* needs sampling */
	CHECK(parse(&o, "-p 1 -f hot -- ./prog") == EXIT_USAGE);  /* both targets */
	CHECK(parse(&o, "-p 1 -f hot ./prog") == EXIT_USAGE);     /* command without -- */
	CHECK(parse(&o, "-p 1 --bogus") == EXIT_USAGE);
}

static void help_exits_0(void)
{
	struct opts o;

	CHECK(parse(&o, "--help") == EXIT_OK);
}

static void parses_seconds(void)
{
	double v;

	CHECK(!parse_seconds("0.5", &v) && v == 0.5);
	CHECK(parse_seconds("", &v));
	CHECK(parse_seconds("-1", &v));
	CHECK(parse_seconds("nan", &v));
	CHECK(parse_seconds("1e400", &v));
}

static void parses_durations(void)
{
	struct opts o;
	double ns;

	CHECK(!parse_duration("1.5ms", 0, &ns) && ns == 1.5e6);
	CHECK(!parse_duration("2m", 0, &ns) && ns == 120e9);
	CHECK(!parse_duration("3", 1e9, &ns) && ns == 3e9);
	CHECK(parse_duration("3", 0, &ns) == -ENOENT);
	CHECK(parse_duration("-1s", 1, &ns) == -EINVAL && parse_duration("1e3", 1, &ns) == -EINVAL);
	CHECK(parse_duration("0x10", 1, &ns) == -EINVAL && parse_duration("inf", 1, &ns) == -EINVAL);
	CHECK(parse_duration("5parsecs", 1, &ns) == -EINVAL && parse_duration("", 1, &ns) == -EINVAL);
	/* Every duration option takes units; bare, -d and -i are seconds, --offcpu-rate ns. */
	CHECK(parse(&o, "-p 1 -d 1s -i 500ms") == -1 && o.duration_s == 1 && o.interval_s == 0.5);
	CHECK(parse(&o, "-p 1 -d 2 -i 1m") == EXIT_USAGE);   /* interval longer than the duration */
	CHECK(parse(&o, "-p 1 -d 2m -i 1") == -1 && o.duration_s == 120 && o.interval_s == 1);
	CHECK(parse(&o, "-p 1 -f x --slow 1.5ms") == -1 && o.slow_ns == 1500000);
	CHECK(parse(&o, "-p 1 -f x --slow 2") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 --profile offcpu --offcpu-rate 1.5us") == -1 && o.offcpu_rate_ns == 1500);
	CHECK(parse(&o, "-p 1 -i 5ms") == EXIT_USAGE);
}

static void profiles_and_their_files(void)
{
	struct opts o;
	char b[64];

	CHECK(parse(&o, "-p 1 --profile offcpu --profile heap --heap-rate 64K --offcpu-rate 2ms") == -1);
	CHECK(o.profiles == (1U << PROF_OFFCPU | 1U << PROF_HEAP) && !o.sample);
	CHECK(o.heap_rate == 65536 && o.offcpu_rate_ns == 2000000);
	CHECK(parse(&o, "-p 1 --profile offcpu --profile cpu --pprof out.pb.gz") == -1);
	CHECK(o.sample && !strcmp(o.pprof_path, "out.cpu.pb.gz") && !strcmp(o.pprof_base, "out.pb.gz"));
	CHECK(parse(&o, "-p 1 --pprof out.pb.gz") == -1);  /* cpu alone: the file as given */
	CHECK(o.sample && !strcmp(o.pprof_path, "out.pb.gz"));
	CHECK(parse(&o, "-p 1 --offcpu-rate 5") == -1 && o.offcpu_rate_ns == 5);
	CHECK(!prof_file_name("dir.x/out", PROF_HEAP, true, b, sizeof(b)) && !strcmp(b, "dir.x/out.heap"));
	CHECK(!prof_file_name("/t/.hidden", PROF_MUTEX, true, b, sizeof(b)) && !strcmp(b, "/t/.hidden.mutex"));
	CHECK(!prof_file_name("a.pb.gz", PROF_MUTEX, false, b, sizeof(b)) && !strcmp(b, "a.pb.gz"));
	CHECK(prof_file_name("a-very-long-name.pb.gz", PROF_OFFCPU, true, b, 16) == -ENAMETOOLONG);
	CHECK(parse(&o, "-p 1 --profile mem") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 --heap-rate 0") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 --heap-rate 8G") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 --offcpu-rate -5") == EXIT_USAGE);
	CHECK(parse(&o, "-p 1 --profile heap --folded x") == EXIT_USAGE);
}

int main(void)
{
	RUN(attach_with_functions);
	RUN(launch_keeps_command_options);
	RUN(no_function_means_sampling);
	RUN(call_graph_modes);
	RUN(usage_errors_exit_2);
	RUN(help_exits_0);
	RUN(parses_seconds);
	RUN(parses_durations);
	RUN(profiles_and_their_files);
	UNIT_EXIT();
}
