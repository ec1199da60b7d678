/* SPDX-License-Identifier: MIT */
/* File locks: getlk, setlk and flock; a blocking one waits in lock.c's thread. */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/file.h>

/*
 * POSIX locks become OFD locks on the per-open backing fd, so they exclude
 * other mounts and the host; a blocking one waits in the lock thread.
 */
void fsop_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct fs_mount *m = req_mount(req);
	struct flock lk = *lock;
	int r;

	lk.l_pid = 0;
	/* lk_lock: the handle is not released (its descriptor closed) meanwhile (lock.c) */
	pthread_mutex_lock(&m->fs->lk_lock);
	r = fcntl(fh_fd(m, fi), F_OFD_GETLK, &lk) == 0 ? 0 : errno;
	pthread_mutex_unlock(&m->fs->lk_lock);
	if (r != 0) {
		fuse_reply_err(req, r);
		return;
	}
	fuse_reply_lock(req, &lk);
}

/* A blocking request that must wait, lk_lock held: queued for the lock thread, or answered */
static void lock_wait(fuse_req_t req, uint64_t fh, int fd, bool posix, int op,
		      const struct flock *lk)
{
	struct fs_mount *m = req_mount(req);
	struct lock_wait *w;

	if (!fs_waiter_take(m)) {
		fuse_reply_err(req, ENOLCK);
		return;
	}
	w = calloc(1, sizeof *w);
	if (w == NULL) {
		fs_waiter_put(m);
		fuse_reply_err(req, ENOLCK);
		return;
	}
	w->m = m;
	w->req = req;
	w->fh = fh;
	w->fd = fd;
	w->posix = posix;
	w->op = op;
	if (lk != NULL)
		w->lk = *lk;
	lock_queue_locked(m->fs, w);
}

/*
 * Each runs under lk_lock: a RELEASE of the same handle (an interrupted
 * lock request's process closing its file) waits, so the descriptor read
 * here is the handle's until the request is answered or queued.
 */
void fsop_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		int sleep)
{
	struct fs_mount *m = req_mount(req);
	struct flock lk = *lock;
	int fd;

	lk.l_pid = 0;
	pthread_mutex_lock(&m->fs->lk_lock);
	fd = fh_fd(m, fi);
	if (fcntl(fd, F_OFD_SETLK, &lk) == 0) {
		if (lk.l_type != F_UNLCK)
			keep_lock(m, fi->fh, fd); /* held by the store too, before it is granted */
		fuse_reply_err(req, 0);
	} else if (sleep && (errno == EAGAIN || errno == EACCES)) {
		lock_wait(req, fi->fh, fd, true, 0, &lk);
	} else {
		fuse_reply_err(req, errno);
	}
	pthread_mutex_unlock(&m->fs->lk_lock);
}

void fsop_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct fs_mount *m = req_mount(req);
	int fd;

	pthread_mutex_lock(&m->fs->lk_lock);
	fd = fh_fd(m, fi);
	if (flock(fd, op | LOCK_NB) == 0) {
		if (!(op & LOCK_UN))
			keep_lock(m, fi->fh, fd);
		fuse_reply_err(req, 0);
	} else if (errno == EWOULDBLOCK && !(op & LOCK_NB)) {
		lock_wait(req, fi->fh, fd, false, op, NULL);
	} else {
		fuse_reply_err(req, errno);
	}
	pthread_mutex_unlock(&m->fs->lk_lock);
}
