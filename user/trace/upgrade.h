/* SPDX-License-Identifier: GPL-2.0 */
/*
 * System-wide mode: follows upgrades of the traced objects. A package
 * manager replaces a file by renaming a new one over it: the path then names
 * a new inode, which the probes (on the old inode) do not cover. The new file
 * is resolved again and probed, each function under its old id, so its
 * counters go on; the old file keeps its probes for the processes still
 * running it.
 */
#ifndef FNPROF_UPGRADE_H
#define FNPROF_UPGRADE_H

#include "target/resolve.h"
#include "trace/tracer.h"

struct upgrades;

/*
 * Remembers the file each object path of pl names now, and how pl was
 * resolved (conf, copied; its patterns must outlive it, as pl). 0 or -ENOMEM.
 */
int upgrades_start(const struct probe_list *pl, const struct resolve_conf *conf, struct upgrades **out);

/*
 * Where a path names another file than before, probes the new file. Returns
 * how many files were probed anew; failures are printed and tracing goes on.
 */
int upgrades_check(struct upgrades *u, struct tracer *t);

void upgrades_free(struct upgrades *u);

#endif /* FNPROF_UPGRADE_H */
