/* SPDX-License-Identifier: MIT */
/* The two lexical path normalisers (ggutil.h says which to use when). */
#include <errno.h>
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
