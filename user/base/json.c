// SPDX-License-Identifier: GPL-2.0
#include <math.h>

#include "base/json.h"
#include "base/sanitize.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

/*
 * A non-ASCII character at p: written as is when it is well-formed UTF-8, else
 * as U+FFFD; C1 controls escaped. Target-provided names must neither break the
 * JSON nor reach a terminal as escape sequences. Returns the bytes consumed.
 */
static size_t put_non_ascii(FILE *f, const unsigned char *p)
{
	size_t n = utf8_char_len((const char *)p);

	if (!n)
		fputs("\\ufffd", f);
	else if (p[0] == 0xc2 && p[1] < 0xa0)
		fprintf(f, "\\u%04x", p[1]);
	else
		fwrite(p, 1, n, f);
	return n ? n : 1;
}

static void put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		if (*p >= 0x80) {
			p += put_non_ascii(f, p);
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
		p++;
	}
	fputc('"', f);
}

/* Comma and key before a value. */
static void prefix(struct json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (key) {
		put_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_scope(struct json *j, const char *key, char c)
{
	prefix(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_scope(struct json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	fputc(c, j->f);
}

void json_obj_begin(struct json *j, const char *key) { open_scope(j, key, '{'); }
void json_obj_end(struct json *j) { close_scope(j, '}'); }
void json_arr_begin(struct json *j, const char *key) { open_scope(j, key, '['); }
void json_arr_end(struct json *j) { close_scope(j, ']'); }

void json_str(struct json *j, const char *key, const char *v)
{
	prefix(j, key);
	put_string(j->f, v ? v : "");
}

void json_u64(struct json *j, const char *key, __u64 v)
{
	prefix(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_u64s(struct json *j, const struct json_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		json_u64(j, kv[i].key, kv[i].v);
}

void json_i64(struct json *j, const char *key, long long v)
{
	prefix(j, key);
	fprintf(j->f, "%lld", v);
}

void json_f64(struct json *j, const char *key, double v)
{
	prefix(j, key);
	/* JSON has no NaN or infinity. */
	if (isfinite(v))
		fprintf(j->f, "%.*f", fabs(v) >= 1000 ? 1 : 6, v);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool v)
{
	prefix(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	prefix(j, key);
	fputs("null", j->f);
}

void json_report_begin(struct json *j, FILE *f, const char *mode, long long pid, double interval_s)
{
	json_init(j, f);
	json_obj_begin(j, NULL);
	json_str(j, "mode", mode);
	json_i64(j, "pid", pid);
	json_f64(j, "interval_s", interval_s);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
	j->need_comma[0] = false;
}
