// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "trace/upgrade.h"

/* One object path, and the file it named when last probed. */
struct watched {
	const char *path;      /* the probe list's object string */
	dev_t dev;
	ino_t ino;
};

struct upgrades {
	const struct probe_list *pl;
	struct resolve_conf conf;  /* how pl was resolved */
	struct watched *w;
	size_t nr;
	struct probe_list *lists;  /* resolved again after upgrades: their files stay open, probed */
	size_t nr_lists;
};

int upgrades_start(const struct probe_list *pl, const struct resolve_conf *conf, struct upgrades **out)
{
	struct upgrades *u = calloc(1, sizeof(*u));
	struct stat st;
	size_t i, k;

	if (!u || !(u->w = calloc(pl->nr ? pl->nr : 1, sizeof(*u->w)))) {
		free(u);
		return -ENOMEM;
	}
	u->pl = pl;
	u->conf = *conf;
	for (i = 0; i < pl->nr; i++) {
		for (k = 0; k < u->nr && strcmp(u->w[k].path, pl->probes[i].object); k++)
			;
		/* The file probed: the one fnprof holds open, whatever the path names by now. */
		if (k < u->nr || stat(pl->probes[i].open_path, &st))
			continue;
		u->w[u->nr++] = (struct watched){ .path = pl->probes[i].object, .dev = st.st_dev, .ino = st.st_ino };
	}
	*out = u;
	return 0;
}

/* The id of the function called name in object path in the first probe list, or -1. */
static long first_id(const struct probe_list *pl, const char *path, const char *name)
{
	size_t i;

	for (i = 0; i < pl->nr; i++)
		if (!strcmp(pl->probes[i].object, path) && !strcmp(pl->probes[i].name, name))
			return pl->probes[i].id;
	return -1;
}

/* Probes the functions of the new file at w->path, each under its first id. */
static int probe_new_file(struct upgrades *u, struct watched *w, struct tracer *t)
{
	struct probe_list npl, *lists;
	struct probe *sel;
	size_t i, n = 0;
	long id;
	int err;

	if (resolve_probes(&u->conf, 0, &npl))
		return -ENOENT;
	sel = calloc(npl.nr ? npl.nr : 1, sizeof(*sel));
	lists = realloc(u->lists, (u->nr_lists + 1) * sizeof(*lists));
	if (!sel || !lists) {
		free(sel);
		probe_list_free(&npl);
		return -ENOMEM;
	}
	u->lists = lists;
	for (i = 0; i < npl.nr; i++) {
		if (strcmp(npl.probes[i].object, w->path))
			continue;
		id = first_id(u->pl, w->path, npl.probes[i].name);
		if (id < 0) {
			log_debug("%s in the new %s: not traced before, not traced now", npl.probes[i].name, w->path);
			continue;
		}
		sel[n] = npl.probes[i];
		/*
		 * A session's ret probes go into each process that declines its
		 * return, for the files known at the start: the new file's exits
		 * are ret probes in every process, as without sessions.
		 */
		if (sel[n].session)
			sel[n].session = false, sel[n].exit = EXIT_RET;
		sel[n++].id = id;
	}
	err = n ? tracer_attach_more(t, sel, n) : 0;
	free(sel);
	u->lists[u->nr_lists++] = npl;
	log_info("%s was replaced (a new file at that path): %zu functions probed in it, their counts go on", w->path,
		 n);
	return err;
}

int upgrades_check(struct upgrades *u, struct tracer *t)
{
	struct stat st;
	size_t k;
	int n = 0;

	for (k = 0; u && k < u->nr; k++) {
		struct watched *w = &u->w[k];

		/* Missing for a moment while it is replaced: looked at again next time. */
		if (stat(w->path, &st) || (st.st_dev == w->dev && st.st_ino == w->ino))
			continue;
		w->dev = st.st_dev;
		w->ino = st.st_ino;
		if (probe_new_file(u, w, t))
			log_warn("cannot probe the new %s: the processes that run it are not traced", w->path);
		else
			n++;
	}
	return n;
}

void upgrades_free(struct upgrades *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < u->nr_lists; i++)
		probe_list_free(&u->lists[i]);
	free(u->lists);
	free(u->w);
	free(u);
}
