// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>

#include "base/sanitize.h"

/* Continuation bytes of a lead byte, and the range the first one must fall in (no overlongs, no surrogates). */
static size_t utf8_expect(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80, *hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 1;
	if (c >= 0xe0 && c <= 0xef) {
		*lo = c == 0xe0 ? 0xa0 : 0x80;
		*hi = c == 0xed ? 0x9f : 0xbf;
		return 2;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		*lo = c == 0xf0 ? 0x90 : 0x80;
		*hi = c == 0xf4 ? 0x8f : 0xbf;
		return 3;
	}
	return 0;
}

size_t utf8_char_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo, hi;
	size_t n, i;

	if (!p[0])
		return 0;
	if (p[0] < 0x80)
		return 1;
	n = utf8_expect(p[0], &lo, &hi);
	if (!n || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i <= n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n + 1;
}

/* C0 controls, DEL, and C1 controls (U+0080..U+009F, encoded c2 80..c2 9f): escapes start with these. */
static bool is_control(const unsigned char *p, size_t n)
{
	return (n == 1 && (p[0] < 0x20 || p[0] == 0x7f)) || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

static const char *sanitize(const char *s, char *buf, size_t size, bool folded)
{
	size_t o = 0, n;

	if (!size)
		return buf;
	for (; *s && o + 1 < size; s += n ? n : 1) {
		n = utf8_char_len(s);
		if (!n || is_control((const unsigned char *)s, n) || (folded && *s == ';')) {
			buf[o++] = folded && *s == ';' ? ':' : '?';
			continue;
		}
		if (o + n >= size)
			break;
		memcpy(buf + o, s, n);
		o += n;
	}
	buf[o] = 0;
	return buf;
}

const char *sanitize_term(const char *s, char *buf, size_t size)
{
	return sanitize(s, buf, size, false);
}

const char *sanitize_folded(const char *s, char *buf, size_t size)
{
	return sanitize(s, buf, size, true);
}

bool utf8_valid(const char *s)
{
	size_t n;

	for (; *s; s += n)
		if (!(n = utf8_char_len(s)))
			return false;
	return true;
}

bool text_clean(const char *s)
{
	size_t n;

	for (; *s; s += n)
		if (!(n = utf8_char_len(s)) || is_control((const unsigned char *)s, n))
			return false;
	return true;
}

char *sanitize_text_dup(const char *s)
{
	/* Each byte becomes at most the 3 bytes of U+FFFD. */
	char *out = malloc(3 * strlen(s) + 1), *o = out;
	size_t n;

	if (!out)
		return NULL;
	for (; *s; s += n ? n : 1) {
		n = utf8_char_len(s);
		if (n && is_control((const unsigned char *)s, n)) {
			*o++ = '?';
		} else if (n) {
			memcpy(o, s, n);
			o += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
		}
	}
	*o = 0;
	return out;
}
