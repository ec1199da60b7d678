/* SPDX-License-Identifier: MIT */
/*
 * A mount's read-only paths (fs_mount_params.ro_paths): each one's
 * identity, and every file beneath with other names, since read-only
 * follows the inode (policy.c reads both).
 */
#include "fusefs/fs-int.h"
#include "gitguard/ggutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RO_SCAN_MAX 10000000 /* entries looked at under the read-only paths */
#define RO_SCAN_DEPTH 1024   /* folders open at once */

struct ro_scan {
	struct ro_link *v;
	size_t n, alloc;
	unsigned long seen;
	bool cut; /* past the budget or the depth: the rest is not known */
};

static int ro_scan_add(struct ro_scan *sc, const struct stat *st)
{
	if (sc->n == sc->alloc) {
		size_t na = sc->alloc ? sc->alloc * 2 : 64;
		struct ro_link *v = realloc(sc->v, na * sizeof *v);

		if (v == NULL)
			return -ENOMEM;
		sc->v = v;
		sc->alloc = na;
	}
	sc->v[sc->n].dev = st->st_dev;
	sc->v[sc->n++].ino = st->st_ino;
	return 0;
}

/*
 * Every file under the folder fd with other names: read-only follows the
 * inode, so a name elsewhere in the source must not be a way to write it.
 * Iterative, with the depth and the entries bounded. Takes fd.
 */
static int ro_scan_tree(struct ro_scan *sc, int fd)
{
	DIR *stack[RO_SCAN_DEPTH];
	struct dirent *de;
	struct stat st;
	int depth = 0, r = 0, cfd;

	if ((stack[0] = fdopendir(fd)) == NULL) {
		r = -errno;
		close(fd);
		return r;
	}
	while (depth >= 0 && r == 0) {
		de = readdir(stack[depth]);
		if (de == NULL) {
			closedir(stack[depth--]);
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++sc->seen > RO_SCAN_MAX) {
			sc->cut = true;
			break;
		}
		if (fstatat(dirfd(stack[depth]), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (st.st_nlink > 1)
				r = ro_scan_add(sc, &st);
			continue;
		}
		if (depth + 1 == RO_SCAN_DEPTH) {
			sc->cut = true;
			continue;
		}
		cfd = openat(dirfd(stack[depth]), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		if ((stack[depth + 1] = fdopendir(cfd)) == NULL) {
			close(cfd);
			continue;
		}
		depth++;
	}
	while (depth >= 0)
		closedir(stack[depth--]);
	return r;
}

int mount_ro_paths(struct fs_mount *m, int rootfd, const struct fs_mount_params *p,
		   struct fs_error *err)
{
	struct ro_scan sc = {0};
	struct stat st;
	size_t i;
	int fd, r = 0;

	if (p->n_ro_paths == 0)
		return 0;
	m->ro_dev = calloc(p->n_ro_paths, sizeof *m->ro_dev);
	m->ro_ino = calloc(p->n_ro_paths, sizeof *m->ro_ino);
	if (m->ro_dev == NULL || m->ro_ino == NULL) {
		fs_seterr(err, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < p->n_ro_paths; i++) {
		const char *sub = p->ro_paths[i];

		if (sub[0] == '/') {
			fs_seterr(err, EINVAL, "--ro-path %s: give a path relative to the source",
				  sub);
			return -EINVAL;
		}
		fd = gg_open_nofollow(rootfd, sub, O_PATH, true);
		if (fd < 0 || fstat(fd, &st) != 0) {
			int e = errno;

			fs_seterr(err, e, "--ro-path %s: %s under %s", sub,
				  e == ELOOP   ? "a component is a symbolic link"
				  : e == EXDEV ? "it leaves the source"
					       : strerror(e),
				  m->source);
			if (fd >= 0)
				close(fd);
			return -e;
		}
		close(fd);
		m->ro_dev[m->n_ro] = st.st_dev;
		m->ro_ino[m->n_ro++] = st.st_ino;
		if (S_ISDIR(st.st_mode)) {
			fd = gg_open_nofollow(rootfd, sub, O_RDONLY | O_DIRECTORY, true);
			r = fd < 0 ? -errno : ro_scan_tree(&sc, fd);
		} else if (st.st_nlink > 1) {
			r = ro_scan_add(&sc, &st);
		}
		if (r != 0) {
			free(sc.v);
			fs_seterr(err, -r, "--ro-path %s: cannot look for hard links in it: %s",
				  sub, strerror(-r));
			return r;
		}
	}
	if (sc.cut)
		fs_log(m->fs, FS_LOG_WARN,
		       "%s: the read-only paths hold more than %d entries or %d levels; files "
		       "beyond are read-only through their own names only",
		       m->source, RO_SCAN_MAX, RO_SCAN_DEPTH);
	if (sc.n > 0)
		qsort(sc.v, sc.n, sizeof *sc.v, ro_link_cmp);
	m->ro_links = sc.v;
	m->n_ro_links = sc.n;
	return 0;
}
