// SPDX-License-Identifier: GPL-2.0
/* Names from the target, made safe per output (issue 11, item 13). */
#include <string.h>

#include "base/sanitize.h"
#include "unit.h"

static void term_drops_escapes(void)
{
	char buf[64];

	/* ESC ] 0 ; title BEL, a CSI clear screen, a C1 CSI (c2 9b), a newline. */
	CHECK(!strcmp(sanitize_term("a\x1b]0;pwn\x07" "b", buf, sizeof(buf)), "a?]0;pwn?b"));
	CHECK(!strcmp(sanitize_term("\x1b[2Jx", buf, sizeof(buf)), "?[2Jx"));
	CHECK(!strcmp(sanitize_term("x\xc2\x9b" "1m\n", buf, sizeof(buf)), "x?1m?"));
	CHECK(!strcmp(sanitize_term("caf\xc3\xa9::f", buf, sizeof(buf)), "caf\xc3\xa9::f"));
}

static void term_drops_bad_utf8(void)
{
	char buf[64];

	CHECK(!strcmp(sanitize_term("a\xff\xfe" "b", buf, sizeof(buf)), "a??b"));
	CHECK(!strcmp(sanitize_term("\xc0\xaf", buf, sizeof(buf)), "??"));         /* overlong '/' */
	CHECK(!strcmp(sanitize_term("\xed\xa0\x80", buf, sizeof(buf)), "???"));    /* surrogate */
	CHECK(!strcmp(sanitize_term("\xe2\x82", buf, sizeof(buf)), "??"));         /* cut short */
}

static void term_never_cuts_a_character(void)
{
	char buf[5];

	/* "ab" + a 3-byte character does not fit in 4 bytes: it is left out whole. */
	CHECK(!strcmp(sanitize_term("ab\xe2\x82\xac", buf, sizeof(buf)), "ab"));
	CHECK(!strcmp(sanitize_term("abcdefg", buf, sizeof(buf)), "abcd"));
}

static void folded_has_no_separator(void)
{
	char buf[64];

	CHECK(!strcmp(sanitize_folded("a;b\nc d", buf, sizeof(buf)), "a:b?c d"));
}

static void text_dup_is_valid_without_escapes(void)
{
	char *s = sanitize_text_dup("a\xff" "b\xc3\xa9\x1b]0;t\x07\x7f\xc2\x9b");
	size_t i, n;

	CHECK(s && !strcmp(s, "a\xef\xbf\xbd" "b\xc3\xa9?]0;t???") && text_clean(s));
	CHECK(text_clean("plain \xc3\xa9") && !text_clean("a\x1b") && !text_clean("\xc2\x85") && !text_clean("\xff"));
	for (i = 0; s[i]; i += n) {
		n = utf8_char_len(s + i);
		CHECK(n);
	}
	free(s);
}

int main(void)
{
	RUN(term_drops_escapes);
	RUN(term_drops_bad_utf8);
	RUN(term_never_cuts_a_character);
	RUN(folded_has_no_separator);
	RUN(text_dup_is_valid_without_escapes);
	UNIT_EXIT();
}
