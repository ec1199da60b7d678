/* SPDX-License-Identifier: MIT */
/*
 * X2 with its folder and work tree: a split index with its shared index,
 * the hash size, and an index's entries over the paths of the work tree git
 * runs or reads as config (wt.c gathers them): they must carry the file's
 * blob.
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
#include "gitguard/wt-int.h"

/*
 * X2 with the folder at hand: BUF, to become NAME (`index`, git stash's
 * `index.stash.<pid>` or a `sharedindex.<hex>`) in the git folder DFD.  A
 * split index is checked with the shared index it takes entries from: an
 * entry it replaces keeps the shared entry's name and takes its mode and
 * blob, so neither file alone says what `git restore .` writes.  A shared
 * index is checked with the `index` beside it that takes entries from it (a
 * new one renamed over the one an index names changes where its
 * replacements land).  Then the work-tree side (guard_index_worktree; G may
 * be NULL).  0, or -EROFS with *WHY.
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
	/*
	 * a guard's check of an index replacing another (audit reads what is);
	 * git stash's index.stash.<pid> starts as a copy of the index: what
	 * that has passes there too
	 */
	if (!rc)
		rc = guard_index_worktree(g, dfd, buf, len, hashsz, ibuf, ilen, sbuf, slen,
					  g && strncasecmp(name, "sharedindex.", 12), why);
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

/*
 * X2 beyond paths: the index of a work tree whose git folder is DFD (a .git
 * folder: its top is its parent; a linked worktree's admin folder: the top
 * its gitdir names, with G) may not name a file the person's config
 * runs or reads (under a hooks folder, where a link in one leads, a relative
 * include target in the work tree) with content other than the file's:
 * `git restore .` would write it.  REPLACING: BUF is to become DFD's
 * `index` (or git stash's copy of it), and an entry DFD's `index` has,
 * unchanged, passes.
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
	wt_real_dirs(g, &w, cfgfd);
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
		rc = guard_gitlink_check(g, w.topfd, buf, len, split, splitlen, shared, sharedlen,
					 hashsz, why);
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
