/* SPDX-License-Identifier: MIT */
/*
 * agentfs audit: what in a tree would make a person's git run something the
 * person's own config and hooks did not name, or write where a bot wants.
 * A report, not a guard: it reads a tree that a bot may have written
 * through a mount (or anywhere else) and lists, one finding each:
 *   hook       a file in a git folder's hooks/, or under core.hooksPath
 *   exec       an exec line in a rebase's todo or done list
 *   strategy   a strategy file gitguard's X4 would refuse, or one naming a
 *              strategy git does not ship (git-merge-NAME is run)
 *   index      an index (or sharedindex.*, index.stash.*) gitguard's X2 would refuse
 *   shape      a bare-shaped folder inside a work tree, a .git file pointing
 *              elsewhere than a worktree or submodule git folder, a .git
 *              symlink
 *   exclude    patterns in info/exclude, or a .gitignore that matches
 *              itself: untracked files they match are not shown by git
 *              status
 *   name       a name at a work tree's top starting with '+' or '-': git
 *              mergetool and difftool hand a top-level path to vimdiff as it
 *              is (no "./", no "--"), and vim runs "+CMD" as a command
 *   link       a symlink in a work tree named as a file git mergetool, git
 *              apply --reject or format-patch writes or moves to (X8's
 *              names): they follow it
 * The walk uses descriptors only (openat with O_NOFOLLOW, fstatat without
 * following), never follows a symlink, is iterative, and is bounded in depth
 * and entries.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gitguard/audit-int.h"

#define AUDIT_DEPTH 256	       /* folders deep, one descriptor each */
#define AUDIT_ENTRIES 10000000 /* entries looked at in all */

void audit_found(struct audit *a, const char *path, const char *kind, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	a->findings++;
	a->fn(a->arg, path, kind, why);
}

void audit_failed(struct audit *a, const char *path, const char *what, int e)
{
	a->errors++;
	if (!a->code)
		a->code = e > 0 ? -e : -EIO;
	if (a->err && !a->err->code) {
		a->err->code = -e;
		snprintf(a->err->msg, sizeof a->err->msg, "%s (%s): %s", what, strerror(e), path);
	}
}

char *audit_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (!p)
		return NULL;
	memcpy(p, a, la);
	p[la] = '/';
	memcpy(p + la + 1, b, lb + 1);
	return p;
}

int audit_open_dir(int dfd, const char *name)
{
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Every entry of the folder NAME in DFD but "." and "..", as fn(dfd of it, entry name). */
void audit_each_entry(struct audit *a, int dfd, const char *name, const char *path,
		      void (*fn)(struct audit *, int, const char *, const char *))
{
	struct dirent *de;
	char *p;
	DIR *d;
	int fd;

	fd = audit_open_dir(dfd, name);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		p = audit_join(path, de->d_name);
		if (p)
			fn(a, dirfd(d), de->d_name, p);
		free(p);
	}
	closedir(d);
}

static void hook_file(struct audit *a, int dfd, const char *name, const char *path)
{
	struct stat st;
	size_t n = strlen(name);

	if (n > 7 && !strcmp(name + n - 7, ".sample"))
		return;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return;
	audit_found(a, path, "hook", "%s that git may run as a hook",
		    S_ISLNK(st.st_mode) ? "a symlink" : "a file");
}

struct hidden_names {
	char list[256];
	size_t shown;
};

static void hidden_name(void *arg, const char *entry, const char *what)
{
	struct hidden_names *h = arg;
	size_t l = strlen(h->list);

	if (h->shown++ < 3)
		snprintf(h->list + l, sizeof(h->list) - l, "%s%s (%s)", l ? ", " : "", entry, what);
}

static void check_index(struct audit *a, int dfd, const char *name, const char *path)
{
	struct hidden_names h = {.list = ""};
	long n;
	const char *why = NULL;
	size_t len;
	char *buf;
	int rc;

	rc = guard_read_file(dfd, name, GUARD_INDEX_MAX, &buf, &len, NULL);
	if (rc == -ENOENT)
		return;
	if (rc) {
		audit_found(a, path, "index", "cannot be checked: %s", strerror(-rc));
		return;
	}
	if (guard_index_check_hash(buf, len, a->hashsz, &why) < 0)
		audit_found(a, path, "index", "git would write what it names: %s", why);
	else if (guard_index_folder(NULL, dfd, name, buf, len, a->hashsz, &why) < 0)
		audit_found(a, path, "index", "git restore would write: %s", why);
	else if (!strcmp(name, "index") &&
		 (n = guard_index_hidden(buf, len, a->hashsz, hidden_name, &h)) > 0)
		audit_found(a, path, "index",
			    "%ld entries git status and git diff do not look at: %s%s; a change to "
			    "them is not shown (skip-worktree is normal in a sparse checkout)",
			    n, h.list, n > 3 ? ", ..." : "");
	if (!strcmp(name, "index") && guard_index_untracked(buf, len, a->hashsz) > 0)
		audit_found(a, path, "index",
			    "an untracked cache: git status shows the untracked files it records, "
			    "not what the folders hold, so a file left out is not shown (git status "
			    "-uall shows it; normal with core.untrackedCache)");
	free(buf);
}

static void index_files(struct audit *a, int dfd, const char *name, const char *path)
{
	if (guard_index_name(name))
		check_index(a, dfd, name, path);
	/* git commit applies it, merge or no merge (D11 keeps the bot from making it) */
	else if (!strcmp(name, "MERGE_AUTOSTASH"))
		audit_found(a, path, "state", "a stash the next git commit applies");
	else if (!strcmp(name, "MERGE_RR"))
		audit_merge_rr(a, dfd, name, path);
	/*
	 * A bisect in progress: git bisect reset, and the next git bisect
	 * start, run git checkout on what it names (a branch, or a commit).
	 */
	else if (!strcmp(name, "BISECT_START"))
		audit_found(
			a, path, "state",
			"a bisect in progress: git bisect reset checks out what this names; review "
			"it (git log -1 $(cat FILE)) first");
}

static int on_strategy(void *arg, enum guard_cfg_key key, const char *value)
{
	char *out = arg;

	if (key == GUARD_CFG_STRATEGY && !out[0])
		snprintf(out, 256, "%s", value);
	return 0;
}

/* strategy, strategy_opts or opts in a state folder */
static void check_strategy(struct audit *a, int dfd, const char *name, const char *path)
{
	char strat[256] = "";
	const char *why = NULL;
	size_t len, n;
	char *buf;
	int rc;

	rc = guard_read_file(dfd, name, GUARD_SEQ_MAX, &buf, &len, NULL);
	if (rc == -ENOENT)
		return;
	if (rc) {
		audit_found(a, path, "strategy",
			    "cannot be checked (%s): git may run what it names",
			    rc == -EFBIG ? "larger than 64 KiB" : strerror(-rc));
		return;
	}
	rc = guard_seq_file_check(name, buf, len, &why);
	if (!strcmp(name, "strategy")) {
		n = len;
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		if (n < sizeof strat)
			snprintf(strat, sizeof strat, "%.*s", (int)n, buf);
	} else if (!strcmp(name, "opts")) {
		struct guard_cfg cfg = {.fn = on_strategy, .arg = strat, .seq = true};

		guard_config_scan(buf, len, &cfg);
	}
	/* a plain name git does not ship: say which program runs; else the check's why */
	if (strat[0] && !guard_strategy_name_ok(strat) && !strpbrk(strat, "/ \t"))
		audit_found(a, path, "strategy",
			    "strategy '%s': git runs the program git-merge-%s (its exec path, then "
			    "PATH)",
			    strat, strat);
	else if (rc < 0)
		audit_found(a, path, "strategy", "%s", why);
	free(buf);
}

/* exec lines (exec or x, git's todo commands) in a todo or done list */
#define TODO_HEAD 512 /* of a line, after its leading blanks: enough to show the command */

/* One todo line's start (its leading blanks skipped): an exec line (X6's reading)? */
static void todo_line(struct audit *a, const char *path, const char *p)
{
	const char *cmd = guard_todo_exec(p, p + strlen(p));

	if (cmd != NULL)
		audit_found(a, path, "exec", "git runs: %s", cmd);
	else
		audit_update_ref_line(a, path, p);
}

/*
 * Read whole, however long (git reads all of it): streamed, keeping only
 * each line's first TODO_HEAD bytes after its blanks.  A file that cannot
 * be read is itself a finding: silence would pass what git would run.
 */
static void check_todo(struct audit *a, int dfd, const char *name, const char *path)
{
	char chunk[65536], head[TODO_HEAD + 1];
	size_t hn = 0;
	bool blanks = true;
	struct stat st;
	ssize_t n, i;
	int fd;

	fd = gg_open_nofollow(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, false);
	if (fd < 0 && errno == ENOENT)
		return;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		audit_found(a, path, "exec",
			    "cannot be read as a file (%s): git may run what it holds",
			    fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return;
	}
	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			audit_found(a, path, "exec",
				    "cannot be read whole (%s): git may run what it holds",
				    strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			if (chunk[i] == '\n') {
				head[hn] = '\0';
				todo_line(a, path, head);
				hn = 0;
				blanks = true;
			} else if (blanks && (chunk[i] == ' ' || chunk[i] == '\t')) {
				/* git skips them (sequencer.c parse_insn_line) */
			} else {
				blanks = false;
				if (hn < TODO_HEAD)
					head[hn++] = chunk[i];
			}
		}
		if (n == 0) {
			head[hn] = '\0';
			todo_line(a, path, head);
			break;
		}
	}
	close(fd);
}

static void state_file(struct audit *a, int dfd, const char *name, const char *path)
{
	if (!strcmp(name, "strategy") || !strcmp(name, "strategy_opts") || !strcmp(name, "opts"))
		check_strategy(a, dfd, name, path);
	else if (!strcmp(name, "git-rebase-todo") || !strcmp(name, "done") || !strcmp(name, "todo"))
		check_todo(a, dfd, name, path);
	/*
	 * Where --abort goes: git rebase --abort resets the branch hard to
	 * orig-head, cherry-pick and revert --abort to sequencer/head. A state
	 * the bot left (or planted) puts its commit in the work tree.
	 */
	else if (!strcmp(name, "orig-head") || !strcmp(name, "head"))
		audit_found(
			a, path, "state",
			"an operation in progress: --abort resets the branch to the commit this "
			"names; review it (git log -1 $(cat FILE)) first");
	else if (!strcmp(name, "autostash"))
		audit_found(a, path, "state", "a stash git applies when this operation ends");
	/* git am: --abort resets to ORIG_HEAD, which any reset or merge rewrites */
	else if (!strcmp(name, "applying"))
		audit_found(
			a, path, "state",
			"an am session in progress: git am --abort resets the branch to the commit "
			"ORIG_HEAD names, --continue and --skip apply the patches beside this; "
			"review both first");
	else
		audit_state_refs(a, dfd, name, path); /* R1, X5 */
}

static void gitdir_state(struct audit *a, int dfd, const char *path);

static void worktree_admin(struct audit *a, int dfd, const char *name, const char *path)
{
	int fd = audit_open_dir(dfd, name);

	if (fd < 0)
		return;
	gitdir_state(a, fd, path);
	close(fd);
}

/* What a git folder's per-worktree files hold: index, rebase and sequencer state */
static void gitdir_state(struct audit *a, int dfd, const char *path)
{
	static const char *const dirs[] = {"rebase-merge", "rebase-apply", "sequencer"};
	char *p;
	size_t i;

	audit_each_entry(a, dfd, ".", path, index_files);
	audit_refs(a, dfd, path);
	audit_names(a, dfd, path);
	audit_midx(a, dfd, path);
	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		p = audit_join(path, dirs[i]);
		if (p)
			audit_each_entry(a, dfd, dirs[i], p, state_file);
		free(p);
	}
}

static int on_hooks(void *arg, enum guard_cfg_key key, const char *value)
{
	char *out = arg;

	if (key == GUARD_CFG_HOOKSPATH)
		snprintf(out, PATH_MAX, "%s", value);
	return 0;
}

/* core.hooksPath of the git folder DFD: its files, reached without following links */
static void hooks_path(struct audit *a, int dfd, int topfd, const char *top, const char *path)
{
	char hp[PATH_MAX] = "", *copy, *comp, *save, *shown;
	struct guard_cfg cfg = {.fn = on_hooks, .arg = hp};
	size_t len;
	char *buf;
	int fd, nfd;

	if (guard_read_file(dfd, "config", GUARD_CONFIG_MAX, &buf, &len, NULL))
		return;
	guard_config_scan(buf, len, &cfg);
	free(buf);
	if (!hp[0])
		return;
	if (hp[0] == '/')
		fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (topfd >= 0)
		fd = fcntl(topfd, F_DUPFD_CLOEXEC, 3);
	else
		fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3); /* a bare repository: from the git folder */
	copy = strdup(hp);
	for (comp = copy ? strtok_r(copy, "/", &save) : NULL; comp && fd >= 0;
	     comp = strtok_r(NULL, "/", &save)) {
		nfd = audit_open_dir(fd, comp);
		close(fd);
		fd = nfd;
	}
	free(copy);
	if (fd < 0) {
		audit_found(a, path, "hook",
			    "core.hooksPath '%s' cannot be listed without following a "
			    "symlink",
			    hp);
		return;
	}
	shown = hp[0] == '/' ? strdup(hp) : audit_join(topfd >= 0 ? top : path, hp);
	if (shown)
		audit_each_entry(a, fd, ".", shown, hook_file);
	free(shown);
	close(fd);
}

static void gitdir(struct audit *a, int fd, const char *path, int topfd, const char *top);

/* modules/: each submodule's git folder, at any depth of its name (up to 8) */
static void modules(struct audit *a, int dfd, const char *path, int depth)
{
	struct dirent *de;
	struct stat st;
	char *p;
	DIR *d;
	int fd, cfd;

	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		cfd = audit_open_dir(dirfd(d), de->d_name);
		p = cfd >= 0 ? audit_join(path, de->d_name) : NULL;
		if (p && guard_shape(cfd, NULL))
			gitdir(a, cfd, p, -1, NULL);
		else if (p && depth < 8)
			modules(a, cfd, p, depth + 1);
		free(p);
		if (cfd >= 0)
			close(cfd);
	}
	closedir(d);
}

/*
 * Config keys whose value git runs as a command or program (git-config(1)),
 * and those that take a command after a '!'.  "*" stands for a subsection.
 */
static const char *const program_keys[] = {
	"core.fsmonitor",
	"core.pager",
	"core.editor",
	"core.sshcommand",
	"core.askpass",
	"core.gitproxy",
	"sequence.editor",
	"diff.external",
	"gpg.program",
	"gpg.*.program",
	"credential.helper",
	"credential.*.helper",
	"diff.*.command",
	"diff.*.textconv",
	"merge.*.driver",
	"filter.*.clean",
	"filter.*.smudge",
	"filter.*.process",
	"remote.*.uploadpack",
	"remote.*.receivepack",
	"difftool.*.cmd",
	"mergetool.*.cmd",
	"man.*.cmd",
	"browser.*.cmd",
	"uploadpack.packobjectshook",
	"init.templatedir",
	"include.path",
	"includeif.*.path",
	"gpg.ssh.defaultkeycommand",
	"interactive.difffilter",
	"trailer.*.command",
	"trailer.*.cmd",
	"core.alternaterefscommand",
	"sendemail.sendmailcmd",
	"sendemail.tocmd",
	"sendemail.cccmd",
	"sendemail.smtpserver",
	"guitool.*.cmd",
	"core.hookspath",
};

static bool key_is(const char *var, const char *pat)
{
	const char *star = strchr(pat, '*'), *first = strchr(var, '.'), *last = strrchr(var, '.');
	size_t n;

	if (!star)
		return !strcmp(var, pat);
	/* "sec.*.name": var is sec.<anything>.name */
	n = (size_t)(star - pat);
	return first && last && first != last && !strncmp(var, pat, n) &&
	       (size_t)(first - var + 1) == n && !strcmp(last, star + 1);
}

struct cfg_audit {
	struct audit *a;
	const char *path;
};

static int config_program(void *arg, const char *var, const char *value)
{
	struct cfg_audit *c = arg;
	size_t i;

	if (!value || !*value)
		return 0;
	if (!strcmp(var, "core.fsmonitor") && guard_parse_bool(value) >= 0)
		return 0; /* true or false: git's own daemon, or none */
	if ((!strncmp(var, "alias.", 6) || !strncmp(var, "submodule.", 10)) && value[0] == '!') {
		audit_found(c->a, c->path, "config", "%s = %s: git runs it", var, value);
		return 0;
	}
	if (!strncmp(var, "pager.", 6) && guard_parse_bool(value) < 0) {
		audit_found(c->a, c->path, "config", "%s = %s: git runs it", var, value);
		return 0;
	}
	for (i = 0; i < sizeof program_keys / sizeof program_keys[0]; i++)
		if (key_is(var, program_keys[i])) {
			audit_found(c->a, c->path, "config",
				    "%s = %s: git runs it or reads it as config", var, value);
			break;
		}
	return 0;
}

/* A git folder FD at PATH; TOPFD/TOP its work tree's top, or -1 for a bare one */
/*
 * A stash: refs are the bot's to write, and git stash pop applies the
 * newest stash's work tree whatever it holds (a hook under a tracked
 * hooks folder, a script a hook link leads to). The person takes it for
 * theirs, so it is listed; packed (refs/stash in packed-refs) too.
 */
static void stash(struct audit *a, int fd, const char *path)
{
	struct stat st;
	char *buf, *p;
	size_t len;
	bool packed;

	if (fstatat(fd, "refs/stash", &st, AT_SYMLINK_NOFOLLOW)) {
		if (guard_read_file(fd, "packed-refs", GUARD_INDEX_MAX, &buf, &len, NULL))
			return;
		packed = memmem(buf, len, " refs/stash\n", 12) != NULL;
		free(buf);
		if (!packed)
			return;
	}
	p = audit_join(path, "refs/stash");
	if (p)
		audit_found(
			a, p, "state",
			"a stash: git stash pop writes what it holds into the work tree; review it "
			"(git stash show -p --include-untracked) first");
	free(p);
}

#define AUDIT_EXCLUDE_MAX (1u << 20) /* bytes of info/exclude read */

/*
 * info/exclude: patterns git status leaves out of its list of untracked
 * files, kept in the git folder where no diff shows them. A bot's line
 * there hides a file it left in the work tree (a conftest.py, a local.mk a
 * Makefile includes) from the person's review; listed with its first
 * patterns.
 */
static void info_exclude(struct audit *a, int fd, const char *path)
{
	char shown[160] = "", *buf, *p, *line, *end;
	size_t len, n = 0, l;
	int ifd = audit_open_dir(fd, "info"), rc;

	if (ifd < 0)
		return;
	rc = guard_read_file(ifd, "exclude", AUDIT_EXCLUDE_MAX, &buf, &len, NULL);
	close(ifd);
	if (rc)
		return;
	for (line = buf; line < buf + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			end = buf + len;
		while (line < end && (*line == ' ' || *line == '\t' || *line == '\r'))
			line++;
		if (line == end || *line == '#')
			continue;
		l = strlen(shown);
		if (n++ < 3 && l + 4 < sizeof shown)
			snprintf(shown + l, sizeof shown - l, "%s%.*s", l ? ", " : "",
				 (int)(end - line > 40 ? 40 : end - line), line);
	}
	free(buf);
	if (n && (p = audit_join(path, "info/exclude"))) {
		audit_found(a, p, "exclude",
			    "%zu patterns git status hides untracked files by (%s%s): what they "
			    "match is not shown for review (git status --ignored shows it)",
			    n, shown, n > 3 ? ", ..." : "");
		free(p);
	}
}

/* Does the .gitignore line L (N bytes, trimmed) match the file itself? */
static bool ignores_itself(const char *l, size_t n)
{
	static const char *const self[] = {"*", "/*", ".*", "/.*", ".gitignore", "/.gitignore",
					   "*.gitignore", ".git*", "/.git*", ".gitignore*", NULL};
	size_t i;

	for (i = 0; self[i]; i++)
		if (strlen(self[i]) == n && !memcmp(l, self[i], n))
			return true;
	return false;
}

/*
 * A .gitignore (NAME in DFD) in a work tree whose patterns match itself and
 * that no later "!.gitignore" takes back: if it is not tracked, git status
 * shows neither it nor the files it hides. The keep-an-empty-folder form
 * ("*" then "!.gitignore") is not listed.
 */
static void self_ignoring(struct audit *a, int dfd, const char *name, const char *path)
{
	char *buf, *line, *end;
	bool hidden = false;
	size_t len, n;

	if (guard_read_file(dfd, name, AUDIT_EXCLUDE_MAX, &buf, &len, NULL))
		return;
	for (line = buf; line < buf + len; line = end + 1) {
		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end)
			end = buf + len;
		n = (size_t)(end - line);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\r' || line[n - 1] == '\t'))
			n--;
		if (n && line[0] == '!')
			hidden = hidden && !ignores_itself(line + 1, n - 1);
		else if (ignores_itself(line, n))
			hidden = true;
	}
	free(buf);
	if (hidden)
		audit_found(a, path, "exclude",
			    "a .gitignore that matches itself: if it is not tracked, git status shows "
			    "neither it nor the files it hides (git status --ignored shows them)");
}

static void gitdir(struct audit *a, int fd, const char *path, int topfd, const char *top)
{
	struct guard_cfg cfg = {0};
	size_t len;
	char *p, *cp;
	int mfd;

	/* a linked worktree's admin folder takes the common folder's (read here first) */
	a->hashsz = 20;
	if (!guard_read_file(fd, "config", GUARD_CONFIG_MAX, &p, &len, NULL)) {
		struct cfg_audit ca = {.a = a};

		ca.path = cp = audit_join(path, "config");
		cfg.any = cp ? config_program : NULL;
		cfg.any_arg = &ca;
		if (!guard_config_scan(p, len, &cfg) && cfg.sha256)
			a->hashsz = 32;
		free(cp);
		free(p);
	}
	p = audit_join(path, "hooks");
	if (p)
		audit_each_entry(a, fd, "hooks", p, hook_file);
	free(p);
	hooks_path(a, fd, topfd, top, path);
	gitdir_state(a, fd, path);
	audit_gitlinks(a, fd, topfd, top);
	audit_index_changes(a, fd, topfd, top);
	info_exclude(a, fd, path);
	stash(a, fd, path);
	p = audit_join(path, "worktrees");
	if (p)
		audit_each_entry(a, fd, "worktrees", p, worktree_admin);
	free(p);
	mfd = audit_open_dir(fd, "modules");
	p = mfd >= 0 ? audit_join(path, "modules") : NULL;
	if (p)
		modules(a, mfd, p, 0);
	free(p);
	if (mfd >= 0)
		close(mfd);
}

/* The target of a .git file or symlink: is it a worktree or submodule git folder? */
static bool usual_pointer(const char *t)
{
	return strstr(t, "/worktrees/") || !strncmp(t, "worktrees/", 10) ||
	       strstr(t, "/modules/") || !strncmp(t, "modules/", 8);
}

static void dotgit_entry(struct audit *a, int dfd, const struct stat *st, const char *path)
{
	char target[GUARD_GITFILE_MAX];
	size_t len;
	ssize_t n;
	char *buf;

	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(dfd, ".git", target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		audit_found(a, path, "shape", "a .git symlink to '%s': git uses that folder",
			    target);
		return;
	}
	if (!S_ISREG(st->st_mode))
		return;
	if (guard_read_file(dfd, ".git", GUARD_GITFILE_MAX, &buf, &len, NULL))
		return;
	if (guard_parse_gitfile(buf, len, target, sizeof target))
		audit_found(a, path, "shape", "a .git file git cannot read");
	else if (!usual_pointer(target))
		audit_found(a, path, "shape",
			    "a .git file pointing to '%s', not a worktree or submodule "
			    "git folder",
			    target);
	free(buf);
}

struct frame {
	DIR *d;
	char *path;
	int gitdepth; /* > 0: beneath a work tree (a folder holding .git) */
};

/* One folder entry of the walk: returns an fd to descend into, or -1. */
static int visit(struct audit *a, struct frame *f, const char *name, const char *path,
		 bool *in_tree)
{
	int dfd = dirfd(f->d), fd;
	struct stat st, top;
	bool shape;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	audit_home_file(a, dfd, name, path);
	if ((name[0] == '+' || name[0] == '-') &&
	    !fstatat(dfd, ".git", &top, AT_SYMLINK_NOFOLLOW))
		audit_found(a, path, "name",
			    "a name at a work tree's top that vim reads as %s: git mergetool and "
			    "git difftool hand it to vimdiff as it is (rename it before using them)",
			    name[0] == '+' ? "a command to run" : "an option");
	if (name_is_dotgit(name)) {
		if (S_ISDIR(st.st_mode)) {
			fd = audit_open_dir(dfd, name);
			if (fd >= 0) {
				gitdir(a, fd, path, dfd, f->path);
				close(fd);
			}
		} else {
			dotgit_entry(a, dfd, &st, path);
		}
		return -1;
	}
	if (f->gitdepth > 0 && S_ISLNK(st.st_mode) && guard_tool_name(name))
		audit_found(a, path, "link",
			    "a symbolic link named as a file git mergetool, git apply --reject or git "
			    "format-patch writes or moves there: they would follow it (remove it "
			    "before using them)");
	if (!S_ISDIR(st.st_mode)) {
		if (f->gitdepth > 0 && S_ISREG(st.st_mode) && !strcmp(name, ".gitignore"))
			self_ignoring(a, dfd, name, path);
		return -1;
	}
	fd = audit_open_dir(dfd, name);
	if (fd < 0) {
		audit_failed(a, path, "cannot open", errno);
		return -1;
	}
	shape = guard_shape(fd, NULL);
	if (shape) {
		if (f->gitdepth > 0)
			audit_found(a, path, "shape",
				    "a bare-shaped git folder inside a work tree: git "
				    "run in it uses its config");
		gitdir(a, fd, path, -1, NULL);
		close(fd);
		return -1;
	}
	*in_tree = f->gitdepth > 0 || !fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW);
	return fd;
}

/*
 * Audit the tree at PATH (ROOTFD open on it): FN gets each finding.  Returns
 * the number of findings, or a negative errno with ERR set when part of the tree could not
 * be read (findings are still reported).
 */
long guard_audit(int rootfd, const char *path, guard_audit_fn fn, void *arg, struct guard_err *err)
{
	struct audit a = {.fn = fn, .arg = arg, .err = err};
	struct frame st[AUDIT_DEPTH];
	struct dirent *de;
	struct stat s;
	int depth = 0, fd;
	bool in_tree;
	char *p;

	if (err)
		err->code = 0;
	fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	st[0].d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!st[0].d) {
		audit_failed(&a, path, "cannot read", errno);
		if (fd >= 0)
			close(fd);
		return a.code;
	}
	st[0].path = strdup(path);
	st[0].gitdepth = !fstatat(rootfd, ".git", &s, AT_SYMLINK_NOFOLLOW);
	if (guard_shape(rootfd, NULL))
		gitdir(&a, rootfd, path, -1, NULL);
	while (depth >= 0) {
		struct frame *f = &st[depth];

		de = readdir(f->d);
		if (!de) {
			closedir(f->d);
			free(f->path);
			depth--;
			continue;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++a.entries > AUDIT_ENTRIES) {
			audit_failed(&a, f->path, "more entries than audit reads", E2BIG);
			break;
		}
		p = audit_join(f->path, de->d_name);
		if (!p) {
			audit_failed(&a, f->path, "out of memory", ENOMEM);
			break;
		}
		in_tree = false;
		fd = visit(&a, f, de->d_name, p, &in_tree);
		if (fd < 0) {
			free(p);
			continue;
		}
		if (depth + 1 >= AUDIT_DEPTH || !(st[depth + 1].d = fdopendir(fd))) {
			audit_failed(&a, p, "too deep to audit", ELOOP);
			close(fd);
			free(p);
			continue;
		}
		st[depth + 1].path = p;
		st[depth + 1].gitdepth = in_tree;
		depth++;
	}
	while (depth >= 0) {
		closedir(st[depth].d);
		free(st[depth].path);
		depth--;
	}
	return a.errors ? a.code : (long)a.findings;
}
