/* SPDX-License-Identifier: GPL-2.0 */
/* A small streaming JSON writer: one object per report, on one line. */
#ifndef FNPROF_JSON_H
#define FNPROF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
};

/* key is NULL for array elements and for the top-level value. */
void json_init(struct json *j, FILE *f);
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *v);
void json_u64(struct json *j, const char *key, __u64 v);
void json_i64(struct json *j, const char *key, long long v);
void json_f64(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);

/* A key and its count: an object of counters is a table of these (json_u64s). */
struct json_kv {
	const char *key;
	__u64 v;
};

/* Writes the n counters of kv, in order, into the object being written. */
void json_u64s(struct json *j, const struct json_kv *kv, size_t n);
#define JSON_U64S(j, kv) json_u64s((j), (kv), sizeof(kv) / sizeof((kv)[0]))
/* Opens a report object with the keys every report starts with: mode, pid, interval_s. */
void json_report_begin(struct json *j, FILE *f, const char *mode, long long pid, double interval_s);

/* Ends the top-level value with a newline and flushes. */
void json_finish(struct json *j);

#endif /* FNPROF_JSON_H */
