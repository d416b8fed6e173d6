// SPDX-License-Identifier: GPL-2.0
/* The SVG pictures: escaping, the flame graph's widths and its bound, the heatmap's columns. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/flame.h"
#include "report/heatmap.h"
#include "format/svg.h"
#include "unit.h"

static char *escape(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	svg_escape(f, s);
	fclose(f);
	return buf;
}

static void test_escape(void)
{
	char *e = escape("a<b>&\"'\x01\xff\xc3\xa9\xed\xa0\x80z"), long_name[400];

	/* Entities, a control character and bytes that are no UTF-8 (a stray byte, a surrogate) as '?'. */
	CHECK(!strcmp(e, "a&lt;b&gt;&amp;&quot;&#39;??\xc3\xa9?z"));
	free(e);
	memset(long_name, '<', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	e = escape(long_name);
	/* Cut at the bound, between entities. */
	CHECK(strlen(e) <= SVG_MAX_TEXT + 3);
	CHECK(!strcmp(e + strlen(e) - 7, "&lt;..."));
	free(e);
}

/* The document's body so far, NUL-terminated. */
static const char *body(struct svg *doc)
{
	fflush(doc->body);
	return doc->buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

static void test_flame_widths(void)
{
	struct flame_frame ab[] = { { "a", "/bin/x", FLAME_USER }, { "b<T>", "/bin/x", FLAME_USER } };
	struct flame_frame ac[] = { { "a", "/bin/x", FLAME_USER }, { "c", "/lib/libc.so.6", FLAME_LIB } };
	struct flame *fl = flame_new("x (pid 1)");
	struct svg doc;

	CHECK(fl && !svg_init(&doc));
	CHECK(!flame_add(fl, ab, 2, 3) && !flame_add(fl, ac, 2, 1));
	CHECK(!flame_render(fl, &doc, "heading"));
	/* 1180 px for 4 samples: b 3/4, c 1/4, side by side after a. */
	CHECK(strstr(body(&doc), "data-n=\"3\"><title>b&lt;T&gt;\nobject: /bin/x\n3 samples, 75.00%; self 3</title>"));
	CHECK(strstr(body(&doc), "width=\"885.00\""));
	CHECK(strstr(body(&doc), "x=\"895.00\"") && strstr(body(&doc), "width=\"295.00\""));
	CHECK(count(body(&doc), "class=\"fr\"") == 4);
	CHECK(!strstr(body(&doc), "merged"));
	flame_free(fl);
	svg_free(&doc);
}

/* Frames as the zoom's script reads them: x and width parsed from the document. */
static double attr_after(const char *from, const char *name)
{
	const char *p = strstr(from, name);

	return p ? strtod(p + strlen(name), NULL) : -1;
}

/*
 * 6 samples: a;b, a;c and 4 of z. a (393.33 px) is followed by z, so its
 * last child c (x 206.67, width 196.67 as each rounds alone) would end at
 * 403.34, past a's 403.33, and the zoom would hide it: children end where
 * their parent ends, to the printed 0.01 px.
 */
static void test_flame_children_within_parent(void)
{
	struct flame_frame ab[] = { { "a", "/bin/x", FLAME_USER }, { "b", "/bin/x", FLAME_USER } };
	struct flame_frame ac[] = { { "a", "/bin/x", FLAME_USER }, { "c", "/bin/x", FLAME_USER } };
	struct flame_frame z[] = { { "z", "/bin/x", FLAME_USER } };
	struct flame *fl = flame_new("x (pid 1)");
	const char *a, *c;
	struct svg doc;

	CHECK(fl && !svg_init(&doc));
	CHECK(!flame_add(fl, ab, 2, 1) && !flame_add(fl, ac, 2, 1) && !flame_add(fl, z, 1, 4));
	CHECK(!flame_render(fl, &doc, "heading"));
	a = strstr(body(&doc), "<title>a\n");
	c = strstr(body(&doc), "<title>c\n");
	CHECK(a && c);
	if (a && c)
		CHECK(fabs(attr_after(c, " x=\"") + attr_after(c, "width=\"") -
			   attr_after(a, " x=\"") - attr_after(a, "width=\"")) < 1e-6);
	flame_free(fl);
	svg_free(&doc);
}

/* 100000 distinct stacks: frames merged past FLAME_MAX_FRAMES, the document stays bounded. */
static void test_flame_bound(void)
{
	struct flame *fl = flame_new("big");
	struct flame_frame fr[3];
	char a[32], b[32], c[300];
	struct svg doc;
	int i;

	CHECK(fl && !svg_init(&doc));
	for (i = 0; i < 100000; i++) {
		snprintf(a, sizeof(a), "f%d", i % 300);
		snprintf(b, sizeof(b), "g%d", i % 7000);
		memset(c, '&', sizeof(c) - 1);   /* names that escape to 5 times their length */
		snprintf(c + sizeof(c) - 8, 8, "%d", i);
		fr[0] = (struct flame_frame){ a, "/bin/x", FLAME_USER };
		fr[1] = (struct flame_frame){ b, "/lib/y", FLAME_LIB };
		fr[2] = (struct flame_frame){ c, "[kernel.kallsyms]", FLAME_KERNEL };
		CHECK(!flame_add(fl, fr, 3, 1 + i % 5));
	}
	CHECK(!flame_render(fl, &doc, "big"));
	CHECK(count(body(&doc), "class=\"fr\"") <= 2 * FLAME_MAX_FRAMES + 1);
	CHECK(strstr(body(&doc), "frames merged]"));
	CHECK(strstr(body(&doc), "merged into"));
	/* Each box: its title (name and object at most SVG_MAX_TEXT + 3 each), label, geometry. */
	CHECK(doc.len <= (2 * FLAME_MAX_FRAMES + 1) * (3 * (SVG_MAX_TEXT + 3) + 260) + 4096);
	flame_free(fl);
	svg_free(&doc);
}

/* Sum of the data-n of rects of class cls. */
static unsigned long long sum_of(const char *s, const char *cls)
{
	unsigned long long sum = 0;
	char key[32];

	snprintf(key, sizeof(key), "class=\"%s\" data-n=\"", cls);
	for (; (s = strstr(s, key)); s++)
		sum += strtoull(s + strlen(key), NULL, 10);
	return sum;
}

/* 250 automatic columns' worth of calls: merged down to at most 100, every call kept. */
static void test_heatmap_columns(void)
{
	struct probe p = { .name = "f", .object = "/bin/x", .main_exe = true, .exit = EXIT_URETPROBE };
	struct probe_list pl = { .probes = &p, .nr = 1 };
	struct heatmap *hm = heatmap_new(&pl, 0, 0, 0);
	struct fn_stats *s = calloc(1, sizeof(*s));
	unsigned long long calls = 0;
	struct svg doc;
	double t = 0;
	int i;

	CHECK(hm && s && !svg_init(&doc));
	for (i = 0; i < 250; i++) {
		memset(s, 0, sizeof(*s));
		s->calls = 10 + i;
		s->hist[400 + i % 100] = s->calls - 3;
		s->hist[600] = 3;
		s->wall_min = 1000, s->wall_max = 1 << 20;
		calls += s->calls;
		t = heatmap_next(hm);
		CHECK(!heatmap_add(hm, t, s, NULL));
	}
	CHECK(t > 24.9);   /* 0.1 s columns, then 0.2 s, 0.4 s as they merge */
	CHECK(!heatmap_render(hm, &doc, "heatmaps"));
	CHECK(sum_of(body(&doc), "c") == calls);
	CHECK(sum_of(body(&doc), "hb") == calls);
	CHECK(!strstr(body(&doc), "data-c=\"100\""));
	CHECK(strstr(body(&doc), "data-c=\"50\""));
	heatmap_free(hm);
	free(s);
	svg_free(&doc);
}

int main(void)
{
	RUN(test_escape);
	RUN(test_flame_widths);
	RUN(test_flame_children_within_parent);
	RUN(test_flame_bound);
	RUN(test_heatmap_columns);
	UNIT_EXIT();
}
