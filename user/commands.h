/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The commands that print and exit instead of tracing: --list (what the -f
 * patterns match) and --calibrate (this machine's probe bias); and the
 * calibration's probes on fnprof's own functions, which a run takes too.
 * Return values are exit codes (base/log.h), with the message printed.
 */
#ifndef FNPROF_COMMANDS_H
#define FNPROF_COMMANDS_H

#include <stddef.h>
#include <linux/types.h>

#include "target/probe.h"
#include "trace/calib.h"

/* --list: a header, then one line per probe of pl, to stdout. EXIT_OK. */
int list_probes(const struct probe_list *pl);

/* --calibrate: measures the probe bias on fnprof's own functions and prints it to stdout. */
int run_calibration(void);

/*
 * The calibration's probes, ids from first_id, into self (freed with
 * calib_free_probes), *out pointing at them: how many, 0 when fnprof cannot
 * find its own functions (warned: no probe-bias correction).
 */
size_t self_probes(struct probe self[CAL_NR], __u32 first_id, const struct probe **out);

#endif /* FNPROF_COMMANDS_H */
