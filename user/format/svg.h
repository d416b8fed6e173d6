/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Self-contained SVG documents (--svg): built in memory, with one inline
 * style and script shared by the pictures drawn into them (the flame graph,
 * the latency heatmaps), written to a new file and renamed into place. Every
 * element is drawn statically; the script only adds zoom, search and hover.
 */
#ifndef FNPROF_SVG_H
#define FNPROF_SVG_H

#include <stddef.h>
#include <stdio.h>

/* The drawing width of every picture, in px (viewBox units). */
#define SVG_WIDTH 1200

/* Every label and title is cut at this many bytes as written, escapes included (then "..."). */
#define SVG_MAX_TEXT 200

struct svg {
	FILE *body;        /* the elements; picture writers print here */
	char *buf;
	size_t len;
	double height;     /* the next picture goes at this y; pictures add their height */
};

/* A new, empty document. 0 or -ENOMEM. */
int svg_init(struct svg *s);

/*
 * Prints text to f escaped for XML character data and attribute values
 * (& < > " ' as entities; control characters and bytes that are not UTF-8
 * as "?"), cut at SVG_MAX_TEXT bytes written (never inside a character or
 * an entity) with "..." appended.
 */
void svg_escape(FILE *f, const char *text);

/* "#rrggbb" for h (degrees), s and l (0-1). buf holds 8 bytes. */
const char *svg_hsl(double h, double s, double l, char *buf);

/*
 * The finished document (header, style, body, script) written to path
 * through write_file_atomic. title: the document's <title>. 0 or -errno.
 * Frees the body.
 */
int svg_write(struct svg *s, const char *path, const char *title);

/* Frees what svg_init took (safe after svg_write). */
void svg_free(struct svg *s);

#endif /* FNPROF_SVG_H */
