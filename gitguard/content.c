/* SPDX-License-Identifier: MIT */
/*
 * Content-checked files (X2 index, X4 strategy files): which names are, the
 * check of a buffer or an fd, and the work-tree side of an index (entries
 * over hooks or config include targets must carry the file's blob).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "gitguard/ggutil.h"
#include "gitguard/guard-int.h"

/*
 * X2 with the folder at hand: BUF, to become NAME (`index` or a
 * `sharedindex.<hex>`) in the git folder DFD.  A split index is checked
 * with the shared index it takes entries from: an entry it replaces keeps
 * the shared entry's name and takes its mode and blob, so neither file
 * alone says what `git restore .` writes.  A shared index is checked with
 * the `index` beside it that takes entries from it (a new one renamed over
 * the one an index names changes where its replacements land).  Then the
 * work-tree side (guard_index_worktree; G may be NULL).  0, or -EROFS with *WHY.
 */
int guard_index_folder(struct guard *g, int dfd, const char *name, const char *buf, size_t len,
		       size_t hashsz, const char **why)
{
	const char *ibuf = NULL, *sbuf = NULL;
	char hex[2 * 32 + 1], sname[sizeof("sharedindex.") + sizeof(hex)], *other = NULL;
	size_t ilen = 0, slen = 0;
	int rc = 0;

	if (!strncmp(name, "sharedindex.", 12)) {
		if (!guard_read_file(dfd, "index", GUARD_INDEX_MAX, &other, &ilen, NULL) &&
		    guard_index_base(other, ilen, hashsz, hex, why) == 1 &&
		    !strcmp(hex, name + 12)) {
			ibuf = other;
			sbuf = buf;
			slen = len;
		}
	} else if (guard_index_base(buf, len, hashsz, hex, why) == 1) {
		ibuf = buf;
		ilen = len;
		snprintf(sname, sizeof(sname), "sharedindex.%s", hex);
		if (!guard_read_file(dfd, sname, GUARD_INDEX_MAX, &other, &slen, NULL))
			sbuf = other;
	}
	if (ibuf && (guard_index_replaced(ibuf, ilen, sbuf, slen, hashsz, NULL, NULL, why) < 0 ||
		     guard_index_split_tree(ibuf, ilen, sbuf, slen, hashsz, why) < 0))
		rc = -EROFS;
	/* a guard's check of an index replacing another (audit reads what is) */
	if (!rc)
		rc = guard_index_worktree(g, dfd, buf, len, hashsz, ibuf, ilen, sbuf, slen,
					  g && !strcmp(name, "index"), why);
	free(other);
	return rc;
}

/*
 * The hash size of the repository whose git folder is DFD: 32 with
 * extensions.objectFormat=sha256, else 20.  Read from the common folder's
 * config without includes, as git's read_repository_format does; when that
 * cannot be read, 20 (a SHA-256 index then fails the check: refused).
 */
size_t guard_hash_size(struct guard *g, int dfd)
{
	struct resolved res = {.fd = -1, .dirfd = -1};
	char path[GUARD_GITFILE_MAX], *buf;
	struct guard_cfg cfg = {0};
	size_t len, hs = 20;
	int cfgdir = dfd, rc;

	if (!guard_read_file(dfd, "commondir", GUARD_GITFILE_MAX, &buf, &len, NULL)) {
		rc = guard_parse_commondir(buf, len, path, sizeof(path));
		free(buf);
		if (rc || guard_resolve(g, dfd, path, true, NULL, NULL, &res) != RES_INSIDE ||
		    !S_ISDIR(res.st.st_mode)) {
			resolved_close(&res);
			return hs;
		}
		cfgdir = res.fd;
	}
	if (!guard_read_file(cfgdir, "config", GUARD_CONFIG_MAX, &buf, &len, NULL)) {
		if (!guard_config_scan(buf, len, &cfg) && cfg.sha256)
			hs = 32;
		free(buf);
	}
	resolved_close(&res);
	return hs;
}

/* A path a work tree's index is checked at */
struct wt_path {
	char *path;
	bool dir; /* a hooks folder: everything beneath */
	bool top; /* raw: relative to the top, else to the git folder */
};

/* Paths inside a work tree that git runs or reads as config, from its top */
struct wt_check {
	int topfd;
	bool linked; /* a linked worktree: includes are the main work tree's */
	bool full;   /* out of memory, or past the walk's bounds: incomplete, refuse */
	size_t hashsz;
	struct wt_path *p;
	size_t n, alloc;
	/* values not plainly inside the top (absolute, or climbing out and back) */
	struct wt_path *raw;
	size_t nraw, araw;
	unsigned walked; /* entries of hooks folders read for links (WT_HOOK_WALK_MAX) */
	/* wt_hook_links' buffers: one set, not one per level of its recursion */
	char here[PATH_MAX], target[PATH_MAX];
	/* the replaced index's entries at those paths: kept as they are, they pass */
	struct wt_old *old;
	size_t nold, aold;
};

struct wt_old {
	char *path;
	uint32_t mode;
	unsigned char oid[32];
};

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
static int wt_key(void *arg, enum guard_cfg_key key, const char *value)
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
static void wt_repo_hooks(void *arg, const char *rel)
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
	}
	closedir(d);
}

#define WT_ENCLOSING_DEPTH 64 /* folders above a top looked at for a .git */

/* The hooks paths of an enclosing repository's config */
struct wt_anc {
	struct wt_check *w;
	char *v[8];
	size_t n;
};

static int anc_key(void *arg, enum guard_cfg_key key, const char *value)
{
	struct wt_anc *a = arg;

	if (key != GUARD_CFG_HOOKSPATH || !value[0] || value[0] == '~')
		return 0;
	if (a->n == sizeof(a->v) / sizeof(a->v[0]) || !(a->v[a->n] = strdup(value)))
		a->w->full = true;
	else
		a->n++;
	return 0;
}

/*
 * The repositories that hold this work tree (a submodule that keeps its
 * own git folder, a clone inside another): a link in their hooks folder,
 * or their core.hooksPath, may lead into it (.git/hooks/pre-commit ->
 * ../../tools/lint.sh), and this index would write there.  Up from the
 * top while the filesystem stays the same.
 */
static void wt_enclosing(struct wt_check *w, const char *top, size_t tl)
{
	char real[PATH_MAX], *buf;
	struct wt_anc a = {.w = w};
	struct guard_cfg cfg = {.fn = anc_key, .arg = &a};
	struct stat tst, st, ust;
	unsigned depth;
	int fd, up, gfd;
	size_t len, i;

	if (fstat(w->topfd, &tst))
		return;
	fd = openat(w->topfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (depth = 0; fd >= 0 && depth < WT_ENCLOSING_DEPTH && !w->full; depth++) {
		if (fstat(fd, &st) || st.st_dev != tst.st_dev)
			break;
		gfd = openat(fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (gfd >= 0) {
			wt_hook_links(w, gfd, "hooks", 0, top, tl);
			if (!guard_read_file(gfd, "config", GUARD_CONFIG_MAX, &buf, &len, NULL)) {
				guard_config_scan(buf, len, &cfg);
				free(buf);
			}
			for (i = 0; i < a.n; i++) {
				wt_map(w, fd, a.v[i], true, false, top, tl);
				if (fd_real(fd, real))
					wt_lex(w, real, a.v[i], true, top, tl);
				wt_hook_links(w, fd, a.v[i], 0, top, tl);
				free(a.v[i]);
			}
			a.n = 0;
			close(gfd);
		}
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

static void wt_real_dirs(struct wt_check *w, int gitfd)
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
		if (w->p[i].dir)
			wt_map(w, w->topfd, w->p[i].path, true, true, top, tl);
	/* each where it resolves to, and where git writes what is tracked there */
	for (i = 0; i < w->nraw; i++) {
		r = &w->raw[i];
		if (r->path[0] == '/') {
			wt_map(w, AT_FDCWD, r->path, r->dir, false, top, tl);
			wt_lex(w, "/", r->path, r->dir, top, tl);
		} else if (r->top) {
			wt_map(w, w->topfd, r->path, r->dir, false, top, tl);
			wt_lex(w, top, r->path, r->dir, top, tl);
		} else if (gitfd >= 0) {
			wt_map(w, gitfd, r->path, r->dir, false, top, tl);
			if (git[0])
				wt_lex(w, git, r->path, r->dir, top, tl);
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
	wt_enclosing(w, top, tl);
}

/* The work-tree entry PATH (from topfd) has the content of blob OID? */
static bool wt_same(struct wt_check *w, const char *path, uint32_t mode, const unsigned char *oid)
{
	char comp[NAME_MAX + 1], lnk[PATH_MAX], *buf = NULL;
	const char *p = path, *e;
	unsigned char sum[20];
	struct stat st;
	int fd, nfd;
	size_t n, len;
	bool same = false;

	if (w->hashsz != 20 || (mode != 0100644 && mode != 0100755 && mode != 0120000))
		return false;
	fd = fcntl(w->topfd, F_DUPFD_CLOEXEC, 3);
	while (fd >= 0 && (e = strchr(p, '/'))) {
		n = (size_t)(e - p);
		if (n >= sizeof(comp))
			break;
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = nfd;
		p = e + 1;
	}
	if (fd < 0 || strchr(p, '/') || fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (mode == 0120000 && S_ISLNK(st.st_mode)) {
		ssize_t l = readlinkat(fd, p, lnk, sizeof(lnk));

		if (l >= 0 && (size_t)l < sizeof(lnk)) {
			guard_blob_sha1(lnk, (size_t)l, sum);
			same = !memcmp(sum, oid, 20);
		}
	} else if (mode != 0120000 && S_ISREG(st.st_mode) &&
		   !guard_read_file(fd, p, GUARD_CONFIG_MAX * 16, &buf, &len, NULL)) {
		guard_blob_sha1(buf, len, sum);
		same = !memcmp(sum, oid, 20);
		free(buf);
	}
	close(fd);
	return same;
}

/* The protected path PATH is under (or is), or NULL */
static const struct wt_path *wt_under(const struct wt_check *w, const char *path)
{
	size_t i, l;

	for (i = 0; i < w->n; i++) {
		l = strlen(w->p[i].path);
		if (!strncmp(path, w->p[i].path, l) && (!path[l] || (w->p[i].dir && path[l] == '/')))
			return &w->p[i];
	}
	return NULL;
}

/* An entry standing for a folder on the way to a protected path, or for it */
static bool wt_on_way(const struct wt_check *w, const char *path, uint32_t mode)
{
	size_t i, l = strlen(path);

	/* a sparse folder entry "dir/" stands for all of dir */
	if (mode == 0040000 && l && path[l - 1] == '/')
		l--;
	for (i = 0; i < w->n; i++)
		if (!strncmp(w->p[i].path, path, l) &&
		    (w->p[i].path[l] == '/' || (mode == 0040000 && !w->p[i].path[l])))
			return true;
	return false;
}

/* An entry of the index being replaced: kept if at or on the way to a protected path */
static int wt_old_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
			const char **why)
{
	struct wt_check *w = arg;
	struct wt_old *o;

	(void)why;
	if (!wt_under(w, path) && !wt_on_way(w, path, mode))
		return 0;
	if (gg_grow(&w->old, &w->aold, w->nold + 1, sizeof(*w->old), 8))
		return -ENOMEM;
	o = &w->old[w->nold];
	if (!(o->path = strdup(path)))
		return -ENOMEM;
	o->mode = mode;
	memcpy(o->oid, oid, w->hashsz);
	w->nold++;
	return 0;
}

/* The replaced index has the same entry: the bot's index keeps it, it does not bring it */
static bool wt_kept(const struct wt_check *w, const char *path, uint32_t mode,
		    const unsigned char *oid)
{
	size_t i;

	for (i = 0; i < w->nold; i++)
		if (w->old[i].mode == mode && !memcmp(w->old[i].oid, oid, w->hashsz) &&
		    !strcmp(w->old[i].path, path))
			return true;
	return false;
}

static int wt_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
		    const char **why)
{
	struct wt_check *w = arg;
	size_t i, l;

	/*
	 * An entry standing for a folder on the way to one, or for it (a
	 * symbolic link, a submodule, a sparse folder): only as the work tree
	 * has it, or as the replaced index had it.
	 */
	if (wt_on_way(w, path, mode)) {
		if (wt_same(w, path, mode, oid) || wt_kept(w, path, mode, oid))
			return 0;
		*why = "an entry over a folder that holds a hook or config file";
		return 1;
	}
	for (i = 0; i < w->n; i++) {
		const char *p = w->p[i].path;

		l = strlen(p);
		if (strncmp(path, p, l) || (path[l] && !(w->p[i].dir && path[l] == '/')))
			continue;
		if (wt_same(w, path, mode, oid) || wt_kept(w, path, mode, oid))
			return 0;
		*why = w->p[i].dir ? "an entry under a hooks folder with content the hook does not have"
				   : "an entry for a hook or config include target with other content";
		return 1;
	}
	return 0;
}

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
static int wt_linked(struct guard *g, int dfd, int *topfd, int *cfgfd)
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
static int wt_outside(struct guard *g, int dfd, int *topfd, int *cfgfd)
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

/*
 * X2 beyond paths: the index of a work tree whose git folder is DFD (a .git
 * folder: its top is its parent; a linked worktree's admin folder: the top
 * its gitdir names, with G) may not name a file the person's config
 * runs or reads (under a hooks folder, where a link in one leads, a relative
 * include target in the work tree) with content other than the file's:
 * `git restore .` would write it.  REPLACING: BUF is to become DFD's
 * `index`, and an entry the one it replaces has, unchanged, passes.
 * 0, or -EROFS with *WHY.
 */
int guard_index_worktree(struct guard *g, int dfd, const char *buf, size_t len, size_t hashsz,
			 const char *split, size_t splitlen, const char *shared, size_t sharedlen,
			 bool replacing, const char **why)
{
	struct wt_check w = {.topfd = -1, .hashsz = hashsz};
	struct guard_cfg cfg = {.fn = wt_key, .arg = &w};
	const char *owhy = NULL;
	struct stat gst, st;
	int rc = 0, cfgfd;
	char *cbuf, *old;
	size_t clen, i, oldlen;

	w.topfd = openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w.topfd >= 0 && !fstat(dfd, &gst) &&
	    !fstatat(w.topfd, ".git", &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == gst.st_dev &&
	    st.st_ino == gst.st_ino) {
		cfgfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3); /* a .git folder at its work tree's top */
	} else {
		if (w.topfd >= 0)
			close(w.topfd);
		w.topfd = -1;
		w.linked = true;
		if (!g || wt_linked(g, dfd, &w.topfd, &cfgfd)) {
			/* a bare or submodule git folder: no work tree known here (audit: no guard) */
			if (!g || fstatat(dfd, "gitdir", &st, AT_SYMLINK_NOFOLLOW))
				goto out;
			/* a linked worktree's admin folder: its work tree is outside the root */
			if (wt_outside(g, dfd, &w.topfd, &cfgfd)) {
				*why = "the index of a linked worktree whose work tree cannot be read";
				rc = -EROFS;
				goto out;
			}
		}
	}
	/* the repository's scan knows every config's hooksPath (global, includes) */
	if (g && !fstat(cfgfd, &st))
		guard_repo_hooks(g, st.st_dev, st.st_ino, wt_repo_hooks, &w);
	rc = guard_read_file(cfgfd, "config", GUARD_CONFIG_MAX, &cbuf, &clen, NULL);
	if (!rc) {
		guard_config_scan(cbuf, clen, &cfg);
		free(cbuf);
	}
	rc = 0;
	wt_real_dirs(&w, cfgfd);
	close(cfgfd);
	if (w.full) {
		*why = "too many hooks or config files to check the index against";
		rc = -EROFS;
		goto out;
	}
	/*
	 * What the index being replaced says of those paths may stay: the
	 * person's unstaged edit of a hook script must not stop every git add.
	 * Its own entries only (a split index's shared ones are not kept); what
	 * was read before a malformed entry or a lack of memory stands.
	 */
	if (replacing && w.n && !guard_read_file(dfd, "index", GUARD_INDEX_MAX, &old, &oldlen, NULL)) {
		guard_index_entries(old, oldlen, hashsz, wt_old_entry, &w, &owhy);
		free(old);
	}
	if (w.n && guard_index_entries(buf, len, hashsz, wt_entry, &w, why) < 0)
		rc = -EROFS;
	/* `git checkout -m` writes what resolve-undo records say */
	if (!rc && w.n && guard_index_reuc(buf, len, hashsz, wt_entry, &w, why) < 0)
		rc = -EROFS;
	/* a split index's replacements, under their shared names */
	if (!rc && w.n && split &&
	    guard_index_replaced(split, splitlen, shared, sharedlen, hashsz, wt_entry, &w, why) < 0)
		rc = -EROFS;
	/* a gitlink to a repository a bot made (gitlink.c) */
	if (!rc)
		rc = guard_gitlink_check(g, w.topfd, buf, len, hashsz, why);
out:
	for (i = 0; i < w.n; i++)
		free(w.p[i].path);
	free(w.p);
	for (i = 0; i < w.nraw; i++)
		free(w.raw[i].path);
	free(w.raw);
	for (i = 0; i < w.nold; i++)
		free(w.old[i].path);
	free(w.old);
	if (w.topfd >= 0)
		close(w.topfd);
	return rc;
}
