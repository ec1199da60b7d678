/* SPDX-License-Identifier: MIT */
/*
 * Blocking locks (ops-lock.c's F_SETLKW and flock without LOCK_NB) never
 * hold a worker: they wait on fs->lk_head and the lock thread retries them
 * until granted, failed, interrupted, or dropped with their handle.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <sys/file.h>

static void lock_reply(struct lock_wait *w, int err)
{
	/* Unregister first: this waits for a running interrupt callback. */
	fuse_req_interrupt_func(w->req, NULL, NULL);
	fuse_reply_err(w->req, err);
	if (w->m != NULL)
		fs_waiter_put(w->m);
	free(w);
}

static int lock_try(struct lock_wait *w)
{
	struct flock lk = w->lk;

	if (w->posix)
		return fcntl(w->fd, F_OFD_SETLK, &lk) == 0 ? 0 : errno;
	return flock(w->fd, w->op | LOCK_NB) == 0 ? 0 : errno;
}

/*
 * Blocking lock requests never hold a worker: they wait here and are
 * retried every few milliseconds until granted, failed or interrupted.
 */
void *lock_thread(void *arg)
{
	struct fs *fs = arg;
	struct lock_wait *w, **pp, *done;
	struct timespec ts;
	int err;

	pthread_mutex_lock(&fs->lk_lock);
	while (!fs->stopping) {
		if (fs->lk_head == NULL) {
			pthread_cond_wait(&fs->lk_cond, &fs->lk_lock);
			continue;
		}
		done = NULL;
		for (pp = &fs->lk_head; (w = *pp) != NULL;) {
			if (atomic_load(&w->interrupted))
				err = EINTR;
			else if ((err = lock_try(w)) == EAGAIN || err == EWOULDBLOCK)
				err = -1;
			if (err < 0) {
				w->tries++;
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			w->op = err;
			w->next = done;
			done = w;
			/* granted: its file is held by the store too first, while its
			 * handle cannot be released (lk_lock: ops-file.c fh_close) */
			if (err == 0)
				keep_lock(w->m, w->fh, w->fd);
		}
		pthread_mutex_unlock(&fs->lk_lock);
		while ((w = done) != NULL) {
			done = w->next;
			lock_reply(w, w->op);
		}
		pthread_mutex_lock(&fs->lk_lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 5 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&fs->lk_cond, &fs->lk_lock, &ts);
	}
	while ((w = fs->lk_head) != NULL) {
		fs->lk_head = w->next;
		pthread_mutex_unlock(&fs->lk_lock);
		lock_reply(w, EINTR);
		pthread_mutex_lock(&fs->lk_lock);
	}
	pthread_mutex_unlock(&fs->lk_lock);
	return NULL;
}

static void lock_interrupted(fuse_req_t req, void *data)
{
	struct lock_wait *w = data;
	struct fs *fs = req_mount(req)->fs;

	atomic_store(&w->interrupted, true);
	pthread_cond_signal(&fs->lk_cond);
}

/*
 * The interrupt callback is registered before the waiter is published: once
 * on the list, the lock thread may grant it at once, and its reply frees the
 * request and w. Only the lock thread frees w, after lock_reply() has
 * unregistered the callback (which waits for one running), so the callback
 * never sees a freed waiter. lk_lock is held (ops-lock.c: the handle cannot
 * be released meanwhile).
 */
void lock_queue_locked(struct fs *fs, struct lock_wait *w)
{
	fuse_req_interrupt_func(w->req, lock_interrupted, w);
	w->next = fs->lk_head;
	fs->lk_head = w;
	pthread_cond_signal(&fs->lk_cond);
}

/*
 * The waiters of fd, or of every fd of m when m is given, taken out of the
 * queue: a list through next, theirs to answer.
 */
static struct lock_wait *lock_take_locked(struct fs *fs, int fd, const struct fs_mount *m)
{
	struct lock_wait *w, **pp, *done = NULL;

	for (pp = &fs->lk_head; (w = *pp) != NULL;) {
		if (m != NULL ? w->m != m : w->fd != fd) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->next = done;
		done = w;
	}
	return done;
}

static struct lock_wait *lock_take_where(struct fs *fs, int fd, const struct fs_mount *m)
{
	struct lock_wait *done;

	pthread_mutex_lock(&fs->lk_lock);
	done = lock_take_locked(fs, fd, m);
	pthread_mutex_unlock(&fs->lk_lock);
	return done;
}

/*
 * A handle with descriptor fd is released: lk_lock is taken and held until
 * lock_release_end, so no lock request of a worker (ops-lock.c, which reads
 * the handle's descriptor under lk_lock) sees the descriptor while it is
 * closed and its number given to another file; its waiters are answered
 * EBADF at the end.
 */
struct lock_wait *lock_release_begin(struct fs *fs, int fd)
{
	pthread_mutex_lock(&fs->lk_lock);
	return lock_take_locked(fs, fd, NULL);
}

void lock_release_end(struct fs *fs, struct lock_wait *done)
{
	struct lock_wait *w;

	pthread_mutex_unlock(&fs->lk_lock);
	while ((w = done) != NULL) {
		done = w->next;
		lock_reply(w, EBADF);
	}
}


/*
 * A restart (fs_handover): m's waiters leave the queue unanswered, for the
 * kernel to send again to the next server, or answered EINTR where the
 * kernel cannot (REPLY_EINTR). Their requests stay with the process that
 * is about to exit.
 */
void lock_abandon_mount(struct fs *fs, struct fs_mount *m, bool reply_eintr)
{
	struct lock_wait *w, *done = lock_take_where(fs, -1, m);

	while ((w = done) != NULL) {
		done = w->next;
		if (reply_eintr) {
			lock_reply(w, EINTR);
			continue;
		}
		fuse_req_interrupt_func(w->req, NULL, NULL);
		fs_waiter_put(m);
		free(w);
	}
}

/* A mount is freed: waiters of a connection that ended without releasing its files. */
void lock_drop_mount(struct fs *fs, struct fs_mount *m)
{
	struct lock_wait *w, *done = lock_take_where(fs, -1, m);

	while ((w = done) != NULL) {
		done = w->next;
		lock_reply(w, EIO);
	}
}
