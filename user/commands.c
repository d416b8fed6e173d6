// SPDX-License-Identifier: GPL-2.0
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sanitize.h"
#include "commands.h"
#include "trace/tracer.h"

int list_probes(const struct probe_list *pl)
{
	char obj[PATH_MAX], name[1024];
	size_t i;

	/* SITE: how the kernel takes the entry probe; SKIP: bytes it lets run before it (arch_entry_skip). */
	fprintf(stdout, "%-40s %-18s %-10s %8s  %-16s %4s %-9s  %s\n", "OBJECT", "ADDRESS", "OFFSET", "SIZE", "SITE",
		"SKIP", "EXIT", "FUNCTION");
	for (i = 0; i < pl->nr; i++) {
		const struct probe *p = &pl->probes[i];

		fprintf(stdout, "%-40s 0x%016llx 0x%-8llx %8llu  %-16s %4u %-9s  %s\n",
			sanitize_term(p->object, obj, sizeof(obj)), (unsigned long long)p->addr,
			(unsigned long long)p->offset, (unsigned long long)p->size, site_kind_name(p->kind), p->entry_skip,
			p->session ? "session" : exit_mode_name(p->exit), sanitize_term(p->name, name, sizeof(name)));
	}
	return 0;
}

size_t self_probes(struct probe self[CAL_NR], __u32 first_id, const struct probe **out)
{
	*out = self;
	if (!calib_self_probes(self, first_id))
		return CAL_NR;
	log_warn("cannot find fnprof's calibration functions: no probe-bias correction");
	return 0;
}

int run_calibration(void)
{
	struct probe_list none = {};
	struct probe self[CAL_NR];
	struct calibration cal;
	struct tracer *t;
	int err;

	struct tracer_conf conf = {};

	conf.nr_self = self_probes(self, 0, &conf.self);
	if (tracer_start(&none, getpid(), NULL, &conf, &t)) {
		calib_free_probes(self);
		return EXIT_FAIL;
	}
	err = calibrate(t, &cal, CALIB_ALL);
	tracer_stop(t);
	calib_free_probes(self);
	if (err)
		return EXIT_FAIL;
	calibration_print(&cal, stdout);
	return EXIT_OK;
}
