/* SPDX-License-Identifier: MIT */
/*
 * Pure parsers for the git files gitguard reads: the `.git` file, commondir
 * and config.  They take a buffer and a length, allocate nothing and never
 * touch the filesystem, so a fuzzer can call them directly.
 *
 * The config scanner follows git 2.39's config.c (git_parse_source,
 * get_base_var, get_extended_base_var, get_value, parse_value) closely:
 * whatever git rejects is an error here too, so that a file git would read
 * differently from us is refused rather than misread.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gitguard/gitguard.h"

#define CFG_VALUE_MAX 4096
#define CFG_VAR_MAX 1024

struct src {
	const char *buf;
	size_t len;
	size_t pos;
	unsigned line;
	bool eof;
	bool nl; /* the last character read ended a line */
};

/* git's get_next_char: CRLF reads as LF, the end of the buffer as a final LF */
static int src_next(struct src *s)
{
	int c;

	if (s->nl) {
		s->line++;
		s->nl = false;
	}
	if (s->pos >= s->len) {
		s->eof = true;
		return '\n';
	}
	c = (unsigned char)s->buf[s->pos++];
	if (c == '\r' && s->pos < s->len && s->buf[s->pos] == '\n')
		c = (unsigned char)s->buf[s->pos++];
	s->nl = c == '\n';
	return c;
}

static bool iskeychar(int c)
{
	return isalnum(c) || c == '-';
}

static bool isspc(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The subsection of [section "sub"]; the opening space was read. */
static int read_subsection(struct src *s, char *var, size_t *vl)
{
	int c;

	do {
		c = src_next(s);
	} while (c == ' ' || c == '\t');
	if (c != '"')
		return -1;
	var[(*vl)++] = '.';
	for (;;) {
		c = src_next(s);
		if (c == '\n')
			return -1;
		if (c == '"')
			break;
		if (c == '\\') {
			c = src_next(s);
			if (c == '\n')
				return -1;
		}
		if (*vl >= CFG_VAR_MAX - 2)
			return -1;
		var[(*vl)++] = (char)c;
	}
	if (src_next(s) != ']')
		return -1;
	return 0;
}

/* [section], [section "sub"] or the old [section.sub]; var gets "section[.sub]" */
static int read_section(struct src *s, char *var, size_t *vl)
{
	int c;

	*vl = 0;
	for (;;) {
		c = src_next(s);
		if (s->eof)
			return -1;
		if (c == ']')
			break;
		if (isspc(c)) {
			if (read_subsection(s, var, vl) < 0)
				return -1;
			break;
		}
		if (!iskeychar(c) && c != '.')
			return -1;
		if (*vl >= CFG_VAR_MAX - 2)
			return -1;
		var[(*vl)++] = (char)tolower(c);
	}
	var[*vl] = '\0';
	return 0;
}

/* The value after '='; *out is NUL-terminated, or the scan fails. */
static int read_value(struct src *s, char *out, size_t *outlen)
{
	bool quote = false, comment = false;
	size_t len = 0, space = 0;
	int c;

	for (;;) {
		c = src_next(s);
		if (c == '\n') {
			if (quote)
				return -1;
			break;
		}
		if (comment)
			continue;
		if (isspc(c) && !quote) {
			if (len)
				space++;
			continue;
		}
		if (!quote && (c == ';' || c == '#')) {
			comment = true;
			continue;
		}
		for (; space; space--) {
			if (len >= CFG_VALUE_MAX - 1)
				return -1;
			out[len++] = ' ';
		}
		if (c == '\\') {
			c = src_next(s);
			switch (c) {
			case '\n':
				continue;
			case 't':
				c = '\t';
				break;
			case 'b':
				c = '\b';
				break;
			case 'n':
				c = '\n';
				break;
			case '\\':
			case '"':
				break;
			default:
				return -1;
			}
		} else if (c == '"') {
			quote = !quote;
			continue;
		}
		if (len >= CFG_VALUE_MAX - 1)
			return -1;
		out[len++] = (char)c;
	}
	out[len] = '\0';
	*outlen = len;
	return 0;
}

/* git_parse_maybe_bool_text plus git_parse_int: 1, 0, or -EINVAL when not a bool */
int guard_parse_bool(const char *s)
{
	char *end;
	long v;

	if (!s)
		return 1;
	if (!*s)
		return 0;
	if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
		return 1;
	if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
		return 0;
	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	/* git accepts the unit suffixes k, m, g on integers */
	if (*end && strchr("kKmMgG", *end))
		end++;
	if (*end)
		return -EINVAL;
	return v != 0;
}

static const char *const known_ext[] = {
	"noop", "noop-v1", "preciousobjects", "partialclone", "objectformat", "worktreeconfig",
};

static int handle_var(struct guard_cfg *cfg, const char *var, const char *value)
{
	const char *dot, *last;
	size_t i;
	int rc;

	if (cfg->any && (rc = cfg->any(cfg->any_arg, var, value)))
		return rc;
	if (!strcmp(var, "include.path"))
		return value && cfg->fn ? cfg->fn(cfg->arg, GUARD_CFG_INCLUDE, value) : 0;
	if (!strncmp(var, "includeif.", 10)) {
		last = strrchr(var, '.');
		/* includeIf needs a condition: includeif.<cond>.path */
		if (last > var + 9 && !strcmp(last, ".path") && value && cfg->fn)
			return cfg->fn(cfg->arg, GUARD_CFG_INCLUDE, value);
		return 0;
	}
	if (!strcmp(var, "core.hookspath"))
		return value && cfg->fn ? cfg->fn(cfg->arg, GUARD_CFG_HOOKSPATH, value) : 0;
	if (!strcmp(var, "init.templatedir"))
		return value && cfg->fn ? cfg->fn(cfg->arg, GUARD_CFG_TEMPLATEDIR, value) : 0;
	if (!strcmp(var, "core.worktree"))
		return value && cfg->fn ? cfg->fn(cfg->arg, GUARD_CFG_WORKTREE, value) : 0;
	if (cfg->seq && cfg->fn && !strncmp(var, "options.", 8)) {
		/* sequencer/opts: git's populate_opts_cb; a key alone has no value */
		if (!strcmp(var + 8, "strategy"))
			return cfg->fn(cfg->arg, GUARD_CFG_STRATEGY, value ? value : "");
		if (!strcmp(var + 8, "strategy-option"))
			return cfg->fn(cfg->arg, GUARD_CFG_STRATEGY_OPT, value ? value : "");
	}
	if (!strcmp(var, "core.repositoryformatversion")) {
		char *end;

		errno = 0;
		cfg->format = value ? strtol(value, &end, 10) : -1;
		if (!value || errno || end == value || *end || cfg->format < 0)
			cfg->bad_format = true;
		return 0;
	}
	if (!strncmp(var, "extensions.", 11)) {
		dot = var + 11;
		if (!strcmp(dot, "objectformat"))
			cfg->sha256 = value && !strcasecmp(value, "sha256");
		if (!strcmp(dot, "worktreeconfig")) {
			/* anything but a clear false counts as on */
			if (guard_parse_bool(value) != 0)
				cfg->worktree_config = true;
			return 0;
		}
		for (i = 0; i < sizeof(known_ext) / sizeof(known_ext[0]); i++)
			if (!strcmp(dot, known_ext[i]))
				return 0;
		cfg->unknown_ext = true;
	}
	return 0;
}

/*
 * Scans a config file for the keys gitguard cares about; see struct
 * guard_cfg.  Returns 0, -EINVAL on a syntax error (cfg->line says where), or
 * the callback's non-zero return.
 */
int guard_config_scan(const char *buf, size_t len, struct guard_cfg *cfg)
{
	struct src s = {.buf = buf, .len = len, .line = 1};
	char section[CFG_VAR_MAX], var[CFG_VAR_MAX * 2 + 2];
	char value[CFG_VALUE_MAX];
	bool comment = false, have_section = false;
	size_t sl = 0, vl, valen;
	int c, rc;

	cfg->format = -1;
	cfg->bad_format = false;
	cfg->worktree_config = false;
	cfg->unknown_ext = false;
	cfg->sha256 = false;
	cfg->line = 0;
	section[0] = '\0';
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		s.pos = 3;
	/*
	 * A NUL is a character to git's parser too: skipped in a comment,
	 * refused where a key or section starts, and kept in a value, whose C
	 * string then ends there for every reader (so for us).
	 */
	for (;;) {
		c = src_next(&s);
		if (c == '\n') {
			if (s.eof)
				return 0;
			comment = false;
			continue;
		}
		if (comment || isspc(c))
			continue;
		if (c == '#' || c == ';') {
			comment = true;
			continue;
		}
		if (c == '[') {
			if (read_section(&s, section, &sl) < 0)
				goto bad;
			have_section = true;
			continue;
		}
		if (!isalpha(c) || !have_section)
			goto bad;
		/* the key: section.name, the name lowercased */
		memcpy(var, section, sl);
		vl = sl;
		var[vl++] = '.';
		do {
			if (vl >= sizeof(var) - 1)
				goto bad;
			var[vl++] = (char)tolower(c);
			c = src_next(&s);
		} while (iskeychar(c));
		var[vl] = '\0';
		while (c == ' ' || c == '\t')
			c = src_next(&s);
		if (c == '\n') {
			/* "key" alone means true */
			rc = handle_var(cfg, var, NULL);
			if (rc)
				return rc;
			if (s.eof)
				return 0;
			continue;
		}
		if (c != '=')
			goto bad;
		if (read_value(&s, value, &valen) < 0)
			goto bad;
		/* a NUL in it ends the C string, as it does for git's readers */
		rc = handle_var(cfg, var, value);
		if (rc)
			return rc;
		if (s.eof)
			return 0;
	}
bad:
	cfg->line = s.line ? s.line : 1;
	return -EINVAL;
}

/* Strip trailing CR/LF, then cut at a NUL, in git's order (read_gitfile, commondir) */
static int copy_path(const char *p, size_t n, char *out, size_t outsz)
{
	const char *nul;

	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	nul = memchr(p, '\0', n);
	if (nul)
		n = (size_t)(nul - p);
	if (!n)
		return -EINVAL;
	if (n >= outsz)
		return -ENAMETOOLONG;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/* The path of a `.git` file: "gitdir: PATH" (git's read_gitfile_gently). */
int guard_parse_gitfile(const char *buf, size_t len, char *out, size_t outsz)
{
	if (len < 8 || memcmp(buf, "gitdir: ", 8))
		return -EINVAL;
	return copy_path(buf + 8, len - 8, out, outsz);
}

/* The path in a commondir file (git's get_common_dir_noenv). */
int guard_parse_commondir(const char *buf, size_t len, char *out, size_t outsz)
{
	return copy_path(buf, len, out, outsz);
}
