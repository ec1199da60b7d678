/* SPDX-License-Identifier: MIT */
/*
 * The server: one bounded pool of workers serving the mounts' /dev/fuse
 * fds from one epoll set, and the lifecycle of the server and of a mount
 * in it (the mounts' shares of open files and lock waiters are share.c's). Each
 * mount's own reader (reader.c) serves it, and puts it in the pool's set
 * only while it serves a slow request; a mount without a reader is in the
 * set for good. The lock thread is lock.c's, the notifier notify.c's.
 */
#include "fusefs/fs-int.h"

#include <sys/fsuid.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/fuse.h>

#define STOP_KEY UINT64_MAX

void fs_log(struct fs *fs, enum fs_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	/* paths in it are a bot's: no control characters reach a log or terminal */
	va_start(ap, fmt);
	gg_vescapef(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (fs->p.log != NULL)
		fs->p.log(fs->p.log_arg, level, buf);
	else
		fprintf(stderr, "agentfs: %s\n", buf);
}

/*
 * Switch this thread's filesystem identity to the caller's, so new files
 * belong to it and group-writable folders work (fs_set_ids). A failure is
 * the caller's error: the operation is refused, and serve() switches back.
 */
static __thread bool switched; /* this thread is not root's identity now */

int fs_as_caller(fuse_req_t req, bool with_groups)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t groups[64];
	int n = -1;

	if (c->uid == 0 && c->gid == 0)
		return 0;
	switched = true;
	if (with_groups) {
		n = fuse_req_getgroups(req, 64, groups);
		if (n < 0)
			n = 0;
		if (n > 64)
			n = 64;
	}
	return fs_set_ids(c->uid, c->gid, groups, n);
}

int fs_write_begin(fuse_req_t req, struct fs_caps *caps, int fd)
{
	uid_t uid = fuse_req_ctx(req)->uid;
	struct stat st;
	int r;

	caps->dropped = false;
	if (uid == 0)
		return 0;
	fs_write_caps_drop(caps);
	/* its groups (a read of /proc) only for a setgid file without group execute */
	if (fstat(fd, &st) == 0 && (st.st_mode & (S_ISGID | S_IXGRP)) == S_ISGID)
		r = fs_as_caller(req, true);
	else
		r = fs_as_uid_only(uid);
	if (r != 0)
		fs_write_end(req_mount(req)->fs, caps);
	return r;
}

void fs_write_end(struct fs *fs, struct fs_caps *caps)
{
	fs_as_root(fs);
	fs_write_caps_restore(caps);
	caps->dropped = false;
}

/* UID as this thread's filesystem uid alone (groups and gid stay root's) */
static __thread bool uid_only; /* switched by fs_as_uid_only: fs_as_root undoes less */

int fs_as_uid_only(uid_t uid)
{
	switched = uid_only = true;
	setfsuid(uid);
	return (uid_t)setfsuid((uid_t)-1) == uid ? 0 : -EPERM;
}

/*
 * Back to root's identity; nothing to do (no syscall) if it never changed.
 * A worker that cannot go back would serve the next caller as the last
 * one: it stops the process instead.
 */
void fs_as_root(struct fs *fs)
{
	int r;

	if (!switched)
		return;
	switched = false;
	if (uid_only) {
		uid_only = false;
		setfsuid(0);
		r = setfsuid((uid_t)-1) == 0 ? 0 : -EPERM;
	} else {
		r = fs_set_ids(0, 0, fs->root_groups, fs->n_root_groups);
	}
	if (r != 0) {
		fs_log(fs, FS_LOG_ERR, "cannot switch a worker back to root: %s: stopping",
		       strerror(-r));
		abort();
	}
}

void fs_mount_arm(struct fs_mount *m, int op, uint32_t events)
{
	struct epoll_event ev = {.events = events | EPOLLONESHOT};

	ev.data.u64 = ((uint64_t)m->slot_gen << 32) | m->slot;
	if (epoll_ctl(m->fs->epfd, op, m->fuse_fd, &ev) != 0 && errno != ENOENT)
		fs_log(m->fs, FS_LOG_ERR, "epoll_ctl %s: %s", m->mountpoint, strerror(errno));
}

static void mount_release(struct fs_mount *m)
{
	struct fs *fs = m->fs;

	pthread_mutex_lock(&fs->lock);
	if (--m->busy == 0)
		pthread_cond_broadcast(&fs->cond);
	pthread_mutex_unlock(&fs->lock);
}

void fs_mount_ended(struct fs_mount *m)
{
	struct fs *fs = m->fs;
	bool lost;

	pthread_mutex_lock(&fs->lock);
	lost = !m->ended && !mount_stopping(m);
	m->ended = true;
	pthread_mutex_unlock(&fs->lock);
	/* still busy: fs_mount_free() waits before it frees what is read here */
	if (lost) {
		fs_log(fs, FS_LOG_INFO, "%s: unmounted", m->mountpoint);
		if (fs->p.lost != NULL)
			fs->p.lost(fs->p.lost_arg, m);
	}
	pthread_mutex_lock(&fs->lock);
	m->busy--;
	pthread_cond_broadcast(&fs->cond);
	pthread_mutex_unlock(&fs->lock);
}

/* Serve one request just received, and what it left to do without the lock. */
void fs_serve(struct fs *fs, struct fs_mount *m, struct fuse_buf *buf)
{
	fuse_session_process_buf(m->se, buf);
	fs_as_root(fs);
	inode_closes_flush();
}

/*
 * Whether the request just received may keep its worker long: data, syncs,
 * locks. Read from its header (no splice: fs_ops' init turns it off).
 */
bool fs_request_may_block(const struct fuse_buf *buf)
{
	const struct fuse_in_header *h = buf->mem;

	if ((buf->flags & FUSE_BUF_IS_FD) || buf->size < sizeof *h)
		return true; /* not known: assume so */
	switch (h->opcode) {
	case FUSE_READ:
	case FUSE_WRITE:
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
	case FUSE_SETLKW:
	case FUSE_FALLOCATE:
	case FUSE_LSEEK:
	case FUSE_COPY_FILE_RANGE:
		return true;
	default:
		return false;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Only for a mount without a reader (reader.c; its reader polls the same
 * way, -o poll=): after a request, keep taking this mount's next ones for
 * a short while instead of sleeping. A FUSE round trip is two wakeups, and waking a
 * thread on an idle CPU costs far more than the work: on the 2-vCPU VM of
 * bench/README.md a pipe round trip between CPUs takes 50 us, 6 us on one
 * CPU, 13 us if one side stays awake. A caller's next request usually
 * comes within microseconds, so a worker still awake takes it with no
 * wakeup. sched_yield() between tries leaves the CPU to anything runnable.
 *
 * While it polls, the mount is disarmed in epoll: its requests, also the
 * kernel's FORGETs that come between a caller's, are this worker's, so
 * they wake nobody and meet nobody on a lock (rm -rf spent a third of its
 * context switches on both). A request that may take long (data, fsync,
 * locks) is served with the mount armed, so another worker takes what
 * comes meanwhile. Every disarm is followed by an arm by the same worker,
 * so the last word on a mount is always "armed". A mount has one poller
 * at most, and there are at most half as many pollers as CPUs (and one
 * worker fewer than workers): a second spinning worker took the CPU the
 * callers needed (cold git status with its parallel lstat threads was 30%
 * slower than bindfs). A session ends after POLL_BATCH requests, so a busy
 * mount cannot keep the others waiting.
 *
 * Returns false if the mount ended (its busy count is then dropped).
 */
#define POLL_BATCH 64

static bool worker_poll(struct fs *fs, struct fs_mount *m, struct fuse_buf *buf)
{
	uint64_t deadline;
	unsigned served;
	int res = -EAGAIN;
	bool slow, alive = true;

	if (m->poll_us <= 0 || atomic_exchange(&m->polled, true))
		return true;
	if (atomic_fetch_add(&fs->pollers, 1) >= fs->max_pollers) {
		atomic_fetch_sub(&fs->pollers, 1);
		atomic_store(&m->polled, false);
		return true;
	}
	fs_mount_arm(m, EPOLL_CTL_MOD, 0);
	for (served = 0; served < POLL_BATCH; served++) {
		deadline = now_ns() + (uint64_t)m->poll_us * 1000u;
		do {
			if (mount_stopping(m))
				break;
			res = fuse_session_receive_buf(m->se, buf);
			if (res != -EAGAIN && res != -EINTR)
				break;
			sched_yield();
		} while (now_ns() < deadline);
		if (mount_stopping(m) || res == -EAGAIN || res == -EINTR)
			break;
		if (res <= 0 || fuse_session_exited(m->se)) {
			alive = false;
			break;
		}
		slow = fs_request_may_block(buf);
		if (slow)
			fs_mount_arm(m, EPOLL_CTL_MOD, EPOLLIN);
		fs_serve(fs, m, buf);
		if (slow)
			fs_mount_arm(m, EPOLL_CTL_MOD, 0);
	}
	if (alive)
		fs_mount_arm(m, EPOLL_CTL_MOD, EPOLLIN);
	atomic_store(&m->polled, false);
	atomic_fetch_sub(&fs->pollers, 1);
	if (!alive)
		fs_mount_ended(m);
	return alive;
}

/*
 * The kernel has already applied the caller's umask to the mode of a create,
 * mkdir or mknod (no FUSE_CAP_DONT_MASK), so the server's own umask must not
 * mask it again: the mount's shell or agentfsd under systemd (UMask=0077)
 * would change what callers get. A worker gets its own fs_struct
 * (unshare(CLONE_FS)) with umask 0, leaving the process's umask, and so the
 * daemon's own files, as they are. Failing that, modes are masked twice:
 * stricter, never looser. Workers use no path relative to the cwd.
 */
void fs_worker_init(struct fs *fs)
{
	fs_thread_no_fsetid(); /* writes clear setuid as a user's do (ids.c) */
	if (unshare(CLONE_FS) != 0) {
		fs_log(fs, FS_LOG_ERR,
		       "unshare(CLONE_FS): %s; modes made through mounts "
		       "are masked by the server's umask too",
		       strerror(errno));
		return;
	}
	umask(0);
	/* Its own cwd: the caller's folder must not stay busy (umount(8) EBUSY). */
	if (chdir("/") != 0)
		fs_log(fs, FS_LOG_ERR, "chdir /: %s", strerror(errno));
}

/*
 * A worker: take one ready mount from the epoll set, receive one request,
 * re-arm the mount at once so another worker can take the next request,
 * then process this one. -EAGAIN is normal on the non-blocking fds.
 */
static void *worker_main(void *arg)
{
	struct fs *fs = arg;
	struct fuse_buf buf = {.mem = NULL};
	struct epoll_event ev;
	struct fs_mount *m;
	uint32_t slot, gen;
	int res;

	fs_worker_init(fs);
	journal_thread(1 + atomic_fetch_add(&fs->worker_seq, 1));
	for (;;) {
		res = epoll_wait(fs->epfd, &ev, 1, -1);
		if (res < 0 && errno == EINTR)
			continue;
		if (res < 0) {
			fs_log(fs, FS_LOG_ERR, "epoll_wait: %s", strerror(errno));
			break;
		}
		if (ev.data.u64 == STOP_KEY)
			break;
		slot = (uint32_t)ev.data.u64;
		gen = (uint32_t)(ev.data.u64 >> 32);
		pthread_mutex_lock(&fs->lock);
		m = slot < FS_MAX_MOUNTS ? fs->slots[slot] : NULL;
		if (m == NULL || m->slot_gen != gen || m->ended || m->handing_over) {
			pthread_mutex_unlock(&fs->lock);
			continue;
		}
		m->busy++;
		pthread_mutex_unlock(&fs->lock);

		res = fuse_session_receive_buf(m->se, &buf);
		if (res == -EAGAIN || res == -EINTR) {
			reader_pool_rearm(m);
			mount_release(m);
			continue;
		}
		if (res <= 0 || fuse_session_exited(m->se)) {
			fs_mount_ended(m);
			continue;
		}
		reader_pool_rearm(m);
		fs_serve(fs, m, &buf);
		if (m->has_reader || worker_poll(fs, m, &buf))
			mount_release(m);
	}
	free(buf.mem);
	fsop_thread_exit();
	return NULL;
}

/* AGENTFSD_TEST_CRASH=after:N,..., during:N,..., handle:N,... or resent:N,...: see journal.c */
static void fs_test_crash(struct fs *fs)
{
	const char *v = getenv("AGENTFSD_TEST_CRASH");
	uint64_t *set;
	char *end;
	unsigned long op;

	if (v != NULL && strncmp(v, "after:", 6) == 0)
		set = &fs->crash_after;
	else if (v != NULL && strncmp(v, "during:", 7) == 0)
		set = &fs->crash_during;
	else if (v != NULL && strncmp(v, "handle:", 7) == 0)
		set = &fs->crash_handle;
	else if (v != NULL && strncmp(v, "resent:", 7) == 0)
		set = &fs->crash_resent;
	else
		return;
	for (v = strchr(v, ':') + 1; *v != '\0'; v = *end == ',' ? end + 1 : end) {
		op = strtoul(v, &end, 10);
		if (end == v)
			break;
		if (op < 64)
			*set |= 1ull << op;
	}
}

struct fs *fs_new(const struct fs_params *p, struct fs_error *err)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = STOP_KEY};
	struct rlimit rl;
	struct fs *fs;
	unsigned i;
	int n;

	/* Keep 0 to 2 taken: fds the policy passes are never 0. */
	while ((n = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && n <= 2)
		;
	if (n > 2)
		close(n);
	fs = calloc(1, sizeof *fs);
	if (fs == NULL) {
		fs_seterr(err, ENOMEM, "out of memory");
		return NULL;
	}
	fs->p = *p;
	if (fs->p.workers == 0)
		fs->p.workers = 4;
	if (fs->p.timeout < 0)
		fs->p.timeout = 2.0;
	if (fs->p.poll_us == 0)
		fs->p.poll_us = FS_POLL_US_DEFAULT;
	{
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		fs->max_pollers = ncpu >= 4 ? (unsigned)ncpu / 2 : 1;
		if (fs->max_pollers > fs->p.workers - 1)
			fs->max_pollers = fs->p.workers - 1;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (1u << 24))
		rl.rlim_cur = rl.rlim_cur == RLIM_INFINITY ? (1u << 24) : 1024;
	fs->maxfds = fs->p.fd_cache;
	if (fs->maxfds == 0)
		fs->maxfds = rl.rlim_cur > 128 ? (unsigned)(rl.rlim_cur / 2) : 32;
	/* what the fd cache leaves, less a reserve for sockets and state files */
	fs->max_handles = rl.rlim_cur > fs->maxfds + 2 * FS_FD_RESERVE
				  ? (unsigned)rl.rlim_cur - fs->maxfds - FS_FD_RESERVE
				  : (unsigned)rl.rlim_cur / 4;
	/* closes waiting for the closer hold fds too: room for them */
	fs->cl_max = rl.rlim_cur / 16 > 1024 ? 1024 : (unsigned)rl.rlim_cur / 16;
	if (fs->max_handles > fs->cl_max + 64)
		fs->max_handles -= fs->cl_max;
	if (fs->max_handles < 64)
		fs->max_handles = 64;
	fs->max_waiters = FS_MAX_WAITERS;
	fs->lru.lru_next = fs->lru.lru_prev = &fs->lru;
	{
		/*
		 * Adaptive: spin a little before sleeping. Its sections are a
		 * few hash and list operations, and a worker put to sleep on it
		 * costs a wakeup worth many of them (rm -rf: a FORGET and the
		 * next GETATTR arrive together and meet here).
		 */
		pthread_mutexattr_t a;

		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&fs->lock, &a);
		pthread_mutexattr_destroy(&a);
	}
	pthread_cond_init(&fs->cond, NULL);
	pthread_rwlock_init(&fs->ns_lock, NULL);
	pthread_mutex_init(&fs->chk_lock, NULL);
	pthread_mutex_init(&fs->lk_lock, NULL);
	pthread_cond_init(&fs->lk_cond, NULL);
	pthread_mutex_init(&fs->cl_lock, NULL);
	pthread_cond_init(&fs->cl_cond, NULL);
	pthread_mutex_init(&fs->nt_lock, NULL);
	pthread_cond_init(&fs->nt_cond, NULL);
	pthread_mutex_init(&fs->excl_lock, NULL);
	fs->nt_tail = &fs->nt_head;
	{
		/* a folder rename waits for the creates in flight, not for every later one */
		pthread_rwlockattr_t ra;

		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&fs->decide_all, &ra);
		pthread_rwlockattr_destroy(&ra);
		for (i = 0; i < FS_DECIDE_STRIPES; i++)
			pthread_mutex_init(&fs->decide_stripe[i], NULL);
	}
	{
		pthread_condattr_t ca;

		pthread_mutex_init(&fs->whole_lock, NULL);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&fs->whole_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	reader_init_signal();
	fs_test_crash(fs);
	if (p->keep != NULL)
		gitlock_init(); /* its table outlives us too (gitlock.c) */
	n = getgroups(64, fs->root_groups);
	fs->n_root_groups = n > 0 ? n : 0;

	fs->epfd = epoll_create1(EPOLL_CLOEXEC);
	fs->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fs->epfd < 0 || fs->stopfd < 0 ||
	    epoll_ctl(fs->epfd, EPOLL_CTL_ADD, fs->stopfd, &ev) != 0) {
		fs_seterr(err, errno, "epoll: %s", strerror(errno));
		goto fail;
	}
	fs->workers = calloc(fs->p.workers, sizeof *fs->workers);
	if (fs->workers == NULL) {
		fs_seterr(err, ENOMEM, "out of memory");
		goto fail;
	}
	for (i = 0; i < fs->p.workers; i++) {
		if ((n = pthread_create(&fs->workers[i], NULL, worker_main, fs)) != 0) {
			fs_seterr(err, n, "cannot start a worker thread: %s", strerror(n));
			goto fail;
		}
		fs->nworkers++;
	}
	if ((n = pthread_create(&fs->lk_thread, NULL, lock_thread, fs)) != 0 ||
	    (n = pthread_create(&fs->nt_thread, NULL, notify_thread, fs)) != 0) {
		fs_seterr(err, n, "cannot start a thread: %s", strerror(n));
		goto fail;
	}
	fs->helpers = true;
	/* Without the closer (no memory, no thread), workers close themselves. */
	if (fs->cl_max > 0 && (fs->cl_items = calloc(fs->cl_max, sizeof *fs->cl_items)) != NULL &&
	    pthread_create(&fs->cl_thread, NULL, closer_thread, fs) != 0) {
		free(fs->cl_items);
		fs->cl_items = NULL;
	}
	return fs;
fail:
	fs_free(fs);
	return NULL;
}

/* Unmounts whatever is still mounted, then stops every thread. */
void fs_free(struct fs *fs)
{
	struct fs_mount *m;

	if (fs == NULL)
		return;
	while ((m = fs->mounts) != NULL) {
		fs_unmount(m);
		fs_mount_free(m);
	}
	fs_stop_threads(fs);
	free(fs->workers);
	if (fs->epfd >= 0)
		close(fs->epfd);
	if (fs->stopfd >= 0)
		close(fs->stopfd);
	free(fs);
}

/* Every thread of the server ends (fs_free, fs_handover); what the closer holds is closed. */
void fs_stop_threads(struct fs *fs)
{
	unsigned i;

	if (fs->stopfd >= 0 && eventfd_write(fs->stopfd, 1) != 0)
		fs_log(fs, FS_LOG_ERR, "eventfd: %s", strerror(errno));
	for (i = 0; i < fs->nworkers; i++)
		pthread_join(fs->workers[i], NULL);
	fs->nworkers = 0;
	if (fs->helpers) {
		pthread_mutex_lock(&fs->lk_lock);
		pthread_mutex_lock(&fs->nt_lock);
		fs->stopping = true;
		pthread_cond_broadcast(&fs->lk_cond);
		pthread_cond_broadcast(&fs->nt_cond);
		pthread_mutex_unlock(&fs->nt_lock);
		pthread_mutex_unlock(&fs->lk_lock);
		pthread_join(fs->lk_thread, NULL);
		pthread_join(fs->nt_thread, NULL);
		fs->helpers = false;
	}
	if (fs->cl_items != NULL) {
		/* every mount is gone: what waits is closed, then the closer ends */
		pthread_mutex_lock(&fs->cl_lock);
		fs->cl_stopping = true;
		pthread_cond_signal(&fs->cl_cond);
		pthread_mutex_unlock(&fs->cl_lock);
		pthread_join(fs->cl_thread, NULL);
		free(fs->cl_items);
		fs->cl_items = NULL;
	}
}

/* Register a mount with the pool; its fd is served from now on. */
int fs_attach(struct fs *fs, struct fs_mount *m, struct fs_error *err)
{
	struct fs_mount *o;
	unsigned i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < FS_MAX_MOUNTS && fs->slots[i] != NULL; i++)
		;
	if (i == FS_MAX_MOUNTS) {
		pthread_mutex_unlock(&fs->lock);
		fs_seterr(err, EMFILE, "too many mounts in one process (at most %d)",
			  FS_MAX_MOUNTS);
		return -EMFILE;
	}
	m->slot = i;
	m->slot_gen = ++fs->slot_gen;
	fs->slots[i] = m;
	for (o = fs->mounts; o != NULL; o = o->next) {
		if (o->source_dev == m->source_dev) {
			atomic_fetch_add(&o->siblings, 1);
			atomic_fetch_add(&m->siblings, 1);
		}
	}
	m->next = fs->mounts;
	fs->mounts = m;
	atomic_fetch_add(&fs->nmounts, 1);
	/* taken over: the pool serves it at once, its reader comes after the takeover (reader.c) */
	m->reader_later = m->adopted;
	pthread_mutex_unlock(&fs->lock);
	/* in the pool's epoll set only when the mount has no reader (reader.c) */
	if (!m->adopted)
		reader_start(m);
	if (!m->has_reader)
		fs_mount_arm(m, EPOLL_CTL_ADD, EPOLLIN);
	return 0;
}

/*
 * Detach the mount and end its connection: requests in flight finish, and
 * processes that still use it (in other mount namespaces too) get ENOTCONN.
 * Replacing the /dev/fuse fd drops its last reference, which aborts the
 * connection without the fusectl filesystem and without closing an fd a
 * worker may be reading.
 */
int fs_unmount(struct fs_mount *m)
{
	struct fs *fs = m->fs;
	int res, nullfd;

	pthread_mutex_lock(&fs->lock);
	if (m->unmounting || m->ended) {
		m->unmounting = true;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	m->unmounting = true;
	pthread_mutex_unlock(&fs->lock);

	epoll_ctl(fs->epfd, EPOLL_CTL_DEL, m->fuse_fd, NULL);
	res = mount_detach(m); /* aborts the connection too if the fd store holds it (keep.c) */
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nullfd >= 0) {
		dup3(nullfd, m->fuse_fd, O_CLOEXEC);
		close(nullfd);
	}
	reader_stop(m);
	uring_stop(m);
	pthread_mutex_lock(&fs->lock);
	while (m->busy > 0)
		pthread_cond_wait(&fs->cond, &fs->lock);
	m->ended = true;
	pthread_mutex_unlock(&fs->lock);
	keep_unmount(m);
	return res;
}

void fs_mount_free(struct fs_mount *m)
{
	struct fs *fs;
	struct fs_mount **pp, *o;
	size_t i;

	if (m == NULL)
		return;
	fs = m->fs;
	if (m->slot_gen != 0) {
		epoll_ctl(fs->epfd, EPOLL_CTL_DEL, m->fuse_fd, NULL);
		pthread_mutex_lock(&fs->lock);
		fs->slots[m->slot] = NULL;
		for (pp = &fs->mounts; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == m) {
				*pp = m->next;
				atomic_fetch_sub(&fs->nmounts, 1);
				break;
			}
		}
		for (o = fs->mounts; o != NULL; o = o->next)
			if (o->source_dev == m->source_dev)
				atomic_fetch_sub(&o->siblings, 1);
		pthread_mutex_unlock(&fs->lock);
		reader_stop(m);
		uring_stop(m);
		pthread_mutex_lock(&fs->lock);
		while (m->busy > 0)
			pthread_cond_wait(&fs->cond, &fs->lock);
		pthread_mutex_unlock(&fs->lock);
		notify_forget_mount(fs, m);
	}
	lock_drop_mount(fs, m);
	keep_unmount(m); /* ended from outside: the store lets go of it too */
	/*
	 * The reader's fd goes with the session's: the notifier and the lock
	 * thread reply through it too, until the two calls above are done.
	 */
	reader_free(m);
	uring_free(m);
	if (m->se != NULL) {
		/* The session owns the fd only once fuse_session_mount() took it. */
		bool owned = fuse_session_fd(m->se) == m->fuse_fd;

		fuse_session_destroy(m->se);
		if (!owned && m->fuse_fd >= 0)
			close(m->fuse_fd);
	} else if (m->fuse_fd >= 0) {
		close(m->fuse_fd);
	}
	/* Closed: the connection's backing files went with it (backing_inode_free). */
	m->fuse_fd = -1;
	excl_drop(m); /* no request of it can come any more */
	pthread_mutex_lock(&fs->lock);
	inode_table_clear(m);
	pthread_mutex_unlock(&fs->lock);
	inode_closes_flush();
	table_free(m);
	guard_free(m->guard);
	while (m->nmount_fds > 0)
		close(m->mount_fds[--m->nmount_fds]);
	free(m->mount_fds);
	free(m->mount_ids);
	free(m->ro_dev);
	free(m->ro_ino);
	free(m->ro_links);
	free(m->source);
	free(m->mountpoint);
	fs_group_mount_put(m->groups);
	for (i = 0; i < FS_GROUPS; i++)
		fs_group_put(m->groups[i]);
	pthread_mutex_destroy(&m->arm_lock);
	free(m);
}

/*
 * Takes effect on the next operation: the policy reads it every time. The
 * kernel mount's flag follows, so the mount table says it.
 */
void fs_mount_set_readonly(struct fs_mount *m, bool readonly)
{
	int r;

	atomic_store(&m->readonly, readonly);
	if ((r = mount_set_kernel_ro(m, readonly)) != 0)
		fs_log(m->fs, FS_LOG_WARN, "%s: cannot make the kernel mount %s: %s", m->mountpoint,
		       readonly ? "read-only" : "writable", strerror(-r));
}

void fs_mount_set_allow_new_repos(struct fs_mount *m, bool allow)
{
	atomic_store(&m->allow_new_repos, allow);
	if (m->guard != NULL)
		guard_set_allow_new_repos(m->guard, allow);
}

struct repo_cb {
	void (*fn)(void *arg, const char *path);
	void *arg;
};

static void repo_each(void *arg, uint64_t dev, uint64_t ino, const char *path)
{
	struct repo_cb *cb = arg;

	if (path != NULL)
		cb->fn(cb->arg, path);
}

/* The repositories the bot made in this mount (allow_new_repos), by path from the root. */
void fs_mount_new_repos(struct fs_mount *m, void (*fn)(void *arg, const char *path), void *arg)
{
	struct repo_cb cb = {fn, arg};

	if (m->guard != NULL)
		guard_new_repos(m->guard, repo_each, &cb);
}

const char *fs_mount_source(const struct fs_mount *m)
{
	return m->source;
}

void *fs_mount_tag(const struct fs_mount *m)
{
	return m->tag;
}

uint64_t fs_mount_id(const struct fs_mount *m)
{
	return m->mnt_id;
}

/*
 * Is the mount on top at path m's own (mount_fd_ours: by id, device and,
 * where the kernel has it, the id never reused)? Opening a mount's root
 * asks its server nothing.
 */
bool fs_mount_is_at(const struct fs_mount *m, const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool ours;

	if (fd < 0)
		return false;
	ours = mount_fd_ours(m, fd);
	close(fd);
	return ours;
}

const char *fs_mount_point(const struct fs_mount *m)
{
	return m->mountpoint;
}

unsigned fs_mount_count(struct fs *fs)
{
	return atomic_load(&fs->nmounts);
}
