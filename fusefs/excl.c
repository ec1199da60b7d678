/* SPDX-License-Identifier: MIT */
/*
 * One server per folder. A seal (seal.c: a content-checked file renamed in
 * stays unwritable while the server holds a handle that may write it) counts
 * the handles of this process only. Two servers of one folder, or of a
 * folder and one inside it, would let a bot open a file for writing through
 * one and rename it onto a checked name through the other, then write it.
 *
 * So each mount holds flock(2) locks: exclusive on its source folder, shared
 * on every folder above it, up to /. Two servers conflict exactly when one's
 * folder is, is in, or holds the other's. Within a process, mounts share one
 * descriptor a folder (flock locks belong to the open file), counted, so
 * agentfsd's bots may nest their roots: a folder locked exclusive for one
 * mount and shared for another is held exclusive.
 *
 * A fresh mount that meets another server's lock (for a second) is
 * refused. A mount taken over (restore.c) is served whatever it meets: the
 * last server let its locks go at the handover (fs_handover), and a bot's
 * mount must live on.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#define EXCL_DEPTH 2048 /* folders above a source, at most (PATH_MAX / 2) */

struct excl_dir {
	dev_t dev;
	ino_t ino;
	int fd;		     /* O_RDONLY: flock needs an open folder */
	unsigned nex, nsh;   /* mounts of this process holding it exclusive, shared */
	struct excl_dir *next;
};

/* The folder fd names, for a message */
static void fd_name(int fd, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n < 0)
		snprintf(out, len, "(a folder)");
	else
		out[n] = '\0';
}

/* The entry for fd's folder, made (fd taken) or found (fd closed); NULL: no memory */
static struct excl_dir *dir_get(struct fs *fs, int fd, const struct stat *st)
{
	struct excl_dir *d;

	for (d = fs->excl; d != NULL; d = d->next) {
		if (d->dev == st->st_dev && d->ino == st->st_ino) {
			close(fd);
			return d;
		}
	}
	d = calloc(1, sizeof *d);
	if (d == NULL) {
		close(fd);
		return NULL;
	}
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->fd = fd;
	d->next = fs->excl;
	fs->excl = d;
	return d;
}

/* The lock d's counts ask for, taken without waiting; -errno when another process holds it */
static int dir_lock(struct excl_dir *d)
{
	if (flock(d->fd, (d->nex > 0 ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0)
		return -errno;
	return 0;
}

/* One mount lets go of d (excl_lock held): it drops to shared, or goes */
static void dir_put(struct fs *fs, struct excl_dir *d, bool ex)
{
	struct excl_dir **pp;

	if (ex)
		d->nex--;
	else
		d->nsh--;
	if (d->nex + d->nsh > 0) {
		/* shared where exclusive was: not atomic (flock(2)), so another may come between */
		if (ex && d->nex == 0 && !fs->excl_off && dir_lock(d) != 0)
			flock(d->fd, LOCK_UN);
		return;
	}
	for (pp = &fs->excl; *pp != d; pp = &(*pp)->next)
		;
	*pp = d->next;
	close(d->fd);
	free(d);
}

/* m lets go of every lock it holds (excl_lock held) */
static void put_all(struct fs_mount *m)
{
	size_t i;

	for (i = 0; i < m->nexcl; i++)
		dir_put(m->fs, m->excl[i], i == 0);
	free(m->excl);
	m->excl = NULL;
	m->nexcl = 0;
}

/*
 * One lock more on the folder fd (taken) for m, exclusive for its source
 * (the first), shared above. 0; -EBUSY when another server holds it (why
 * set); another -errno.
 */
static int take_one(struct fs_mount *m, int fd, struct fs_error *err)
{
	struct excl_dir *d;
	struct stat st;
	bool ex = m->nexcl == 0, was;
	char name[PATH_MAX];
	int r;

	if (fstat(fd, &st) != 0) {
		r = -errno;
		close(fd);
		fs_seterr(err, -r, "source %s: cannot lock it: %s", m->source, strerror(-r));
		return r;
	}
	if ((d = dir_get(m->fs, fd, &st)) == NULL) {
		fs_seterr(err, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	was = ex ? d->nex > 0 : d->nex + d->nsh > 0;
	if (ex)
		d->nex++;
	else
		d->nsh++;
	m->excl[m->nexcl++] = d;
	if (was || (r = dir_lock(d)) == 0)
		return 0;
	if (r != -EWOULDBLOCK) {
		fs_seterr(err, -r, "source %s: cannot lock it: %s", m->source, strerror(-r));
		return r;
	}
	fd_name(d->fd, name, sizeof name);
	if (ex)
		fs_seterr(err, EBUSY,
			  "source %s: another agentfs server already serves it, or a folder in it "
			  "(a seal on git's checked files holds within one server: serve them "
			  "from one, such as agentfsd, or unmount the other first)",
			  m->source);
	else
		fs_seterr(err, EBUSY,
			  "source %s: another agentfs server already serves %s, which holds it "
			  "(a seal on git's checked files holds within one server: serve them "
			  "from one, such as agentfsd, or unmount the other first)",
			  m->source, name);
	return -EBUSY;
}

/*
 * m's locks, from its source folder rootfd (not taken) up to /. 0, or
 * -errno with err set; m holds none then. A mount taken over (adopt) is
 * told, not refused, when another server holds one.
 */
static int take_all(struct fs_mount *m, int rootfd, bool adopt, struct fs_error *err)
{
	struct fs *fs = m->fs;
	struct stat cur, up;
	int fd, next, r = 0;

	m->excl = calloc(EXCL_DEPTH, sizeof *m->excl);
	fd = m->excl != NULL ? openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd < 0) {
		r = m->excl != NULL ? -errno : -ENOMEM;
		free(m->excl);
		m->excl = NULL;
		fs_seterr(err, -r, "source %s: cannot lock it: %s", m->source, strerror(-r));
		return r;
	}
	pthread_mutex_lock(&fs->excl_lock);
	while (fd >= 0) {
		if (m->nexcl == EXCL_DEPTH) {
			close(fd);
			break;
		}
		/* the folder above, if fd is not / (an unreadable one ends the walk there) */
		next = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (next >= 0 && (fstat(fd, &cur) != 0 || fstat(next, &up) != 0 ||
				  (cur.st_dev == up.st_dev && cur.st_ino == up.st_ino))) {
			close(next);
			next = -1;
		}
		if ((r = take_one(m, fd, err)) != 0) {
			if (next >= 0)
				close(next);
			break;
		}
		fd = next;
	}
	if (r == -EBUSY && adopt) {
		fs_log(fs, FS_LOG_WARN, "%s: taken over all the same: %s", m->mountpoint, err->msg);
		r = 0; /* it keeps what it got */
		err->code = 0;
		err->msg[0] = '\0';
	} else if (r != 0) {
		put_all(m);
	}
	pthread_mutex_unlock(&fs->excl_lock);
	if (r != 0 && err->code == 0)
		fs_seterr(err, -r, "source %s: cannot lock it: %s", m->source, strerror(-r));
	return r;
}

/*
 * A fresh mount waits up to a second for another server's lock: a server
 * whose folder was just unmounted (agentfs umount returns when the kernel
 * lets go of the mount) ends a moment later.
 */
int excl_take(struct fs_mount *m, int rootfd, bool adopt, struct fs_error *err)
{
	struct timespec pause = {0, 20 * 1000 * 1000};
	int r, tries = 0;

	while ((r = take_all(m, rootfd, adopt, err)) == -EBUSY && !adopt && ++tries < 50)
		nanosleep(&pause, NULL);
	return r;
}

/* m ends: its locks go (a folder another mount of this process holds stays locked) */
void excl_drop(struct fs_mount *m)
{
	if (m->excl == NULL)
		return;
	pthread_mutex_lock(&m->fs->excl_lock);
	put_all(m);
	pthread_mutex_unlock(&m->fs->excl_lock);
}

/*
 * A handover: every lock goes now, before the next server takes the mounts
 * over, and none is taken again (a mount not handed over that ends later
 * must not take back a shared lock the next server needs exclusive).
 */
void excl_handover(struct fs *fs)
{
	struct excl_dir *d;

	pthread_mutex_lock(&fs->excl_lock);
	fs->excl_off = true;
	for (d = fs->excl; d != NULL; d = d->next)
		flock(d->fd, LOCK_UN);
	pthread_mutex_unlock(&fs->excl_lock);
}

/*
 * A server about to end lets its folders go now: its exit tears its memory
 * down before it closes its descriptors, which took seconds for a
 * sanitizer's build on a loaded machine, with the folders still held.
 */
void fs_folders_release(struct fs *fs)
{
	excl_handover(fs);
}
