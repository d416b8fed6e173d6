// SPDX-License-Identifier: GPL-2.0
/*
 * fnprof: per-function latency, on-CPU time and CPU% of a running process or
 * a launched command, measured in the kernel with eBPF.
 *
 * The lifecycle: the command line and the checks here; --list-events and
 * --calibrate print and exit (commands.c); a run sets up, loops and reports
 * (run.c), following a script to its program (follow.c); then the clean-up
 * leaves no probe behind, whatever ended the run.
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/version.h"
#include "commands.h"
#include "elf/debuginfo.h"
#include "format/outfile.h"
#include "opts.h"
#include "run.h"
#include "stacks/prof_kind.h"
#include "target/kfeatures.h"
#include "trace/events.h"
#include "target/kneeds.h"
#include "target/tpbtf.h"
#include "trace/steps.h"
#include "trace/uprobe_warm.h"

/* What the kernel is asked to run (kneeds.h): the modes of o. */
static unsigned int kernel_modes(const struct opts *o)
{
	unsigned int m = 0;

	if (o->nr_funcs || o->calibrate)
		m |= 1U << KMODE_TRACE;
	if (o->sample)
		m |= 1U << KMODE_SAMPLE;
	if (o->profiles & 1U << PROF_OFFCPU)
		m |= 1U << KMODE_OFFCPU;
	if (o->profiles & 1U << PROF_MUTEX)
		m |= 1U << KMODE_MUTEX;
	if (o->profiles & 1U << PROF_HEAP)
		m |= 1U << KMODE_HEAP;
	return m;
}

int main(int argc, char **argv)
{
	double t_exec = monotonic_s();
	struct run r;
	struct opts o;
	int err;

	steps_begin();
	err = opts_parse(argc, argv, &o);
	if (err >= 0)
		return err;
	if (o.version) {
		version_print(stdout, o.verbose);
		if (o.verbose)
			kfeatures_print(stdout);  /* what this kernel offers, found on it */
		return EXIT_OK;
	}
	log_verbose = o.verbose;
	if (log_verbose)
		version_print(stderr, true);  /* what a bug report quotes */
	debuginfo_configure(&(struct debuginfo_conf){ .no_debuginfod = o.no_debuginfod });
	log_setup_libbpf();
	err = tpbtf_register();
	if (err)
		log_debug("tp_btf programs: libbpf's own handling (%s)", strerror(-err));
	run_init(&r, &o, t_exec);
	err = proc_raise_nofile();
	if (err)
		log_debug("cannot raise the limit on open files: %s", strerror(-err));
	/*
	 * Then at once: the first registration's wait overlaps everything else
	 * (uprobe_warm.h). Not before a command is forked: glibc's first thread
	 * sets up signal 33 (setxid), which a command would not inherit ignored.
	 */
	if (o.nr_funcs && o.pid && !o.list && !o.list_events && !o.calibrate)
		uprobe_warm_early();
	/* --list needs no privileges, but never runs setuid either: it reads files and starts commands. */
	if (o.list ? check_not_setuid() : check_system())
		return EXIT_FAIL;
	if (o.list_events)
		return events_list(stdout);
	/* Before any set-up: a mode this kernel cannot run is refused in one line, not by the verifier. */
	if (!o.list && kneeds_check(kernel_modes(&o)))
		return EXIT_FAIL;
	steps_mark("checks");
	if (o.calibrate)
		return run_calibration();
	err = run_all(&r);
	steps_mark("final report");
	run_cleanup(&r);
	outfile_drop_unwritten();
	uprobe_warm_discard();
	steps_mark("detach and clean-up");
	if (log_verbose)
		steps_print(stderr);
	return err;
}
