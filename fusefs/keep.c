/* SPDX-License-Identifier: MIT */
/*
 * What outlives this process, so another server can take a mount over
 * (restore.c): the mount's /dev/fuse descriptors (while any process holds
 * one, the kernel keeps the connection and its requests wait), its table
 * memfd (table.c), its source folder, and the files a bot holds locks on
 * (flock and OFD locks belong to our open file, and would go with us).
 * fs_params.keep puts a duplicate in the fd store (systemd's, or the
 * keeper's), under a name this file makes: "m<key>.<role>", the key being
 * the mount's, in its table. Each descriptor kept stays open here until
 * unkept (the store may give it again from ours: fusefs.h), but the
 * source folder's, which is the store's.
 *
 * A mount is kept once INIT is answered (before, there is nothing to take
 * over: the next server mounts afresh). A lock's file is kept before the
 * reply that grants it, so a server killed right after leaves it held.
 * fs_handover() is a clean stop for a restart: no request is left half
 * served, and every open file is kept, so nothing needs reopening.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>

void keep_name(const struct fs_mount *m, char *buf, size_t len, const char *role)
{
	snprintf(buf, len, "m%016" PRIx64 ".%s", m->tab.hdr->key, role);
}

/* how: FS_KEEP_GIVE, FS_KEEP_BACK (fusefs.h) */
static int keep_one(struct fs_mount *m, const char *role, int fd, int how)
{
	char name[64];
	int r;

	keep_name(m, name, sizeof name, role);
	r = m->fs->p.keep(m->fs->p.keep_arg, name, fd, how);
	if (r != 0 && !(how & FS_KEEP_BACK))
		fs_log(m->fs, FS_LOG_WARN, "%s: cannot keep %s for a restart: %s", m->mountpoint,
		       role, strerror(-r));
	return r;
}

static void unkeep_one(struct fs_mount *m, const char *role)
{
	char name[64];

	keep_name(m, name, sizeof name, role);
	m->fs->p.unkeep(m->fs->p.keep_arg, name);
}

/*
 * INIT is answered (on the worker that answered it): the mount's
 * descriptors go to the fd store. The source folder goes as a readable
 * descriptor: systemd refuses an O_PATH one (it cannot poll it).
 */
void keep_mount(struct fs_mount *m)
{
	char role[32];
	int *fds = NULL, rfd;
	size_t n, k;

	if (m->fs->p.keep == NULL || m->tab.memfd < 0 || m->kept)
		return;
	if ((rfd = gitlock_to_keep()) >= 0 && /* open for the process's life: lent */
	    m->fs->p.keep(m->fs->p.keep_arg, "gitlocks", rfd, 0) != 0)
		fs_log(m->fs, FS_LOG_WARN, "cannot keep the lock files' table for a restart");
	keep_one(m, "table", m->tab.memfd, 0);
	keep_one(m, "fuse", m->fuse_fd, 0);
	if (uring_memfd(m) >= 0) /* its io_uring arena (uring-keep.c) */
		keep_one(m, "ring", uring_memfd(m), 0);
	if (m->dev_fd >= 0)
		keep_one(m, "clone", m->dev_fd, 0);
	rfd = openat(m->root.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0) /* the store's: we need no readable one */
		keep_one(m, "root", rfd, FS_KEEP_GIVE);
	pthread_mutex_lock(&m->fs->lock);
	m->kept = true; /* an underlying mount met from now on is kept by keep_mount_fd() */
	n = m->nmount_fds;
	fds = n > 0 ? malloc(n * sizeof *fds) : NULL;
	if (fds != NULL)
		memcpy(fds, m->mount_fds, n * sizeof *fds);
	pthread_mutex_unlock(&m->fs->lock);
	for (k = 0; fds != NULL && k < n && k < TABLE_MOUNTS; k++) {
		snprintf(role, sizeof role, "mnt%zu", k);
		keep_one(m, role, fds[k], 0);
	}
	free(fds);
}

/* Each kept file of m given back to the store (back), or let go of */
static void kept_fhs(struct fs_mount *m, bool back)
{
	struct fh_ent *c;
	char role[32];
	uint32_t k;

	for (k = 1; k < m->tab.fh_hwm; k++) {
		c = atomic_load(&m->tab.fhs[k >> FH_SHIFT]);
		if (c == NULL)
			continue;
		c += k & (FH_CHUNK - 1);
		if (c->fd < 0 || !(c->flags & FHF_KEPT))
			continue;
		snprintf(role, sizeof role, "fh%" PRIx64, (uint64_t)atomic_load(&c->gen) << 32 | k);
		if (back)
			keep_one(m, role, c->fd, FS_KEEP_BACK);
		else
			unkeep_one(m, role);
	}
}

/*
 * m was taken over (fs_adopt): what the store held of it and the mount
 * took is the mount's for good now (closed only after keep_unmount), so
 * the store may give it to a next keeper (FS_KEEP_BACK). Its source folder
 * went with the handover: a new one is the store's.
 */
void fs_mount_keep_back(struct fs_mount *m)
{
	char role[32];
	uint32_t k;
	int rfd;

	if (m->fs->p.keep == NULL || !m->kept)
		return;
	keep_one(m, "table", m->tab.memfd, FS_KEEP_BACK);
	keep_one(m, "fuse", m->fuse_fd, FS_KEEP_BACK);
	if (uring_memfd(m) >= 0)
		keep_one(m, "ring", uring_memfd(m), FS_KEEP_BACK);
	if (m->dev_fd >= 0)
		keep_one(m, "clone", m->dev_fd, FS_KEEP_BACK);
	rfd = openat(m->root.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0)
		keep_one(m, "root", rfd, FS_KEEP_GIVE | FS_KEEP_BACK);
	/* under the lock that fh_gone closes a handle's record under: a released one is dropped */
	pthread_mutex_lock(&m->fs->lock);
	for (k = 0; k < m->nmount_fds && k < TABLE_MOUNTS; k++) {
		snprintf(role, sizeof role, "mnt%u", k);
		keep_one(m, role, m->mount_fds[k], FS_KEEP_BACK);
	}
	kept_fhs(m, true);
	pthread_mutex_unlock(&m->fs->lock);
}

/* Underlying mount number idx of the source was met (fs->lock held): keep its fd. */
void keep_mount_fd(struct fs_mount *m, size_t idx)
{
	char role[32];

	if (m->fs->p.keep == NULL || !m->kept || idx >= TABLE_MOUNTS)
		return;
	snprintf(role, sizeof role, "mnt%zu", idx);
	keep_one(m, role, m->mount_fds[idx], 0);
}

/* A lock is about to be granted on fh: its file is kept first, once. */
void keep_lock(struct fs_mount *m, uint64_t fh, int fd)
{
	struct fuse_file_info fi = {.fh = fh};
	char role[32];
	bool kept;

	if (m->fs->p.keep == NULL || !m->kept)
		return;
	pthread_mutex_lock(&m->fs->lock);
	kept = (fh_of(m, &fi)->flags & FHF_KEPT) != 0;
	pthread_mutex_unlock(&m->fs->lock);
	if (kept)
		return;
	snprintf(role, sizeof role, "fh%" PRIx64, fh);
	if (keep_one(m, role, fd, 0) == 0) /* lent: keep_release drops it before the close */
		fh_set_kept(m, fh);
}

/*
 * fh is released: if kept, its locks are let go of here, as the close
 * would (the store's duplicate must not hold them), and so is the file.
 */
void keep_release(struct fs_mount *m, uint64_t fh, int fd)
{
	struct flock all = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
	struct fuse_file_info fi = {.fh = fh};
	char role[32];

	bool kept;

	if (m->fs->p.unkeep == NULL)
		return;
	pthread_mutex_lock(&m->fs->lock);
	kept = (fh_of(m, &fi)->flags & FHF_KEPT) != 0;
	pthread_mutex_unlock(&m->fs->lock);
	if (!kept)
		return;
	flock(fd, LOCK_UN);
	fcntl(fd, F_OFD_SETLK, &all);
	snprintf(role, sizeof role, "fh%" PRIx64, fh);
	unkeep_one(m, role);
}

/* The mount ends: the store lets go of all of it. */
void keep_unmount(struct fs_mount *m)
{
	char role[32];
	uint32_t k;

	if (m->fs->p.unkeep == NULL || !m->kept)
		return;
	unkeep_one(m, "table");
	unkeep_one(m, "fuse");
	unkeep_one(m, "clone");
	unkeep_one(m, "ring");
	unkeep_one(m, "root");
	for (k = 0; k < m->nmount_fds && k < TABLE_MOUNTS; k++) {
		snprintf(role, sizeof role, "mnt%u", k);
		unkeep_one(m, role);
	}
	kept_fhs(m, false);
	m->kept = false;
}

/* Every open handle of m not kept yet goes to the store: the new server takes them as they are */
static void keep_open_files(struct fs_mount *m)
{
	struct fh_ent *c;
	uint32_t k;

	for (k = 1; k < m->tab.fh_hwm; k++) {
		c = atomic_load(&m->tab.fhs[k >> FH_SHIFT]);
		if (c == NULL)
			continue;
		c += k & (FH_CHUNK - 1);
		if (c->fd >= 0 && !(c->flags & FHF_KEPT))
			keep_lock(m, (uint64_t)atomic_load(&c->gen) << 32 | k, c->fd);
	}
}

/*
 * Stop the readers of the mounts handed over, all at once: each checks
 * handing_over before a read, and a signal ends a read in progress.
 */
static void stop_reading(struct fs *fs)
{
	struct timespec until;
	struct fs_mount *m;
	bool all;

	for (m = fs->mounts; m != NULL; m = m->next)
		if (m->handing_over)
			epoll_ctl(fs->epfd, EPOLL_CTL_DEL, m->fuse_fd, NULL);
	pthread_mutex_lock(&fs->lock);
	for (;;) {
		all = true;
		for (m = fs->mounts; m != NULL; m = m->next) {
			if (!m->handing_over || !m->has_reader || m->reader_gone)
				continue;
			all = false;
			reader_wake(m);
		}
		if (all)
			break;
		/* a reader between its check and its read missed the signal: again in 1 ms */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&fs->cond, &fs->lock, &until);
	}
	pthread_mutex_unlock(&fs->lock);
}

/*
 * A restart: every kept mount stops being served, with no request left
 * half done, and every open file is kept; mounts that cannot be kept (no
 * store, INIT not answered) are ended as a stop would. Then the threads
 * stop. Nothing is unmounted or closed: the process is about to exit, and
 * the new server takes over from the store (restore.c). Blocking lock
 * requests are left unanswered: the kernel sends them again to the new
 * server (FUSE_NOTIFY_RESEND), or, on a kernel without it, they are
 * answered EINTR here and the caller's lock call fails with EINTR.
 */
int fs_handover(struct fs *fs)
{
	struct fs_mount *m, *next;
	unsigned n = 0;

	pthread_mutex_lock(&fs->lock);
	for (m = fs->mounts; m != NULL; m = m->next)
		if (m->kept && !m->ended && !m->unmounting)
			atomic_store(&m->handing_over, true);
	pthread_mutex_unlock(&fs->lock);
	for (m = fs->mounts; m != NULL; m = next) {
		next = m->next;
		if (!m->handing_over)
			fs_unmount(m);
	}
	/* every reader at once: a restart's gap grows by the slowest, not by all of them */
	stop_reading(fs);
	uring_handover(fs); /* io_uring mounts: no entry left free (uring-keep.c) */
	pthread_mutex_lock(&fs->lock);
	for (m = fs->mounts; m != NULL; m = m->next)
		while (m->handing_over && m->busy > 0)
			pthread_cond_wait(&fs->cond, &fs->lock);
	pthread_mutex_unlock(&fs->lock);
	for (m = fs->mounts; m != NULL; m = m->next) {
		if (!m->handing_over)
			continue;
		lock_abandon_mount(fs, m, (m->tab.hdr->flags & TH_RESEND) == 0);
		keep_open_files(m);
		n++;
	}
	excl_handover(fs); /* the next server takes the folders' locks */
	fs_stop_threads(fs);
	return (int)n;
}
