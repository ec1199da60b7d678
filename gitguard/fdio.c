/* SPDX-License-Identifier: MIT */
/* Opening without following links, and the capped reader (ggutil.h says how to call them). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "gitguard/ggutil.h"

/*
 * openat2(RESOLVE_NO_SYMLINKS) by hand, for kernels or sandboxes (seccomp,
 * valgrind) without it: one component at a time with O_NOFOLLOW, a link
 * anywhere is ELOOP, and beneath dirfd ".." may not climb out of it.
 */
static int walk_nofollow(int dirfd, const char *path, int flags, bool beneath)
{
	char *copy, *comp, *next;
	int cur, fd, depth = 0, e;
	struct stat st;

	if (path[0] == '/' && beneath)
		return errno = EXDEV, -1;
	copy = strdup(path);
	if (copy == NULL)
		return errno = ENOMEM, -1;
	cur = path[0] == '/' ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
			     : openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (comp = copy; cur >= 0 && comp != NULL; comp = next) {
		while (*comp == '/')
			comp++;
		next = strchr(comp, '/');
		if (next != NULL)
			*next++ = '\0';
		while (next != NULL && *next == '/')
			next++;
		if (next != NULL && *next == '\0')
			next = NULL;
		if (*comp == '\0' || strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0 && beneath && --depth < 0) {
			close(cur);
			free(copy);
			return errno = EXDEV, -1;
		} else if (strcmp(comp, "..") != 0) {
			depth++;
		}
		fd = openat(cur, comp,
			    next != NULL ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
					 : flags | O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
			close(fd);
			fd = -1;
			e = ELOOP;
		} else if (fd < 0 && e == ENOTDIR && next != NULL &&
			   fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISLNK(st.st_mode)) {
			e = ELOOP;
		}
		close(cur);
		cur = fd;
		errno = e;
	}
	e = errno;
	free(copy);
	errno = e;
	return cur;
}

int gg_open_nofollow(int dirfd, const char *path, int flags, bool beneath)
{
	struct open_how how = {
		.flags = (unsigned long long)flags | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   (beneath ? RESOLVE_BENEATH : 0),
	};
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);

	if (fd < 0 && errno == ENOSYS)
		return walk_nofollow(dirfd, path, flags, beneath);
	return fd;
}

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

int guard_read_file(int dirfd, const char *name, size_t cap, char **bufp, size_t *lenp,
		    struct stat *stp)
{
	struct stat st;
	int fd, rc;

	/*
	 * Nothing but a regular file is opened: a FIFO would have a writer's
	 * open return, a device its driver run; O_NONBLOCK and the fstat in
	 * guard_read_fd catch one swapped in between
	 */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	rc = guard_read_fd(fd, cap, bufp, lenp, stp);
	close(fd);
	return rc;
}

/*
 * *CUR (an O_PATH folder whose stat is ST) becomes its parent, taken
 * physically; 0, or -1 at "/" (or on an error), *CUR then unchanged.
 */
int gg_step_up(int *cur, const struct stat *st)
{
	struct stat pst;
	int up = openat(*cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (up < 0 || fstat(up, &pst) < 0 || (pst.st_dev == st->st_dev && pst.st_ino == st->st_ino)) {
		if (up >= 0)
			close(up);
		return -1;
	}
	close(*cur);
	*cur = up;
	return 0;
}

/*
 * The folder NAME in DFD (no link followed at NAME) opened for readdir, or
 * NULL with errno; closedir() closes its fd.
 */
DIR *gg_opendirat(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e;
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (d == NULL) {
		e = errno;
		close(fd);
		errno = e;
	}
	return d;
}
