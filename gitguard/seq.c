/* SPDX-License-Identifier: MIT */
/*
 * X4, X5, X6 (at the end: a rebase's todo list without exec lines) and X7
 * (its step counts, numbers).
 *
 * X4: the files from which a rebase, cherry-pick or revert that is continued
 * later takes its merge strategy.  git runs a strategy NAME that is not one
 * of its own built-ins as the program `git-merge-NAME` (sequencer.c
 * try_merge_command, or `git merge -s NAME` for merges in a rebase, which
 * looks it up with the exec path first, then PATH).  A NAME with a '/' makes
 * that a path relative to where git runs: `x/../tools/fmt.sh` runs the
 * worktree's tools/fmt.sh; and a plain NAME is looked up in the person's
 * PATH, which may hold a folder in the bot's reach (./node_modules/.bin, a
 * relative entry): git-merge-NAME planted there runs.  So a strategy must
 * be one git ships: ort, recursive, resolve, octopus, ours, subtree (the
 * two scripts among them are found in git's exec path first).
 *
 * Files (sequencer.c read_populate_opts and read_strategy_opts,
 * builtin/rebase.c read_basic_state, which reads both state folders):
 *   rebase-merge/strategy, rebase-apply/strategy        one line: the name
 *   rebase-merge/strategy_opts, rebase-apply/...         one line of options
 *   sequencer/opts                                       a config file
 * Strategy options reach the strategy as "--OPT" arguments, and git's own
 * "resolve" and "octopus" are shell scripts that hand them on unquoted:
 * git-merge-resolve runs `git read-tree -u -m --aggressive $bases ...` with
 * them among $bases, so "--index-output=PATH" makes the person's `git
 * rebase --continue` write an index file at PATH (an authorized_keys), and
 * a quoted option with a space in it is split into two there. So each
 * option (split as git's split_cmdline does, a leading "--" dropped) must
 * be one git's merge machinery knows (merge-recursive.c parse_merge_opt):
 * ours, theirs, subtree[=TREE-PATH], patience, histogram,
 * diff-algorithm=NAME, the ignore-*-space and ignore-cr-at-eol ones,
 * [no-]renormalize, no-renames, find-renames[=N], rename-threshold=N.
 *
 * X5: files git hands to another command as its options (builtin/am.c
 * am_load, builtin/rebase.c read_basic_state, sequencer.c
 * read_populate_opts):
 *   rebase-apply/apply-opt     sq-quoted options for git apply's parser: one
 *                              of them, --build-fake-ancestor=PATH, makes the
 *                              person's `git am --continue` write an index
 *                              file at PATH (.git/commondir, anywhere)
 *   rebase-merge/, rebase-apply/ gpg_sign_opt
 *                              "-S<key>": the apply backend hands it to git
 *                              am's parser whole, the merge backend takes the
 *                              key; a key with a '/' is a key file's path
 *   sequencer/opts             options.gpg-sign, the same key
 * Only options that name neither a path git writes or reads nor a program
 * pass: git am's own pass-through forms (--whitespace=ACTION, -C<n>, -p<n>,
 * --ignore-space-change, --ignore-whitespace, --reject, --directory=ROOT,
 * --exclude=GLOB, --include=GLOB; a --directory prefix only moves where the
 * patch's own paths land, and git apply checks the result as it checks
 * them), and a signing key that is no path.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "gitguard/gitguard.h"

bool guard_strategy_name_ok(const char *s)
{
	static const char *const names[] = {"ort",     "recursive", "resolve",
					    "octopus", "ours",	    "subtree"};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i]))
			return true;
	return false;
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

/* Are the N bytes at S all of CLASS (letters, digits and the characters in EXTRA)? */
static bool all_of(const char *s, size_t n, bool letters, bool digits, const char *extra)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((letters && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) ||
		      (digits && c >= '0' && c <= '9') || (c && strchr(extra, c))))
			return false;
	}
	return true;
}

/* One strategy option (N bytes at S, "--" or not): one git's merge machinery takes */
static bool xopt_ok(const char *s, size_t n)
{
	static const char *const plain[] = {
		"ours", "theirs", "subtree", "patience", "histogram", "ignore-space-change",
		"ignore-all-space", "ignore-space-at-eol", "ignore-cr-at-eol", "renormalize",
		"no-renormalize", "no-renames", "find-renames", NULL};
	static const struct {
		const char *key;
		bool letters, digits;
		const char *extra;
	} valued[] = {
		{"subtree=", true, true, "_./+-"}, /* a path in the tree, never a '-' first */
		{"diff-algorithm=", true, false, ""},
		{"find-renames=", false, true, ".%"},
		{"rename-threshold=", false, true, ".%"},
	};
	size_t i, k;

	if (n >= 2 && s[0] == '-' && s[1] == '-') {
		s += 2;
		n -= 2;
	}
	for (i = 0; plain[i]; i++)
		if (strlen(plain[i]) == n && !memcmp(s, plain[i], n))
			return true;
	for (i = 0; i < sizeof(valued) / sizeof(valued[0]); i++) {
		k = strlen(valued[i].key);
		if (n > k && !memcmp(s, valued[i].key, k) && s[k] != '-' &&
		    all_of(s + k, n - k, valued[i].letters, valued[i].digits, valued[i].extra))
			return true;
	}
	return false;
}

/*
 * strategy_opts: options as git writes them (" --ours --subtree=a",
 * newer git sq-quotes each: " '--ours'"), split on spaces; a token may be
 * single-quoted whole. Double quotes and backslashes, which git's
 * split_cmdline would read, are never written by git: refused.
 */
static bool xopts_line_ok(const char *s, size_t n)
{
	size_t i = 0, start;

	while (i < n) {
		if (s[i] == ' ') {
			i++;
			continue;
		}
		if (s[i] == '\'') {
			start = ++i;
			while (i < n && s[i] != '\'')
				i++;
			if (i == n || !xopt_ok(s + start, i - start) ||
			    (i + 1 < n && s[i + 1] != ' '))
				return false;
			i++;
			continue;
		}
		start = i;
		while (i < n && s[i] != ' ')
			i++;
		if (!xopt_ok(s + start, i - start))
			return false;
	}
	return true;
}

struct seqck {
	const char *why;
};

static int on_opt(void *arg, enum guard_cfg_key key, const char *value)
{
	struct seqck *c = arg;

	if (key == GUARD_CFG_STRATEGY && !guard_strategy_name_ok(value)) {
		c->why = "options.strategy is not a strategy git ships";
		return 1;
	}
	if (key == GUARD_CFG_STRATEGY_OPT && !xopt_ok(value, strlen(value))) {
		c->why = "options.strategy-option that is not one of git's merge options";
		return 1;
	}
	return 0;
}

/* A signing key git hands to gpg or ssh-keygen: no path ("key::" literals aside) */
static bool sign_key_ok(const char *k, size_t n)
{
	size_t i;

	if (n >= 5 && !strncmp(k, "key::", 5))
		return true;
	if (n && (k[0] == '~' || k[0] == '.' || k[0] == '-'))
		return false;
	for (i = 0; i < n; i++)
		if (k[i] == '/' || (unsigned char)k[i] < 0x20 || k[i] == 0x7f)
			return false;
	return true;
}

static int on_any_opt(void *arg, const char *var, const char *value)
{
	struct seqck *c = arg;

	if (!strcmp(var, "options.gpg-sign") && value && !sign_key_ok(value, strlen(value))) {
		c->why = "options.gpg-sign names a key file (a path)";
		return 1;
	}
	return 0;
}

/* sequencer/opts: a config file git reads with git_config_from_file (no includes). */
int guard_seq_opts_check(const char *buf, size_t len, const char **why)
{
	struct seqck c = {NULL};
	struct guard_cfg cfg = {
		.fn = on_opt, .arg = &c, .seq = true, .any = on_any_opt, .any_arg = &c};
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
	if (!strcasecmp(name, "strategy_opts")) {
		if (!n || xopts_line_ok(buf, n))
			return 0;
		*why = "strategy_opts with an option that is not one of git's merge options "
		       "(git-merge-resolve hands them on to read-tree)";
		return -EINVAL;
	}
	if (!n) {
		/* read as the strategy "": git runs git-merge- (PATH). A write of
		   the file passes through empty; fusefs checks it at the close */
		*why = "an empty strategy (git would run the program git-merge-)";
		return -EINVAL;
	}
	if (n >= sizeof(tmp)) {
		*why = "strategy name too long";
		return -EINVAL;
	}
	memcpy(tmp, buf, n);
	tmp[n] = '\0';
	if (!guard_strategy_name_ok(tmp)) {
		*why = "strategy is not one git ships (git would run git-merge-NAME from PATH, "
		       "or a path)";
		return -EINVAL;
	}
	return 0;
}

/* gpg_sign_opt: empty, or "-S" and a key that is no path (sequencer.c writes "-S%s") */
static int sign_opt_check(const char *buf, size_t len, const char **why)
{
	if (!one_line(buf, &len)) {
		*why = "gpg_sign_opt with more than one line or a control character";
		return -EINVAL;
	}
	if (!len || (len >= 2 && !strncmp(buf, "-S", 2) && sign_key_ok(buf + 2, len - 2)))
		return 0;
	*why = "gpg_sign_opt is not -S with a key (git hands it to git am as an option)";
	return -EINVAL;
}

/* One of git am's pass-through options to git apply, as am writes it (one word each) */
static bool apply_opt_ok(const char *o)
{
	static const char *const plain[] = {"--ignore-space-change", "--ignore-whitespace",
					    "--reject"};
	static const char *const ws[] = {"nowarn", "warn", "fix", "error", "error-all", "strip"};
	static const char *const valued[] = {"--directory=", "--exclude=", "--include="};
	size_t i;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (!strcmp(o, plain[i]))
			return true;
	if (!strncmp(o, "--whitespace=", 13)) {
		for (i = 0; i < sizeof(ws) / sizeof(ws[0]); i++)
			if (!strcmp(o + 13, ws[i]))
				return true;
		return false;
	}
	if ((o[0] == '-' && (o[1] == 'C' || o[1] == 'p')) && o[2]) {
		for (i = 2; o[i]; i++)
			if (o[i] < '0' || o[i] > '9')
				return false;
		return true;
	}
	for (i = 0; i < sizeof(valued) / sizeof(valued[0]); i++)
		if (!strncmp(o, valued[i], strlen(valued[i])))
			return opt_ok(o);
	return false;
}

/*
 * rebase-apply/apply-opt: what quote.c sq_dequote_to_strvec reads (after
 * read_state_file's trim): 'word' 'word'..., a quote inside as '\'' and a
 * '!' as '\!'.  Each word must pass apply_opt_ok.
 */
static int apply_opts_check(const char *buf, size_t len, const char **why)
{
	char word[4096];
	size_t i = 0, w;

	while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\n' ||
		       buf[len - 1] == '\r'))
		len--;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	while (i < len) {
		if (buf[i++] != '\'')
			goto bad;
		for (w = 0;;) {
			if (i >= len)
				goto bad;
			if (buf[i] != '\'') {
				if (w + 1 >= sizeof(word) || !buf[i])
					goto bad;
				word[w++] = buf[i++];
				continue;
			}
			/* out of the quotes: '\'' or '\!' resumes them, else the word ends */
			if (i + 3 < len && buf[i + 1] == '\\' &&
			    (buf[i + 2] == '\'' || buf[i + 2] == '!') && buf[i + 3] == '\'') {
				if (w + 1 >= sizeof(word))
					goto bad;
				word[w++] = buf[i + 2];
				i += 4;
				continue;
			}
			i++;
			break;
		}
		word[w] = '\0';
		if (!apply_opt_ok(word)) {
			*why = "apply-opt holds an option for git apply that is not one git am "
			       "passes (one naming a path or program: --build-fake-ancestor...)";
			return -EINVAL;
		}
		if (i < len && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r')
			goto bad;
		while (i < len &&
		       (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
			i++;
	}
	return 0;
bad:
	*why = "apply-opt that git cannot read as quoted options";
	return -EINVAL;
}

/* X5: the content NAME (apply-opt or gpg_sign_opt) would have: 0 if git may read it */
int guard_optfile_check(const char *name, const char *buf, size_t len, const char **why)
{
	if (len > GUARD_SEQ_MAX) {
		*why = "option file larger than gitguard reads";
		return -EINVAL;
	}
	if (!strcasecmp(name, "apply-opt"))
		return apply_opts_check(buf, len, why);
	if (!strcasecmp(name, "gpg_sign_opt"))
		return sign_opt_check(buf, len, why);
	*why = "not an option file";
	return -EINVAL;
}

/*
 * X6: git-rebase-todo, what the next `git rebase --continue` works through
 * (sequencer.c parse_insn_line and is_command): a line, its leading blanks
 * skipped, starts with a command, spelt out or by its letter, and ended by
 * a blank, CR, LF, NUL or the end.  `exec CMD` (or `x CMD`) runs CMD with
 * the shell of whoever continues: the person, outside any sandbox.  git
 * tries the commands before it looks for its comment character, so a line
 * `x ...` is one whatever core.commentChar says.  git stops at a NUL; this
 * looks at every byte, so it refuses what git would not even read.
 */
const char *guard_todo_exec(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p >= 4 && !memcmp(p, "exec", 4))
		p += 4;
	else if (p < end && *p == 'x')
		p++;
	else
		return NULL;
	if (p < end && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\0')
		return NULL;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

int guard_todo_check(const char *buf, size_t len, const char **why)
{
	const char *p = buf, *end = buf + len, *eol;

	if (len > GUARD_TODO_MAX) {
		*why = "todo list larger than gitguard reads";
		return -EINVAL;
	}
	for (; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		if (guard_todo_exec(p, eol) != NULL) {
			*why = "an exec line: git would run it for whoever continues the rebase";
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * X7: the step counts of a rebase or am in progress, rebase-merge/msgnum and
 * end, rebase-apply/next and last.  git writes a number and a newline;
 * git's bash and zsh prompt (contrib/completion/git-prompt.sh, Debian's
 * /usr/lib/git-core/git-sh-prompt) reads their first lines and, in its
 * PROMPT_COMMAND mode, puts them in PS1 as they are ("|REBASE 2/5"), which
 * the shell expands each time it draws the prompt: a "$(command)" there
 * runs when the person enters the repository.  So: digits, then at most
 * one newline.  Empty is allowed (git opens the file with O_TRUNC first).
 */
int guard_count_check(const char *buf, size_t len, const char **why)
{
	size_t n = 0;

	while (n < len && buf[n] >= '0' && buf[n] <= '9')
		n++;
	if (n < len && buf[n] == '\n')
		n++;
	if (n != len) {
		*why = "a step count that is no number: git's shell prompt would run it";
		return -EINVAL;
	}
	return 0;
}
