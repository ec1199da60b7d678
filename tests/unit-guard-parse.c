/* SPDX-License-Identifier: MIT */
/* gitguard's pure parsers: config scanner, .git file, commondir, booleans. */
#include <errno.h>
#include <string.h>

#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

struct seen {
	char inc[8][256];
	int ninc;
	char hooks[256];
};

static int collect(void *arg, enum guard_cfg_key key, const char *value)
{
	struct seen *s = arg;

	if (key == GUARD_CFG_INCLUDE && s->ninc < 8)
		snprintf(s->inc[s->ninc++], sizeof(s->inc[0]), "%s", value);
	else if (key == GUARD_CFG_HOOKSPATH)
		snprintf(s->hooks, sizeof(s->hooks), "%s", value);
	return 0;
}

static int scan(const char *text, struct guard_cfg *cfg, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	memset(cfg, 0, sizeof(*cfg));
	cfg->fn = collect;
	cfg->arg = s;
	return guard_config_scan(text, strlen(text), cfg);
}

int main(void)
{
	struct guard_cfg cfg;
	struct seen s;
	char out[64];
	int rc;

	rc = scan("[core]\n\trepositoryformatversion = 0\n\tbare = false\n", &cfg, &s);
	tap_ok(rc == 0 && cfg.format == 0 && !cfg.worktree_config && !cfg.unknown_ext &&
		       s.ninc == 0,
	       "plain config from git init");

	rc = scan("[include]\n  path = ../a.cfg\n[includeIf \"gitdir:~/x/\"]\n  path = \"b c\"\n"
		  "[core] hooksPath = /h ; comment\n",
		  &cfg, &s);
	tap_ok(rc == 0 && s.ninc == 2 && !strcmp(s.inc[0], "../a.cfg") &&
		       !strcmp(s.inc[1], "b c") && !strcmp(s.hooks, "/h"),
	       "include, includeIf and hooksPath with quotes, comment and a key on the header "
	       "line");

	rc = scan("[Include]\nPATH=x\n[INCLUDEIF \"onbranch:a/*\"]\npath=y\n[core]\nHOOKSPATH=z\n",
		  &cfg, &s);
	tap_ok(rc == 0 && s.ninc == 2 && !strcmp(s.inc[0], "x") && !strcmp(s.inc[1], "y") &&
		       !strcmp(s.hooks, "z"),
	       "section and key names are case-insensitive");

	rc = scan("[include.sub]\npath = no\n[includeif]\npath = no\n[include \"x\"]\npath = no\n",
		  &cfg, &s);
	tap_ok(rc == 0 && s.ninc == 0,
	       "include with a subsection, includeIf without: ignored as git does");

	rc = scan("[core]\n\thooksPath = a\\\nb\\tc\n", &cfg, &s);
	tap_ok(rc == 0 && !strcmp(s.hooks, "ab\tc"), "escapes and line continuation");

	rc = scan("[extensions]\n\tworktreeConfig = true\n", &cfg, &s);
	tap_ok(rc == 0 && cfg.worktree_config, "extensions.worktreeConfig = true");
	rc = scan("[extensions]\n\tworktreeConfig\n", &cfg, &s);
	tap_ok(rc == 0 && cfg.worktree_config, "extensions.worktreeConfig alone means true");
	rc = scan("[extensions]\n\tworktreeConfig = off\n", &cfg, &s);
	tap_ok(rc == 0 && !cfg.worktree_config, "extensions.worktreeConfig = off");
	rc = scan("[extensions]\n\tobjectFormat = sha1\n\tnoop = 1\n", &cfg, &s);
	tap_ok(rc == 0 && !cfg.unknown_ext, "known extensions");
	rc = scan("[extensions]\n\trefStoragex = files\n", &cfg, &s);
	tap_ok(rc == 0 && cfg.unknown_ext, "unknown extension");
	rc = scan("[core]\nrepositoryformatversion = 1x\n", &cfg, &s);
	tap_ok(rc == 0 && cfg.bad_format, "bad repositoryformatversion");

	rc = scan("[core\nx = 1\n", &cfg, &s);
	tap_ok(rc == -EINVAL, "unterminated section header");
	rc = scan("[core]\nx = \"open\n", &cfg, &s);
	tap_ok(rc == -EINVAL && cfg.line == 2, "unterminated quote, line reported");
	rc = scan("[core]\nx = a\\qb\n", &cfg, &s);
	tap_ok(rc == -EINVAL, "bad escape");
	rc = scan("x = 1\n", &cfg, &s);
	tap_ok(rc == -EINVAL, "key before any section");
	rc = scan("[core]\n1x = 1\n", &cfg, &s);
	tap_ok(rc == -EINVAL, "key not starting with a letter");
	rc = guard_config_scan("[core]\n\0x", 9, &cfg);
	tap_ok(rc == -EINVAL, "a NUL where a key starts: refused, as git does");
	/* git reads a NUL as a character: skipped in a comment, ending a value's C string */
	memset(&s, 0, sizeof s);
	cfg.fn = collect;
	cfg.arg = &s;
	rc = guard_config_scan("# x\0y\n[core]\n\thooksPath = hk\n", 29, &cfg);
	tap_ok(rc == 0 && !strcmp(s.hooks, "hk"), "a NUL in a comment: read on, as git does");
	memset(&s, 0, sizeof s);
	rc = guard_config_scan("[core]\n\thooksPath = hk\0junk\n", 28, &cfg);
	tap_ok(rc == 0 && !strcmp(s.hooks, "hk"), "a NUL in a value ends it, as git's C string does");
	rc = scan("\xef\xbb\xbf[include]\npath = bom\n", &cfg, &s);
	tap_ok(rc == 0 && s.ninc == 1, "UTF-8 BOM skipped");
	rc = scan("[include]\r\npath = crlf\r\n", &cfg, &s);
	tap_ok(rc == 0 && s.ninc == 1 && !strcmp(s.inc[0], "crlf"), "CRLF lines");
	rc = scan("", &cfg, &s);
	tap_ok(rc == 0 && cfg.format == -1, "empty config");

	rc = guard_parse_gitfile("gitdir: ../x/.git\n", 18, out, sizeof(out));
	tap_ok(rc == 0 && !strcmp(out, "../x/.git"), ".git file");
	rc = guard_parse_gitfile("gitdir: a\r\n\r\n", 13, out, sizeof(out));
	tap_ok(rc == 0 && !strcmp(out, "a"), ".git file, CRLF stripped");
	rc = guard_parse_gitfile("gitdir:x\n", 9, out, sizeof(out));
	tap_ok(rc == -EINVAL, ".git file without the space");
	rc = guard_parse_gitfile("gitdir: \n", 9, out, sizeof(out));
	tap_ok(rc == -EINVAL, ".git file without a path");
	rc = guard_parse_gitfile("gitdir: a\0b\n", 12, out, sizeof(out));
	tap_ok(rc == 0 && !strcmp(out, "a"), ".git file cut at a NUL as git does");
	rc = guard_parse_commondir("../..\n", 6, out, sizeof(out));
	tap_ok(rc == 0 && !strcmp(out, "../.."), "commondir");
	rc = guard_parse_commondir("", 0, out, sizeof(out));
	tap_ok(rc == -EINVAL, "empty commondir");
	{
		char big[200];

		memset(big, 'a', sizeof(big));
		rc = guard_parse_commondir(big, sizeof(big), out, sizeof(out));
		tap_ok(rc == -ENAMETOOLONG, "commondir longer than the buffer");
	}

	tap_ok(guard_parse_bool("yes") == 1 && guard_parse_bool("Off") == 0 &&
		       guard_parse_bool("") == 0 && guard_parse_bool(NULL) == 1 &&
		       guard_parse_bool("2k") == 1 && guard_parse_bool("0") == 0 &&
		       guard_parse_bool("maybe") == -EINVAL,
	       "booleans");
	return tap_done();
}
