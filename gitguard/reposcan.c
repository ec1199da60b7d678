/* SPDX-License-Identifier: MIT */
/*
 * What one git folder's layout makes protected, beyond its config: the
 * common folder (D4), other names of protected files (hard links), symlinks
 * in it (D9, X3), the worktree tops a relative core.hooksPath is taken at,
 * and libgit2's view as a cross-check.  guard_repo_scan() is the one scan
 * of a git folder; repo.c publishes its result.
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

#define HL_DEPTH 8 /* folder levels of hooks/, remotes/, branches/ looked at for hard links */

/*
 * A protected file: remember its inode so its other names are protected
 * too, those it has now and those the person gives it later (a backup
 * link into the work tree). One name for now: REC_LINKS. By its birth
 * time too: once it is gone, a new file given its number is not it.
 */
static int hl_file(struct guard_repo *r, int dirfd, const char *name, uint8_t rule)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
		return 0;
	return recs_add_file(&r->recs, dirfd, name, &st, GUARD_RO | (st.st_nlink < 2 ? REC_LINKS : 0),
			     rule);
}

/*
 * HL for a tree git reads files from. remotes/ and branches/ (S NULL): git
 * reads only a level or two down, so deeper folders are not looked at.
 * A hooks folder (S given: .git/hooks, a core.hooksPath folder): its hooks
 * may source any file in it, at any depth, so all of it is recorded, and
 * every folder in it is watched too (a file the person moves in on the
 * host, which the bot gave a second name before, reads the repository
 * again), and a symbolic link in it is followed as a hook's is
 * (scan_protect: what it leads to is read-only, a folder walked the same
 * way, once). A tree deeper than HOOK_DEPTH, or more than HOOK_TREE_MAX
 * entries walked in one scan, makes the git folder X3: it cannot be
 * covered.
 */
#define HOOK_DEPTH 64
#define HOOK_TREE_MAX 10000

int scan_hl_tree(struct guard_repo *r, struct cfgscan *s, int dfd, const char *name, uint8_t rule,
		 unsigned *budget, unsigned depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hl_file(r, dfd, name, rule);
	/* the top is the hooks folder, watched by scan_hook_links */
	if (s != NULL && depth > 0 && fstat(fd, &st) == 0 && (rc = scan_watch(s, dfd, name, &st))) {
		close(fd);
		return rc;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* hooks trees share one budget per scan: links can lead from one to another */
		if (s != NULL ? s->hl_used >= HOOK_TREE_MAX : *budget == 0) {
			if (s != NULL)
				scan_x3(s, "hooks folders with more entries than agentfs records (10000)");
			break;
		}
		if (s != NULL)
			s->hl_used++;
		else
			(*budget)--;
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
			if (depth < (s != NULL ? HOOK_DEPTH : HL_DEPTH))
				rc = scan_hl_tree(r, s, dirfd(d), de->d_name, rule, budget, depth + 1);
			else if (s != NULL)
				scan_x3(s, "a hooks folder deeper than agentfs records (64 levels)");
		} else if (de->d_type != DT_LNK) {
			rc = hl_file(r, dirfd(d), de->d_name, rule);
		} else if (s != NULL) {
			/* what a hook sources through a link is a hook too, wherever it is */
			rc = scan_protect(s, dirfd(d), de->d_name, rule, NULL);
		}
	}
	closedir(d);
	return rc;
}

static int hl_worktrees(struct guard_repo *r, int dfd)
{
	static const char *const names[] = {"commondir", "gitdir", "locked", "config.worktree"};
	struct dirent *de;
	size_t i;
	int sub, rc = 0;
	DIR *d;

	d = gg_opendirat(dfd, "worktrees");
	if (!d)
		return 0;
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
	rc = rc ? rc : scan_hl_tree(r, NULL, dfd, "remotes", GUARD_RULE_D8, &budget, 0);
	rc = rc ? rc : scan_hl_tree(r, NULL, dfd, "branches", GUARD_RULE_D8, &budget, 0);
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
static int on_link(struct cfgscan *s, int dirfd, const char *name)
{
	scan_x3(s, "a symbolic link in the git folder (D9)");
	/* dangling in a way git cannot follow either: nothing more */
	return scan_protect(s, dirfd, name, GUARD_RULE_D9, NULL);
}

static int scan_links_in(struct cfgscan *s, int dfd, const char *sub)
{
	char target[64];
	struct dirent *de;
	struct stat st;
	ssize_t n;
	int rc = 0;
	DIR *d;

	d = gg_opendirat(dfd, sub);
	if (!d)
		return 0; /* missing, or a link itself: seen from the folder above */
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

static int scan_links(struct cfgscan *s, int dfd)
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
static int gitdir_top(struct cfgscan *s, int dirfd)
{
	char path[GUARD_GITFILE_MAX], *buf, *slash;
	struct stat st;
	size_t len;
	int rc;

	if (guard_read_file(dirfd, "gitdir", GUARD_GITFILE_MAX, &buf, &len, &st))
		return -1;
	/* git worktree move on the host rewrites it */
	if (scan_watch(s, dirfd, "gitdir", &st)) {
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
static int scan_tops(struct cfgscan *s, int dfd)
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
		rc = scan_watch(s, dfd, "worktrees", &st);
	else
		rc = scan_watch(s, dfd, "worktrees", NULL);
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
	pthread_rwlock_rdlock(&s->g->view->lock);
	for (i = 0; i < s->g->view->ntops; i++)
		if (s->g->view->tops[i].dev == s->r->dev && s->g->view->tops[i].ino == s->r->ino)
			tops_add(tops, &n, fcntl(s->g->view->tops[i].fd, F_DUPFD_CLOEXEC, 3));
	pthread_rwlock_unlock(&s->g->view->lock);
	for (i = 0; i < n; i++) {
		for (j = 0; !rc && j < s->rel.n; j++)
			rc = scan_protect(s, tops[i], s->rel.v[j], GUARD_RULE_W2,
					  "a core.hooksPath that cannot be resolved");
		close(tops[i]);
	}
	return rc;
}

/*
 * The cross-check: libgit2's worktree and hooksPath values are applied too,
 * and a common folder libgit2 sees elsewhere makes the git folder X3.
 */
static int scan_lg2(struct cfgscan *s, int dfd, int cfgdir)
{
	struct guard_lg2 v;
	struct stat a, b;
	size_t i;
	int fd, rc = 0;

	if (s->r->rule || s->unread || cfgdir < 0 || guard_lg2_view(dfd, &v))
		return 0;
	if (guard_watch_state(s->r->watch) == WF_CHANGED) {
		/* changed while libgit2 read it: the revalidation reads it again */
		guard_lg2_free(&v);
		return 0;
	}
	fd = open(v.commondir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &a) < 0 || fstat(cfgdir, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		scan_x3(s, "libgit2 finds another common folder");
	if (fd >= 0)
		close(fd);
	for (i = 0; !rc && i < v.nhooks; i++)
		rc = *v.hooks[i] ? scan_hookspath(s, v.hooks[i]) : 0;
	if (!rc && v.workdir)
		rc = strs_add(&s->wt, v.workdir);
	guard_lg2_free(&v);
	return rc;
}

/* Scans the git folder DFD; returns a new repository record or NULL (ENOMEM). */
struct guard_repo *guard_repo_scan(struct guard *g, int dfd, const struct stat *dst)
{
	struct cfgscan s = {.g = g, .dfd = dfd, .basefd = dfd, .owner = dst->st_uid};
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
	/* read first: a root joining during the scan makes it stale at once */
	r->roots_gen = atomic_load(&g->view->roots_gen);
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
			scan_x3(&s, "a commondir that cannot be read");
			cfgdir = -1;
		} else {
			s.pin_rule = GUARD_RULE_D4;
			switch (guard_resolve(g, dfd, path, true, scan_pin, &s, &res)) {
			case RES_INSIDE:
				if (!S_ISDIR(res.st.st_mode)) {
					scan_x3(&s, "a commondir naming no folder");
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
				scan_x3(&s, "a commondir that cannot be resolved");
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
	if (!rc && cfgdir >= 0) {
		unsigned budget = 10000;

		rc = scan_hook_links(&s, cfgdir, "hooks", 0);
		if (!rc)
			rc = scan_hl_tree(r, &s, cfgdir, "hooks", GUARD_RULE_D3, &budget, 0);
	}
	resolved_close(&res);
	rc = rc ? rc : scan_global(&s);
	rc = rc ? rc : scan_tops(&s, dfd);
	/* kept for X2: an index entry under one of them must carry the hook's blob */
	r->hooks_rel = s.rel.v;
	r->nhooks_rel = s.rel.n;
	s.rel = (struct strs){0};
	r->hooks_abs = s.abs.v;
	r->nhooks_abs = s.abs.n;
	s.abs = (struct strs){0};
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
	strs_free(&s.abs);
	strs_free(&s.wt);
	guard_repo_free(r);
	return NULL;
}
