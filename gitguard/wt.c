/* SPDX-License-Identifier: MIT */
/*
 * X2's work-tree side: which paths of a work tree git runs or reads as
 * config (a hooks folder, where a hook's symbolic link leads, an include
 * target), gathered from the repository's configuration and hooks folder,
 * the repositories around the work tree, and the symbolic links on the way
 * to each; and where a linked worktree's top and common folder are.
 * content.c checks an index's entries against them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "gitguard/ggutil.h"
#include "gitguard/wt-int.h"

/* The path in the one-line file NAME of DFD, resolved inside the root */
static int wt_resolve(struct guard *g, int dfd, const char *name, bool follow, struct resolved *res)
{
	char path[GUARD_GITFILE_MAX], *buf;
	size_t len;
	int rc;

	res->fd = res->dirfd = -1;
	if (guard_read_file(dfd, name, GUARD_GITFILE_MAX, &buf, &len, NULL))
		return -1;
	rc = guard_parse_commondir(buf, len, path, sizeof(path));
	free(buf);
	if (rc || guard_resolve(g, dfd, path, follow, NULL, NULL, res) != RES_INSIDE) {
		resolved_close(res);
		return -1;
	}
	return 0;
}

/*
 * A linked worktree's admin folder DFD: its work tree's top (the folder
 * holding the .git file its gitdir names) and the common folder (config).
 */
int wt_linked(struct guard *g, int dfd, int *topfd, int *cfgfd)
{
	struct resolved top, common;

	if (wt_resolve(g, dfd, "gitdir", false, &top))
		return -1;
	if (!S_ISREG(top.st.st_mode) || wt_resolve(g, dfd, "commondir", true, &common)) {
		resolved_close(&top);
		return -1;
	}
	if (!S_ISDIR(common.st.st_mode)) {
		resolved_close(&top);
		resolved_close(&common);
		return -1;
	}
	*topfd = fcntl(top.dirfd, F_DUPFD_CLOEXEC, 3);
	*cfgfd = fcntl(common.fd, F_DUPFD_CLOEXEC, 3);
	resolved_close(&top);
	resolved_close(&common);
	if (*topfd < 0 || *cfgfd < 0) {
		if (*topfd >= 0)
			close(*topfd);
		if (*cfgfd >= 0)
			close(*cfgfd);
		return -1;
	}
	return 0;
}

/*
 * A linked worktree whose work tree is not in the root (`git worktree add
 * ../feat`, or another mount's root): its top by the path the admin
 * folder's gitdir names (the person's: D5 keeps it), opened as git opens
 * it, only to read from, and never on a FUSE filesystem (one of this
 * server's own mounts would be asked by its own worker).
 */
int wt_outside(struct guard *g, int dfd, int *topfd, int *cfgfd)
{
	char path[GUARD_GITFILE_MAX], *buf, *slash;
	struct resolved common;
	struct statfs sf;
	size_t len;
	int rc, fd;

	if (guard_read_file(dfd, "gitdir", GUARD_GITFILE_MAX, &buf, &len, NULL))
		return -1;
	rc = guard_parse_commondir(buf, len, path, sizeof(path));
	free(buf);
	if (rc || (slash = strrchr(path, '/')) == NULL || strcmp(slash, "/.git"))
		return -1;
	if (slash == path)
		slash++; /* a work tree at / */
	*slash = '\0';
	fd = openat(dfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstatfs(fd, &sf) || sf.f_type == FUSE_SUPER_MAGIC ||
	    wt_resolve(g, dfd, "commondir", true, &common)) {
		close(fd);
		return -1;
	}
	*cfgfd = S_ISDIR(common.st.st_mode) ? fcntl(common.fd, F_DUPFD_CLOEXEC, 3) : -1;
	resolved_close(&common);
	if (*cfgfd < 0) {
		close(fd);
		return -1;
	}
	*topfd = fd;
	return 0;
}

/* Adds PATH to the N-long list V; false (and W full) when out of memory */
static bool wt_push(struct wt_check *w, struct wt_path **v, size_t *n, size_t *alloc,
		    const char *path, bool dir, bool top)
{
	char *d;

	if (gg_grow(v, alloc, *n + 1, sizeof(**v), 8) || !(d = strdup(path))) {
		w->full = true;
		return false;
	}
	(*v)[*n].path = d;
	(*v)[*n].dir = dir;
	(*v)[(*n)++].top = top;
	return true;
}

/* Note a relative core.hooksPath (from the top) or include (from the git folder). */
int wt_key(void *arg, enum guard_cfg_key key, const char *value)
{
	struct wt_check *w = arg;
	char buf[PATH_MAX];

	if (!value[0] || value[0] == '~')
		return 0;
	/* resolved as git will, then mapped into the top (wt_real_dirs) */
	if (key == GUARD_CFG_HOOKSPATH || key == GUARD_CFG_INCLUDE)
		wt_push(w, &w->raw, &w->nraw, &w->araw, value, key == GUARD_CFG_HOOKSPATH,
			key == GUARD_CFG_HOOKSPATH);
	if (value[0] == '/')
		return 0;
	if (key == GUARD_CFG_HOOKSPATH) {
		snprintf(buf, sizeof(buf), "%s", value);
	} else if (key == GUARD_CFG_INCLUDE && !w->linked) {
		/* relative to the config's folder, .git: only ../ leads into the work tree */
		if (strncmp(value, "../", 3))
			return 0;
		snprintf(buf, sizeof(buf), "%s", value + 3);
	} else {
		return 0;
	}
	if (!gg_path_rel(buf) || !buf[0])
		return 0;
	wt_push(w, &w->p, &w->n, &w->alloc, buf, key == GUARD_CFG_HOOKSPATH, false);
	return 0;
}

/* A path (relative to the top) to check entries at (DIR: and under), once */
static void wt_add(struct wt_check *w, const char *path, bool dir)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (w->p[i].dir == dir && !strcmp(w->p[i].path, path))
			return;
	wt_push(w, &w->p, &w->n, &w->alloc, path, dir, false);
}

static void wt_add_dir(struct wt_check *w, const char *path)
{
	wt_add(w, path, true);
}

/* A relative core.hooksPath from any config the repository's scan read */
void wt_repo_hooks(void *arg, const char *rel)
{
	struct wt_check *w = arg;
	char buf[PATH_MAX];

	/* one that climbs out and back (../app/.githooks): resolved in wt_real_dirs */
	wt_push(w, &w->raw, &w->nraw, &w->araw, rel, true, true);

	snprintf(buf, sizeof(buf), "%s", rel);
	if (gg_path_rel(buf) && buf[0])
		wt_add_dir(arg, buf);
}

/* The real path of FD into BUF (PATH_MAX), or false */
static bool fd_real(int fd, char *buf)
{
	char proc[64];
	ssize_t l;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	l = readlink(proc, buf, PATH_MAX - 1);
	if (l <= 0)
		return false;
	buf[l] = '\0';
	return true;
}

/*
 * Where git finds a hooks folder or an include target, mapped into the work
 * tree: through a symbolic link in it (.githooks -> tools/hooks: git tracks
 * the files by the real path), an absolute path into it ($PWD/.githooks), a
 * relative one that leaves the top and comes back (../app/.githooks).
 * Resolved as git will (links followed, no /proc magic), then taken
 * relative to the top if it lies inside.
 */
static void wt_map(struct wt_check *w, int fromfd, const char *path, bool dir, bool beneath,
		   const char *top, size_t tl)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : 0),
			       .resolve = RESOLVE_NO_MAGICLINKS | (beneath ? RESOLVE_BENEATH : 0)};
	char real[PATH_MAX];
	bool ok;
	int fd;

	fd = (int)syscall(SYS_openat2, fromfd, path, &how, sizeof(how));
	if (fd < 0)
		return;
	ok = fd_real(fd, real);
	close(fd);
	if (ok && strlen(real) > tl + 1 && !strncmp(real, top, tl) && real[tl] == '/')
		wt_add(w, real + tl + 1, dir);
}

/*
 * The path git writes for TARGET (a link's, or a configured path), taken
 * lexically from the real folder BASE: where `git restore .` puts a file
 * when a folder on its way is a symbolic link in the work tree but a folder
 * in the index (tools -> lib: git replaces the link with a folder, and the
 * hook link through tools/ then leads to what it wrote).  Added if in the top.
 */
static void wt_lex(struct wt_check *w, const char *base, const char *target, bool dir,
		   const char *top, size_t tl)
{
	char buf[PATH_MAX];
	int len;

	len = target[0] == '/' ? snprintf(buf, sizeof(buf), "%s", target)
			       : snprintf(buf, sizeof(buf), "%s/%s", base, target);
	if (len < 0 || (size_t)len >= sizeof(buf) || !gg_path_rel(buf))
		return;
	/* BUF is from / now, without its slash; so is TOP past its first byte */
	if (tl == 1 && buf[0])
		wt_add(w, buf, dir);
	else if (tl > 1 && !strncmp(buf, top + 1, tl - 1) && buf[tl - 1] == '/' && buf[tl])
		wt_add(w, buf + tl, dir);
}

#define WT_LINKS_MAX 40 /* symbolic links followed on one path, as the kernel does */

/* NAME in the real folder DIR, from the top TOP (TL long), into OUT; false if outside */
static bool wt_rel(const char *top, size_t tl, const char *dir, const char *name, char *out,
		   size_t outsz)
{
	int n;

	if (tl == 1) /* the top is / */
		n = snprintf(out, outsz, "%s%s%s", dir + 1, dir[1] ? "/" : "", name);
	else if (!strcmp(dir, top))
		n = snprintf(out, outsz, "%s", name);
	else if (!strncmp(dir, top, tl) && dir[tl] == '/')
		n = snprintf(out, outsz, "%s/%s", dir + tl + 1, name);
	else
		return false;
	return n > 0 && (size_t)n < outsz;
}

/*
 * The symbolic links PATH passes on its way from the folder FROMFD (the
 * chain tools -> lib -> vendor/tools-1.2 of a hook link ../../tools/x.sh):
 * each one inside the top is a path the index may only keep as the work
 * tree has it, for `git restore .` would write another target there and
 * PATH would lead to the bot's file.  Walked one name at a time through
 * descriptors, each link replaced by its text, ".." taken from the folder
 * reached, as the kernel resolves it (scan_pin guards the same links).
 */
static void wt_links(struct wt_check *w, int fromfd, const char *path, const char *top, size_t tl)
{
	char comp[NAME_MAX + 1];
	const char *p;
	unsigned links = 0;
	struct stat st;
	ssize_t n;
	int cur, next;

	if (snprintf(w->rest, sizeof(w->rest), "%s", path) >= (int)sizeof(w->rest))
		return;
	cur = w->rest[0] == '/' || fromfd == AT_FDCWD
		      ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
		      : fcntl(fromfd, F_DUPFD_CLOEXEC, 3);
	p = w->rest;
	while (cur >= 0 && (n = gg_path_next(&p, comp, sizeof(comp))) > 0) {
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW)) {
			break;
		} else if (S_ISLNK(st.st_mode)) {
			if (++links > WT_LINKS_MAX || !fd_real(cur, w->place))
				break;
			/*
			 * The link itself, if it is in the work tree, and all beneath
			 * its name: an entry lib/x.sh makes `git restore .` replace the
			 * link lib with a folder holding the bot's x.sh, where the
			 * chain then leads.
			 */
			if (wt_rel(top, tl, w->place, comp, w->text, sizeof(w->text)))
				wt_add(w, w->text, true);
			/* then what it says, then the rest */
			n = readlinkat(cur, comp, w->text, sizeof(w->text) - 1);
			if (n <= 0)
				break;
			w->text[n] = '\0';
			if (snprintf(w->place, sizeof(w->place), "%s%s%s", w->text, *p ? "/" : "", p) >=
			    (int)sizeof(w->place))
				break;
			memcpy(w->rest, w->place, strlen(w->place) + 1);
			p = w->rest;
			if (w->rest[0] == '/') {
				close(cur);
				cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			}
			continue;
		} else if (S_ISDIR(st.st_mode) && *p) {
			next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		} else {
			break; /* the end: wt_map covers it */
		}
		close(cur);
		cur = next;
	}
	if (cur >= 0)
		close(cur);
}

#define WT_HOOK_DEPTH 64	   /* as the scan reads hooks trees (reposcan.c) */
#define WT_HOOK_WALK_MAX 10000 /* entries of hooks folders read per check */

/*
 * The files that links in the hooks folder NAME of DFD lead to, at any depth
 * of it (ln -s ../../scripts/pre-commit.sh .git/hooks/pre-commit: git runs
 * the script), mapped into the top: the scan keeps them read-only (D3, W2),
 * and `git restore .` must not write them either.  A tree deeper or larger
 * than the scan reads makes W full: the scan made that git folder X3.
 */
static void wt_hook_links(struct wt_check *w, int dfd, const char *name, unsigned depth,
			  const char *top, size_t tl)
{
	struct dirent *de;
	struct stat st;
	ssize_t l;
	DIR *d;
	int fd;

	if (depth > WT_HOOK_DEPTH) {
		w->full = true;
		return;
	}
	d = gg_opendirat(dfd, name);
	if (!d)
		return;
	fd = dirfd(d);
	while (!w->full && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->walked > WT_HOOK_WALK_MAX) {
			w->full = true;
			break;
		}
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode)) {
			wt_hook_links(w, fd, de->d_name, depth + 1, top, tl);
			continue;
		}
		if (!S_ISLNK(st.st_mode))
			continue;
		/* where it leads now, and where git would write what leads there */
		l = readlinkat(fd, de->d_name, w->target, sizeof(w->target) - 1);
		if (fstatat(fd, de->d_name, &st, 0))
			st.st_mode = S_IFREG; /* a link to nothing yet: the file git would make */
		else
			wt_map(w, fd, de->d_name, S_ISDIR(st.st_mode), false, top, tl);
		if (l > 0 && fd_real(fd, w->here)) {
			w->target[l] = '\0';
			wt_lex(w, w->here, w->target, S_ISDIR(st.st_mode), top, tl);
		}
		/* and every tracked link it passes on the way (tools -> lib -> ...) */
		wt_links(w, fd, de->d_name, top, tl);
	}
	closedir(d);
}

#define WT_ENCLOSING_DEPTH 64 /* folders above a top looked at for a .git */

/* The hooks paths of an enclosing repository's configuration */
struct wt_anc {
	struct wt_check *w;
	char *v[16];
	size_t n;
};

static void anc_add(void *arg, const char *value)
{
	struct wt_anc *a = arg;

	if (!value[0] || value[0] == '~')
		return;
	if (a->n == sizeof(a->v) / sizeof(a->v[0]) || !(a->v[a->n] = strdup(value)))
		a->w->full = true;
	else
		a->n++;
}

static int anc_key(void *arg, enum guard_cfg_key key, const char *value)
{
	if (key == GUARD_CFG_HOOKSPATH)
		anc_add(arg, value);
	return 0;
}

/*
 * The hooks paths of the repository whose git folder is GFD and common
 * folder CFD: every core.hooksPath its scan read (its config, includes,
 * config.worktree, the global ones) with a guard, else the common folder's
 * own config (audit: no guard).
 */
static void wt_anc_hooks(struct guard *g, struct wt_anc *a, int gfd, int cfd)
{
	struct guard_cfg cfg = {.fn = anc_key, .arg = a};
	struct guard_repo info;
	struct stat st;
	size_t len;
	char *buf;
	int i;

	if (!g) {
		if (!guard_read_file(cfd, "config", GUARD_CONFIG_MAX, &buf, &len, NULL)) {
			guard_config_scan(buf, len, &cfg);
			free(buf);
		}
		return;
	}
	for (i = 0; i < 2; i++) {
		int fd = i ? gfd : cfd;

		if ((i && gfd == cfd) || fstat(fd, &st) || guard_repo_get(g, fd, &st, &info))
			continue;
		guard_repo_hooks(g, st.st_dev, st.st_ino, anc_add, a);
	}
}

/*
 * The repositories that hold this work tree (a submodule that keeps its
 * own git folder, a clone inside another, a linked worktree around it): a
 * link in their hooks folder, or their core.hooksPath, may lead into it
 * (.git/hooks/pre-commit -> ../../tools/lint.sh), and this index would
 * write there.  Up from the top while the filesystem stays the same.
 */
static void wt_enclosing(struct guard *g, struct wt_check *w, const char *top, size_t tl)
{
	struct resolved common = {.fd = -1, .dirfd = -1};
	struct wt_anc a = {.w = w};
	struct stat tst, st, ust;
	unsigned depth;
	int fd, up, gfd, cfd;
	size_t i;

	if (fstat(w->topfd, &tst))
		return;
	fd = openat(w->topfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (depth = 0; fd >= 0 && depth < WT_ENCLOSING_DEPTH && !w->full; depth++) {
		if (fstat(fd, &st) || st.st_dev != tst.st_dev)
			break;
		/* a .git folder, or (with a guard) where a .git file leads: a linked
		   worktree's admin folder, whose hooks and config are its common folder's */
		gfd = g ? guard_top_gitdir(g, fd)
			: openat(fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		cfd = gfd;
		if (gfd >= 0 && g && !wt_resolve(g, gfd, "commondir", true, &common) &&
		    S_ISDIR(common.st.st_mode))
			cfd = common.fd;
		if (cfd >= 0) {
			wt_hook_links(w, cfd, "hooks", 0, top, tl);
			wt_anc_hooks(g, &a, gfd, cfd);
			for (i = 0; i < a.n; i++) {
				wt_map(w, fd, a.v[i], true, false, top, tl);
				if (fd_real(fd, w->here))
					wt_lex(w, w->here, a.v[i], true, top, tl);
				wt_hook_links(w, fd, a.v[i], 0, top, tl);
				wt_links(w, fd, a.v[i], top, tl);
				free(a.v[i]);
			}
			a.n = 0;
		}
		resolved_close(&common);
		common.fd = common.dirfd = -1;
		if (gfd >= 0)
			close(gfd);
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up >= 0 && !fstat(up, &ust) && ust.st_dev == st.st_dev && ust.st_ino == st.st_ino) {
			close(up); /* / */
			up = -1;
		}
		close(fd);
		fd = up;
	}
	if (fd >= 0)
		close(fd);
}

void wt_real_dirs(struct guard *g, struct wt_check *w, int gitfd)
{
	char top[PATH_MAX], git[PATH_MAX];
	size_t i, n = w->n, tl;
	struct wt_path *r;

	if (!fd_real(w->topfd, top))
		return;
	tl = strlen(top);
	if (gitfd < 0 || !fd_real(gitfd, git))
		git[0] = '\0';
	for (i = 0; i < n; i++)
		if (w->p[i].dir) {
			wt_map(w, w->topfd, w->p[i].path, true, true, top, tl);
			wt_links(w, w->topfd, w->p[i].path, top, tl);
		}
	/* each where it resolves to, and where git writes what is tracked there */
	for (i = 0; i < w->nraw; i++) {
		r = &w->raw[i];
		if (r->path[0] == '/') {
			wt_map(w, AT_FDCWD, r->path, r->dir, false, top, tl);
			wt_lex(w, "/", r->path, r->dir, top, tl);
			wt_links(w, AT_FDCWD, r->path, top, tl);
		} else if (r->top) {
			wt_map(w, w->topfd, r->path, r->dir, false, top, tl);
			wt_lex(w, top, r->path, r->dir, top, tl);
			wt_links(w, w->topfd, r->path, top, tl);
		} else if (gitfd >= 0) {
			wt_map(w, gitfd, r->path, r->dir, false, top, tl);
			if (git[0])
				wt_lex(w, git, r->path, r->dir, top, tl);
			wt_links(w, gitfd, r->path, top, tl);
		}
	}
	/* where the links of every hooks folder lead (the list grows meanwhile) */
	if (gitfd >= 0)
		wt_hook_links(w, gitfd, "hooks", 0, top, tl);
	for (i = 0, n = w->n; i < n; i++)
		if (w->p[i].dir)
			wt_hook_links(w, w->topfd, w->p[i].path, 0, top, tl);
	for (i = 0; i < w->nraw; i++)
		if (w->raw[i].dir && (w->raw[i].path[0] == '/' || w->raw[i].top))
			wt_hook_links(w, w->raw[i].path[0] == '/' ? AT_FDCWD : w->topfd,
				      w->raw[i].path, 0, top, tl);
	wt_enclosing(g, w, top, tl);
}

