/* SPDX-License-Identifier: MIT */
/*
 * fusefs/uring.h: what uring.c (the rings, serving) and uring-keep.c (the
 * arena's place, a restart) share. Include after fs-int.h.
 *
 * The arena (a memfd, kept for the next server as m<key>.ring) holds, per
 * entry, a header page then the payload. The header page: the kernel's
 * 288-byte header at its start, this server's record of the entry at
 * URING_REC_OFF, and at its end the request's fuse_in_header and first
 * argument, copied there when the request is taken, so that the request
 * is one run of bytes up to the end of its payload (as read() gives it).
 */
#ifndef AGENTFS_URING_H
#define AGENTFS_URING_H

#include <sys/uio.h>

#define URING_EPQ_MAX 8	  /* entries a queue may grow to (held lock waits use one each) */
#define URING_EPQ_START 2 /* registered at start */
#define URING_HDR_PAGE 4096u
#define URING_REC_OFF 512u
#define URING_SAVE_MAX 2048u
#define URING_IN_MAX (40u + 128u) /* fuse_in_header and op_in: the prefix */
#define URING_UNIQUE_RESEND (1ull << 63)

/* From the 7.42 uapi, which Debian 12's headers predate. */
struct uring_ent_in_out {
	uint64_t flags, commit_id;
	uint32_t payload_sz, padding;
	uint64_t reserved;
};

struct uring_req_header {
	char in_out[128];
	char op_in[128];
	struct uring_ent_in_out ent;
};

/* Where this server was with an entry (in the arena: the next server reads it) */
enum { UR_UNUSED, UR_IDLE, UR_HELD, UR_REPLYING, UR_REPLIED };

struct uring_rec {
	uint32_t state;	    /* UR_* */
	uint32_t saved_len; /* request payload bytes the reply overwrites, saved below */
	uint64_t commit_id; /* the kernel's id of the request last taken */
	uint32_t req_len;   /* that request's length, and its first argument's */
	uint32_t op_len;
	unsigned char saved[URING_SAVE_MAX];
};
_Static_assert(URING_REC_OFF + sizeof(struct uring_rec) <= URING_HDR_PAGE - URING_IN_MAX,
	       "the record fits between the kernel's header and the prefix");

struct uring_ent {
	struct uring_req_header *hdr; /* at the start of its header page */
	struct uring_rec *rec;
	char *payload; /* right after its header page */
	struct iovec iov[2];
	uint64_t unique; /* [q->lock] the kernel's id of the request it holds; 0: none */
	bool commit;	 /* [q->lock] a reply written by another thread: to commit */
	bool parked;	 /* a command of ours waits in the kernel for it (ring thread) */
	bool retry;	 /* a takeover's commit: refused means register it again */
	bool dead;
};

struct uring_q {
	struct fs_mount *m;
	unsigned qid;
	int fd, efd; /* the ring; the eventfd another thread wakes it with */
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	char *sqes;
	size_t sq_len, sqes_len;
	void *sq_map;
	uint64_t efd_buf;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;	/* ent[].unique, .commit */
	_Atomic unsigned nent;	/* entries registered (grows, ring thread) */
	bool taking_over;	/* ring_takeover() runs (ring thread) */
	int fill[URING_EPQ_MAX]; /* a handover's fill: files of the mount, open (uring-keep.c) */
	unsigned nfill;
	struct uring_ent ent[URING_EPQ_MAX];
};

struct uring_mount {
	unsigned nq;
	size_t payload, slot_len, arena_len;
	char *arena;
	int memfd;
	bool adopted; /* the arena is the last server's: take its entries over */
	atomic_bool stop, handing;
	struct uring_q *q;
};

static inline struct uring_ent *uring_ent_at(struct uring_mount *u, unsigned q, unsigned e)
{
	return &u->q[q].ent[e];
}

/* uring.c */
int uring_prepare_at(struct fs_mount *m, size_t payload, char *arena, int memfd);
void uring_hold(struct fs_mount *m, bool wait);

/* uring-keep.c */
char *uring_arena_place(size_t len, int memfd, uint64_t want);
void uring_arena_release(char *addr, size_t len);
int uring_self_open(struct fs_mount *m);
void uring_poke(struct fs_mount *m, unsigned cpu);

#endif
