// SPDX-License-Identifier: GPL-2.0
#include "base/sanitize.h"
#include "report/sysexits.h"

/* Processes named on a line at most; the JSON lists them all. */
#define NAMED_MAX 12

/* One kind's line: "name[pid] (why), ..." for the processes whose ret is ret. */
static void print_kind(const struct sysexit_proc *procs, size_t n, bool ret, const char *what, FILE *f)
{
	size_t i, nr = 0, named = 0;
	char clean[64];

	for (i = 0; i < n; i++)
		nr += procs[i].ret == ret;
	if (!nr)
		return;
	fprintf(f, "  %s in %zu process%s:", what, nr, nr > 1 ? "es" : "");
	for (i = 0; i < n && named < NAMED_MAX; i++) {
		if (procs[i].ret != ret)
			continue;
		fprintf(f, "%s %s[%d]", named++ ? "," : "", sanitize_term(procs[i].comm, clean, sizeof(clean)),
			(int)procs[i].pid);
		if (ret && procs[i].why)
			fprintf(f, " (%s)", procs[i].why);
	}
	if (nr > named)
		fprintf(f, " and %zu more", nr - named);
	fputc('\n', f);
}

void sysexits_print_table(const struct sysexit_proc *procs, size_t n, FILE *f)
{
	if (!n)
		return;
	fprintf(f, "exits chosen per process (system-wide uprobe sessions):\n");
	print_kind(procs, n, false, "uretprobe (the session's return, no single step)", f);
	print_kind(procs, n, true, "ret probes (a uretprobe is unsafe there; a step at each return)", f);
}

void sysexits_print_json(const struct sysexit_proc *procs, size_t n, struct json *j)
{
	size_t i;

	if (!n)
		return;
	json_arr_begin(j, "exits_per_process");
	for (i = 0; i < n; i++) {
		json_obj_begin(j, NULL);
		json_i64(j, "pid", procs[i].pid);
		json_str(j, "comm", procs[i].comm);
		json_str(j, "exit", procs[i].ret ? "ret" : "uretprobe");
		if (procs[i].ret && procs[i].why)
			json_str(j, "why", procs[i].why);
		json_obj_end(j);
	}
	json_arr_end(j);
}
