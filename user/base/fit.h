/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Long names fitted to a table's column: the end (the function) is kept and
 * the middle shortened, the column widened to the terminal's width, and
 * wider still where two names would look the same. JSON keeps names whole.
 */
#ifndef FNPROF_FIT_H
#define FNPROF_FIT_H

#include <stddef.h>
#include <stdio.h>

/* Terminal cells of s (one per UTF-8 character; s as sanitize_term leaves it). */
size_t fit_cells(const char *s);

/*
 * s for a terminal (sanitize_term) in at most width cells, into buf: whole
 * if it fits, else without a C++ parameter list at its end, and if that is
 * still too long, its start, "..", and its end, which holds the last
 * component (after "::", "." or "/" outside brackets) whole where it fits
 * in all but 3 cells. width >= 4. Returns buf.
 */
const char *fit_name(const char *s, size_t width, char *buf, size_t size);

/*
 * The width of a column of n names printed on out: width, or more on a
 * terminal (up to its columns less rest, what the row holds besides, and
 * the longest name); then more until no two different names look the same
 * fitted. 0 when out of memory (the caller prints names whole).
 */
size_t fit_column(FILE *out, const char *const *names, size_t n, size_t width, size_t rest);

/* name fitted to width cells (fit_name), padded with spaces to width; width 0: the name whole. */
void fit_cell(FILE *out, const char *name, size_t width);

/*
 * The sampling tables' FUNCTION and OBJECT cells, then a space: func fitted
 * to func_width cells (fit_column over the rows shown, from FIT_FUNC_WIDTH),
 * the object's base name to FIT_OBJECT_WIDTH.
 */
#define FIT_FUNC_WIDTH 40
#define FIT_OBJECT_WIDTH 20
#define FIT_SAMPLE_REST 60  /* the cells the rest of a sampling row takes */
void fit_name_cells(FILE *out, const char *func, size_t func_width, const char *object);

#endif /* FNPROF_FIT_H */
