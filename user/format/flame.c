// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format/flame.h"

#define X0 10.0                 /* left margin */
#define W (SVG_WIDTH - 2 * X0)  /* the root's width */
#define ROW 16.0                /* a frame's row */
#define CHAR_W 6.7              /* a character of the 11 px monospace font, rounded up */
#define HIGHLIGHT "#e600e6"     /* search matches: a colour no kind uses */
#define TOP 58.0                /* heading and controls above the frames */

struct fnode {
	char *name, *object;
	enum flame_kind kind;
	__u64 count;
	struct fnode *child, *next;   /* first child, next sibling */
	int depth;
	bool keep;
};

struct flame {
	struct fnode root;
	size_t nr_nodes;
	__u64 min_keep;     /* frames with fewer samples are merged */
	int max_depth;      /* of the frames drawn */
	size_t nr_merged, nr_boxes;   /* frames merged, boxes they went into */
	__u64 merged_samples;
};

struct flame *flame_new(const char *root)
{
	struct flame *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return NULL;
	fl->root.name = strdup(root);
	fl->root.object = strdup("");
	fl->root.kind = FLAME_ROOT;
	if (!fl->root.name || !fl->root.object) {
		flame_free(fl);
		return NULL;
	}
	return fl;
}

static void free_children(struct fnode *n)
{
	struct fnode *c = n->child, *next;

	for (; c; c = next) {
		next = c->next;
		free_children(c);
		free(c->name);
		free(c->object);
		free(c);
	}
}

void flame_free(struct flame *fl)
{
	if (!fl)
		return;
	free_children(&fl->root);
	free(fl->root.name);
	free(fl->root.object);
	free(fl);
}

/* The child of n for frame f, made if new; NULL: no memory. */
static struct fnode *child_of(struct flame *fl, struct fnode *n, const struct flame_frame *f)
{
	struct fnode *c;

	for (c = n->child; c; c = c->next)
		if (!strcmp(c->name, f->name) && !strcmp(c->object, f->object))
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->name = strdup(f->name);
	c->object = strdup(f->object);
	if (!c->name || !c->object) {
		free(c->name);
		free(c->object);
		free(c);
		return NULL;
	}
	c->kind = f->kind;
	c->depth = n->depth + 1;
	c->next = n->child;
	n->child = c;
	fl->nr_nodes++;
	return c;
}

int flame_add(struct flame *fl, const struct flame_frame *fr, int n, __u64 count)
{
	struct fnode *node = &fl->root;
	int i;

	node->count += count;
	for (i = 0; i < n; i++) {
		node = child_of(fl, node, &fr[i]);
		if (!node)
			return -ENOMEM;
		node->count += count;
	}
	return 0;
}

/* --- which frames are drawn ---------------------------------------------------- */

static void collect_counts(const struct fnode *n, __u64 *v, size_t *nr)
{
	const struct fnode *c;

	for (c = n->child; c; c = c->next) {
		v[(*nr)++] = c->count;
		collect_counts(c, v, nr);
	}
}

static int cmp_desc(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x > y ? -1 : x < y;
}

/*
 * The fewest samples a drawn frame has: FLAME_MIN_SHARE of all, and more
 * than the widest frame left out by FLAME_MAX_FRAMES. A child never has more
 * samples than its parent, so the frames kept form a tree.
 */
static int choose_threshold(struct flame *fl)
{
	__u64 *v, min = (__u64)(fl->root.count * FLAME_MIN_SHARE);
	size_t nr = 0;

	fl->min_keep = min > 1 ? min : 1;
	if (fl->nr_nodes <= FLAME_MAX_FRAMES)
		return 0;
	v = malloc(fl->nr_nodes * sizeof(*v));
	if (!v)
		return -ENOMEM;
	collect_counts(&fl->root, v, &nr);
	qsort(v, nr, sizeof(*v), cmp_desc);
	if (v[FLAME_MAX_FRAMES] + 1 > fl->min_keep)
		fl->min_keep = v[FLAME_MAX_FRAMES] + 1;
	free(v);
	return 0;
}

/* Frames in subtree n (n included). */
static size_t subtree_size(const struct fnode *n)
{
	const struct fnode *c;
	size_t k = 1;

	for (c = n->child; c; c = c->next)
		k += subtree_size(c);
	return k;
}

static void mark_kept(struct flame *fl, struct fnode *n)
{
	struct fnode *c;
	bool merged = false;

	for (c = n->child; c; c = c->next) {
		c->keep = c->count >= fl->min_keep;
		if (c->keep) {
			mark_kept(fl, c);
			continue;
		}
		fl->nr_merged += subtree_size(c);
		fl->merged_samples += c->count;
		merged = true;
	}
	if (merged) {
		fl->nr_boxes++;
		if (n->depth + 1 > fl->max_depth)
			fl->max_depth = n->depth + 1;
	}
	if (n->depth > fl->max_depth)
		fl->max_depth = n->depth;
}

/* --- drawing ----------------------------------------------------------------------- */

static double name_hash(const char *s)
{
	unsigned int h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return (h % 1000) / 1000.0;
}

/* Warm reds for the program's code, greens for libraries, blues for the kernel, greys for the rest. */
static const char *kind_colour(enum flame_kind k, const char *name, char *buf)
{
	double v = name_hash(name);

	switch (k) {
	case FLAME_USER: return svg_hsl(2 + 26 * v, 0.80, 0.60 + 0.08 * v, buf);
	case FLAME_LIB: return svg_hsl(88 + 40 * v, 0.45, 0.56 + 0.08 * v, buf);
	case FLAME_KERNEL: return svg_hsl(196 + 24 * v, 0.60, 0.64 + 0.08 * v, buf);
	case FLAME_UNKNOWN: return svg_hsl(0, 0, 0.70 + 0.06 * v, buf);
	default: return svg_hsl(40, 0.10, 0.86, buf);
	}
}

struct layout {
	struct svg *doc;
	double base;        /* y of the root's row */
	__u64 total;
};

/* The label that fits w px, as the script makes it when zooming: cut with "..". */
static void draw_label(FILE *f, const char *name, double x, double y, double w)
{
	int fit = (int)((w - 6) / CHAR_W), len = strlen(name);
	char buf[SVG_MAX_TEXT + 1];

	if (fit < 3)
		return;
	if (fit > SVG_MAX_TEXT)
		fit = SVG_MAX_TEXT;
	if (len > fit)
		snprintf(buf, sizeof(buf), "%.*s..", fit - 2, name);
	else
		snprintf(buf, sizeof(buf), "%s", name);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11);
	svg_escape(f, buf);
	fputs("</text>", f);
}

/* px on the 0.01 px grid that the coordinates are printed with. */
static double on_grid(double px)
{
	return round(px * 100) / 100;
}

/*
 * Both edges on the printed grid and the width their difference: a
 * frame's children then end exactly where it ends (rounding x and width
 * apart put the last child up to 0.01 px past its parent, and the zoom's
 * script, which shows what lies within the clicked frame, hid it).
 */
static void draw_box(const struct layout *L, const char *name, const char *object, const char *fill,
		     int depth, __u64 before, __u64 count, __u64 self)
{
	double x = on_grid(X0 + W * before / L->total), y = L->base - depth * ROW;
	double w = on_grid(X0 + W * (before + count) / L->total) - x;
	FILE *f = L->doc->body;

	fprintf(f, "<g class=\"fr\" data-n=\"%llu\"><title>", (unsigned long long)count);
	svg_escape(f, name);
	if (*object) {
		fputs("\nobject: ", f);
		svg_escape(f, object);
	}
	fprintf(f, "\n%llu samples, %.2f%%; self %llu</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		   "height=\"%.0f\" rx=\"2\" fill=\"%s\"/>", (unsigned long long)count, 100.0 * count / L->total,
		(unsigned long long)self, x, y, w, ROW - 1, fill);
	draw_label(f, name, x, y, w);
	fputs("</g>\n", f);
}

static int cmp_name(const void *a, const void *b)
{
	const struct fnode *x = *(struct fnode *const *)a, *y = *(struct fnode *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->object, y->object);
}

static int draw_node(const struct layout *L, const struct fnode *n, __u64 before);

/* n's kept children side by side in name order, then one box for the merged ones. */
static int draw_children(const struct layout *L, const struct fnode *n, __u64 before)
{
	size_t nr = 0, i, merged = 0;
	__u64 at = before, merged_n = 0;
	const struct fnode *c, **v;
	char name[64];
	int err = 0;

	for (c = n->child; c; c = c->next)
		nr++;
	v = malloc((nr ? nr : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (nr = 0, c = n->child; c; c = c->next)
		v[nr++] = c;
	qsort(v, nr, sizeof(*v), cmp_name);
	for (i = 0; i < nr && !err; i++) {
		if (v[i]->keep) {
			err = draw_node(L, v[i], at);
			at += v[i]->count;
		} else {
			merged += subtree_size(v[i]);
			merged_n += v[i]->count;
		}
	}
	if (merged_n && !err) {
		snprintf(name, sizeof(name), "[%zu frames merged]", merged);
		draw_box(L, name, "", "#c8c8c8", n->depth + 1, at, merged_n, 0);
	}
	free(v);
	return err;
}

static int draw_node(const struct layout *L, const struct fnode *n, __u64 before)
{
	const struct fnode *c;
	__u64 self = n->count;
	char fill[8];

	for (c = n->child; c; c = c->next)
		self -= c->count;
	draw_box(L, n->name, n->object, kind_colour(n->kind, n->name, fill), n->depth, before, n->count, self);
	return draw_children(L, n, before);
}

static void draw_legend(FILE *f, double y)
{
	static const struct {
		enum flame_kind k;
		const char *text;
	} kinds[] = {
		{ FLAME_USER, "user code" }, { FLAME_LIB, "shared library" },
		{ FLAME_KERNEL, "kernel" }, { FLAME_UNKNOWN, "unknown" },
	};
	double x = 330;
	char fill[8];
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" rx=\"2\" fill=\"%s\"/>"
			   "<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", x, y - 10, kind_colour(kinds[i].k, "", fill),
			x + 16, y, kinds[i].text);
		x += 30 + 6.7 * strlen(kinds[i].text);
	}
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" rx=\"2\" fill=\"%s\"/>"
		   "<text x=\"%.0f\" y=\"%.0f\">search match</text>\n", x, y - 10, HIGHLIGHT, x + 16, y);
}

static void draw_header(FILE *f, double y, const char *heading)
{
	fprintf(f, "<text class=\"h1\" x=\"%.0f\" y=\"%.0f\">", X0, y + 22);
	svg_escape(f, heading);
	fprintf(f, "</text>\n<text id=\"unzoom\" class=\"btn\" style=\"display:none\" x=\"%.0f\" y=\"%.0f\">Reset zoom</text>\n"
		   "<text id=\"search\" class=\"btn\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">Search</text>\n"
		   "<text id=\"clear\" class=\"btn\" style=\"display:none\" x=\"%.0f\" y=\"%.0f\" "
		   "text-anchor=\"end\">Clear search</text>\n",
		X0, y + 44, X0 + W, y + 44, X0 + W - 70, y + 44);
	draw_legend(f, y + 44);
}

static void draw_footer(struct flame *fl, FILE *f, double y)
{
	fprintf(f, "<text id=\"details\" x=\"%.0f\" y=\"%.0f\"> </text>\n"
		   "<text id=\"matched\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\"> </text>\n", X0, y + 14, X0 + W, y + 14);
	fprintf(f, "<text class=\"sm\" x=\"%.0f\" y=\"%.0f\">Click a frame to zoom, Search to highlight "
		   "(or open FILE.svg?s=NAME); widths are samples.", X0, y + 30);
	if (fl->nr_merged)
		fprintf(f, " %zu frames with fewer than %llu samples (%.2f%% of all together) are merged into %zu grey boxes.",
			fl->nr_merged, (unsigned long long)fl->min_keep, 100.0 * fl->merged_samples / fl->root.count,
			fl->nr_boxes);
	fputs("</text>\n", f);
}

int flame_render(struct flame *fl, struct svg *doc, const char *heading)
{
	struct layout L = { .doc = doc, .total = fl->root.count ? fl->root.count : 1 };
	FILE *f = doc->body;
	double y = doc->height;
	int err;

	err = choose_threshold(fl);
	if (err)
		return err;
	fl->max_depth = 0;
	fl->nr_merged = fl->nr_boxes = fl->merged_samples = 0;
	mark_kept(fl, &fl->root);
	draw_header(f, y, heading);
	L.base = y + TOP + fl->max_depth * ROW;
	fprintf(f, "<g id=\"flame\" data-x0=\"%.0f\" data-w=\"%.0f\" data-cw=\"%.1f\" data-hl=\"%s\" "
		   "data-total=\"%llu\">\n", X0, W, CHAR_W, HIGHLIGHT, (unsigned long long)fl->root.count);
	err = draw_node(&L, &fl->root, 0);
	fputs("</g>\n", f);
	draw_footer(fl, f, L.base + ROW);
	doc->height = L.base + ROW + 42;
	return err;
}
