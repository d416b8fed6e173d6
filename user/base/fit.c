// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/fit.h"
#include "base/sanitize.h"

#define FIT_MAX 1024   /* the longest name kept whole (bytes); longer ones are fitted anyway */
#define ELLIPSIS ".."

size_t fit_cells(const char *s)
{
	size_t n = 0, k;

	for (; *s; s += k ? k : 1, n++)
		k = utf8_char_len(s);
	return n;
}

/* Byte offset of the character that starts cell `cell` of s. */
static size_t cell_offset(const char *s, size_t cell)
{
	size_t o = 0, k;

	for (; cell && s[o]; cell--, o += k ? k : 1)
		k = utf8_char_len(s + o);
	return o;
}

/* Cells of the last component, with its separator: after the last "::", '.' or '/' outside (), <>, []. */
static size_t last_component(const char *s)
{
	size_t i, start = 0;
	int depth = 0;

	for (i = 0; s[i]; i++) {
		if (strchr("(<[", s[i]))
			depth++;
		else if (strchr(")>]", s[i]) && depth > 0)
			depth--;
		else if (!depth && s[i] == ':' && s[i + 1] == ':')
			start = i++;
		else if (!depth && (s[i] == '.' || s[i] == '/') && i)
			start = i;
	}
	return fit_cells(s + start);
}

/*
 * A C++ name's parameter list, "(unsigned long)" at its end, cut off: a
 * table has no room for it, and overloads it would tell apart are names
 * alike, which fit_column widens. Not "(*T).method" (Go), not "operator()()".
 */
static void drop_params(char *s)
{
	size_t n = strlen(s), i;
	int depth = 0;

	if (!n || s[n - 1] != ')')
		return;
	for (i = n; i-- > 0;) {
		depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
		if (!depth)
			break;
	}
	if (!depth && i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_' || s[i - 1] == '>'))
		s[i] = 0;
}

const char *fit_name(const char *s, size_t width, char *buf, size_t size)
{
	char clean[FIT_MAX];
	size_t cells, tail, head, h, t;

	sanitize_term(s, clean, sizeof(clean));
	cells = fit_cells(clean);
	if (cells > width && width >= 4) {
		drop_params(clean);
		cells = fit_cells(clean);
	}
	if (cells <= width || width < 4)
		return sanitize_term(clean, buf, size);
	/* The end gets two thirds at least, all but 3 cells at most: the function stays whole if it can. */
	tail = last_component(clean);
	if (tail < (width - 2) * 2 / 3)
		tail = (width - 2) * 2 / 3;
	if (tail > width - 3)
		tail = width - 3;
	head = width - 2 - tail;
	h = cell_offset(clean, head);
	t = cell_offset(clean, cells - tail);
	snprintf(buf, size, "%.*s" ELLIPSIS "%s", (int)h, clean, clean + t);
	return buf;
}

/* On a terminal: its columns, from the kernel; 0 otherwise. */
static size_t term_columns(FILE *out)
{
	struct winsize ws;

	if (!isatty(fileno(out)) || ioctl(fileno(out), TIOCGWINSZ, &ws) || !ws.ws_col)
		return 0;
	return ws.ws_col;
}

struct shown {
	const char *name;
	char fitted[256];
};

static int cmp_shown(const void *a, const void *b)
{
	return strcmp(((const struct shown *)a)->fitted, ((const struct shown *)b)->fitted);
}

/*
 * The names fitted to width, sorted: the widest of two different names that
 * look the same, or 0 when none do.
 */
static size_t widest_alike(struct shown *v, size_t n, size_t width)
{
	size_t i, need = 0, c;

	for (i = 0; i < n; i++)
		fit_name(v[i].name, width, v[i].fitted, sizeof(v[i].fitted));
	qsort(v, n, sizeof(*v), cmp_shown);
	for (i = 1; i < n; i++) {
		if (strcmp(v[i - 1].fitted, v[i].fitted) || !strcmp(v[i - 1].name, v[i].name))
			continue;
		c = fit_cells(v[i - 1].name) > fit_cells(v[i].name) ? fit_cells(v[i - 1].name) : fit_cells(v[i].name);
		need = c > need ? c : need;
	}
	return need;
}

size_t fit_column(FILE *out, const char *const *names, size_t n, size_t width, size_t rest)
{
	size_t cols = term_columns(out), longest = 0, i, need;
	struct shown *v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return 0;
	for (i = 0; i < n; i++) {
		v[i].name = names[i];
		longest = fit_cells(names[i]) > longest ? fit_cells(names[i]) : longest;
	}
	if (cols > rest + width)
		width = longest < cols - rest ? (longest > width ? longest : width) : cols - rest;
	/* Each pass shows the names that looked alike whole: it ends by the longest name at the latest. */
	while ((need = widest_alike(v, n, width)) > width)
		width = need;
	free(v);
	return width;
}

void fit_cell(FILE *out, const char *name, size_t width)
{
	char buf[FIT_MAX];
	size_t c;

	fit_name(name, width ? width : sizeof(buf), buf, sizeof(buf));
	c = fit_cells(buf);
	fprintf(out, "%s%*s", buf, c < width ? (int)(width - c) : 0, "");
}

void fit_name_cells(FILE *out, const char *func, size_t func_width, const char *object)
{
	const char *base = strrchr(object, '/');

	fit_cell(out, func, func_width);
	fputc(' ', out);
	fit_cell(out, base ? base + 1 : object, FIT_OBJECT_WIDTH);
	fputc(' ', out);
}
