/* SPDX-License-Identifier: MIT */
/*
 * A mount's reader: one thread per mount that blocks in read() on its own
 * clone of the mount's /dev/fuse fd (FUSE_DEV_IOC_CLONE: a second fd on
 * the same connection) and serves what it reads on the spot, as a
 * single-threaded server does. A request that comes while it sleeps wakes
 * it directly: no epoll, no hand-off to another thread, so a request costs
 * its read, its work and its reply (bench/README.md has the numbers
 * against the pool alone). After a request it waits awake for the next
 * one for -o poll= microseconds (default 50): a caller that makes one
 * request after another (untar, rm -rf) then finds it awake.
 *
 * fs.c's pool serves the mount too, from the non-blocking fd, only while
 * the reader serves a request that may keep it long (data, syncs, locks:
 * fs_request_may_block): the mount is then in the pool's epoll set, and
 * out of it after. Arming the pool also while requests queue up (git
 * status's parallel lstat threads) was measured and dropped: more CPU and
 * syscalls per request for no faster status on 2 CPUs.
 *
 * The kernel takes a reply only on the fd its request was read from. The
 * session's I/O hooks (fs_dev_read, fs_dev_writev; wire.c calls them with
 * libfuse before 3.17) read on the clone on the reader's thread and write
 * its replies there; a reply another thread sends (the lock thread
 * granting a lock the reader read) goes to the session's fd first and, if
 * the kernel does not know it there (ENOENT), to the clone.
 *
 * A mount taken over in a restart (restore.c) gets its reader only once
 * every mount is taken over (fs_readers_start); until then the pool serves
 * it alone, from the session's fd, as a mount without a reader. Starting a
 * thread is dear in a process with a hundred of them, in the middle of a
 * takeover: its stack is mapped and its guard page protected under the
 * process's mmap lock, which waits for the page faults in flight, and it
 * must be scheduled on a busy CPU before it reads. That was 1-2 ms of each
 * mount's takeover, waited for by every bot whose mount came later
 * (bench/README.md, Restarts). The reader then reads the clone the last
 * server read (restore.c), which the pool never reads; a request waiting
 * in the kernel is read from either.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <linux/fuse.h>

/* Interrupts a reader's read() at unmount; its handler does nothing. */
#define READER_WAKE_SIG (SIGRTMIN + 5)

static __thread struct fs_mount *reading; /* the mount whose reader this thread is */
__thread struct fs_cur fs_cur;
__thread struct fs_capture *fs_capture;
static __thread int read_fd, reply_fd;	  /* its fd to read next; the last one read */

static void wake_handler(int sig)
{
	(void)sig;
}

/* Once per process (fs_new): without SA_RESTART, the signal ends a read with EINTR. */
void reader_init_signal(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = wake_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(READER_WAKE_SIG, &sa, NULL);
}

ssize_t fs_dev_read(int fd, void *buf, size_t len)
{
	int from = reading != NULL ? read_fd : fd;
	ssize_t n = read(from, buf, len);

	reply_fd = from;

	/* /dev/null in its place: fs_unmount() ended the connection */
	if (n == 0) {
		errno = ENODEV;
		return -1;
	}
	return n;
}

/* A request was read: note which, and keep INIT's bytes for a new server (table.c). */
void fs_dev_seen(struct fs_mount *m, const void *buf, ssize_t n)
{
	const struct fuse_in_header *h = buf;

	fs_cur.unique = 0;
	if (n < (ssize_t)sizeof *h)
		return;
	fs_cur.unique = h->unique;
	fs_cur.opcode = h->opcode;
	if (h->opcode == FUSE_INIT)
		table_init_in(m, h + 1, (size_t)n - sizeof *h);
}

/* A reply was written (N: writev's answer): INIT's makes the mount one that outlives us. */
void fs_dev_replied(struct fs_mount *m, const struct iovec *iov, int count, ssize_t n)
{
	const struct fuse_out_header *oh = iov[0].iov_base;

	if (n <= 0 || fs_capture != NULL || fs_cur.opcode != FUSE_INIT ||
	    oh->unique != fs_cur.unique || oh->error != 0)
		return;
	table_init_out(m, iov, count);
	keep_mount(m);
}

ssize_t fs_dev_writev(struct fs_mount *m, int fd, struct iovec *iov, int count)
{
	size_t k, total = 0;
	int first = reading == m ? reply_fd : fd, clone;
	ssize_t n;

	if (fs_capture != NULL) { /* restore.c replays INIT: its reply is compared, not sent */
		for (k = 0; k < (size_t)count; total += iov[k++].iov_len) {
			size_t room = sizeof fs_capture->buf - fs_capture->len;
			size_t c = iov[k].iov_len < room ? iov[k].iov_len : room;

			memcpy(fs_capture->buf + fs_capture->len, iov[k].iov_base, c);
			fs_capture->len += c;
		}
		return (ssize_t)total;
	}
	if (m->fs->crash_resent != 0)
		journal_replying(m);
	if (m->uring != NULL && uring_reply(m, iov, count, &n))
		return n; /* a request a ring entry holds: committed there */
	n = writev(first, iov, count);

	/* read from the other of fuse_fd and the reader's clone (a takeover's requests) */
	if (n < 0 && errno == ENOENT && (clone = m->dev_fd) >= 0)
		n = writev(first == clone ? m->fuse_fd : clone, iov, count);
	return n;
}

#ifdef HAVE_FUSE_PASSTHROUGH
static ssize_t plain_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = fs_dev_read(fd, buf, len);

	fs_dev_seen(userdata, buf, n);
	return n;
}

static ssize_t plain_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	ssize_t n = fs_dev_writev(userdata, fd, iov, count);

	fs_dev_replied(userdata, iov, count, n);
	return n;
}

const struct fuse_custom_io fs_dev_io = {
	.read = plain_read,
	.writev = plain_writev,
};
#endif

/*
 * The pool serves m too while want > 0: one reason more (+1) or fewer
 * (-1). Disarmed means out of the epoll set: an entry modified to no
 * events still has EPOLLERR and EPOLLHUP, and since /dev/fuse wakes its
 * waiters without saying for what, every request then woke a worker in
 * the kernel for nothing (churn: two worker wakeups per request).
 */
static void pool_want(struct fs_mount *m, int delta)
{
	pthread_mutex_lock(&m->arm_lock);
	m->pool_want += delta;
	if (m->pool_want == 1 && delta > 0) {
		fs_mount_arm(m, m->in_pool ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, EPOLLIN);
		m->in_pool = true;
	} else if (m->pool_want == 0 && m->in_pool) {
		epoll_ctl(m->fs->epfd, EPOLL_CTL_DEL, m->fuse_fd, NULL);
		m->in_pool = false;
	}
	pthread_mutex_unlock(&m->arm_lock);
}

/* A pool worker took one of m's requests: let the pool take the next one if it still should. */
void reader_pool_rearm(struct fs_mount *m)
{
	if (!m->has_reader) {
		fs_mount_arm(m, EPOLL_CTL_MOD, EPOLLIN);
		return;
	}
	pthread_mutex_lock(&m->arm_lock);
	if (m->pool_want > 0)
		fs_mount_arm(m, EPOLL_CTL_MOD, EPOLLIN);
	pthread_mutex_unlock(&m->arm_lock);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether a reader that just served a request may spin for the next (one slot per 2 CPUs). */
static bool spin_begin(struct fs *fs, struct fs_mount *m)
{
	if (m->poll_us <= 0)
		return false;
	if (atomic_fetch_add(&fs->pollers, 1) < fs->max_pollers)
		return true;
	atomic_fetch_sub(&fs->pollers, 1);
	return false;
}

/*
 * Waiting awake pays only on an idle CPU. When the machine is busy (a
 * build beside the bot), a sched_yield() hands the CPU to another task for
 * its whole slice, milliseconds, and a request that comes meanwhile waits
 * for it: the reader was not asleep in read(), so nothing woke it. So a
 * yield that took longer than the whole wait means the CPU is contended:
 * the reader then blocks after every request, for a pause that doubles
 * while that goes on (10 ms to 1 s), and spins again once a spin caught a
 * request.
 */
#define PAUSE_MIN_NS 10000000ull
#define PAUSE_MAX_NS 1000000000ull

/*
 * The reader's loop. With -o poll=USEC, after a request it reads the
 * mount's non-blocking fd for that long (yielding the CPU between tries)
 * before it blocks again, if it gets one of the pollers' slots (fs.c) and
 * is not pausing (above).
 */
static void *reader_main(void *arg)
{
	struct fs_mount *m = arg;
	struct fs *fs = m->fs;
	struct fuse_buf buf = {.mem = NULL};
	bool slow, spinning = false;
	uint64_t deadline = 0, t, pause_until = 0, pause = PAUSE_MIN_NS;
	sigset_t set;
	int res;

	fs_worker_init(fs);
	sigemptyset(&set);
	sigaddset(&set, READER_WAKE_SIG);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	journal_thread(0);
	reading = m;
	while (!mount_stopping(m)) {
		if (spinning && now_ns() >= deadline) {
			spinning = false;
			atomic_fetch_sub(&fs->pollers, 1);
		}
		read_fd = spinning ? m->fuse_fd : m->dev_fd;
		res = fuse_session_receive_buf(m->se, &buf);
		if (res == -EAGAIN) {
			t = now_ns();
			sched_yield();
			if (now_ns() - t > (uint64_t)m->poll_us * 1000u) {
				spinning = false; /* the CPU is contended: see PAUSE_MIN_NS */
				atomic_fetch_sub(&fs->pollers, 1);
				pause_until = now_ns() + pause;
				pause = pause * 2 > PAUSE_MAX_NS ? PAUSE_MAX_NS : pause * 2;
			}
			continue;
		}
		if (res == -EINTR)
			continue;
		if (res <= 0 || fuse_session_exited(m->se))
			break;
		if (spinning)
			pause = PAUSE_MIN_NS; /* the spin caught this one */
		slow = fs_request_may_block(&buf);
		if (slow)
			pool_want(m, +1);
		fs_serve(fs, m, &buf);
		if (slow)
			pool_want(m, -1);
		t = now_ns();
		if (!spinning && t >= pause_until)
			spinning = spin_begin(fs, m);
		if (spinning)
			deadline = t + (uint64_t)m->poll_us * 1000u;
	}
	if (spinning)
		atomic_fetch_sub(&fs->pollers, 1);
	reading = NULL;
	free(buf.mem);
	fsop_thread_exit();
	pthread_mutex_lock(&fs->lock);
	m->reader_gone = true; /* no signal for it from now on */
	pthread_mutex_unlock(&fs->lock);
	fs_mount_ended(m); /* drops the reader's busy count: m may be freed */
	return NULL;
}

/*
 * Give m its reader, holding one of m's busy counts until it ends. Without
 * one (no clone, no thread) the pool serves m alone, as armed by the caller.
 * Detached: its busy count says when it is done with m, and a process may
 * end without freeing its mounts.
 */
void reader_start(struct fs_mount *m)
{
	uint32_t src = (uint32_t)m->fuse_fd;
	pthread_attr_t a;
	pthread_t t;
	int fd = m->dev_fd, e;
	bool taken = fd >= 0;

	/* a mount taken over reads the clone its previous server read (restore.c) */
	if (fd < 0)
		fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0 || (fd != m->dev_fd && ioctl(fd, FUSE_DEV_IOC_CLONE, &src) != 0)) {
		fs_log(m->fs, FS_LOG_WARN, "%s: no reader of its own (FUSE_DEV_IOC_CLONE: %s): "
		       "served by the pool alone", m->mountpoint, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	m->dev_fd = fd;
	pthread_mutex_lock(&m->fs->lock);
	m->busy++;
	pthread_mutex_unlock(&m->fs->lock);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&t, &a, reader_main, m);
	pthread_attr_destroy(&a);
	if (e != 0) {
		fs_log(m->fs, FS_LOG_WARN, "%s: no reader of its own (%s): served by the pool alone",
		       m->mountpoint, strerror(e));
		pthread_mutex_lock(&m->fs->lock);
		m->busy--;
		pthread_mutex_unlock(&m->fs->lock);
		/*
		 * A clone taken over stays m's (reader_free closes it): the fd
		 * store may know it by this number (fs_mount_keep_back) until
		 * the mount is unkept. Only one opened here goes.
		 */
		if (!taken) {
			m->dev_fd = -1;
			close(fd);
		}
		return;
	}
	/*
	 * Known to reader_wake from here (a reader already gone is not signalled:
	 * reader_gone). The caller holds m: it is made here, or taken over and
	 * held by fs_readers_start, so the reader's end cannot free it meanwhile.
	 */
	pthread_mutex_lock(&m->fs->lock);
	m->reader = t;
	m->has_reader = true;
	pthread_mutex_unlock(&m->fs->lock);
}

/*
 * A mount the pool served alone gets its reader: out of the pool's epoll
 * set first (a worker that re-arms it afterwards finds it gone, ENOENT),
 * then as in fs_attach. A request that comes meanwhile waits in the kernel
 * for the reader.
 */
static void reader_start_late(struct fs_mount *m)
{
	pthread_mutex_lock(&m->arm_lock);
	epoll_ctl(m->fs->epfd, EPOLL_CTL_DEL, m->fuse_fd, NULL);
	m->in_pool = false;
	pthread_mutex_unlock(&m->arm_lock);
	reader_start(m);
	if (!m->has_reader)
		fs_mount_arm(m, EPOLL_CTL_ADD, EPOLLIN);
}

/*
 * Every mount taken over gets its reader (fusefs.h), each held by a busy
 * count meanwhile, so an unmount on another thread waits to free it. One
 * left without (out of memory) is served by the pool, as before.
 */
void fs_readers_start(struct fs *fs)
{
	struct fs_mount *m, **v;
	size_t n = 0, k;

	pthread_mutex_lock(&fs->lock);
	for (m = fs->mounts; m != NULL; m = m->next)
		n += m->reader_later;
	v = n > 0 ? malloc(n * sizeof *v) : NULL;
	n = 0;
	for (m = fs->mounts; v != NULL && m != NULL; m = m->next) {
		if (!m->reader_later)
			continue;
		m->reader_later = false;
		if (m->ended || mount_stopping(m))
			continue;
		m->busy++;
		v[n++] = m;
	}
	pthread_mutex_unlock(&fs->lock);
	for (k = 0; k < n; k++) {
		reader_start_late(v[k]);
		pthread_mutex_lock(&fs->lock);
		if (--v[k]->busy == 0)
			pthread_cond_broadcast(&fs->cond);
		pthread_mutex_unlock(&fs->lock);
	}
	free(v);
}

/* Interrupt the reader's read, if it still reads (fs->lock held) */
void reader_wake(struct fs_mount *m)
{
	if (m->has_reader && !m->reader_gone)
		pthread_kill(m->reader, READER_WAKE_SIG);
}

/*
 * End the reader's read: its fd becomes /dev/null (a read that starts
 * now returns at once) and a signal ends a read in progress, sent under
 * the lock while the reader has not said it is gone (so it still runs).
 * Its busy count then drops.
 */
void reader_stop(struct fs_mount *m)
{
	int nullfd;

	if (!m->has_reader)
		return;
	nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nullfd >= 0) {
		dup3(nullfd, m->dev_fd, O_CLOEXEC);
		close(nullfd);
	}
	pthread_mutex_lock(&m->fs->lock);
	if (!m->reader_gone)
		pthread_kill(m->reader, READER_WAKE_SIG);
	pthread_mutex_unlock(&m->fs->lock);
}

/*
 * Once m's busy count is 0 (the reader is done with m). A mount taken over
 * that never got its reader still holds the clone it was handed.
 */
void reader_free(struct fs_mount *m)
{
	m->has_reader = false;
	if (m->dev_fd >= 0)
		close(m->dev_fd);
	m->dev_fd = -1;
}
