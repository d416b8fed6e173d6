/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names that come from the target (symbols, object paths) made safe for each
 * output: no terminal escapes on a terminal, valid UTF-8 in JSON and pprof,
 * no frame separator in folded stacks.
 */
#ifndef FNPROF_SANITIZE_H
#define FNPROF_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Length (1-4) of the well-formed UTF-8 character at s, or 0 if s starts none (or at the NUL). */
size_t utf8_char_len(const char *s);

/*
 * s for a terminal, into buf (at most size-1 bytes, never a character cut):
 * control characters (C0, DEL, C1) and bytes that are not UTF-8 become '?'.
 * Returns buf.
 */
const char *sanitize_term(const char *s, char *buf, size_t size);

/* One folded-stack frame: as sanitize_term, and ';' (the frame separator) becomes ':'. */
const char *sanitize_folded(const char *s, char *buf, size_t size);

/* Whether s is well-formed UTF-8 throughout. */
bool utf8_valid(const char *s);

/* s as valid UTF-8 (malformed bytes become U+FFFD), malloc'd; NULL when out of memory. */
char *sanitize_utf8_dup(const char *s);

#endif /* FNPROF_SANITIZE_H */
