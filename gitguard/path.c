/* SPDX-License-Identifier: MIT */
/* The two lexical path normalisers (ggutil.h says which to use when). */
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gitguard/ggutil.h"

/* Length of the component at P (P not at a slash) */
static size_t comp_len(const char *p)
{
	const char *e = strchr(p, '/');

	return e ? (size_t)(e - p) : strlen(p);
}

int gg_path_abs(const char *in, char *out, size_t outsz)
{
	const char *p;
	size_t n = 0, c;

	if (!in || in[0] != '/')
		return -EINVAL;
	if (outsz < 2)
		return -ENAMETOOLONG;
	for (p = in; *p; p += c) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		c = comp_len(p);
		if (c == 1 && p[0] == '.')
			continue;
		if (c == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--; /* the slash before it; at "/" it stays there */
			continue;
		}
		if (n + 1 + c + 1 > outsz)
			return -ENAMETOOLONG;
		out[n++] = '/';
		memcpy(out + n, p, c);
		n += c;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

int gg_path_next(const char **p, char *comp, size_t compsz)
{
	const char *s = *p;
	size_t c;

	while (*s == '/')
		s++;
	*p = s;
	if (!*s)
		return 0;
	c = comp_len(s);
	*p = s + c;
	if (c >= compsz)
		return -ENAMETOOLONG;
	memcpy(comp, s, c);
	comp[c] = '\0';
	return (int)c;
}

bool gg_path_rel(char *path)
{
	char *out = path, *p = path;
	size_t c;

	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		c = comp_len(p);
		if (c == 1 && p[0] == '.') {
			p += c;
			continue;
		}
		if (c == 2 && p[0] == '.' && p[1] == '.') {
			if (out == path)
				return false;
			while (out > path && out[-1] != '/')
				out--;
			if (out > path)
				out--;
			p += c;
			continue;
		}
		if (out != path)
			*out++ = '/';
		memmove(out, p, c);
		out += c;
		p += c;
	}
	*out = '\0';
	return true;
}

/*
 * The length of the valid UTF-8 sequence at S that is not a C1 control, or
 * 0; its code point in *CP.
 */
static size_t utf8_len(const unsigned char *s, uint32_t *cp)
{
	size_t n, i;
	uint32_t c;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	c = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff) || (c >= 0x80 && c <= 0x9f))
		return 0;
	*cp = c;
	return n;
}

/*
 * Unicode's bidirectional controls: a name holding U+202E shows what follows
 * it reversed ("evil\u202egpj.sh" reads as evilhs.jpg), so a refusal's path
 * could be shown as another. U+061C, U+200E-U+200F, U+202A-U+202E,
 * U+2066-U+2069.
 */
static bool bidi_control(uint32_t c)
{
	return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069);
}

void gg_escape(const char *in, char *out, size_t outsz)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0, n, step;
	uint32_t cp = 0;
	char e[8];

	if (!outsz)
		return;
	while (*s) {
		n = *s >= 0x80 ? utf8_len(s, &cp) : 1;
		step = 1;
		if (n > 1 && bidi_control(cp)) {
			snprintf(e, sizeof e, "\\u%04x", (unsigned)cp);
			step = n;
		} else if (*s == '\\')
			snprintf(e, sizeof e, "\\\\");
		else if (*s == '\n')
			snprintf(e, sizeof e, "\\n");
		else if (*s == '\t')
			snprintf(e, sizeof e, "\\t");
		else if (*s < 0x20 || *s == 0x7f || n == 0)
			snprintf(e, sizeof e, "\\x%02x", *s);
		else
			e[0] = '\0';
		if (e[0]) {
			if (o + strlen(e) >= outsz)
				break;
			memcpy(out + o, e, strlen(e));
			o += strlen(e);
			s += step;
			continue;
		}
		if (o + n >= outsz)
			break;
		memcpy(out + o, s, n);
		o += n;
		s += n;
	}
	out[o] = '\0';
}

void gg_vescapef(char *out, size_t outsz, const char *fmt, va_list ap)
{
	char raw[2048];

	vsnprintf(raw, sizeof raw, fmt, ap);
	gg_escape(raw, out, outsz);
}
