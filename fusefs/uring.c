/* SPDX-License-Identifier: MIT */
/*
 * FUSE over io_uring (-o uring; doc/URING.md has what Linux does and why
 * this design): requests come on per-CPU queues of io_uring entries
 * instead of read() of /dev/fuse, under the same session hooks, so that
 * the dispatch, libfuse's parsing, the journal and the guard see the same
 * bytes as from /dev/fuse.
 *
 * Per mount and possible CPU, one ring thread pinned to that CPU (where the
 * callers of its queue run) owns one io_uring (128-byte SQEs) holding the
 * queue's entries: two registered at start, one more (up to URING_EPQ_MAX)
 * whenever every entry holds a request, so that requests parked long (lock
 * waits) do not leave the queue without one. A request that arrives is
 * rebuilt, as read() of /dev/fuse would give it, into the bytes just below
 * its entry's payload (uring.h) and served by fs_serve(). Its reply comes
 * back through fs_dev_writev(), which writes it into the entry; the ring
 * thread commits it (COMMIT_AND_FETCH), at once when it made the reply,
 * else woken by an eventfd read it keeps in its ring (a command's task work
 * runs on the thread that submitted it, so only ring threads submit).
 * The mount's reader still reads /dev/fuse: FORGET, INTERRUPT and anything
 * sent before the rings were ready go there.
 *
 * Each entry has a record in the arena saying where this server is with it
 * (uring.h), written in program order before and after each step, so that
 * the next server can take every entry over (ring_takeover below, the
 * rules of doc/URING.md 3a; uring-keep.c maps the arena at the same place).
 */
#include "fusefs/fs-int.h"
#include "fusefs/uring.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>

/*
 * ThreadSanitizer cannot see the order the kernel gives: a request that
 * names what a reply made (a node id, a file handle) comes only after that
 * reply was committed, maybe on another ring thread. Over /dev/fuse it sees
 * that order twice over: the reader serves in program order and a pool
 * worker locks fs->lock before it takes each request (fs.c); and TSan's
 * read() and writev() hooks acquire and release one object shared by every
 * descriptor opened as a file, /dev/fuse's among them (with TSAN_OPTIONS
 * io_sync=0 the /dev/fuse tests still report nothing). Ring threads share
 * no lock per request and io_uring_enter() is no call TSan hooks, so the
 * ring path says it with annotations on one process-wide object, as TSan's
 * file object is: a release before each reply goes to the kernel (each
 * commit, and each reply fs_dev_writev() hands uring_reply(), whichever
 * way it then goes), an acquire after each completion harvested.
 * Annotations rather than a real atomic: they are what TSan models, and
 * leave no code, fence or shared cache line in other builds (the macros
 * are empty there).
 */
#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
static char tsan_kernel_order;
#define KERNEL_ORDER_RELEASE() __tsan_release(&tsan_kernel_order)
#define KERNEL_ORDER_ACQUIRE() __tsan_acquire(&tsan_kernel_order)
#else
#define KERNEL_ORDER_RELEASE() ((void)0)
#define KERNEL_ORDER_ACQUIRE() ((void)0)
#endif

#define URING_CMD_REGISTER 1u
#define URING_CMD_COMMIT_AND_FETCH 2u
#define URING_EFD_TAG 0xffffu
#define URING_FILL_NS 2000000000ull /* a handover waits this long at most for its fill */

static int ring_setup(struct uring_q *q)
{
	struct io_uring_params p;
	char *sq;

	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQE128;
	q->fd = (int)syscall(__NR_io_uring_setup, 2 * URING_EPQ_MAX + 4, &p);
	if (q->fd < 0)
		return -errno;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP))
		return -ENOSYS; /* Linux 5.4 and later have it; 6.14 is needed anyway */
	q->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	if (p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe) > q->sq_len)
		q->sq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	q->sqes_len = p.sq_entries * 128u;
	sq = mmap(NULL, q->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, q->fd,
		  IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -errno;
	q->sq_map = sq;
	q->sqes = mmap(NULL, q->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, q->fd,
		       IORING_OFF_SQES);
	if (q->sqes == MAP_FAILED) {
		q->sqes = NULL;
		return -errno;
	}
	q->sq_head = (unsigned *)(sq + p.sq_off.head);
	q->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	q->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	q->sq_array = (unsigned *)(sq + p.sq_off.array);
	q->cq_head = (unsigned *)(sq + p.cq_off.head);
	q->cq_tail = (unsigned *)(sq + p.cq_off.tail);
	q->cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
	q->cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
	q->efd = eventfd(0, EFD_CLOEXEC);
	return q->efd < 0 ? -errno : 0;
}

static void ring_unmap(struct uring_q *q)
{
	if (q->sqes != NULL)
		munmap(q->sqes, q->sqes_len);
	if (q->sq_map != NULL)
		munmap(q->sq_map, q->sq_len);
	q->sqes = NULL;
	q->sq_map = NULL;
	if (q->fd >= 0)
		close(q->fd);
	if (q->efd >= 0)
		close(q->efd);
	q->fd = q->efd = -1;
}

/* One SQE, submitted at once (ring thread only) */
static int ring_submit(struct uring_q *q, struct io_uring_sqe *tmpl)
{
	unsigned tail = *q->sq_tail, idx = tail & *q->sq_mask;
	int r;

	memcpy(q->sqes + (size_t)idx * 128, tmpl, 128);
	q->sq_array[idx] = idx;
	__atomic_store_n(q->sq_tail, tail + 1, __ATOMIC_RELEASE);
	do
		r = (int)syscall(__NR_io_uring_enter, q->fd, 1, 0, 0, NULL, 0);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/* REGISTER or COMMIT_AND_FETCH for entry e of q */
static int ring_cmd(struct uring_q *q, unsigned op, unsigned e, uint64_t commit_id)
{
	unsigned char raw[128];
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)raw;
	struct uring_ent *ent = &q->ent[e];
	struct {
		uint64_t flags, commit_id;
		uint16_t qid;
		uint8_t padding[6];
	} *c = (void *)sqe->cmd;
	int r;

	memset(raw, 0, sizeof raw);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->m->fuse_fd;
	sqe->cmd_op = op;
	sqe->user_data = e;
	if (op == URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)ent->iov;
		sqe->len = 2;
	}
	c->commit_id = commit_id;
	c->qid = (uint16_t)q->qid;
	if (op == URING_CMD_REGISTER)
		__atomic_store_n(&ent->rec->state, UR_IDLE, __ATOMIC_RELEASE);
	else
		KERNEL_ORDER_RELEASE(); /* every commit: a reply, another thread's, a takeover's */
	r = ring_submit(q, sqe);
	if (r == 0)
		ent->parked = true;
	if (r == 0 && op == URING_CMD_COMMIT_AND_FETCH && !ent->retry)
		__atomic_store_n(&ent->rec->state, UR_IDLE, __ATOMIC_RELEASE);
	return r;
}

/* The eventfd read that wakes q's thread */
static int ring_arm_efd(struct uring_q *q)
{
	unsigned char raw[128];
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)raw;

	memset(raw, 0, sizeof raw);
	sqe->opcode = IORING_OP_READ;
	sqe->fd = q->efd;
	sqe->addr = (uint64_t)(uintptr_t)&q->efd_buf;
	sqe->len = sizeof q->efd_buf;
	sqe->user_data = URING_EFD_TAG;
	return ring_submit(q, sqe);
}

static void ring_wake(struct uring_q *q)
{
	uint64_t one = 1;

	if (q->efd >= 0 && write(q->efd, &one, sizeof one) < 0)
		fs_log(q->m->fs, FS_LOG_WARN, "io_uring queue %u: eventfd: %s", q->qid,
		       strerror(errno));
}

static void ring_register(struct uring_q *q, unsigned e)
{
	int r = ring_cmd(q, URING_CMD_REGISTER, e, 0);

	q->ent[e].dead = r != 0;
	if (r != 0)
		fs_log(q->m->fs, FS_LOG_WARN, "%s: io_uring queue %u: REGISTER: %s",
		       q->m->mountpoint, q->qid, strerror(-r));
}

/*
 * The arena and rings of m; ARENA NULL: a new arena, else the last
 * server's, mapped by uring_adopt() (MEMFD is then its, and m's now).
 */
int uring_prepare_at(struct fs_mount *m, size_t payload, char *arena, int memfd)
{
	struct uring_mount *u = calloc(1, sizeof *u);
	struct table_hdr *h = m->tab.hdr;
	unsigned k, e;
	int r = -ENOMEM;

	if (u == NULL) {
		/* an adopted arena and its memfd are ours from the call on, as below */
		if (arena != NULL)
			uring_arena_release(arena, (size_t)h->ring_len);
		if (memfd >= 0)
			close(memfd);
		return -ENOMEM;
	}
	u->memfd = memfd;
	u->nq = (unsigned)get_nprocs_conf();
	u->payload = (payload + 4095) & ~(size_t)4095;
	u->slot_len = URING_HDR_PAGE + u->payload;
	u->arena_len = (size_t)u->nq * URING_EPQ_MAX * u->slot_len;
	u->arena = arena;
	u->adopted = arena != NULL;
	u->q = calloc(u->nq, sizeof *u->q);
	m->uring = u;
	if (u->q == NULL)
		goto fail;
	for (k = 0; k < u->nq; k++) {
		u->q[k].fd = u->q[k].efd = -1;
		pthread_mutex_init(&u->q[k].lock, NULL);
	}
	r = -E2BIG; /* the journal has no slot for each ring thread */
	if (1 + m->fs->p.workers + u->nq >= JOURNAL_SLOTS)
		goto fail;
	if (arena == NULL) {
		u->memfd = memfd_create("agentfs-ring", MFD_CLOEXEC);
		if (u->memfd < 0 || ftruncate(u->memfd, (off_t)u->arena_len) != 0) {
			r = -errno;
			goto fail;
		}
		u->arena = uring_arena_place(u->arena_len, u->memfd, 0);
		if (u->arena == NULL) {
			r = -EADDRNOTAVAIL;
			goto fail;
		}
	}
	for (k = 0; k < u->nq; k++) {
		struct uring_q *q = &u->q[k];

		q->m = m;
		q->qid = k;
		for (e = 0; e < URING_EPQ_MAX; e++) {
			char *slot = u->arena + ((size_t)k * URING_EPQ_MAX + e) * u->slot_len;
			struct uring_ent *ent = &q->ent[e];

			ent->hdr = (struct uring_req_header *)slot;
			ent->rec = (struct uring_rec *)(slot + URING_REC_OFF);
			ent->payload = slot + URING_HDR_PAGE;
			ent->iov[0].iov_base = slot;
			ent->iov[0].iov_len = sizeof(struct uring_req_header);
			ent->iov[1].iov_base = ent->payload;
			ent->iov[1].iov_len = u->payload;
		}
		if ((r = ring_setup(q)) != 0)
			goto fail;
	}
	if (h != NULL && !u->adopted) {
		h->ring_nq = u->nq;
		h->ring_epq = URING_EPQ_MAX;
		h->ring_payload = (uint32_t)u->payload;
		h->ring_slot = (uint32_t)u->slot_len;
		h->ring_addr = (uint64_t)(uintptr_t)u->arena;
		h->ring_len = u->arena_len;
	}
	return 0;
fail:
	uring_free(m);
	return r;
}

/* INIT's reply is about to say FUSE_OVER_IO_URING: the arena and rings, or an error. */
int uring_prepare(struct fs_mount *m, size_t payload)
{
	return uring_prepare_at(m, payload, NULL, -1);
}

static __thread struct uring_q *tl_q; /* the ring this thread serves */

/* Write a reply into entry ent (q->lock held), recording each step for a takeover */
static void put_reply(struct uring_mount *u, struct uring_ent *ent, const struct iovec *iov,
		      int count, size_t total)
{
	struct uring_rec *rec = ent->rec;
	struct fuse_out_header oh;
	size_t off = 0, psz = rec->req_len - sizeof(struct fuse_in_header) - rec->op_len;
	size_t over = total - sizeof oh < psz ? total - sizeof oh : psz;
	int i;

	memcpy(&oh, iov[0].iov_base, sizeof oh);
	oh.unique = ent->unique; /* the kernel's, without FUSE_UNIQUE_RESEND */
	if (over > URING_SAVE_MAX) {
		/* cannot happen (a WRITE's reply is 8 bytes): answered EIO rather than lost */
		oh.error = -EIO;
		oh.len = sizeof oh;
		total = sizeof oh;
		over = 0;
	}
	memcpy(rec->saved, ent->payload, over);
	rec->saved_len = (uint32_t)over;
	__atomic_store_n(&rec->state, UR_REPLYING, __ATOMIC_RELEASE);
	memcpy(ent->hdr->in_out, &oh, sizeof oh);
	for (i = 0; i < count && off < total - sizeof oh; i++) {
		size_t skip = i == 0 ? sizeof oh : 0;

		memcpy(ent->payload + off, (char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
		off += iov[i].iov_len - skip;
	}
	ent->hdr->ent.payload_sz = (uint32_t)(total - sizeof oh);
	__atomic_store_n(&rec->state, UR_REPLIED, __ATOMIC_RELEASE);
	(void)u;
}

/*
 * The reply to a request an entry of m holds: into the entry, and
 * committed. False if no entry holds it (a /dev/fuse request, a
 * notification).
 */
bool uring_reply(struct fs_mount *m, const struct iovec *iov, int count, ssize_t *res)
{
	struct uring_mount *u = m->uring;
	const struct fuse_out_header *oh = iov[0].iov_base;
	uint64_t id = oh->unique & ~URING_UNIQUE_RESEND;
	unsigned k, e, first = tl_q != NULL && tl_q->m == m ? tl_q->qid : 0;
	struct fuse_out_header eh;
	struct iovec eiov;
	size_t total = 0;
	bool over = false;
	int i, r = 0;

	KERNEL_ORDER_RELEASE(); /* also a reply that goes to /dev/fuse, or fails below */
	if (u == NULL || iov[0].iov_len < sizeof *oh || id == 0)
		return false;
	for (i = 0; i < count; i++)
		total += iov[i].iov_len;
	for (k = 0; k < u->nq; k++) {
		struct uring_q *q = &u->q[(first + k) % u->nq];
		struct uring_ent *ent = NULL;

		pthread_mutex_lock(&q->lock);
		for (e = 0; e < URING_EPQ_MAX && ent == NULL; e++)
			if (q->ent[e].unique == id)
				ent = &q->ent[e];
		if (ent == NULL) {
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		if (total - sizeof *oh > u->payload) {
			/*
			 * More than the entry holds (the kernel never asks for
			 * that): the request fails with EIO, still committed, so
			 * its caller is answered and the entry comes back.
			 */
			eh = (struct fuse_out_header){
				.len = sizeof eh, .error = -EIO, .unique = oh->unique};
			eiov = (struct iovec){.iov_base = &eh, .iov_len = sizeof eh};
			iov = &eiov;
			count = 1;
			total = sizeof eh;
			over = true;
		}
		put_reply(u, ent, iov, count, total);
		if (tl_q == q) {
			ent->unique = 0;
			r = ring_cmd(q, URING_CMD_COMMIT_AND_FETCH, (unsigned)(ent - q->ent), id);
		} else {
			ent->commit = true; /* the ring thread commits it */
			ring_wake(q);
		}
		pthread_mutex_unlock(&q->lock);
		if (r != 0)
			fs_log(m->fs, FS_LOG_WARN, "%s: io_uring queue %u: COMMIT_AND_FETCH: %s",
			       m->mountpoint, q->qid, strerror(-r));
		if (over) {
			errno = EIO;
			*res = -1;
		} else {
			*res = (ssize_t)total;
		}
		return true;
	}
	return false;
}

/*
 * Entry e of q holds a request: the bytes read() would give, ending where
 * its payload does. FROM_PREFIX: rebuilt from what was copied when it was
 * first taken and the bytes a reply overwrote (a takeover); else from the
 * kernel's header. RESENT marks it FUSE_UNIQUE_RESEND for journal.c.
 */
static char *take_request(struct uring_q *q, unsigned e, bool from_prefix, bool resent,
			  size_t *len)
{
	struct uring_ent *ent = &q->ent[e];
	struct uring_rec *rec = ent->rec;
	struct fuse_in_header *in = (void *)ent->hdr->in_out;
	uint32_t psz, op;
	char *pre;

	if (from_prefix) {
		op = rec->op_len;
		if (op > 128 || rec->req_len < sizeof *in + op ||
		    rec->req_len - sizeof *in - op > q->m->uring->payload ||
		    rec->saved_len > URING_SAVE_MAX)
			return NULL;
		pre = ent->payload - sizeof *in - op;
		memcpy(ent->payload, rec->saved, rec->saved_len);
		in = (void *)pre;
	} else {
		psz = ent->hdr->ent.payload_sz;
		if (in->len < sizeof *in + psz || in->len - sizeof *in - psz > 128 ||
		    psz > q->m->uring->payload)
			return NULL;
		op = in->len - (uint32_t)sizeof *in - psz;
		pre = ent->payload - sizeof *in - op;
		memcpy(pre, in, sizeof *in);
		memcpy(pre + sizeof *in, ent->hdr->op_in, op);
		in = (void *)pre;
		rec->commit_id = ent->hdr->ent.commit_id;
		rec->req_len = in->len;
		rec->op_len = op;
		__atomic_store_n(&rec->state, UR_HELD, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&q->lock);
	ent->unique = rec->commit_id;
	pthread_mutex_unlock(&q->lock);
	in->unique = rec->commit_id | (resent ? URING_UNIQUE_RESEND : 0);
	*len = rec->req_len;
	return pre;
}

static void serve(struct uring_q *q, char *req, size_t len)
{
	struct fuse_buf buf;

	memset(&buf, 0, sizeof buf);
	buf.mem = req;
	buf.size = len;
	fs_dev_seen(q->m, req, (ssize_t)len);
#ifndef HAVE_FUSE_PASSTHROUGH
	wire_begin();
#endif
	fs_serve(q->m->fs, q->m, &buf);
}

static unsigned parked(const struct uring_q *q)
{
	unsigned e, n = 0, nent = atomic_load(&q->nent);

	for (e = 0; e < nent; e++)
		n += q->ent[e].parked;
	return n;
}

/* A request arrived in entry e (or was found there at a takeover) */
static void arrived(struct uring_q *q, unsigned e, bool from_prefix, bool resent)
{
	struct uring_mount *u = q->m->uring;
	unsigned nent = atomic_load(&q->nent);
	size_t len;
	char *req;

	req = take_request(q, e, from_prefix, resent, &len);
	if (req == NULL) {
		fs_log(q->m->fs, FS_LOG_ERR, "%s: io_uring queue %u: a request of bad lengths",
		       q->m->mountpoint, q->qid);
		return;
	}
	if (atomic_load(&u->handing))
		return; /* held for the next server */
	if (!q->taking_over && parked(q) == 0 && nent < URING_EPQ_MAX) {
		atomic_store(&q->nent, nent + 1); /* a free entry for the next request of this CPU */
		ring_register(q, nent);
	}
	serve(q, req, len);
}

/*
 * A takeover (the arena is the last server's): each entry as its record
 * and the kernel's header say (doc/URING.md 3a). Then every entry this
 * server's; requests waiting in the queue are fetched by the commits, and
 * by uring_poke() where none is made.
 */
static void ring_takeover(struct uring_q *q)
{
	unsigned e, nent = 0;

	for (e = 0; e < URING_EPQ_MAX; e++)
		if (q->ent[e].rec->state != UR_UNUSED)
			nent = e + 1;
	if (nent == 0)
		nent = URING_EPQ_START;
	atomic_store(&q->nent, nent);
	q->taking_over = true; /* no entry added until each is taken over */
	for (e = 0; e < nent; e++) {
		struct uring_ent *ent = &q->ent[e];
		uint64_t kid = ent->hdr->ent.commit_id;

		if (ent->rec->state != UR_UNUSED && kid != 0 && kid != ent->rec->commit_id) {
			arrived(q, e, false, true); /* given by the kernel, never taken */
			continue;
		}
		switch (ent->rec->state) {
		case UR_HELD: /* taken, no reply begun: the kernel's header is intact */
			arrived(q, e, false, true);
			break;
		case UR_REPLYING: /* a reply begun: from the prefix and the bytes it overwrote */
			arrived(q, e, true, true);
			break;
		case UR_REPLIED: /* whole: commit it; if the kernel had it, the entry was free */
			ent->retry = true;
			ent->unique = 0;
			if (ring_cmd(q, URING_CMD_COMMIT_AND_FETCH, e, ent->rec->commit_id) != 0)
				ring_register(q, e);
			break;
		default: /* free when the last server ended: the kernel let go of it */
			ring_register(q, e);
		}
	}
	q->taking_over = false;
}

/* Replies other threads wrote into q's entries: committed from here */
static void commit_pending(struct uring_q *q)
{
	unsigned e, nent = atomic_load(&q->nent);
	uint64_t id;
	int r;

	pthread_mutex_lock(&q->lock);
	for (e = 0; e < nent; e++) {
		if (!q->ent[e].commit)
			continue;
		q->ent[e].commit = false;
		id = q->ent[e].unique;
		q->ent[e].unique = 0;
		if ((r = ring_cmd(q, URING_CMD_COMMIT_AND_FETCH, e, id)) != 0)
			fs_log(q->m->fs, FS_LOG_WARN, "%s: io_uring queue %u: COMMIT_AND_FETCH: %s",
			       q->m->mountpoint, q->qid, strerror(-r));
	}
	pthread_mutex_unlock(&q->lock);
}

/* One completion of q's ring */
static void completed(struct uring_q *q, const struct io_uring_cqe *c)
{
	struct fs_mount *m = q->m;
	unsigned e = (unsigned)c->user_data;
	struct uring_ent *ent;

	if (c->user_data == URING_EFD_TAG) {
		commit_pending(q);
		if (!atomic_load(&m->uring->stop) && ring_arm_efd(q) != 0)
			fs_log(m->fs, FS_LOG_WARN, "%s: io_uring queue %u: cannot wait for replies",
			       m->mountpoint, q->qid);
		return;
	}
	if (e >= URING_EPQ_MAX)
		return;
	ent = &q->ent[e];
	ent->parked = false;
	if (c->res < 0 && ent->retry) { /* the kernel had that reply: the entry was free */
		ent->retry = false;
		ring_register(q, e);
		return;
	}
	ent->retry = false;
	if (c->res < 0) {
		ent->dead = true;
		if (c->res != -ENOTCONN && c->res != -ECANCELED)
			fs_log(m->fs, FS_LOG_WARN, "%s: io_uring queue %u: %s", m->mountpoint,
			       q->qid, strerror(-c->res));
		return;
	}
	arrived(q, e, false, false);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A handover's fill, on q's thread (pinned to q's CPU): one file of the
 * mount closed per free entry. Each close sends a RELEASE from this CPU,
 * a background request nobody waits for, which takes a free entry of this
 * queue; the next server answers it. When no entry is free, the kernel has
 * nothing it could give to a server that is gone (uring-keep.c).
 */
static void fill_some(struct uring_q *q)
{
	unsigned n = parked(q);

	while (n-- > 0 && q->nfill > 0)
		close(q->fill[--q->nfill]);
}

static void *ring_main(void *arg)
{
	struct uring_q *q = arg;
	struct fs_mount *m = q->m;
	struct uring_mount *u = m->uring;
	struct fs *fs = m->fs;
	uint64_t fill_until = 0, t;
	bool pinned;
	cpu_set_t cpus;
	unsigned e;

	CPU_ZERO(&cpus);
	CPU_SET(q->qid, &cpus);
	pinned = sched_setaffinity(0, sizeof cpus, &cpus) == 0; /* an offline CPU's: anywhere */
	fs_worker_init(fs);
	journal_thread(1 + fs->p.workers + q->qid);
	tl_q = q;
	if (ring_arm_efd(q) != 0)
		fs_log(fs, FS_LOG_WARN, "%s: io_uring queue %u: cannot wait for replies",
		       m->mountpoint, q->qid);
	if (u->adopted) {
		ring_takeover(q);
		uring_poke(m, q->qid);
	} else {
		atomic_store(&q->nent, URING_EPQ_START);
		for (e = 0; e < URING_EPQ_START; e++)
			ring_register(q, e);
	}
	while (!atomic_load(&u->stop)) {
		unsigned head = *q->cq_head, tail = __atomic_load_n(q->cq_tail, __ATOMIC_ACQUIRE);
		struct io_uring_cqe c;

		if (head != tail) {
			c = q->cqes[head & *q->cq_mask];
			__atomic_store_n(q->cq_head, head + 1, __ATOMIC_RELEASE);
			KERNEL_ORDER_ACQUIRE(); /* after every reply committed before it came */
			completed(q, &c);
			continue;
		}
		if (atomic_load(&u->handing)) {
			commit_pending(q);
			t = now_ns();
			if (fill_until == 0)
				fill_until = t + URING_FILL_NS;
			if (parked(q) == 0 || t > fill_until || !pinned)
				break;
			fill_some(q);
			syscall(__NR_io_uring_enter, q->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
			usleep(1000);
			continue;
		}
		if (syscall(__NR_io_uring_enter, q->fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0 &&
		    errno != EINTR && errno != EAGAIN && errno != EBUSY)
			break;
	}
	if (atomic_load(&u->handing) && parked(q) > 0 && pinned)
		fs_log(fs, FS_LOG_WARN, "%s: io_uring queue %u: %u entries still free at the "
		       "handover: a request given to one now fails with ECANCELED",
		       m->mountpoint, q->qid, parked(q));
	while (q->nfill > 0) /* the rest wait in the queue for the next server */
		close(q->fill[--q->nfill]);
	tl_q = NULL;
	fsop_thread_exit();
	pthread_mutex_lock(&fs->lock);
	if (--m->busy == 0)
		pthread_cond_broadcast(&fs->cond);
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

/* INIT's reply with FUSE_OVER_IO_URING was taken (or a takeover is done): serve. */
void uring_start(struct fs_mount *m)
{
	struct uring_mount *u = m->uring;
	unsigned k;

	if (u == NULL)
		return;
	for (k = 0; k < u->nq; k++) {
		pthread_mutex_lock(&m->fs->lock);
		m->busy++;
		pthread_mutex_unlock(&m->fs->lock);
		if (pthread_create(&u->q[k].thread, NULL, ring_main, &u->q[k]) != 0) {
			pthread_mutex_lock(&m->fs->lock);
			m->busy--;
			pthread_mutex_unlock(&m->fs->lock);
			fs_log(m->fs, FS_LOG_ERR, "%s: no io_uring thread for CPU %u: its callers "
			       "wait until the mount ends", m->mountpoint, k);
			continue;
		}
		u->q[k].started = true;
	}
	fs_log(m->fs, FS_LOG_INFO, "%s: served over io_uring (%u queues, %d entries each%s)",
	       m->mountpoint, u->nq, URING_EPQ_START, u->adopted ? ", taken over" : "");
}

/* The mount ends: the ring threads end (their busy counts drop). */
void uring_stop(struct fs_mount *m)
{
	struct uring_mount *u = m->uring;
	unsigned k;

	if (u == NULL)
		return;
	atomic_store(&u->stop, true);
	for (k = 0; k < u->nq; k++)
		if (u->q[k].started)
			ring_wake(&u->q[k]);
}

/*
 * A restart: every ring thread holds what comes, fills its free entries,
 * and ends; WAIT: wait for them to end.
 */
void uring_hold(struct fs_mount *m, bool wait)
{
	struct uring_mount *u = m->uring;
	unsigned k;

	if (!wait) {
		atomic_store(&u->handing, true);
		for (k = 0; k < u->nq; k++)
			if (u->q[k].started)
				ring_wake(&u->q[k]);
		return;
	}
	for (k = 0; k < u->nq; k++)
		if (u->q[k].started) {
			pthread_join(u->q[k].thread, NULL);
			u->q[k].started = false;
		}
}

int uring_memfd(const struct fs_mount *m)
{
	return m->uring != NULL ? m->uring->memfd : -1;
}

/* Once m's busy count is 0 (a handover leaves the rings to the process's end). */
void uring_free(struct fs_mount *m)
{
	struct uring_mount *u = m->uring;
	unsigned k;

	if (u == NULL)
		return;
	for (k = 0; u->q != NULL && k < u->nq; k++) {
		if (u->q[k].started)
			pthread_join(u->q[k].thread, NULL);
		while (u->q[k].nfill > 0)
			close(u->q[k].fill[--u->q[k].nfill]);
		ring_unmap(&u->q[k]);
		pthread_mutex_destroy(&u->q[k].lock);
	}
	if (u->arena != NULL)
		uring_arena_release(u->arena, u->arena_len);
	if (u->memfd >= 0)
		close(u->memfd);
	free(u->q);
	free(u);
	m->uring = NULL;
}
