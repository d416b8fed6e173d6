// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "report/heatmap.h"
#include "base/hist.h"
#include "report/report.h"

/* --- the data: per column and function, the calls per bucket ------------------- */

struct cell {
	__u32 b;            /* bucket, bias subtracted */
	__u32 pad;
	__u64 n;
};

/* One function in one column. */
struct hcol {
	struct cell *cells;  /* sorted by bucket */
	size_t nr;
	__u64 calls;
	double min, max;     /* wall extremes, bias subtracted */
	double wall, oncpu, runq, blocked;  /* ns in all its calls, bias subtracted */
};

struct column {
	double t0, t1;       /* monotonic s */
	unsigned int units;  /* -i intervals or automatic periods it holds */
};

struct heatmap {
	const struct probe_list *pl;
	double t0, t_last, base_s;
	bool fixed;          /* columns are the -i reports */
	unsigned int per_col;   /* units a column holds since the last merge */
	struct column *cols;
	size_t nr_cols, cap_cols;
	struct hcol *data;   /* nr_cols blocks of pl->nr */
	size_t cap_data;
};

struct heatmap *heatmap_new(const struct probe_list *pl, double t0, double interval_s, double duration_s)
{
	struct heatmap *hm = calloc(1, sizeof(*hm));

	if (!hm)
		return NULL;
	hm->pl = pl;
	hm->t0 = hm->t_last = t0;
	hm->fixed = interval_s > 0;
	hm->per_col = 1;
	hm->base_s = interval_s;
	if (!hm->fixed) {
		/* Reading many functions' aggregates often would cost: one read per 64 functions per period. */
		hm->base_s = HEATMAP_AUTO_S * (1 + pl->nr / 64);
		if (duration_s / HEATMAP_MAX_COLS > hm->base_s)
			hm->base_s = duration_s / HEATMAP_MAX_COLS;
	}
	return hm;
}

static void free_cols(struct hcol *d, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(d[i].cells);
}

void heatmap_free(struct heatmap *hm)
{
	if (!hm)
		return;
	free_cols(hm->data, hm->nr_cols * hm->pl->nr);
	free(hm->data);
	free(hm->cols);
	free(hm);
}

double heatmap_next(const struct heatmap *hm)
{
	return hm->fixed ? 1e300 : hm->t_last + hm->base_s * hm->per_col;
}

/* Adds b's cells into a (both sorted by bucket). 0 or -ENOMEM. */
static int merge_cells(struct hcol *a, const struct hcol *b)
{
	struct cell *m = malloc((a->nr + b->nr ? a->nr + b->nr : 1) * sizeof(*m));
	size_t i = 0, j = 0, k = 0;

	if (!m)
		return -ENOMEM;
	while (i < a->nr || j < b->nr) {
		if (j == b->nr || (i < a->nr && a->cells[i].b < b->cells[j].b))
			m[k++] = a->cells[i++];
		else if (i == a->nr || b->cells[j].b < a->cells[i].b)
			m[k++] = b->cells[j++];
		else {
			m[k] = a->cells[i++];
			m[k++].n += b->cells[j++].n;
		}
	}
	free(a->cells);
	a->cells = m;
	a->nr = k;
	if (b->calls && (!a->calls || b->min < a->min))
		a->min = b->min;
	if (b->max > a->max)
		a->max = b->max;
	a->calls += b->calls;
	a->wall += b->wall, a->oncpu += b->oncpu, a->runq += b->runq, a->blocked += b->blocked;
	return 0;
}

/*
 * One function's interval: its histogram moved down by the bias the reports
 * subtract from percentiles (each bucket's midpoint, re-bucketed), so that
 * the cells and the p50/p99 lines agree with the tables.
 */
static int fill_col(struct hcol *c, const struct report *rep, const struct fn_stats *s)
{
	struct cell cells[FNPROF_HIST_BUCKETS];
	struct fn_figures g;
	unsigned int b, nb;
	size_t k = 0;

	memset(c, 0, sizeof(*c));
	if (!s->calls)
		return 0;
	fn_figures_compute(rep, s, &g);
	for (b = 0; b < FNPROF_HIST_BUCKETS; b++) {
		double mid = (hist_bucket_lo(b) + hist_bucket_hi(b)) / 2.0 - g.shift_ns;

		if (!s->hist[b])
			continue;
		nb = hist_bucket_of(mid > 0 ? (__u64)mid : 0);
		if (k && cells[k - 1].b == nb)  /* buckets only move down together: still sorted */
			cells[k - 1].n += s->hist[b];
		else
			cells[k++] = (struct cell){ .b = nb, .n = s->hist[b] };
	}
	/* Only the buckets with calls are kept: most functions fill a few. */
	c->cells = malloc((k ? k : 1) * sizeof(*c->cells));
	if (!c->cells)
		return -ENOMEM;
	memcpy(c->cells, cells, k * sizeof(*cells));
	c->nr = k;
	c->calls = s->calls;
	c->min = g.wall_min, c->max = g.wall_max;
	c->wall = g.wall_avg * s->calls;
	c->oncpu = g.oncpu_total;
	c->runq = g.runq_avg * s->calls, c->blocked = g.blocked_avg * s->calls;
	return 0;
}

/* Merges columns in pairs: at most HEATMAP_MAX_COLS / 2 + 1 stay. */
static int halve_columns(struct heatmap *hm)
{
	size_t nf = hm->pl->nr, c, i, k = 0;
	int err = 0;

	for (c = 0; c < hm->nr_cols; c += 2, k++) {
		struct hcol *dst = &hm->data[k * nf];

		if (k != c) {
			memmove(dst, &hm->data[c * nf], nf * sizeof(*dst));
			hm->cols[k] = hm->cols[c];
		}
		if (c + 1 == hm->nr_cols)
			continue;
		for (i = 0; i < nf && !err; i++)
			err = merge_cells(&dst[i], &hm->data[(c + 1) * nf + i]);
		free_cols(&hm->data[(c + 1) * nf], nf);
		hm->cols[k].t1 = hm->cols[c + 1].t1;
		hm->cols[k].units += hm->cols[c + 1].units;
	}
	hm->nr_cols = k;
	hm->per_col *= 2;
	return err;
}

/* The column the next units go into: the last one while it has room, else a new one. */
static struct hcol *column_for(struct heatmap *hm, double t, unsigned int units, bool *fresh)
{
	size_t nf = hm->pl->nr;
	struct column *last = hm->nr_cols ? &hm->cols[hm->nr_cols - 1] : NULL;

	*fresh = !last || last->units + units > hm->per_col;
	if (!*fresh) {
		last->t1 = t;
		last->units += units;
		return &hm->data[(hm->nr_cols - 1) * nf];
	}
	if (ARRAY_RESERVE(hm->cols, hm->nr_cols + 1, hm->cap_cols) ||
	    ARRAY_RESERVE(hm->data, (hm->nr_cols + 1) * nf, hm->cap_data))
		return NULL;
	hm->cols[hm->nr_cols] = (struct column){ .t0 = hm->t_last, .t1 = t, .units = units };
	return &hm->data[hm->nr_cols++ * nf];
}

int heatmap_add(struct heatmap *hm, double t, const struct fn_stats *stats, const struct calibration *cal)
{
	struct report rep = { .pl = hm->pl, .stats = stats, .cal = cal, .interval_s = t - hm->t_last };
	unsigned int units = hm->fixed ? 1 : hm->per_col;
	struct hcol *dst, c;
	bool fresh;
	size_t i;
	int err = 0;

	report_prepare(&rep);
	dst = column_for(hm, t, units, &fresh);
	if (!dst)
		return -ENOMEM;
	for (i = 0; i < hm->pl->nr && !err; i++) {
		if (fresh) {
			err = fill_col(&dst[i], &rep, &stats[i]);
			continue;
		}
		err = fill_col(&c, &rep, &stats[i]);
		if (!err)
			err = merge_cells(&dst[i], &c);
		free(c.cells);
	}
	hm->t_last = t;
	if (!err && hm->nr_cols > HEATMAP_MAX_COLS)
		err = halve_columns(hm);
	return err;
}

/* --- drawing ---------------------------------------------------------------- */

#define PL 78.0          /* plot's left edge (room for the latency labels) */
#define PW 860.0         /* plot width */
#define HX (PL + PW + 24)  /* the run's histogram */
#define HW (SVG_WIDTH - 10 - HX - 80)
#define PANEL 80.0       /* height of the on/off-CPU panel */

/* One function's rows: buckets [b0, b0 + rows * g), g per row, and the geometry. */
struct fn_view {
	const struct heatmap *hm;
	size_t fn;
	FILE *f;
	unsigned int b0, g, rows;
	double top, rh, t_span;
	__u64 calls, max_cell, *row_calls;
	double wall, oncpu, runq, blocked, min, max;
	__u64 *hist;         /* the run's, by (bias-subtracted) bucket */
};

static const struct hcol *col_of(const struct fn_view *v, size_t c)
{
	return &v->hm->data[c * v->hm->pl->nr + v->fn];
}

/* Sums the run: histogram, extremes, times; the buckets it spans. */
static void sum_run(struct fn_view *v, unsigned int *lo, unsigned int *hi)
{
	size_t c, k;

	*lo = FNPROF_HIST_BUCKETS, *hi = 0;
	for (c = 0; c < v->hm->nr_cols; c++) {
		const struct hcol *h = col_of(v, c);

		if (!h->calls)
			continue;
		if (!v->calls || h->min < v->min)
			v->min = h->min;
		v->max = h->max > v->max ? h->max : v->max;
		v->calls += h->calls;
		v->wall += h->wall, v->oncpu += h->oncpu, v->runq += h->runq, v->blocked += h->blocked;
		for (k = 0; k < h->nr; k++) {
			v->hist[h->cells[k].b] += h->cells[k].n;
			*lo = h->cells[k].b < *lo ? h->cells[k].b : *lo;
			*hi = h->cells[k].b > *hi ? h->cells[k].b : *hi;
		}
	}
}

/* Rows of g buckets (a power of two, aligned) covering at least 24 buckets around the run's. */
static void choose_rows(struct fn_view *v, unsigned int lo, unsigned int hi)
{
	unsigned int span;

	if (hi < lo)
		lo = hi = 0;
	while (hi - lo + 1 < 24) {
		lo = lo ? lo - 1 : 0;
		if (hi - lo + 1 < 24 && hi + 1 < FNPROF_HIST_BUCKETS)
			hi++;
		if (!lo && hi + 1 >= FNPROF_HIST_BUCKETS)
			break;
	}
	for (v->g = 1;; v->g *= 2) {
		v->b0 = lo / v->g * v->g;
		span = hi - v->b0 + 1;
		v->rows = (span + v->g - 1) / v->g;
		if (v->rows <= HEATMAP_MAX_ROWS)
			break;
	}
	v->rh = floor(240.0 / v->rows);
	v->rh = v->rh < 4 ? 4 : v->rh > 14 ? 14 : v->rh;
}

static unsigned int row_of(const struct fn_view *v, unsigned int b)
{
	return (b - v->b0) / v->g;
}

/* y of a latency: its place among the buckets (linear inside one), high latencies at the top. */
static double y_of(const struct fn_view *v, double ns)
{
	unsigned int b = hist_bucket_of(ns > 0 ? (__u64)ns : 0);
	double lo = hist_bucket_lo(b), hi = hist_bucket_hi(b), pos;

	pos = (b + (hi > lo ? (ns - lo) / (hi - lo) : 0) - v->b0) / v->g;
	if (pos < 0)
		pos = 0;
	if (pos > v->rows)
		pos = v->rows;
	return v->top + (v->rows - pos) * v->rh;
}

static double x_of(const struct fn_view *v, double t)
{
	return PL + PW * (t - v->hm->t0) / v->t_span;
}

/* Yellow to dark red (ColorBrewer YlOrRd) for t in [0, 1]. */
static const char *colour_at(double t, char *buf)
{
	static const double stops[][3] = {
		{ 255, 237, 160 }, { 254, 178, 76 }, { 240, 59, 32 }, { 128, 0, 38 },
	};
	double p;
	int k;

	t = t < 0 ? 0 : t > 1 ? 1 : t;
	k = t >= 1 ? 2 : (int)(t * 3);
	p = t * 3 - k;
	snprintf(buf, 8, "#%02x%02x%02x", (int)(stops[k][0] + p * (stops[k + 1][0] - stops[k][0])),
		 (int)(stops[k][1] + p * (stops[k + 1][1] - stops[k][1])),
		 (int)(stops[k][2] + p * (stops[k + 1][2] - stops[k][2])));
	return buf;
}

/* On a log scale of the calls: cells of rare latencies stay visible beside the crowded ones. */
static const char *cell_colour(__u64 n, __u64 max, char *buf)
{
	return colour_at(max > 1 ? log(n) / log(max) : 1, buf);
}

/* The calls of column c, per row; returns the largest. */
static __u64 column_rows(const struct fn_view *v, size_t c, __u64 *rows)
{
	const struct hcol *h = col_of(v, c);
	__u64 max = 0;
	size_t k;

	memset(rows, 0, v->rows * sizeof(*rows));
	for (k = 0; k < h->nr; k++) {
		unsigned int r = row_of(v, h->cells[k].b);

		rows[r] += h->cells[k].n;
		max = rows[r] > max ? rows[r] : max;
	}
	return max;
}

static void draw_cells(struct fn_view *v, __u64 *rows)
{
	char fill[8], lo[16], hi[16];
	unsigned int r;
	size_t c;

	for (c = 0; c < v->hm->nr_cols; c++) {
		double x0 = x_of(v, v->hm->cols[c].t0), x1 = x_of(v, v->hm->cols[c].t1);

		column_rows(v, c, rows);
		for (r = 0; r < v->rows; r++) {
			if (!rows[r])
				continue;
			fprintf(v->f, "<rect class=\"c\" data-n=\"%llu\" data-c=\"%zu\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
				       "height=\"%.1f\" fill=\"%s\"><title>%llu calls of %s-%s at %.2f-%.2f s</title></rect>\n",
				(unsigned long long)rows[r], c, x0, v->top + (v->rows - 1 - r) * v->rh, x1 - x0, v->rh,
				cell_colour(rows[r], v->max_cell, fill), (unsigned long long)rows[r],
				fmt_ns(hist_bucket_lo(v->b0 + r * v->g), lo, sizeof(lo)),
				fmt_ns(hist_bucket_lo(v->b0 + (r + 1) * v->g), hi, sizeof(hi)),
				v->hm->cols[c].t0 - v->hm->t0, v->hm->cols[c].t1 - v->hm->t0);
		}
	}
}

/* A column's percentile: its own histogram (bias subtracted already). */
static double col_percentile(const struct fn_view *v, const struct hcol *h, double p, __u64 *dense)
{
	double x;
	size_t k;

	for (k = 0; k < h->nr; k++)
		dense[h->cells[k].b] = h->cells[k].n;
	x = hist_percentile(dense, (__u64)h->min, (__u64)h->max, p, 0);
	for (k = 0; k < h->nr; k++)
		dense[h->cells[k].b] = 0;
	return x;
}

static void draw_steps(const struct fn_view *v, double p, __u64 *dense);

/* p50 or p99 over the columns, on a white halo that keeps it visible over dark cells. */
static void draw_percentile(const struct fn_view *v, double p, const char *style, __u64 *dense)
{
	fputs("<path fill=\"none\" stroke=\"#fff\" stroke-width=\"4\" stroke-opacity=\"0.8\" d=\"", v->f);
	draw_steps(v, p, dense);
	fprintf(v->f, "\"/>\n<path fill=\"none\" %s d=\"", style);
	draw_steps(v, p, dense);
	fputs("\"/>\n", v->f);
}

/* The path of a percentile: a step per column, a gap where a column has no calls. */
static void draw_steps(const struct fn_view *v, double p, __u64 *dense)
{
	bool open = false;
	size_t c;

	for (c = 0; c < v->hm->nr_cols; c++) {
		const struct hcol *h = col_of(v, c);
		double y;

		if (!h->calls) {
			open = false;
			continue;
		}
		y = y_of(v, col_percentile(v, h, p, dense));
		fprintf(v->f, "%s%.2f,%.1f L%.2f,%.1f ", open ? "L" : "M", x_of(v, v->hm->cols[c].t0), y,
			x_of(v, v->hm->cols[c].t1), y);
		open = true;
	}
}

/* A round latency for an axis: "1ms", "1.5ms", "700us" (fmt_ns without its trailing zeros). */
static const char *axis_ns(double ns, char *buf, size_t size)
{
	char *dot, *unit;

	fmt_ns(ns, buf, size);
	dot = strchr(buf, '.');
	if (!dot)
		return buf;
	for (unit = dot + 1; *unit >= '0' && *unit <= '9'; unit++)
		;
	while (unit > dot + 1 && unit[-1] == '0')
		memmove(unit - 1, unit, strlen(unit) + 1), unit--;
	if (unit == dot + 1)
		memmove(dot, unit, strlen(unit) + 1);
	return buf;
}

/* Whether a label at y would crowd one of the n drawn at ys. */
static bool crowded(const double *ys, int n, double y)
{
	int i;

	for (i = 0; i < n; i++)
		if (fabs(ys[i] - y) < 12)
			return true;
	return false;
}

/* Latency labels: 1, 2 and 5 times the powers of ten first, then others where there is room. */
static void draw_y_axis(const struct fn_view *v)
{
	static const double mant[] = { 1, 2, 5, 1.5, 3, 4, 7, 2.5, 6, 8, 9 };
	double ys[64], y, m;
	unsigned int b;
	int n = 0, e, k;
	char buf[16];

	for (k = 0; k < (int)(sizeof(mant) / sizeof(mant[0])); k++) {
		for (e = 0; e < 13 && n < 64; e++) {
			m = mant[k] * pow(10, e);
			b = hist_bucket_of((__u64)m);
			if (b < v->b0 || b >= v->b0 + v->rows * v->g)
				continue;
			y = y_of(v, m);
			if (crowded(ys, n, y))
				continue;
			ys[n++] = y;
			fprintf(v->f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
				       "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
				PL - 4, PL, y, y, PL - 6, y + 3.5, axis_ns(m, buf, sizeof(buf)));
		}
	}
}

/* The run's histogram, row by row beside the heatmap, with the run's p50 and p99. */
static void draw_histogram(struct fn_view *v, __u64 *rows)
{
	double p50 = hist_percentile(v->hist, (__u64)v->min, (__u64)v->max, 50, 0);
	double p99 = hist_percentile(v->hist, (__u64)v->min, (__u64)v->max, 99, 0);
	__u64 max = 0;
	unsigned int r, b;
	double label;
	char buf[16];

	memset(rows, 0, v->rows * sizeof(*rows));
	for (b = 0; b < FNPROF_HIST_BUCKETS; b++)
		if (v->hist[b])
			rows[row_of(v, b)] += v->hist[b];
	for (r = 0; r < v->rows; r++)
		max = rows[r] > max ? rows[r] : max;
	fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\">the run: calls per row</text>\n", HX, v->top - 4);
	for (r = 0; r < v->rows; r++)
		if (rows[r])
			fprintf(v->f, "<rect class=\"hb\" data-n=\"%llu\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
				       "fill=\"#f08a3c\"><title>%llu calls</title></rect>\n", (unsigned long long)rows[r], HX,
				v->top + (v->rows - 1 - r) * v->rh, HW * rows[r] / max, v->rh - (v->rh > 5),
				(unsigned long long)rows[r]);
	fprintf(v->f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#1d4ed8\" stroke-width=\"1.5\"/>"
		       "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\">p50 %s</text>\n", HX, HX + HW, y_of(v, p50), y_of(v, p50),
		HX + HW + 3, y_of(v, p50) + 3.5, fmt_ns(p50, buf, sizeof(buf)));
	/* The p99 label goes above the p50 one where the two lines (nearly) meet. */
	label = fmin(y_of(v, p99), y_of(v, p50) - 11);
	fprintf(v->f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#111\" stroke-width=\"1.5\" "
		       "stroke-dasharray=\"5,3\"/><text class=\"sm\" x=\"%.0f\" y=\"%.1f\">p99 %s</text>\n", HX, HX + HW,
		y_of(v, p99), y_of(v, p99), HX + HW + 3, label + 3.5, fmt_ns(p99, buf, sizeof(buf)));
}

/* On-CPU, run-queue and blocked time per call, each column's average, stacked. */
static void draw_cpu_panel(const struct fn_view *v, double top)
{
	static const char *fills[3] = { "#e4572e", "#f3c623", "#4a90d9" };
	double max = 0, y, part[3];
	char buf[16];
	size_t c;
	int k;

	for (c = 0; c < v->hm->nr_cols; c++)
		if (col_of(v, c)->calls)
			max = fmax(max, (col_of(v, c)->oncpu + col_of(v, c)->runq + col_of(v, c)->blocked) /
					col_of(v, c)->calls);
	fprintf(v->f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#bbb\"/>\n",
		PL, top, PW, PANEL);
	for (c = 0; max > 0 && c < v->hm->nr_cols; c++) {
		const struct hcol *h = col_of(v, c);
		double x0 = x_of(v, v->hm->cols[c].t0), x1 = x_of(v, v->hm->cols[c].t1);

		if (!h->calls)
			continue;
		part[0] = h->oncpu / h->calls, part[1] = h->runq / h->calls, part[2] = h->blocked / h->calls;
		for (y = top + PANEL, k = 0; k < 3; k++) {
			double hgt = PANEL * part[k] / max;

			if (hgt <= 0)
				continue;
			y -= hgt;
			fprintf(v->f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", x0, y,
				x1 - x0, hgt, fills[k]);
		}
	}
	if (max > 0)
		fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", PL - 6, top + 8,
			fmt_ns(max, buf, sizeof(buf)));
	fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", PL - 6, top + PANEL);
}

static void draw_cpu_legend(const struct fn_view *v, double top)
{
	static const char *fills[3] = { "#e4572e", "#f3c623", "#4a90d9" };
	static const char *names[3] = { "on-CPU", "run queue", "blocked" };
	double per[3] = { v->oncpu / v->calls, v->runq / v->calls, v->blocked / v->calls };
	char buf[16];
	int k;

	fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\">per call, column averages (run's)</text>\n",
		HX, top + 8);
	for (k = 0; k < 3; k++)
		fprintf(v->f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			       "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\">%s (%s)</text>\n", HX, top + 16 + 16 * k,
			fills[k], HX + 14, top + 25 + 16 * k, names[k], fmt_ns(per[k], buf, sizeof(buf)));
}

/* Time ticks under the panel: 1, 2 or 5 times a power of ten seconds, at most 12. */
static void draw_x_axis(const struct fn_view *v, double y)
{
	double step = 0.001, t;
	int k = 0;

	while (v->t_span / step > 12)
		step *= (k++ % 3 == 1) ? 2.5 : 2;
	for (t = 0; t <= v->t_span + 1e-9; t += step)
		fprintf(v->f, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
			       "<text class=\"sm\" x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
			x_of(v, v->hm->t0 + t), x_of(v, v->hm->t0 + t), y, y + 4, x_of(v, v->hm->t0 + t), y + 14, t);
	fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">time (s)</text>\n", PL + PW, y + 26);
}

static void draw_scale(const struct fn_view *v, double y)
{
	char fill[8];
	int k;

	fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\">calls per cell: 1</text>\n", HX, y);
	for (k = 0; k < 8; k++)
		fprintf(v->f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"%s\"/>\n", HX + 112 + 12 * k,
			y - 9, colour_at(k / 7.0, fill));
	fprintf(v->f, "<text class=\"sm\" x=\"%.0f\" y=\"%.1f\">%llu</text>\n", HX + 112 + 12 * 8 + 4, y,
		(unsigned long long)v->max_cell);
}

static void draw_heading(const struct fn_view *v, double y)
{
	char name[512], p50[16], p99[16], width[16];

	probe_display_name(&v->hm->pl->probes[v->fn], name, sizeof(name));
	fprintf(v->f, "<text class=\"h2\" x=\"10\" y=\"%.1f\">", y + 16);
	svg_escape(v->f, name);
	fprintf(v->f, ": %llu calls, p50 %s, p99 %s</text>\n", (unsigned long long)v->calls,
		fmt_ns(hist_percentile(v->hist, (__u64)v->min, (__u64)v->max, 50, 0), p50, sizeof(p50)),
		fmt_ns(hist_percentile(v->hist, (__u64)v->min, (__u64)v->max, 99, 0), p99, sizeof(p99)));
	fprintf(v->f, "<text class=\"sm\" x=\"10\" y=\"%.1f\">wall time per call by time (columns of %s%s), "
		       "colour: calls; lines: p50 (blue), p99 (black, dashed) of each column</text>\n", y + 31,
		axis_ns(v->hm->base_s * v->hm->per_col * 1e9, width, sizeof(width)), v->hm->fixed ? ", -i" : "");
}

/* One function's picture at doc->height. */
static int draw_function(const struct heatmap *hm, size_t fn, struct svg *doc, __u64 *hist, __u64 *dense)
{
	struct fn_view v = { .hm = hm, .fn = fn, .f = doc->body, .hist = hist };
	unsigned int lo, hi;
	char name[512];
	size_t c;

	memset(hist, 0, FNPROF_HIST_BUCKETS * sizeof(*hist));
	sum_run(&v, &lo, &hi);
	choose_rows(&v, lo, hi);
	v.row_calls = calloc(v.rows, sizeof(*v.row_calls));
	if (!v.row_calls)
		return -ENOMEM;
	for (c = 0; c < hm->nr_cols; c++) {
		__u64 m = column_rows(&v, c, v.row_calls);

		v.max_cell = m > v.max_cell ? m : v.max_cell;
	}
	v.t_span = hm->nr_cols ? hm->cols[hm->nr_cols - 1].t1 - hm->t0 : 1;
	v.t_span = v.t_span > 0 ? v.t_span : 1;
	v.top = doc->height + 52;
	fprintf(v.f, "<g class=\"heatmap\" data-fn=\"");
	svg_escape(v.f, probe_display_name(&hm->pl->probes[fn], name, sizeof(name)));
	fprintf(v.f, "\" data-calls=\"%llu\">\n", (unsigned long long)v.calls);
	draw_heading(&v, doc->height);
	draw_scale(&v, doc->height + 31);
	fprintf(v.f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"#fff\" stroke=\"#bbb\"/>\n", PL,
		v.top, PW, v.rows * v.rh);
	draw_cells(&v, v.row_calls);
	draw_percentile(&v, 50, "stroke=\"#1d4ed8\" stroke-width=\"2\"", dense);
	draw_percentile(&v, 99, "stroke=\"#111\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"", dense);
	draw_y_axis(&v);
	draw_histogram(&v, v.row_calls);
	draw_cpu_panel(&v, v.top + v.rows * v.rh + 10);
	draw_cpu_legend(&v, v.top + v.rows * v.rh + 10);
	draw_x_axis(&v, v.top + v.rows * v.rh + 10 + PANEL);
	fputs("</g>\n", v.f);
	doc->height = v.top + v.rows * v.rh + 10 + PANEL + 44;
	free(v.row_calls);
	return 0;
}

static double fn_wall(const struct heatmap *hm, size_t fn)
{
	double w = 0;
	size_t c;

	for (c = 0; c < hm->nr_cols; c++)
		w += hm->data[c * hm->pl->nr + fn].wall;
	return w;
}

static int cmp_wall(const void *a, const void *b, void *hm)
{
	double x = fn_wall(hm, *(const size_t *)a), y = fn_wall(hm, *(const size_t *)b);

	return x > y ? -1 : x < y;
}

/* Functions drawn: timed ones with calls, most wall time first. */
static size_t drawable(const struct heatmap *hm, size_t *order)
{
	size_t i, c, nr = 0;

	for (i = 0; i < hm->pl->nr; i++) {
		if (hm->pl->probes[i].exit == EXIT_NONE)
			continue;
		for (c = 0; c < hm->nr_cols; c++)
			if (hm->data[c * hm->pl->nr + i].calls) {
				order[nr++] = i;
				break;
			}
	}
	qsort_r(order, nr, sizeof(*order), cmp_wall, (void *)hm);
	return nr;
}

int heatmap_render(struct heatmap *hm, struct svg *doc, const char *heading)
{
	__u64 *hist = calloc(FNPROF_HIST_BUCKETS, sizeof(*hist)), *dense = calloc(FNPROF_HIST_BUCKETS, sizeof(*dense));
	size_t *order = calloc(hm->pl->nr ? hm->pl->nr : 1, sizeof(*order)), nr, i;
	int err = hist && dense && order ? 0 : -ENOMEM;

	nr = err ? 0 : drawable(hm, order);
	if (!err) {
		fprintf(doc->body, "<text class=\"h1\" x=\"10\" y=\"%.0f\">", doc->height + 24);
		svg_escape(doc->body, heading);
		fputs("</text>\n", doc->body);
		if (nr > HEATMAP_MAX_FUNCS || nr < hm->pl->nr)
			fprintf(doc->body, "<text class=\"sm\" x=\"10\" y=\"%.0f\">%zu of %zu traced functions drawn "
					   "(at most %d, with calls and latency, the most wall time first)</text>\n",
				doc->height + 40, nr < HEATMAP_MAX_FUNCS ? nr : HEATMAP_MAX_FUNCS, hm->pl->nr,
				HEATMAP_MAX_FUNCS);
		doc->height += 44;
	}
	for (i = 0; !err && i < nr && i < HEATMAP_MAX_FUNCS; i++)
		err = draw_function(hm, order[i], doc, hist, dense);
	free(hist);
	free(dense);
	free(order);
	return err;
}
