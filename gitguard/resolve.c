/*
 * Path resolution the way the kernel would do it for git, but through
 * descriptors: every component inside the root is opened with
 * O_PATH|O_NOFOLLOW, symlinks are read and spliced by hand (so each one is
 * seen and can be pinned), ".." is taken physically, and leaving the root
 * (".." at the root, an absolute path elsewhere) is noticed.  Outside the root
 * nothing is opened: paths there are followed as strings only, so that
 * "/root/path/../path/x" is still found to re-enter the root.
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
	bool in_host; /* outside the root: host[] is the path so far */
	char host[RES_PATH_MAX];
	int cur; /* inside: the current folder */
	bool at_root;
};

static bool st_is_root(struct guard *g, const struct stat *st)
{
	return (uint64_t)st->st_dev == g->root_dev && (uint64_t)st->st_ino == g->root_ino;
}

/* Next component of w->rest into comp; false at the end */
static bool next_comp(struct walk *w, char *comp, size_t compsz, bool *last, int *err)
{
	const char *p = w->rest + w->off, *e;
	size_t n;

	while (*p == '/')
		p++;
	if (!*p)
		return false;
	e = strchr(p, '/');
	n = e ? (size_t)(e - p) : strlen(p);
	if (n >= compsz) {
		*err = -ENAMETOOLONG;
		return false;
	}
	memcpy(comp, p, n);
	comp[n] = '\0';
	p += n;
	while (*p == '/')
		p++;
	*last = !*p;
	w->off = (size_t)(p - w->rest);
	return true;
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

static void go_host(struct walk *w, const char *path)
{
	if (w->cur >= 0)
		close(w->cur);
	w->cur = -1;
	w->in_host = true;
	snprintf(w->host, sizeof(w->host), "%s", path);
}

/* A host-side component; re-enter the root when the path reaches it */
static int host_step(struct guard *g, struct walk *w, const char *comp)
{
	size_t n = strlen(w->host);
	char *slash;

	if (!strcmp(comp, "."))
		return 0;
	if (!strcmp(comp, "..")) {
		slash = strrchr(w->host, '/');
		if (slash)
			*slash = '\0';
		return 0;
	}
	if (n + 1 + strlen(comp) >= sizeof(w->host))
		return -ENAMETOOLONG;
	w->host[n] = '/';
	strcpy(w->host + n + 1, comp);
	if (g->root_path && !strcmp(w->host, g->root_path)) {
		w->cur = fcntl(g->root_fd, F_DUPFD_CLOEXEC, 3);
		if (w->cur < 0)
			return -errno;
		w->in_host = false;
		w->at_root = true;
	}
	return 0;
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
	char comp[NAME_MAX + 1], link[PATH_MAX];
	struct stat st;
	int links = 0, err = 0, nfd, rc;
	bool last;
	ssize_t n;

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
	strcpy(w->rest, path);
	w->cur = -1;
	if (path[0] == '/') {
		go_host(w, "");
		if (g->root_path && !g->root_path[0]) {
			/* the root is "/" itself */
			w->cur = fcntl(g->root_fd, F_DUPFD_CLOEXEC, 3);
			w->in_host = false;
			w->at_root = true;
		}
	} else {
		w->cur = fcntl(startfd, F_DUPFD_CLOEXEC, 3);
		if (w->cur < 0 || fstat(w->cur, &st) < 0) {
			err = -errno;
			goto out;
		}
		w->at_root = st_is_root(g, &st);
	}
	if (!w->in_host && w->cur < 0) {
		err = -errno;
		goto out;
	}
	while (next_comp(w, comp, sizeof(comp), &last, &err)) {
		if (w->in_host) {
			err = host_step(g, w, comp);
			if (err)
				goto out;
			continue;
		}
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			if (w->at_root) {
				if (!g->root_path)
					break;
				go_host(w, g->root_path);
				host_step(g, w, "..");
				continue;
			}
			nfd = openat(w->cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (nfd < 0 || fstat(nfd, &st) < 0) {
				err = -errno;
				if (nfd >= 0)
					close(nfd);
				goto out;
			}
			close(w->cur);
			w->cur = nfd;
			w->at_root = st_is_root(g, &st);
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
				r->where = RES_LINK;
				r->fd = nfd;
				r->st = st;
				r->dirfd = w->cur;
				w->cur = -1;
				snprintf(r->name, sizeof(r->name), "%s", comp);
				goto done;
			}
			if (pin && (rc = pin(arg, &st, true))) {
				err = rc;
				close(nfd);
				goto out;
			}
			n = readlinkat(nfd, "", link, sizeof(link) - 1);
			close(nfd);
			if (n < 0) {
				err = -errno;
				goto out;
			}
			link[n] = '\0';
			if (++links > GUARD_LINK_MAX || !n) {
				err = n ? -ELOOP : -ENOENT;
				goto out;
			}
			err = splice_link(w, link);
			if (err)
				goto out;
			if (link[0] == '/')
				go_host(w, "");
			continue;
		}
		if (last) {
			r->where = RES_INSIDE;
			r->fd = nfd;
			r->st = st;
			r->dirfd = w->cur;
			w->cur = -1;
			snprintf(r->name, sizeof(r->name), "%s", comp);
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
	if (err)
		goto out;
	if (w->in_host) {
		r->where = RES_OUTSIDE;
	} else if (w->cur >= 0) {
		/* the path ended on "." or "..": the current folder is the target */
		if (w->at_root && !strcmp(comp, "..") && !g->root_path) {
			r->where = RES_OUTSIDE;
			goto done;
		}
		r->where = RES_INSIDE;
		r->fd = w->cur;
		w->cur = -1;
		if (fstat(r->fd, &r->st) < 0) {
			err = -errno;
			goto out;
		}
	} else {
		r->where = RES_OUTSIDE;
	}
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

/*
 * Reads the open file FD from its start: a regular file of at most CAP bytes
 * (it may not grow past CAP while being read).  Returns 0 with *BUFP
 * NUL-terminated, -EINVAL for a non-regular file, -EFBIG when larger than
 * CAP, or another -errno.  The one reader of agent-written files (STYLE 15).
 */
int guard_read_fd(int fd, size_t cap, char **bufp, size_t *lenp, struct stat *stp)
{
	struct stat st;
	size_t len = 0, sz;
	char *buf, *nb;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((size_t)st.st_size > cap)
		return -EFBIG;
	/* room for the size seen and one byte more, to see it grow */
	sz = (size_t)st.st_size + 1;
	buf = malloc(sz + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = pread(fd, buf + len, sz - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return (int)n;
		}
		if (!n)
			break;
		len += (size_t)n;
		if (len > cap) {
			free(buf);
			return -EFBIG;
		}
		if (len == sz) {
			/* it grew while being read: more room, up to CAP + 1 */
			sz = sz * 2 < cap + 1 ? sz * 2 : cap + 1;
			nb = realloc(buf, sz + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	if (stp)
		*stp = st;
	return 0;
}

/*
 * Reads NAME beneath DIRFD: no symlink, no FIFO (O_NONBLOCK, S_ISREG), at most
 * CAP bytes.  Returns 0, -ENOENT, -EFTYPE-like -EINVAL for a non-regular
 * file, -EFBIG when larger than CAP, or another -errno.
 */
int guard_read_file(int dirfd, const char *name, size_t cap, char **bufp, size_t *lenp,
		    struct stat *stp)
{
	int fd, rc;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	rc = guard_read_fd(fd, cap, bufp, lenp, stp);
	close(fd);
	return rc;
}
