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

/* Whether s is well-formed UTF-8 without control characters (C0, DEL, C1): safe as it is. */
bool text_clean(const char *s);

/*
 * s as valid UTF-8 (malformed bytes become U+FFFD) with control characters
 * as '?' (a reader prints these strings: `go tool pprof -top` to a terminal),
 * malloc'd; NULL when out of memory.
 */
char *sanitize_text_dup(const char *s);

#endif /* FNPROF_SANITIZE_H */
