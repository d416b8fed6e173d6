// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target/probe.h"
#include "base/sanitize.h"

bool probe_jmp_at_entry(const struct probe *p)
{
	int i;

	for (i = 0; p->exit == EXIT_RET && i < p->nr_tails; i++)
		if (p->tails[i].jump && p->tails[i].offset == p->offset + p->entry_skip)
			return true;
	return false;
}

const char *exit_mode_name(enum exit_mode m)
{
	static const char *const names[] = { "auto", "uretprobe", "ret", "none" };

	return m <= EXIT_NONE ? names[m] : "?";
}

const char *site_kind_name(enum site_kind k)
{
	static const char *const names[SITE_NR] = { "emulated", "single-stepped", "nop5", "stepped-pair",
						    "stepped-pair-ret", "emulated-jcc", "emulated-jmp",
						    "emulated-call", "emulated-nop" };

	return k < SITE_NR ? names[k] : "?";
}

void probe_list_free(struct probe_list *pl)
{
	size_t i;

	for (i = 0; i < pl->nr_held; i++)
		close(pl->held_fds[i]);
	for (i = 0; i < pl->nr; i++) {
		free(pl->probes[i].name);
		free(pl->probes[i].object);
		free(pl->probes[i].open_path);
		free(pl->probes[i].exits);
		free(pl->probes[i].tails);
	}
	free(pl->probes);
	free(pl->go_exit_path);
	memset(pl, 0, sizeof(*pl));
}

const char *probe_display_name(const struct probe *p, char *buf, size_t size)
{
	const char *base = strrchr(p->object, '/');
	char raw[1024];

	if (p->main_exe)
		snprintf(raw, sizeof(raw), "%s", p->name);
	else
		snprintf(raw, sizeof(raw), "%s:%s", base ? base + 1 : p->object, p->name);
	/* The names come from the target: no terminal escapes. */
	return sanitize_term(raw, buf, size);
}
