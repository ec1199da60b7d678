/* SPDX-License-Identifier: MIT */
/*
 * Per-repository state: what a git folder's layout and config make
 * protected (X3, W2, W3, commondir targets, other names of protected files),
 * keyed by the git folder's (st_dev, st_ino) and rescanned on notify or when
 * the config's stamp changes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gitguard/guard-int.h"

/* A list of strings a config scan collects */
struct strs {
	char **v;
	size_t n;
	size_t alloc;
};

static int strs_add(struct strs *l, const char *str)
{
	char *d;

	size_t i;

	if (l->n >= 64)
		return 0; /* git uses the last; more than this is no layout a person made */
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], str))
			return 0;
	d = strdup(str);
	if (!d || gg_grow(&l->v, &l->alloc, l->n + 1, sizeof(*l->v), 4)) {
		free(d);
		return -ENOMEM;
	}
	l->v[l->n++] = d;
	return 0;
}

static void strs_free(struct strs *l)
{
	while (l->n)
		free(l->v[--l->n]);
	free(l->v);
	l->v = NULL;
}

#define HL_DEPTH 8 /* folder levels of hooks/, remotes/, branches/ looked at for hard links */

struct scan {
	struct guard *g;
	struct guard_repo *r;
	int dfd;	     /* the git folder */
	int basefd;	     /* folder of the config file being read */
	uid_t owner;	     /* owner of that file, for "~/" */
	unsigned depth;	     /* include depth */
	uint8_t pin_rule;    /* rule for pins of the current resolution */
	struct strs rel;     /* relative core.hooksPath values: taken at every worktree top */
	struct strs wt;	     /* core.worktree values */
	bool unread;	     /* an include was not read (outside the root): libgit2 is not asked */
	const char *by_path; /* the next config read is the person's, outside: watch this path */
};

static void x3(struct scan *s, const char *why)
{
	if (!s->r->rule) {
		s->r->rule = GUARD_RULE_X3;
		s->r->why = why;
	}
}

static int pin_cb(void *arg, const struct stat *st, bool is_link)
{
	struct scan *s = arg;

	return recs_add(&s->r->recs, st->st_dev, st->st_ino, NULL, is_link ? GUARD_RO : GUARD_PIN,
			s->pin_rule);
}

/* "~/x", "~user/x" (git's interpolate_path), for the owner of the config */
static int expand_home(struct scan *s, const char *in, char *out, size_t outsz)
{
	struct passwd pw, *res = NULL;
	char buf[4096], user[256];
	const char *rest, *slash;
	int n;

	if (in[0] != '~') {
		n = snprintf(out, outsz, "%s", in);
		return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
	}
	slash = strchr(in, '/');
	rest = slash ? slash : "";
	if (in[1] == '/' || !in[1]) {
		getpwuid_r(s->owner, &pw, buf, sizeof(buf), &res);
	} else {
		size_t l = slash ? (size_t)(slash - in - 1) : strlen(in + 1);

		if (l >= sizeof(user))
			return -ENAMETOOLONG;
		memcpy(user, in + 1, l);
		user[l] = '\0';
		getpwnam_r(user, &pw, buf, sizeof(buf), &res);
	}
	if (!res || !res->pw_dir || res->pw_dir[0] != '/')
		return -ENOENT;
	n = snprintf(out, outsz, "%s%s", res->pw_dir, rest);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

static int scan_config(struct scan *s, int dirfd, const char *name);

/* Remembers NAME in DIRFD (ST, or NULL when missing) for guard_revalidate() */
static int watch_file(struct scan *s, int dirfd, const char *name, const struct stat *st)
{
	struct guard_watch *w = s->r->watch;
	struct guard_wfile *f;
	struct stat a, b;
	int fd = -1;

	if (!w || w->n >= GUARD_WATCH_FILES)
		return 0;
	if (dirfd == AT_FDCWD) {
		fd = AT_FDCWD; /* the person's files outside the root: NAME is a full path */
	} else if (w->gfd >= 0 && !fstat(dirfd, &a) && !fstat(w->gfd, &b) && a.st_dev == b.st_dev &&
		   a.st_ino == b.st_ino) {
		fd = w->gfd; /* the git folder itself: no fd of its own */
	} else {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return 0;
	}
	f = &w->f[w->n];
	f->name = strdup(name);
	if (!f->name) {
		if (fd >= 0 && fd != w->gfd)
			close(fd);
		return -ENOMEM;
	}
	f->dirfd = fd;
	f->missing = !st;
	if (st)
		f->st = *st;
	w->n++;
	return 0;
}

/* W3: an include target is RO, NC if missing, and is read for more */
static int on_include(struct scan *s, const char *value)
{
	char path[PATH_MAX];
	struct resolved res;
	int rc = 0;

	if (!strncmp(value, "%(prefix)/", 10)) {
		s->unread = true;
		return 0; /* git's install prefix: outside any root */
	}
	if (!*value || expand_home(s, value, path, sizeof(path))) {
		x3(s, "an include that cannot be resolved");
		return 0;
	}
	s->pin_rule = GUARD_RULE_W3;
	switch (guard_resolve(s->g, s->basefd, path, true, pin_cb, s, &res)) {
	case RES_INSIDE:
		rc = recs_add(&s->r->recs, res.st.st_dev, res.st.st_ino, NULL, GUARD_RO,
			      GUARD_RULE_W3);
		if (rc)
			break;
		if (!S_ISREG(res.st.st_mode)) {
			x3(s, "an include target that is not a regular file");
			break;
		}
		if (s->depth >= GUARD_INCLUDE_DEPTH) {
			x3(s, "includes nested too deep");
			break;
		}
		{
			int obase = s->basefd;
			uid_t oowner = s->owner;

			s->basefd = res.dirfd;
			s->owner = res.st.st_uid;
			s->depth++;
			rc = scan_config(s, res.dirfd, res.name);
			s->depth--;
			s->basefd = obase;
			s->owner = oowner;
		}
		break;
	case RES_MISSING: {
		struct stat st;

		if (fstat(res.dirfd, &st) < 0) {
			x3(s, "an include that cannot be resolved");
			break;
		}
		rc = recs_add(&s->r->recs, st.st_dev, st.st_ino, res.name, GUARD_RO, GUARD_RULE_W3);
		if (!rc)
			rc = watch_file(s, res.dirfd, res.name, NULL);
		break;
	}
	case RES_OUTSIDE:
		s->unread = true;
		break;
	default:
		x3(s, "an include that cannot be resolved");
		break;
	}
	resolved_close(&res);
	return rc;
}

/* W2: a hooksPath inside the root is RO-tree, NC if missing */
static int on_hookspath_from(struct scan *s, int fromfd, const char *path)
{
	struct resolved res;
	struct stat st;
	int rc = 0;

	s->pin_rule = GUARD_RULE_W2;
	switch (guard_resolve(s->g, fromfd, path, true, pin_cb, s, &res)) {
	case RES_INSIDE:
		rc = recs_add(&s->r->recs, res.st.st_dev, res.st.st_ino, NULL,
			      GUARD_RO | (S_ISDIR(res.st.st_mode) ? GUARD_TREE : 0), GUARD_RULE_W2);
		break;
	case RES_MISSING:
		if (fstat(res.dirfd, &st) < 0) {
			x3(s, "a core.hooksPath that cannot be resolved");
			break;
		}
		rc = recs_add(&s->r->recs, st.st_dev, st.st_ino, res.name, GUARD_RO | GUARD_TREE,
			      GUARD_RULE_W2);
		break;
	case RES_OUTSIDE:
		break;
	default:
		x3(s, "a core.hooksPath that cannot be resolved");
		break;
	}
	resolved_close(&res);
	return rc;
}

static int on_hookspath(struct scan *s, const char *value)
{
	char path[PATH_MAX];

	if (!*value)
		return 0; /* empty: the default hooks/ */
	if (expand_home(s, value, path, sizeof(path))) {
		x3(s, "a core.hooksPath that cannot be resolved");
		return 0;
	}
	if (path[0] == '/')
		return on_hookspath_from(s, s->dfd, path);
	/* relative to where hooks run: every worktree top, applied by scan_tops() */
	return strs_add(&s->rel, path);
}

static int on_key(void *arg, enum guard_cfg_key key, const char *value)
{
	struct scan *s = arg;

	switch (key) {
	case GUARD_CFG_INCLUDE:
		return on_include(s, value);
	case GUARD_CFG_HOOKSPATH:
		return on_hookspath(s, value);
	case GUARD_CFG_WORKTREE:
		return *value ? strs_add(&s->wt, value) : 0;
	case GUARD_CFG_STRATEGY:
	case GUARD_CFG_STRATEGY_OPT:
		return 0; /* sequencer/opts only (seq.c), never in a config */
	}
	return 0;
}

/* Reads and scans one config file; the repository format only counts at depth 0 */
static int scan_config(struct scan *s, int dirfd, const char *name)
{
	struct guard_cfg cfg = {.fn = on_key, .arg = s};
	const char *wpath;
	struct stat st;
	size_t len;
	char *buf;
	int rc;

	wpath = s->by_path;
	s->by_path = NULL;
	rc = guard_read_file(dirfd, name, GUARD_CONFIG_MAX, &buf, &len, &st);
	if ((!rc || rc == -ENOENT) &&
	    watch_file(s, wpath ? AT_FDCWD : dirfd, wpath ? wpath : name, rc ? NULL : &st)) {
		if (!rc)
			free(buf);
		return -ENOMEM;
	}
	if (rc == -ENOENT && !s->depth) {
		x3(s, "no config");
		return 0;
	}
	if (rc == -ENOENT)
		return 0; /* raced away: recorded NC already by the caller's resolution */
	if (rc == -EINVAL) {
		x3(s, "a config that is not a regular file");
		return 0;
	}
	if (rc == -EFBIG) {
		x3(s, "a config larger than 1 MiB");
		return 0;
	}
	if (rc) {
		x3(s, "a config that cannot be read");
		return 0;
	}
	if (!s->depth) {
		s->r->stamp = st;
		s->owner = st.st_uid;
	}
	rc = guard_config_scan(buf, len, &cfg);
	free(buf);
	if (rc == -EINVAL) {
		x3(s, "a config git cannot parse");
		return 0;
	}
	if (rc)
		return rc;
	if (!s->depth) {
		if (cfg.worktree_config) {
			x3(s, "extensions.worktreeConfig");
			/* its hooksPath and includes still count, at the worktree tops */
			s->depth++;
			rc = scan_config(s, s->dfd, "config.worktree");
			s->depth--;
			if (rc)
				return rc;
		}
		if (cfg.unknown_ext)
			x3(s, "an unknown extension");
		if (cfg.bad_format || cfg.format > 1)
			x3(s, "an unknown repository format");
	}
	return 0;
}

/* A file with other names: remember its inode so those names are protected too */
static int hl_file(struct guard_repo *r, int dirfd, const char *name, uint8_t rule)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return 0;
	return recs_add(&r->recs, st.st_dev, st.st_ino, NULL, GUARD_RO, rule);
}

/*
 * HL for a tree git reads files from (hooks/, remotes/, branches/): git reads
 * only a level or two down, so deeper folders are not looked at and the
 * recursion stays shallow.
 */
static int hl_tree(struct guard_repo *r, int dfd, const char *name, uint8_t rule, unsigned *budget,
		   unsigned depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hl_file(r, dfd, name, rule);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!rc && (de = readdir(d)) && *budget) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		(*budget)--;
		if (de->d_type == DT_DIR && depth < HL_DEPTH)
			rc = hl_tree(r, dirfd(d), de->d_name, rule, budget, depth + 1);
		else if (de->d_type == DT_DIR)
			continue;
		else if (de->d_type != DT_LNK)
			rc = hl_file(r, dirfd(d), de->d_name, rule);
	}
	closedir(d);
	return rc;
}

static int hl_worktrees(struct guard_repo *r, int dfd)
{
	static const char *const names[] = {"commondir", "gitdir", "locked", "config.worktree"};
	struct dirent *de;
	size_t i;
	int fd, sub, rc = 0;
	DIR *d;

	fd = openat(dfd, "worktrees", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		for (i = 0; !rc && i < 4; i++)
			rc = hl_file(r, sub, names[i], i == 3 ? GUARD_RULE_D2 : GUARD_RULE_D5);
		close(sub);
	}
	closedir(d);
	return rc;
}

/* Other names of protected files in D: hooks, config, commondir... */
static int scan_hardlinks(struct guard_repo *r, int dfd)
{
	unsigned budget = 10000;
	int rc = 0, fd;

	rc = rc ? rc : hl_file(r, dfd, "config", GUARD_RULE_D1);
	rc = rc ? rc : hl_file(r, dfd, "config.worktree", GUARD_RULE_D2);
	rc = rc ? rc : hl_file(r, dfd, "commondir", GUARD_RULE_D4);
	rc = rc ? rc : hl_tree(r, dfd, "hooks", GUARD_RULE_D3, &budget, 0);
	rc = rc ? rc : hl_tree(r, dfd, "remotes", GUARD_RULE_D8, &budget, 0);
	rc = rc ? rc : hl_tree(r, dfd, "branches", GUARD_RULE_D8, &budget, 0);
	rc = rc ? rc : hl_worktrees(r, dfd);
	if (!rc) {
		fd = openat(dfd, "objects/info", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			rc = hl_file(r, fd, "alternates", GUARD_RULE_D7);
			rc = rc ? rc : hl_file(r, fd, "http-alternates", GUARD_RULE_D7);
			close(fd);
		}
	}
	return rc;
}

/*
 * D9: a symbolic link where git keeps its own files sends git's reads and
 * writes wherever it points (objects/info to a folder the bot writes
 * alternates in).  git makes none but HEAD under core.preferSymlinkRefs, so
 * one there was planted: the git folder is read-only as a whole, and what the
 * link names inside the root is read-only too.
 */
static int on_link(struct scan *s, int dirfd, const char *name)
{
	struct resolved res;
	struct stat st;
	int rc = 0;

	x3(s, "a symbolic link in the git folder (D9)");
	s->pin_rule = GUARD_RULE_D9;
	switch (guard_resolve(s->g, dirfd, name, true, pin_cb, s, &res)) {
	case RES_INSIDE:
		rc = recs_add(&s->r->recs, res.st.st_dev, res.st.st_ino, NULL,
			      GUARD_RO | (S_ISDIR(res.st.st_mode) ? GUARD_TREE : 0), GUARD_RULE_D9);
		break;
	case RES_MISSING:
		if (!fstat(res.dirfd, &st))
			rc = recs_add(&s->r->recs, st.st_dev, st.st_ino, res.name,
				      GUARD_RO | GUARD_TREE, GUARD_RULE_D9);
		break;
	default:
		break; /* outside the root, or dangling in a way git cannot follow either */
	}
	resolved_close(&res);
	return rc;
}

static int scan_links_in(struct scan *s, int dfd, const char *sub)
{
	char target[64];
	struct dirent *de;
	struct stat st;
	ssize_t n;
	int fd, rc = 0;
	DIR *d;

	fd = openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* missing, or a link itself: seen from the folder above */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISLNK(st.st_mode))
			continue;
		if (!strcmp(sub, ".") && !strcmp(de->d_name, "HEAD")) {
			n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
			if (n > 0) {
				target[n] = '\0';
				if (guard_head_target_ok(target))
					continue;
			}
		}
		rc = on_link(s, dirfd(d), de->d_name);
	}
	closedir(d);
	return rc;
}

static int scan_links(struct scan *s, int dfd)
{
	static const char *const subs[] = {".",	   "objects",	 "objects/info", "objects/pack",
					   "refs", "refs/heads", "refs/tags",	 "info",
					   "logs"};
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < sizeof(subs) / sizeof(subs[0]); i++)
		rc = scan_links_in(s, dfd, subs[i]);
	return rc;
}

/* Adds the folder FD (taken over) to TOPS unless it is there already */
static void tops_add(int *tops, size_t *n, int fd)
{
	struct stat st, o;
	size_t i;

	if (fd < 0)
		return;
	if (*n >= GUARD_SCAN_TOPS || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		close(fd);
		return;
	}
	for (i = 0; i < *n; i++)
		if (!fstat(tops[i], &o) && o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
			close(fd);
			return;
		}
	tops[(*n)++] = fd;
}

/* The folder PATH names from STARTFD, if inside the root, else -1 */
static int open_inside(struct guard *g, int startfd, const char *path)
{
	struct resolved res;
	int fd = -1;

	if (guard_resolve(g, startfd, path, true, NULL, NULL, &res) == RES_INSIDE &&
	    S_ISDIR(res.st.st_mode)) {
		fd = res.fd;
		res.fd = -1;
	}
	resolved_close(&res);
	return fd;
}

/*
 * The worktree top a worktrees/<id>/gitdir file in DIRFD names: it holds
 * "<top>/.git" (absolute; relative to DIRFD in newer git).
 */
static int gitdir_top(struct scan *s, int dirfd)
{
	char path[GUARD_GITFILE_MAX], *buf, *slash;
	struct stat st;
	size_t len;
	int rc;

	if (guard_read_file(dirfd, "gitdir", GUARD_GITFILE_MAX, &buf, &len, &st))
		return -1;
	/* git worktree move on the host rewrites it */
	if (watch_file(s, dirfd, "gitdir", &st)) {
		free(buf);
		return -1;
	}
	rc = guard_parse_commondir(buf, len, path, sizeof(path));
	free(buf);
	if (rc)
		return -1;
	slash = strrchr(path, '/');
	if (!slash)
		return -1;
	if (slash == path)
		slash[1] = '\0';
	else
		*slash = '\0';
	return open_inside(s->g, dirfd, path);
}

/*
 * W2 for a relative core.hooksPath: githooks(5) takes it from the top of the
 * worktree where git runs, or the git folder of a bare repository.  So it is
 * guarded at every top this git folder has: the folder above it (a .git
 * folder's worktree), core.worktree, the linked worktrees named by
 * worktrees/<id>/gitdir (or its own gitdir, for an <id>), and the folders
 * whose .git file or symlink names it (--separate-git-dir, a .git symlink,
 * a submodule), learnt by guard_note_pointer.
 */
static int scan_tops(struct scan *s, int dfd)
{
	int tops[GUARD_SCAN_TOPS], fd, sub;
	struct dirent *de;
	struct stat st;
	size_t n = 0, i, j;
	int rc = 0;
	DIR *d;

	if (!s->rel.n)
		return 0;
	/* a worktree the person adds on the host while mounted changes worktrees/ */
	if (!fstatat(dfd, "worktrees", &st, AT_SYMLINK_NOFOLLOW))
		rc = watch_file(s, dfd, "worktrees", &st);
	else
		rc = watch_file(s, dfd, "worktrees", NULL);
	if (rc)
		return rc;
	tops_add(tops, &n, fcntl(dfd, F_DUPFD_CLOEXEC, 3));
	tops_add(tops, &n, openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
	for (i = 0; i < s->wt.n; i++)
		tops_add(tops, &n, open_inside(s->g, dfd, s->wt.v[i]));
	tops_add(tops, &n, gitdir_top(s, dfd));
	fd = openat(dfd, "worktrees", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		tops_add(tops, &n, gitdir_top(s, sub));
		close(sub);
	}
	if (d)
		closedir(d);
	pthread_rwlock_rdlock(&s->g->lock);
	for (i = 0; i < s->g->ntops; i++)
		if (s->g->tops[i].dev == s->r->dev && s->g->tops[i].ino == s->r->ino)
			tops_add(tops, &n, fcntl(s->g->tops[i].fd, F_DUPFD_CLOEXEC, 3));
	pthread_rwlock_unlock(&s->g->lock);
	for (i = 0; i < n; i++) {
		for (j = 0; !rc && j < s->rel.n; j++)
			rc = on_hookspath_from(s, tops[i], s->rel.v[j]);
		close(tops[i]);
	}
	return rc;
}

/* One global or system config file PATH outside the root: the person's, opened as git does */
static int scan_outside(struct scan *s, const char *path)
{
	char real[PATH_MAX], proc[64], *slash;
	int fd, dfd, rc = 0, obase = s->basefd;
	struct stat st;
	ssize_t n;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? watch_file(s, AT_FDCWD, path, NULL) : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, real, sizeof(real) - 1);
	/* GIT_CONFIG_GLOBAL=/dev/null and the like: nothing git reads there matters */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || n <= 0 || (size_t)n >= sizeof(real)) {
		close(fd);
		return 0;
	}
	close(fd);
	real[n] = '\0';
	slash = strrchr(real, '/');
	if (!slash || slash == real)
		return 0;
	*slash = '\0';
	dfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	s->basefd = dfd;
	s->depth++;
	*slash = '/';
	s->by_path = real;
	rc = scan_config(s, dfd, slash + 1);
	s->by_path = NULL;
	s->depth--;
	s->basefd = obase;
	close(dfd);
	return rc;
}

/* One global or system config file PATH, read as an include of the repository's */
static int scan_global_file(struct scan *s, const char *path)
{
	struct resolved res;
	int where;

	s->pin_rule = GUARD_RULE_W3;
	where = guard_resolve(s->g, s->dfd, path, true, NULL, NULL, &res);
	resolved_close(&res);
	if (where == RES_OUTSIDE)
		return scan_outside(s, path);
	if (where == RES_INSIDE || where == RES_MISSING)
		return on_include(s, path); /* inside the root: guarded as an include target */
	return 0;
}

/* HOME's global config files ($XDG_CONFIG_HOME/git/config, ~/.gitconfig) into L */
static int global_paths(struct strs *l, const char *home, const char *xdg)
{
	char p[PATH_MAX];
	int rc = 0;

	if (xdg && *xdg && snprintf(p, sizeof(p), "%s/git/config", xdg) < (int)sizeof(p))
		rc = strs_add(l, p);
	else if (home && *home &&
		 snprintf(p, sizeof(p), "%s/.config/git/config", home) < (int)sizeof(p))
		rc = strs_add(l, p);
	if (!rc && home && *home && snprintf(p, sizeof(p), "%s/.gitconfig", home) < (int)sizeof(p))
		rc = strs_add(l, p);
	return rc;
}

/*
 * The person's global and system config (git config --global core.hooksPath
 * .githooks applies to every repository): those of this process's
 * environment, and the global ones of the root's owner.  Read like includes;
 * a relative hooksPath there is guarded at every worktree top.
 */
static int scan_global(struct scan *s)
{
	struct passwd pw, *res = NULL;
	struct strs l = {0};
	const char *env;
	char buf[4096];
	struct stat st;
	size_t i;
	int rc = 0;

	env = getenv("GIT_CONFIG_GLOBAL");
	if (env)
		rc = *env ? strs_add(&l, env) : 0;
	else
		rc = global_paths(&l, getenv("HOME"), getenv("XDG_CONFIG_HOME"));
	if (!rc && !fstat(s->g->root_fd, &st) &&
	    !getpwuid_r(st.st_uid, &pw, buf, sizeof(buf), &res) && res && res->pw_dir)
		rc = global_paths(&l, res->pw_dir, NULL);
	if (!rc && !getenv("GIT_CONFIG_NOSYSTEM")) {
		env = getenv("GIT_CONFIG_SYSTEM");
		rc = strs_add(&l, env ? env : "/etc/gitconfig");
	}
	for (i = 0; !rc && i < l.n; i++)
		rc = l.v[i][0] == '/' ? scan_global_file(s, l.v[i]) : 0;
	strs_free(&l);
	return rc;
}

/* Has any file the scan read changed since? */
static bool watch_changed(const struct guard_watch *w);

/*
 * The cross-check: libgit2's worktree and hooksPath values are applied too,
 * and a common folder libgit2 sees elsewhere makes the git folder X3.
 */
static int scan_lg2(struct scan *s, int dfd, int cfgdir)
{
	struct guard_lg2 v;
	struct stat a, b;
	size_t i;
	int fd, rc = 0;

	if (s->r->rule || s->unread || cfgdir < 0 || guard_lg2_view(dfd, &v))
		return 0;
	if (watch_changed(s->r->watch)) {
		/* changed while libgit2 read it: the revalidation reads it again */
		guard_lg2_free(&v);
		return 0;
	}
	fd = open(v.commondir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &a) < 0 || fstat(cfgdir, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		x3(s, "libgit2 finds another common folder");
	if (fd >= 0)
		close(fd);
	for (i = 0; !rc && i < v.nhooks; i++)
		rc = *v.hooks[i] ? on_hookspath(s, v.hooks[i]) : 0;
	if (!rc && v.workdir)
		rc = strs_add(&s->wt, v.workdir);
	guard_lg2_free(&v);
	return rc;
}

/* Scans the git folder DFD; returns a new repository record or NULL (ENOMEM). */
static struct guard_repo *repo_scan(struct guard *g, int dfd, const struct stat *dst)
{
	struct scan s = {.g = g, .dfd = dfd, .basefd = dfd, .owner = dst->st_uid};
	char path[GUARD_GITFILE_MAX], *buf;
	struct resolved res = {.fd = -1, .dirfd = -1};
	struct guard_repo *r;
	struct stat st;
	size_t len;
	int rc, cfgdir = dfd;

	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->dev = dst->st_dev;
	r->ino = dst->st_ino;
	r->watch = calloc(1, sizeof(*r->watch));
	if (!r->watch) {
		free(r);
		return NULL;
	}
	r->watch->gfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	s.r = r;
	if (!fstatat(dfd, "commondir", &st, AT_SYMLINK_NOFOLLOW)) {
		/* D4: config, hooks and objects live in the common folder */
		rc = guard_read_file(dfd, "commondir", GUARD_GITFILE_MAX, &buf, &len, NULL);
		if (!rc) {
			rc = guard_parse_commondir(buf, len, path, sizeof(path));
			free(buf);
		}
		if (rc) {
			x3(&s, "a commondir that cannot be read");
			cfgdir = -1;
		} else {
			s.pin_rule = GUARD_RULE_D4;
			switch (guard_resolve(g, dfd, path, true, pin_cb, &s, &res)) {
			case RES_INSIDE:
				if (!S_ISDIR(res.st.st_mode)) {
					x3(&s, "a commondir naming no folder");
					cfgdir = -1;
					break;
				}
				rc = recs_add(&r->recs, res.st.st_dev, res.st.st_ino, NULL,
					      REC_GITDIR, GUARD_RULE_D4);
				cfgdir = res.fd;
				break;
			case RES_OUTSIDE:
				/* the common folder is out of this root's reach */
				cfgdir = -1;
				break;
			default:
				x3(&s, "a commondir that cannot be resolved");
				cfgdir = -1;
				break;
			}
		}
	} else {
		r->stamped = true;
	}
	if (cfgdir >= 0) {
		s.basefd = cfgdir;
		rc = scan_config(&s, cfgdir, "config");
		if (rc == -ENOMEM)
			goto nomem;
	}
	if (!r->stamped)
		memset(&r->stamp, 0, sizeof(r->stamp));
	rc = scan_lg2(&s, dfd, cfgdir);
	resolved_close(&res);
	rc = rc ? rc : scan_global(&s);
	rc = rc ? rc : scan_tops(&s, dfd);
	strs_free(&s.rel);
	strs_free(&s.wt);
	if (rc == -ENOMEM || scan_links(&s, dfd) == -ENOMEM || scan_hardlinks(r, dfd) == -ENOMEM)
		goto nomem;
	if (r->rule)
		guard_logf(g,
			   "gitguard: git folder (dev %llu, ino %llu) is read-only as a whole "
			   "(rule X3): %s",
			   (unsigned long long)r->dev, (unsigned long long)r->ino, r->why);
	return r;
nomem:
	resolved_close(&res);
	strs_free(&s.rel);
	strs_free(&s.wt);
	guard_repo_free(r);
	return NULL;
}

static struct guard_repo **repo_find(struct guard *g, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < g->nrepos; i++)
		if (g->repos[i]->dev == dev && g->repos[i]->ino == ino)
			return &g->repos[i];
	return NULL;
}

static bool recs_equal(const struct guard_recs *a, const struct guard_recs *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++) {
		const struct guard_rec *x = &a->v[i], *y = &b->v[i];

		if (x->dev != y->dev || x->ino != y->ino || x->flags != y->flags ||
		    !x->name != !y->name || (x->name && strcmp(x->name, y->name)))
			return false;
	}
	return true;
}

/* Publishes R (replacing any record of the same folder); lock held exclusive. */
static int repo_publish(struct guard *g, struct guard_repo *r, bool *changed)
{
	struct guard_repo **slot = repo_find(g, r->dev, r->ino), *old;

	if (slot) {
		old = *slot;
		*changed = old->rule != r->rule || !recs_equal(&old->recs, &r->recs);
		*slot = r;
		/* the table borrows the old record's names: rebuilt before it is freed */
		if ((old->recs.n || r->recs.n) && guard_tab_rebuild(g)) {
			*slot = old;
			return -ENOMEM;
		}
		if (old->bot) {
			/* the bot's own: keep it so */
			r->bot = true;
			r->path = old->path;
			old->path = NULL;
		}
		guard_repo_free(old);
		return 0;
	} else {
		if (gg_grow(&g->repos, &g->arepos, g->nrepos + 1, sizeof(*g->repos), 8))
			return -ENOMEM;
		g->repos[g->nrepos++] = r;
		*changed = r->recs.n > 0;
	}
	if (*changed)
		guard_tab_rebuild(g);
	return 0;
}

static bool stamp_fresh(const struct guard_repo *r, int dfd)
{
	struct stat st;

	if (!r->stamped)
		return true;
	if (fstatat(dfd, "config", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return r->stamp.st_ino == 0;
	return st.st_ino == r->stamp.st_ino && st.st_dev == r->stamp.st_dev &&
	       st.st_size == r->stamp.st_size && st.st_mode == r->stamp.st_mode &&
	       st.st_mtim.tv_sec == r->stamp.st_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == r->stamp.st_mtim.tv_nsec &&
	       st.st_ctim.tv_sec == r->stamp.st_ctim.tv_sec &&
	       st.st_ctim.tv_nsec == r->stamp.st_ctim.tv_nsec;
}

/*
 * The state of the git folder DFD (stat DST): from the table if its config
 * has not changed, else scanned now.  Fills OUT's bot, rule and why only.
 */
int guard_repo_get(struct guard *g, int dfd, const struct stat *dst, struct guard_repo *out)
{
	struct guard_repo **slot, *r;
	bool found = false, changed = false;
	int rc;

	memset(out, 0, sizeof(*out));
	pthread_rwlock_rdlock(&g->lock);
	slot = repo_find(g, dst->st_dev, dst->st_ino);
	if (slot) {
		found = true;
		out->bot = (*slot)->bot;
		out->rule = (*slot)->rule;
		out->why = (*slot)->why;
		out->stamped = (*slot)->stamped;
		out->stamp = (*slot)->stamp;
	}
	pthread_rwlock_unlock(&g->lock);
	if (found && (out->bot || stamp_fresh(out, dfd)))
		return 0;

	r = repo_scan(g, dfd, dst);
	if (!r)
		return -ENOMEM;
	out->bot = false;
	out->rule = r->rule;
	out->why = r->why;
	pthread_rwlock_wrlock(&g->lock);
	rc = repo_publish(g, r, &changed);
	if (!rc)
		out->bot = r->bot;
	pthread_rwlock_unlock(&g->lock);
	if (rc) {
		guard_repo_free(r);
		return rc;
	}
	if (changed || found)
		guard_bump(g);
	return 0;
}

static bool wfile_changed(const struct guard_wfile *f);

static bool watch_changed(const struct guard_watch *w)
{
	size_t i;

	for (i = 0; w && i < w->n; i++)
		if (wfile_changed(&w->f[i]))
			return true;
	return false;
}

static bool wfile_changed(const struct guard_wfile *f)
{
	struct stat st;

	if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return !f->missing;
	return f->missing || st.st_ino != f->st.st_ino || st.st_dev != f->st.st_dev ||
	       st.st_size != f->st.st_size || st.st_mode != f->st.st_mode ||
	       st.st_mtim.tv_sec != f->st.st_mtim.tv_sec ||
	       st.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec ||
	       st.st_ctim.tv_sec != f->st.st_ctim.tv_sec ||
	       st.st_ctim.tv_nsec != f->st.st_ctim.tv_nsec;
}

/*
 * A person may change a config file on the host while a mount is live (git
 * config core.hooksPath .husky/_): before a decision, at most every
 * GUARD_REVAL_MS, the files each repository scan read are stat'ed again and
 * the repositories whose files changed are rescanned.  Between two looks
 * this costs a coarse clock read and an atomic load.
 */
void guard_revalidate(struct guard *g)
{
	struct {
		uint64_t dev;
		uint64_t ino;
		int fd;
	} ch[16];
	struct timespec ts;
	struct guard_repo *r;
	int64_t now, last;
	size_t i, j, n = 0;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	last = atomic_load(&g->reval_ms);
	if (now - last < GUARD_REVAL_MS ||
	    !atomic_compare_exchange_strong(&g->reval_ms, &last, now))
		return;
	pthread_rwlock_rdlock(&g->lock);
	for (i = 0; i < g->nrepos && n < 16; i++) {
		r = g->repos[i];
		if (r->bot || !r->watch || r->watch->gfd < 0)
			continue;
		for (j = 0; j < r->watch->n; j++)
			if (wfile_changed(&r->watch->f[j]))
				break;
		if (j == r->watch->n)
			continue;
		ch[n].fd = fcntl(r->watch->gfd, F_DUPFD_CLOEXEC, 3);
		if (ch[n].fd < 0)
			continue;
		ch[n].dev = r->dev;
		ch[n].ino = r->ino;
		n++;
	}
	pthread_rwlock_unlock(&g->lock);
	if (n == 16)
		atomic_store(&g->reval_ms, 0); /* more may wait: look again next time */
	for (i = 0; i < n; i++) {
		guard_logf(g,
			   "gitguard: the config of git folder (dev %llu, ino %llu) changed: "
			   "rescanned",
			   (unsigned long long)ch[i].dev, (unsigned long long)ch[i].ino);
		guard_repo_rescan(g, ch[i].dev, ch[i].ino, ch[i].fd);
		close(ch[i].fd);
	}
}

/* Rescans the git folder (dev, ino) at DFD if it is known; true if anything changed. */
bool guard_repo_rescan(struct guard *g, uint64_t dev, uint64_t ino, int dfd)
{
	struct guard_repo *r;
	struct stat st;
	bool known, changed = false;

	pthread_rwlock_rdlock(&g->lock);
	known = repo_find(g, dev, ino) != NULL;
	pthread_rwlock_unlock(&g->lock);
	if (!known || fstat(dfd, &st) < 0 || (uint64_t)st.st_dev != dev ||
	    (uint64_t)st.st_ino != ino)
		return known;
	r = repo_scan(g, dfd, &st);
	if (!r)
		return true;
	pthread_rwlock_wrlock(&g->lock);
	if (repo_publish(g, r, &changed)) {
		guard_repo_free(r);
		changed = true;
	}
	pthread_rwlock_unlock(&g->lock);
	if (changed)
		guard_bump(g);
	return changed;
}

/* Index of the top ST of the git folder (dev, ino) in g->tops, or SIZE_MAX; lock held */
static size_t top_find(struct guard *g, uint64_t dev, uint64_t ino, const struct stat *st)
{
	size_t i;

	for (i = 0; i < g->ntops; i++)
		if (g->tops[i].dev == dev && g->tops[i].ino == ino &&
		    g->tops[i].tdev == (uint64_t)st->st_dev &&
		    g->tops[i].tino == (uint64_t)st->st_ino)
			return i;
	return SIZE_MAX;
}

/* Remembers TOPFD as a worktree top of the git folder (dev, ino); true if new */
static bool top_add(struct guard *g, uint64_t dev, uint64_t ino, int topfd)
{
	struct stat st;
	bool added = false;
	size_t i;
	int fd;

	if (fstat(topfd, &st) < 0)
		return false;
	/* a .git file is classified at every lookup: known tops cost a shared lock */
	pthread_rwlock_rdlock(&g->lock);
	i = top_find(g, dev, ino, &st);
	pthread_rwlock_unlock(&g->lock);
	if (i < SIZE_MAX)
		return false;
	pthread_rwlock_wrlock(&g->lock);
	if (top_find(g, dev, ino, &st) < SIZE_MAX)
		goto out;
	if (g->ntops >= GUARD_TOPS_MAX) {
		pthread_rwlock_unlock(&g->lock);
		guard_logf(g,
			   "gitguard: more than %d worktree tops: a relative core.hooksPath is "
			   "not guarded at the others",
			   GUARD_TOPS_MAX);
		return false;
	}
	if (gg_grow(&g->tops, &g->atops, g->ntops + 1, sizeof(*g->tops), 16))
		goto out;
	fd = fcntl(topfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		goto out;
	g->tops[g->ntops++] = (struct guard_top){dev, ino, st.st_dev, st.st_ino, fd};
	added = true;
out:
	pthread_rwlock_unlock(&g->lock);
	return added;
}

/*
 * A .git file or symlink in the folder STARTFD names PATH: that folder is a
 * git folder, and STARTFD is a top of its worktrees.  A git folder outside
 * the root (the root is a linked worktree, say) is opened as git would open
 * it, by the kernel, and read: its config decides what is guarded here.
 */
int guard_note_pointer(struct guard *g, int startfd, const char *path)
{
	struct guard_repo info, **slot;
	struct resolved res;
	struct stat st;
	bool known;
	uint8_t f;
	int rc = 0, gfd = -1;

	switch (guard_resolve(g, startfd, path, true, NULL, NULL, &res)) {
	case RES_INSIDE:
		if (!S_ISDIR(res.st.st_mode))
			break;
		gfd = res.fd;
		res.fd = -1;
		st = res.st;
		pthread_rwlock_rdlock(&g->lock);
		f = guard_tab_inode(g, st.st_dev, st.st_ino, NULL);
		pthread_rwlock_unlock(&g->lock);
		if (f & REC_GITDIR)
			break;
		pthread_rwlock_wrlock(&g->lock);
		rc = recs_add(&g->misc, st.st_dev, st.st_ino, NULL, REC_GITDIR, GUARD_RULE_W1);
		if (!rc)
			guard_tab_rebuild(g);
		pthread_rwlock_unlock(&g->lock);
		if (!rc)
			guard_bump(g);
		break;
	case RES_OUTSIDE:
		gfd = openat(startfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (gfd >= 0 && fstat(gfd, &st) < 0) {
			close(gfd);
			gfd = -1;
		}
		break;
	default:
		break;
	}
	resolved_close(&res);
	if (rc || gfd < 0) {
		if (gfd >= 0)
			close(gfd);
		return rc;
	}
	if (top_add(g, st.st_dev, st.st_ino, startfd)) {
		pthread_rwlock_rdlock(&g->lock);
		slot = repo_find(g, st.st_dev, st.st_ino);
		known = slot != NULL;
		pthread_rwlock_unlock(&g->lock);
		if (known)
			guard_repo_rescan(g, st.st_dev, st.st_ino, gfd);
		else if (guard_shape(gfd, NULL))
			rc = guard_repo_get(g, gfd, &st, &info);
	}
	close(gfd);
	return rc;
}

/*
 * A config file that is no repository's (a person's ~/.gitconfig, home.c):
 * its include targets (W3) and absolute core.hooksPath (W2) inside the root
 * go into R's records; R's rule and why say what could not be read.  OWNER's
 * home is what "~/" names.  The files read go into R's watch, if it has one.
 */
int guard_scan_config_file(struct guard *g, struct guard_repo *r, int dirfd, const char *name,
			   uid_t owner)
{
	struct scan s = {.g = g, .r = r, .dfd = dirfd, .basefd = dirfd, .owner = owner, .depth = 1};
	int rc;

	rc = scan_config(&s, dirfd, name);
	strs_free(&s.rel);
	strs_free(&s.wt);
	return rc;
}
