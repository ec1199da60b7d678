/* SPDX-License-Identifier: MIT */
/*
 * The closer: a thread that closes what the server no longer needs, so
 * the thread that served the request can read the next one.
 *
 * The last close of a file unlinked through the mount is where its
 * filesystem frees it: an O_PATH fd from the cache, or the backing file of
 * kernel passthrough, closed when the kernel forgets the inode. ext4
 * mounted with discard then waits for a discard of every extent
 * (submit_bio_wait under ext4_evict_inode); on a machine busy with other
 * work, each wait also waits for a CPU to be woken on. Done by the reader,
 * rm -rf's next LOOKUP and UNLINK waited behind it (bench/README.md).
 *
 * A worker queues its closes per thread under fs->lock (inode.c,
 * backing.c: closer_later_*) and hands them here once it let go of the
 * lock (closer_flush; the request may not be answered yet). A backing
 * close holds its mount busy until done: the ioctl needs the mount's fd.
 * Beyond fs->cl_max waiting, the worker closes itself: the fds waiting
 * count against the process's limit, and fs_new() keeps room for them.
 */
#include "fusefs/fs-int.h"

#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/fuse.h>

#ifndef FUSE_DEV_IOC_BACKING_CLOSE
#define FUSE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)
#endif

/* this thread's closes, queued under fs->lock */
#define LATER_MAX 64
static __thread struct close_item later[LATER_MAX];
static __thread unsigned nlater;
static __thread struct fs *later_fs;

static void closer_do(struct fs *fs, const struct close_item *c)
{
	uint32_t id = c->backing_id;

	if (c->m == NULL) {
		close(c->fd);
		return;
	}
	ioctl(c->m->fuse_fd, FUSE_DEV_IOC_BACKING_CLOSE, &id);
	pthread_mutex_lock(&fs->lock);
	if (--c->m->busy == 0)
		pthread_cond_broadcast(&fs->cond);
	pthread_mutex_unlock(&fs->lock);
}

/* An fd to close once fs->lock is let go (held now). */
void closer_later_fd(struct fs *fs, int fd)
{
	if (nlater == LATER_MAX || (later_fs != NULL && later_fs != fs)) {
		close(fd);
		return;
	}
	later_fs = fs;
	later[nlater++] = (struct close_item){.fd = fd};
}

/* A backing file of m to close (fs->lock held, m busy: its fd is open). */
void closer_later_backing(struct fs_mount *m, uint32_t id)
{
	if (nlater == LATER_MAX || (later_fs != NULL && later_fs != m->fs)) {
		ioctl(m->fuse_fd, FUSE_DEV_IOC_BACKING_CLOSE, &id);
		return;
	}
	m->busy++; /* until closer_do() */
	later_fs = m->fs;
	later[nlater++] = (struct close_item){.fd = -1, .m = m, .backing_id = id};
}

/* Hand this thread's closes to the closer; what it has no room for is done here. */
void closer_flush(void)
{
	struct fs *fs = later_fs;
	unsigned k = 0, n = nlater;

	if (n == 0)
		return;
	nlater = 0;
	later_fs = NULL;
	pthread_mutex_lock(&fs->cl_lock);
	if (fs->cl_items != NULL && !fs->cl_stopping) {
		for (; k < n && fs->cl_len < fs->cl_max; k++)
			fs->cl_items[(fs->cl_head + fs->cl_len++) % fs->cl_max] = later[k];
		if (k > 0 && fs->cl_idle)
			pthread_cond_signal(&fs->cl_cond);
	}
	pthread_mutex_unlock(&fs->cl_lock);
	for (; k < n; k++)
		closer_do(fs, &later[k]);
}

void *closer_thread(void *arg)
{
	const struct timespec linger = {0, 1000000}; /* 1 ms */
	struct fs *fs = arg;
	struct close_item c;

	pthread_mutex_lock(&fs->cl_lock);
	for (;;) {
		while (fs->cl_len == 0 && !fs->cl_stopping) {
			fs->cl_idle = true;
			pthread_cond_wait(&fs->cl_cond, &fs->cl_lock);
			fs->cl_idle = false;
		}
		if (fs->cl_len == 0)
			break; /* stopping, and nothing left */
		c = fs->cl_items[fs->cl_head];
		fs->cl_head = (fs->cl_head + 1) % fs->cl_max;
		fs->cl_len--;
		pthread_mutex_unlock(&fs->cl_lock);
		closer_do(fs, &c);
		pthread_mutex_lock(&fs->cl_lock);
		if (fs->cl_len == 0 && !fs->cl_stopping) {
			/* a moment awake: closes handed meanwhile wake no one (rm -rf: one per file) */
			pthread_mutex_unlock(&fs->cl_lock);
			nanosleep(&linger, NULL);
			pthread_mutex_lock(&fs->cl_lock);
		}
	}
	pthread_mutex_unlock(&fs->cl_lock);
	return NULL;
}
