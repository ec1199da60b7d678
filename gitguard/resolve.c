/* SPDX-License-Identifier: MIT */
/*
 * Path resolution the way the kernel would do it for git, but through
 * descriptors: every component inside the root is opened with
 * O_PATH|O_NOFOLLOW, symlinks are read and spliced by hand (so each one is
 * seen and can be pinned), ".." is taken physically, and leaving the root
 * (".." at the root, an absolute path elsewhere) is noticed.  Outside the root
 * the walk goes on the same way, one component at a time, following the
 * host's symlinks (the person's: /srv/alias -> data), and re-enters the root
 * when a folder it reaches is the root (same dev, ino): so an absolute path
 * written through a host alias of the source is still found inside.  "The
 * root" is any root of the guard's view (guard.c): a path from one root into
 * another root's tree is inside, so one scan serves every root.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitguard/guard-int.h"

#define RES_PATH_MAX (PATH_MAX * 2)

struct walk {
	char rest[RES_PATH_MAX]; /* what is left to resolve */
	size_t off;
	bool in_host; /* outside the root: cur is a host folder */
	int cur;      /* the current folder */
	bool at_root;
};

static __thread struct gg_trail *trail; /* set during a home scan (home.c) */

void guard_resolve_trail(struct gg_trail *t)
{
	trail = t;
}

/* The root of any guard of the view: inside is beneath any of them */
static bool st_is_root(struct guard *g, const struct stat *st)
{
	if (trail != NULL && !trail->lost) {
		if (gg_grow(&trail->v, &trail->alloc, trail->n + 1, sizeof(*trail->v), 64))
			trail->lost = true;
		else
			trail->v[trail->n++] = (struct guard_home){st->st_dev, st->st_ino};
	}
	return guard_is_root(g, st->st_dev, st->st_ino);
}

/*
 * ".." from a root led to FD: with several roots in the view it may lie
 * beneath another one (a root inside another root's tree); look up to "/".
 */
static bool beneath_root(struct guard *g, int fd)
{
	struct stat st;
	bool found = false;
	unsigned n;
	int cur;

	if (guard_root_count(g) < 2)
		return false;
	cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	for (n = 0; cur >= 0 && n < GUARD_WALK_DEPTH && !found && !fstat(cur, &st); n++) {
		found = st_is_root(g, &st);
		if (found)
			break;
		if (gg_step_up(&cur, &st))
			break; /* "/" */
	}
	if (cur >= 0)
		close(cur);
	return found;
}

/* Next component of w->rest into comp; false at the end */
static bool next_comp(struct walk *w, char *comp, size_t compsz, bool *last, int *err)
{
	const char *p = w->rest + w->off;
	int n = gg_path_next(&p, comp, compsz);

	if (n <= 0) {
		if (n < 0)
			*err = n;
		return false;
	}
	while (*p == '/')
		p++;
	*last = !*p;
	w->off = (size_t)(p - w->rest);
	return true;
}

/* The walk ends at COMP (fd NFD, stat ST) in the current folder, which R takes over */
static void found(struct resolved *r, struct walk *w, int where, int nfd, const struct stat *st,
		  const char *comp)
{
	r->where = where;
	r->fd = nfd;
	r->st = *st;
	r->dirfd = w->cur;
	w->cur = -1;
	snprintf(r->name, sizeof(r->name), "%s", comp);
}

/* Replace what is left by TARGET/rest */
static int splice_link(struct walk *w, const char *target)
{
	char tmp[RES_PATH_MAX];
	int n;

	n = snprintf(tmp, sizeof(tmp), "%s/%s", target, w->rest + w->off);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(w->rest, tmp, (size_t)n + 1);
	w->off = 0;
	return 0;
}

/* Leave the root for the host folder FD (taken over) */
static void go_host(struct walk *w, int fd)
{
	if (w->cur >= 0)
		close(w->cur);
	w->cur = fd;
	w->in_host = true;
	w->at_root = false;
}

/* The host folder FD (taken over) is the current one; the root's own re-enters */
static int host_enter(struct guard *g, struct walk *w, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	go_host(w, fd);
	if (st_is_root(g, &st)) {
		w->in_host = false;
		w->at_root = true;
	}
	return 0;
}

/*
 * The symlink NFD (taken over) met by the walk, here or outside the root:
 * its target goes in front of what is left, from "/" if it is absolute.
 * The one symlink step of both walks.  1: an empty target (nothing
 * resolves), else 0 or -errno.
 */
static int walk_link(struct guard *g, struct walk *w, int nfd, int *links)
{
	char link[PATH_MAX];
	ssize_t n;
	int err;

	n = readlinkat(nfd, "", link, sizeof(link) - 1);
	close(nfd);
	if (n <= 0)
		return n < 0 ? -errno : 1;
	link[n] = '\0';
	if (++*links > GUARD_LINK_MAX)
		return -ELOOP;
	err = splice_link(w, link);
	if (err)
		return err;
	if (link[0] == '/') {
		nfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		return nfd < 0 ? -errno : host_enter(g, w, nfd);
	}
	return 0;
}

/*
 * A component outside the root, resolved by the kernel's rules: symlinks
 * there are the host's and are followed; returns 1 when the path cannot go on
 * (missing, or not a folder), as git's open would fail there.
 */
static int host_step(struct guard *g, struct walk *w, const char *comp, int *links)
{
	struct stat st;
	int nfd, err;

	if (!strcmp(comp, "."))
		return 0;
	nfd = openat(w->cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (nfd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 1 : -errno;
	if (fstat(nfd, &st) < 0) {
		err = -errno;
		close(nfd);
		return err;
	}
	if (S_ISLNK(st.st_mode))
		return walk_link(g, w, nfd, links);
	if (!S_ISDIR(st.st_mode)) {
		close(nfd);
		return 1;
	}
	return host_enter(g, w, nfd);
}

/* ".." from the current folder: physical, as the kernel takes it after the links before it */
static int walk_up(struct guard *g, struct walk *w)
{
	struct stat st;
	int nfd, err;

	nfd = openat(w->cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (nfd >= 0 && (w->in_host || w->at_root)) {
		bool from_root = !w->in_host;

		err = host_enter(g, w, nfd);
		if (!err && from_root && w->in_host && beneath_root(g, w->cur))
			w->in_host = false;
		return err;
	}
	if (nfd < 0 || fstat(nfd, &st) < 0) {
		err = -errno;
		if (nfd >= 0)
			close(nfd);
		return err;
	}
	close(w->cur);
	w->cur = nfd;
	w->at_root = st_is_root(g, &st);
	return 0;
}

/* Where the walk starts: "/" for an absolute PATH, else a copy of STARTFD */
static int walk_start(struct guard *g, struct walk *w, int startfd, const char *path)
{
	struct stat st;
	int nfd;

	strcpy(w->rest, path);
	w->cur = -1;
	if (path[0] == '/') {
		nfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		return nfd < 0 ? -errno : host_enter(g, w, nfd);
	}
	w->cur = fcntl(startfd, F_DUPFD_CLOEXEC, 3);
	if (w->cur < 0 || fstat(w->cur, &st) < 0)
		return -errno;
	w->at_root = st_is_root(g, &st);
	return 0;
}

/* The path ended after its last component was walked (on ".", ".." or outside) */
static int walk_end(struct walk *w, struct resolved *r)
{
	if (w->in_host || w->cur < 0) {
		r->where = RES_OUTSIDE;
		return 0;
	}
	/* the path ended on "." or "..": the current folder is the target */
	r->where = RES_INSIDE;
	r->fd = w->cur;
	w->cur = -1;
	return fstat(r->fd, &r->st) < 0 ? -errno : 0;
}

void resolved_close(struct resolved *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->fd = r->dirfd = -1;
}

/*
 * Resolves PATH from the folder STARTFD (relative paths) or from "/".  With
 * FOLLOW, symlinks inside the root are followed (and reported to PIN);
 * without it the walk stops at the first one (RES_LINK).  Every folder passed
 * through inside the root, but not the start and not the root, is reported to
 * PIN.  The caller closes r with resolved_close().
 */
int guard_resolve(struct guard *g, int startfd, const char *path, bool follow, resolve_pin_fn pin,
		  void *arg, struct resolved *r)
{
	struct walk *w;
	char comp[NAME_MAX + 1];
	struct stat st;
	int links = 0, err = 0, nfd, rc;
	bool last;

	memset(r, 0, sizeof(*r));
	r->fd = r->dirfd = -1;
	r->where = RES_ERROR;
	if (!path || !*path) {
		r->err = -EINVAL;
		return r->where;
	}
	if (strlen(path) >= RES_PATH_MAX) {
		r->err = -ENAMETOOLONG;
		return r->where;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		r->err = -ENOMEM;
		return r->where;
	}
	err = walk_start(g, w, startfd, path);
	if (err)
		goto out;
	while (next_comp(w, comp, sizeof(comp), &last, &err)) {
		if (w->in_host && strcmp(comp, "..")) {
			rc = host_step(g, w, comp, &links);
			if (rc < 0) {
				err = rc;
				goto out;
			}
			if (rc > 0)
				break; /* git could not get in there either */
			continue;
		}
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			err = walk_up(g, w);
			if (err)
				goto out;
			continue;
		}
		nfd = openat(w->cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			if (errno == ENOENT) {
				r->where = RES_MISSING;
				r->dirfd = w->cur;
				w->cur = -1;
				snprintf(r->name, sizeof(r->name), "%s", comp);
				goto done;
			}
			err = -errno;
			goto out;
		}
		if (fstat(nfd, &st) < 0) {
			err = -errno;
			close(nfd);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			if (!follow) {
				found(r, w, RES_LINK, nfd, &st, comp);
				goto done;
			}
			if (pin && (rc = pin(arg, &st, true))) {
				err = rc;
				close(nfd);
				goto out;
			}
			rc = walk_link(g, w, nfd, &links);
			if (rc) {
				err = rc > 0 ? -ENOENT : rc; /* an empty target resolves nothing */
				goto out;
			}
			continue;
		}
		if (last) {
			found(r, w, RES_INSIDE, nfd, &st, comp);
			goto done;
		}
		if (!S_ISDIR(st.st_mode)) {
			/* git's open fails here; pin the file so no folder replaces it */
			if (pin)
				pin(arg, &st, true);
			close(nfd);
			err = -ENOTDIR;
			goto out;
		}
		if (pin && !st_is_root(g, &st) && (rc = pin(arg, &st, false))) {
			err = rc;
			close(nfd);
			goto out;
		}
		close(w->cur);
		w->cur = nfd;
		w->at_root = st_is_root(g, &st);
	}
	if (!err)
		err = walk_end(w, r);
	if (!err)
		goto done;
out:
	r->where = RES_ERROR;
	r->err = err ? err : -EIO;
	resolved_close(r);
done:
	if (w->cur >= 0)
		close(w->cur);
	free(w);
	return r->where;
}
