/* SPDX-License-Identifier: MIT */
/*
 * H1, ssh: what a home's ~/.ssh/config Includes (ssh_config(5): anywhere in
 * the file, "Include=", quotes, ~ and ~user, relative to ~/.ssh, glob(7)
 * patterns, nested to ssh's own depth) is RO inside the root, NC if
 * missing; a pattern's folder RO-tree.  home.c calls home_ssh() per home.
 * Also home_expand(): ~, ~user and relative paths, as ssh and git's
 * configuration (home.c's outside files) both name them.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gitguard/guard-int.h"
#include "gitguard/home-int.h"

#define SSH_INCLUDE_DEPTH 16 /* ssh's READCONF_MAX_DEPTH */
#define SSH_CONFIG_MAX (256 * 1024)
#define SSH_FILES_MAX 256 /* ssh config files one home's scan reads */

/* "~/x" (HOME), "~user/x", else a path relative to DIR, into OUT; as git's interpolate_path */
int home_expand(const char *in, const char *dir, const char *home, char *out, size_t outsz)
{
	struct passwd pw, *res = NULL;
	char buf[4096], user[256];
	const char *slash;
	size_t l;
	int n;

	if (in[0] == '~' && (in[1] == '/' || !in[1])) {
		n = snprintf(out, outsz, "%s%s", home, in + 1);
	} else if (in[0] == '~') {
		slash = strchr(in, '/');
		l = slash ? (size_t)(slash - in - 1) : strlen(in + 1);
		if (l >= sizeof(user))
			return -ENAMETOOLONG;
		memcpy(user, in + 1, l);
		user[l] = '\0';
		if (getpwnam_r(user, &pw, buf, sizeof(buf), &res) || !res || !res->pw_dir)
			return -ENOENT;
		n = snprintf(out, outsz, "%s%s", res->pw_dir, slash ? slash : "");
	} else if (in[0] == '/') {
		n = snprintf(out, outsz, "%s", in);
	} else {
		n = snprintf(out, outsz, "%s/%s", dir, in);
	}
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

/* PATH (absolute) inside the root is RO (TREE: RO-tree), NC if missing */
static int protect_path(struct hscan *h, const char *path, bool tree)
{
	struct resolved res;
	int rc;

	rc = home_record(h, guard_resolve(h->g, -1, path, true, home_pin_cb, h, &res), &res, tree);
	resolved_close(&res);
	return rc;
}

static int ssh_scan(struct hscan *h, const char *home, const char *path, unsigned depth);

/*
 * One Include argument ARG of an ssh config of HOME, as ssh_config(5) reads
 * it: ~ and ~user expanded, relative to ~/.ssh, glob(7) patterns.  What it
 * names inside the root is RO, NC if missing; for a pattern, the folder of
 * its last component RO-tree (a new file there would match), and each file
 * it matches is read for its own Includes.
 */
static int ssh_include(struct hscan *h, const char *home, const char *arg, unsigned depth)
{
	char dir[PATH_MAX], path[PATH_MAX], *slash;
	glob_t gl;
	size_t i;
	int rc = 0;

	if (snprintf(dir, sizeof(dir), "%s/.ssh", home) >= (int)sizeof(dir) ||
	    home_expand(arg, dir, home, path, sizeof(path)))
		return 0;
	if (!strpbrk(path, "*?[")) {
		rc = protect_path(h, path, false);
		return rc ? rc : ssh_scan(h, home, path, depth + 1);
	}
	slash = strrchr(path, '/');
	if (slash && slash > path && (size_t)(slash - path) < sizeof(dir)) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
		if (!strpbrk(dir, "*?["))
			rc = protect_path(h, dir, true);
		else
			guard_logf(h->g,
				   "gitguard: ssh Include %s: new folders its pattern "
				   "would match are not guarded",
				   path);
	}
	if (rc || glob(path, 0, NULL, &gl))
		return rc;
	/* past the bound, the pattern's folder (RO-tree above) still covers its own matches */
	for (i = 0; !rc && i < gl.gl_pathc && i < SSH_FILES_MAX; i++) {
		rc = protect_path(h, gl.gl_pathv[i], false);
		rc = rc ? rc : ssh_scan(h, home, gl.gl_pathv[i], depth + 1);
	}
	globfree(&gl);
	return rc;
}

/*
 * Next word of an ssh config line at *P into OUT, double quotes kept
 * together; KEY: the keyword, which "=" may end ("Include=x")
 */
static bool ssh_word(const char **p, bool key, char *out, size_t outsz)
{
	const char *s = *p + strspn(*p, " \t");
	size_t n = 0;
	bool quoted = false;

	if (!key && *s == '=')
		s += 1 + strspn(s + 1, " \t");
	for (; *s && (quoted || (*s != ' ' && *s != '\t' && !(key && *s == '='))); s++) {
		if (*s == '"')
			quoted = !quoted;
		else if (n + 1 < outsz)
			out[n++] = *s;
	}
	out[n] = '\0';
	*p = s;
	return n > 0;
}

/*
 * The ssh config PATH of HOME (read through the kernel, as ssh reads it):
 * its Include lines, at any place, to SSH_INCLUDE_DEPTH levels.
 */
static int ssh_scan(struct hscan *h, const char *home, const char *path, unsigned depth)
{
	char real[PATH_MAX], word[PATH_MAX], *buf, *line, *next;
	const char *p;
	size_t len;
	int rc = 0;

	if (depth > SSH_INCLUDE_DEPTH || h->sshfiles >= SSH_FILES_MAX || !realpath(path, real) ||
	    guard_read_file(AT_FDCWD, real, SSH_CONFIG_MAX, &buf, &len, NULL))
		return 0;
	h->sshfiles++;
	for (line = buf; !rc && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p = line;
		if (!ssh_word(&p, true, word, sizeof(word)) || strcasecmp(word, "include"))
			continue;
		while (!rc && ssh_word(&p, false, word, sizeof(word)))
			rc = ssh_include(h, home, word, depth);
	}
	free(buf);
	return rc;
}

/* What the home DIR's ~/.ssh/config Includes, inside the root or not */
int home_ssh(struct hscan *h, const char *dir)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/.ssh/config", dir) >= (int)sizeof(path))
		return 0;
	h->sshfiles = 0;
	return ssh_scan(h, dir, path, 0);
}
