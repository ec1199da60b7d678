/* SPDX-License-Identifier: MIT */
/*
 * A mount taken over (restore.c) serves as soon as its session is attached
 * and its nodes restored; its guard, a scan of the source as at a mount, is
 * opened afterwards, here, on the guard thread (one per server, mounts in
 * the order they were taken over). That scan was most of a mount's share of
 * a restart's gap (bench/README.md).
 *
 * Until the guard is ready (m->guard_state GS_PENDING) a request that may
 * need a decision waits for it: everything but the opcodes need_of() lets
 * through, which read (lookup, getattr, readdir, getxattr, reads, opens
 * for reading, locks, releases of read-only handles). A pending guard is
 * never "no guard": GS_NONE (-o noguard) is the only state in which
 * m->guard NULL lets a write-ish request through, and a mount taken over
 * is never in it. Lookups answered meanwhile cache no class (inode.c reads
 * the state once per lookup); nodes keep the stale generation restore.c
 * gave them, so policy_refresh() works their classes out from the ready
 * guard at their next decision.
 *
 * m->guard_state moves GS_PENDING -> GS_READY or GS_FAILED once, stored
 * under fs->lg_lock with release after m->guard is set; every reader of
 * m->guard loads it with acquire first (or waited under the lock), so it
 * sees the opener's stores, and m->guard is touched by no one else while
 * pending. A create that waits holds the kernel's lock of its folder: a
 * listing of that folder waits with it.
 *
 * A waiting request is served on its own thread (the mount's reader, or a
 * pool worker) once the state moves. If its mount is still in the queue,
 * the waiter takes it out and opens the guard itself: a waiter never waits
 * for a guard that no thread is opening, a request of one mount never
 * waits for the guards queued before it, and the mount's next requests
 * queue behind it for at most about one scan. (The pool is not armed for
 * them meanwhile: a node one thread makes and another uses at once is
 * published through the kernel, which ThreadSanitizer cannot see.) The
 * thread that opens a guard holds no lock of this server while it scans
 * (gitguard takes its view's own), and its scan reads the source, which is
 * never on an agentfs mount (agentfsd refuses such a root): it sends this
 * server no request. Only a root holding agentfsd's own mount folder would
 * scan into other bots' mounts; two such roots pending at once could wait
 * on each other, as the same roots already made a restore wait on itself
 * before this (a scan during fs_adopt reaching a mount not taken over yet).
 *
 * A guard that cannot be opened (out of memory or descriptors, the source
 * gone unreadable) ends GS_FAILED: the reason is logged once, and every
 * request that needs a decision is refused with EROFS until the mount is
 * made again (agentfs umount and a configure, or a restart); reads go on.
 * Refusing is the safe side: nothing is allowed without a decision, and
 * the bot keeps its mount, its open files and what it wrote; ending the
 * mount instead would turn every call of its running commands into
 * ENOTCONN. A release is served either way: it only closes.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <linux/fuse.h>

enum { NEED_NONE, NEED_WAIT, NEED_DECISION };

void lateguard_init(struct fs *fs)
{
	/* tests only (tests/daemon-restart-early.sh): a pending window long enough to hit */
	const char *delay = getenv("AGENTFSD_TEST_GUARD_DELAY");

	/* and a guard that cannot be opened */
	fs->lg_fail = getenv("AGENTFSD_TEST_GUARD_FAIL") != NULL;

	pthread_mutex_init(&fs->lg_lock, NULL);
	pthread_cond_init(&fs->lg_cond, NULL);
	fs->lg_tail = &fs->lg_q;
	if (delay != NULL)
		fs->lg_delay_ms = (unsigned)strtoul(delay, NULL, 10);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static bool writes(uint32_t flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/*
 * What the request in BUF needs of a guard that is not ready: nothing
 * (answered at once), to wait (a release of a handle that wrote: it may
 * tell the guard a config changed), or a decision (refused if the guard
 * failed). Anything not known to only read needs a decision.
 */
static int need_of(const struct fuse_buf *buf)
{
	const struct fuse_in_header *h = buf->mem;
	size_t in = buf->size - sizeof *h;

	/* no splice (fs_ops' init turns it off): a request's header is in memory */
	if ((buf->flags & FUSE_BUF_IS_FD) || buf->size < sizeof *h)
		return NEED_DECISION;
	switch (h->opcode) {
	case FUSE_LOOKUP:
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_GETATTR:
	case FUSE_READLINK:
	case FUSE_READ:
	case FUSE_STATFS:
	case FUSE_FLUSH:
	case FUSE_FSYNC:
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
	case FUSE_OPENDIR:
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
	case FUSE_RELEASEDIR:
	case FUSE_FSYNCDIR:
	case FUSE_GETLK:
	case FUSE_SETLK:
	case FUSE_SETLKW:
	case FUSE_ACCESS:
	case FUSE_INTERRUPT:
	case FUSE_BMAP:
	case FUSE_POLL:
	case FUSE_LSEEK:
	case FUSE_INIT:
	case FUSE_DESTROY:
	case FUSE_NOTIFY_REPLY:
		return NEED_NONE;
	case FUSE_OPEN:
		if (in < sizeof(struct fuse_open_in))
			return NEED_DECISION;
		return writes(((const struct fuse_open_in *)(h + 1))->flags) ? NEED_DECISION
									     : NEED_NONE;
	case FUSE_RELEASE:
		if (in < sizeof(struct fuse_release_in))
			return NEED_WAIT;
		return writes(((const struct fuse_release_in *)(h + 1))->flags) ? NEED_WAIT
										: NEED_NONE;
	default:
		return NEED_DECISION;
	}
}

/* May m->guard be used now? (An acquire: its opener's stores are seen.) */
bool mount_guard_ready(struct fs_mount *m)
{
	return atomic_load_explicit(&m->guard_state, memory_order_acquire) == GS_READY;
}

/* Under fs->lg_lock: the state moves on, and every waiter looks again */
static void set_state(struct fs_mount *m, int st)
{
	atomic_store_explicit(&m->guard_state, st, memory_order_release);
	pthread_cond_broadcast(&m->fs->lg_cond);
}

/* Under fs->lg_lock: m leaves the queue */
static void unqueue(struct fs_mount *m)
{
	struct fs *fs = m->fs;
	struct fs_mount **pp;

	for (pp = &fs->lg_q; *pp != NULL; pp = &(*pp)->lg_next) {
		if (*pp == m) {
			*pp = m->lg_next;
			break;
		}
	}
	if (fs->lg_q == NULL || *pp == NULL)
		fs->lg_tail = pp;
	m->lg_next = NULL;
	m->lg_queued = false;
}

/*
 * Open m's guard (m->lg_opening set by the caller, fs->lg_lock not held);
 * the thread that does is the only one touching m->guard until the state
 * says GS_READY.
 */
static void open_guard(struct fs_mount *m)
{
	struct fs *fs = m->fs;
	struct fs_mount_params p = {.source = m->source, .linked_worktree = m->linked_worktree};
	struct fs_error err = {0};
	uint64_t t0 = now_us();
	int r;

	if (fs->lg_delay_ms > 0)
		nanosleep(&(struct timespec){.tv_sec = fs->lg_delay_ms / 1000,
					     .tv_nsec = (long)(fs->lg_delay_ms % 1000) * 1000000},
			  NULL);
	if (fs->lg_fail) {
		r = -EIO;
		fs_seterr(&err, EIO, "AGENTFSD_TEST_GUARD_FAIL is set");
	} else {
		r = mount_guard(m, &p, &err);
	}
	if (r == 0)
		fs_log(fs, FS_LOG_DEBUG, "%s: taken over; its guard is ready (%.1f ms)",
		       m->mountpoint, (double)(now_us() - t0) / 1000.0);
	if (r != 0) {
		guard_free(m->guard);
		m->guard = NULL;
		fs_log(fs, FS_LOG_ERR,
		       "%s: taken over, but its guard cannot be opened: %s; every request that "
		       "needs a decision is refused (read-only file system) until it is mounted "
		       "again",
		       m->mountpoint, err.msg);
	}
	pthread_mutex_lock(&fs->lg_lock);
	/* a configure meanwhile (fs_mount_set_allow_new_repos) */
	if (r == 0)
		guard_set_allow_new_repos(m->guard, atomic_load(&m->allow_new_repos));
	m->lg_opening = false;
	set_state(m, r == 0 ? GS_READY : GS_FAILED);
	pthread_mutex_unlock(&fs->lg_lock); /* m may be freed from here on */
}

/*
 * Under fs->lg_lock, let go of meanwhile: queued m's guard is opened on
 * this thread. m may be freed as soon as it is open (lateguard_cancel):
 * not touched after.
 */
static void open_queued(struct fs *fs, struct fs_mount *m)
{
	unqueue(m);
	m->lg_opening = true;
	pthread_mutex_unlock(&fs->lg_lock);
	open_guard(m);
	pthread_mutex_lock(&fs->lg_lock);
}

static void *guard_thread(void *arg)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&fs->lg_lock);
	for (;;) {
		while (fs->lg_q == NULL && !fs->lg_stop)
			pthread_cond_wait(&fs->lg_cond, &fs->lg_lock);
		if (fs->lg_q == NULL)
			break; /* stopping, and every queued guard is open */
		open_queued(fs, fs->lg_q);
	}
	pthread_mutex_unlock(&fs->lg_lock);
	return NULL;
}

/*
 * m (fs_adopt, guard_state GS_PENDING) serves: its guard is opened on the
 * guard thread, or here if that thread cannot be started.
 */
void lateguard_queue(struct fs_mount *m)
{
	struct fs *fs = m->fs;
	bool here = false;

	pthread_mutex_lock(&fs->lg_lock);
	if (!fs->lg_started)
		fs->lg_started = pthread_create(&fs->lg_thread, NULL, guard_thread, fs) == 0;
	if (fs->lg_started) {
		m->lg_next = NULL;
		*fs->lg_tail = m;
		fs->lg_tail = &m->lg_next;
		m->lg_queued = true;
		pthread_cond_broadcast(&fs->lg_cond);
	} else {
		m->lg_opening = here = true;
	}
	pthread_mutex_unlock(&fs->lg_lock);
	if (here)
		open_guard(m);
}

/*
 * Wait until m's guard is no longer pending: GS_NONE, GS_READY or
 * GS_FAILED. A mount still queued is taken out and its guard opened on
 * this thread (see the top).
 */
int lateguard_wait(struct fs_mount *m)
{
	struct fs *fs = m->fs;
	int st = atomic_load_explicit(&m->guard_state, memory_order_acquire);

	if (st != GS_PENDING)
		return st;
	pthread_mutex_lock(&fs->lg_lock);
	while ((st = atomic_load_explicit(&m->guard_state, memory_order_acquire)) == GS_PENDING) {
		if (m->lg_queued)
			open_queued(fs, m);
		else /* being opened, or not queued yet (fs_adopt queues it once it serves) */
			pthread_cond_wait(&fs->lg_cond, &fs->lg_lock);
	}
	pthread_mutex_unlock(&fs->lg_lock);
	return st;
}

/*
 * Before m serves the request in BUF (fs_serve): wait for m's guard if the
 * request needs it. True: answered here (refused: the guard failed).
 */
bool lateguard_hold(struct fs_mount *m, const struct fuse_buf *buf)
{
	const struct fuse_in_header *h = buf->mem;
	struct fuse_out_header oh;
	struct iovec iov = {&oh, sizeof oh};
	int st = atomic_load_explicit(&m->guard_state, memory_order_acquire), need;

	if (st == GS_NONE || st == GS_READY || (need = need_of(buf)) == NEED_NONE)
		return false;
	if (lateguard_wait(m) == GS_READY || need == NEED_WAIT)
		return false;
	if ((buf->flags & FUSE_BUF_IS_FD) || buf->size < sizeof *h)
		return true; /* never: no splice; unanswerable, and never served unguarded */
	oh = (struct fuse_out_header){.len = sizeof oh, .error = -EROFS, .unique = h->unique};
	if (fs_dev_writev(m, m->fuse_fd, &iov, 1) < 0)
		fs_log(m->fs, FS_LOG_WARN, "%s: a refusal could not be sent: %s", m->mountpoint,
		       strerror(errno));
	return true;
}

/*
 * m is being freed (fs_mount_free): its guard is no longer opened, or its
 * opening ends first. A request still waiting for it is refused (FAILED):
 * the mount is ending.
 */
void lateguard_cancel(struct fs_mount *m)
{
	struct fs *fs = m->fs;

	/*
	 * Always under the lock, never from the state alone: the opener moves
	 * the state and still reads m until it lets go of the lock.
	 */
	pthread_mutex_lock(&fs->lg_lock);
	if (m->lg_queued)
		unqueue(m);
	while (m->lg_opening)
		pthread_cond_wait(&fs->lg_cond, &fs->lg_lock);
	if (atomic_load_explicit(&m->guard_state, memory_order_relaxed) == GS_PENDING)
		set_state(m, GS_FAILED);
	pthread_mutex_unlock(&fs->lg_lock);
}

/*
 * The server stops (fs_stop_threads): the guard thread opens what is still
 * queued, then ends. A handover waits for its mounts' requests in flight,
 * and one of them may be waiting for one of these guards.
 */
void lateguard_stop(struct fs *fs)
{
	bool started;

	pthread_mutex_lock(&fs->lg_lock);
	fs->lg_stop = true;
	started = fs->lg_started;
	fs->lg_started = false;
	pthread_cond_broadcast(&fs->lg_cond);
	pthread_mutex_unlock(&fs->lg_lock);
	if (started)
		pthread_join(fs->lg_thread, NULL);
}
