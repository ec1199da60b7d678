/* SPDX-License-Identifier: MIT */
/*
 * X4: the files from which a rebase, cherry-pick or revert that is continued
 * later takes its merge strategy.  git runs a strategy NAME that is not one
 * of its own built-ins as the program `git-merge-NAME` (sequencer.c
 * try_merge_command, or `git merge -s NAME` for merges in a rebase, which
 * looks it up with the exec path first, then PATH).  A NAME with a '/' makes
 * that a path relative to where git runs: `x/../tools/fmt.sh` runs the
 * worktree's tools/fmt.sh.  So a strategy must be a plain name:
 * [A-Za-z0-9_.+-]+, the characters of every strategy git ships and of the
 * programs people install as git-merge-*.
 *
 * Files (sequencer.c read_populate_opts and read_strategy_opts,
 * builtin/rebase.c read_basic_state, which reads both state folders):
 *   rebase-merge/strategy, rebase-apply/strategy        one line: the name
 *   rebase-merge/strategy_opts, rebase-apply/...         one line of options
 *   sequencer/opts                                       a config file
 * Strategy options are never executed: they reach the strategy as "--OPT"
 * arguments, so they only need to be one line of printable characters.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "gitguard/gitguard.h"

bool guard_strategy_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_.+-", *s)))
			return false;
	return true;
}

/* One line of text: no NUL or control character but a final LF or CRLF. */
static bool one_line(const char *buf, size_t *len)
{
	size_t n = *len, i;

	if (n && buf[n - 1] == '\n') {
		n--;
		if (n && buf[n - 1] == '\r')
			n--;
	}
	for (i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			return false;
	*len = n;
	return true;
}

static bool opt_ok(const char *s)
{
	size_t n = strlen(s);

	return one_line(s, &n) && n == strlen(s);
}

struct seqck {
	const char *why;
};

static int on_opt(void *arg, enum guard_cfg_key key, const char *value)
{
	struct seqck *c = arg;

	if (key == GUARD_CFG_STRATEGY && !guard_strategy_name_ok(value)) {
		c->why = "options.strategy is not a plain strategy name";
		return 1;
	}
	if (key == GUARD_CFG_STRATEGY_OPT && !opt_ok(value)) {
		c->why = "options.strategy-option with a control character";
		return 1;
	}
	return 0;
}

/* sequencer/opts: a config file git reads with git_config_from_file (no includes). */
int guard_seq_opts_check(const char *buf, size_t len, const char **why)
{
	struct seqck c = {NULL};
	struct guard_cfg cfg = {.fn = on_opt, .arg = &c, .seq = true};
	int rc;

	if (len > GUARD_SEQ_MAX) {
		*why = "sequencer options larger than gitguard reads";
		return -EINVAL;
	}
	rc = guard_config_scan(buf, len, &cfg);
	if (rc == 0)
		return 0;
	*why = c.why ? c.why : "sequencer options that do not parse as a config file";
	return -EINVAL;
}

/* The content NAME (strategy, strategy_opts or opts) would have: 0 if git may read it. */
int guard_seq_file_check(const char *name, const char *buf, size_t len, const char **why)
{
	size_t n = len;
	char tmp[256];

	if (len > GUARD_SEQ_MAX) {
		*why = "strategy file larger than gitguard reads";
		return -EINVAL;
	}
	if (!strcasecmp(name, "opts"))
		return guard_seq_opts_check(buf, len, why);
	if (!one_line(buf, &n)) {
		*why = "strategy file with more than one line or a control character";
		return -EINVAL;
	}
	if (!strcasecmp(name, "strategy_opts") || !n)
		return 0; /* options, or the empty file write_file() truncates to first */
	if (n >= sizeof(tmp)) {
		*why = "strategy name too long";
		return -EINVAL;
	}
	memcpy(tmp, buf, n);
	tmp[n] = '\0';
	if (!guard_strategy_name_ok(tmp)) {
		*why = "strategy is not a plain strategy name (git would run it as a path)";
		return -EINVAL;
	}
	return 0;
}
