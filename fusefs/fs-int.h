/* SPDX-License-Identifier: MIT */
/*
 * Internal to fusefs/: the server, its mounts and their inode tables.
 * Errors inside fusefs are -errno, as at its API (fusefs.h).
 *
 * Which file owns what:
 *   fs.c           the worker pool (epoll, polling), fs_new/fs_free,
 *                  attaching and ending a mount
 *   share.c        shares of open files, lock waiters and mounts: a mount's,
 *                  or its share groups'
 *   reader.c       a mount's own reader thread, when the pool serves it too,
 *                  started after a takeover (fs_readers_start); the
 *                  session's /dev/fuse I/O hooks
 *   lock.c         blocking locks: the lock thread and its queue
 *   notify.c       invalidations of other mounts' kernel caches: the notifier
 *   mount.c        fs_mount: checks of source and mount point, the guard,
 *                  the session; opening without links; unmounting by path
 *   excl.c         one server per folder: each mount's flock on its source
 *                  folder and the folders above it
 *   mount-opts.c   -o options and the kernel mount flags they make
 *   mount-ro.c     read-only paths and the hard links beneath them
 *   mount-kernel.c the kernel mount: made, found in mountinfo, set read-only,
 *                  detached
 *   inode.c        inodes: lookups, references, the O_PATH fd cache, file handles
 *   table.c        the tables ids index: node ids, open handles, (dev, ino); their
 *                  records in the mount's table memfd, which outlive the process
 *   noderec.c      the node records' layout in that memfd (a handle and name
 *                  inline, or in an overflow record), and the conversion of a
 *                  table of version 1 at an upgrade
 *   table-rec.h    the table memfd's layout (part of this file)
 *   keep.c         what outlives the process for a restart: the mounts' /dev/fuse
 *                  descriptors, tables and locked files in the fd store; fs_handover
 *   restore.c      taking a kept mount over: fs_adopt, the same kernel mount
 *   journal.c      requests a killed server did but never answered, answered once
 *   policy.c       the policy check: gathers the classes and the facts only
 *                  fusefs knows for gitguard's guard_check, which decides
 *                  every write-ish op (no rule is chosen here); refusals'
 *                  log and change events
 *   decide.c       decision holds: a check and its name change as one step
 *   seal.c         content-checked renames and writes (X2, X4), ns_lock; which
 *                  inodes are sealed (a fact guard_check judges)
 *   gitlock.c      lock files in git folders that a mount made (the fact rule
 *                  LK asks, in guard_check)
 *   backing.c      kernel passthrough: backing files and their counts
 *   closer.c       the closer thread: last closes, off the request path
 *   wire.c         libfuse < 3.17 only: passthrough in INIT and open replies
 *   uring.c        requests over io_uring (-o uring), doc/URING.md
 *   uring-keep.c   its arena's fixed place, and its handover to the next server
 *   uring.h        what those two share: the arena's layout and records
 *   ops*.c         the FUSE handlers, by kind (ops.h says which file has which)
 *   ids.c          identity switches, the one place that makes them
 *   table.h        table.c's functions and the inline id lookups (part of this file)
 *   fusefs.h       the API for agentfsd and agentfs; this file, fusefs' own
 */
#ifndef AGENTFS_FS_INT_H
#define AGENTFS_FS_INT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fusefs/fusefs.h"
#include "gitguard/gitguard.h"

/* libfuse allocates a thread-specific key per session: keep well below. */
#define FS_MAX_MOUNTS 1000
#define FS_DECIDE_STRIPES 64 /* decision-hold stripes (decide.c) */
#define FS_WHOLE_USERS 64     /* users paced in whole decision holds at once (decide.c) */
#define FS_FD_RESERVE 256     /* descriptors kept from open handles (sockets, state) */
#define FS_MAX_WAITERS 4096   /* blocking lock requests waiting, over all mounts */

#define SEAL_MAX 64 /* content-checked renames at once */

/* Class bits of an inode, computed at lookup from its parent and name. */
#define CLS_RO_TREE 0x1u /* read-only, and so is everything beneath */

/*
 * One inode the kernel knows about in one mount: (dev, ino, birth time)
 * plus a file handle, so its O_PATH fd is only a cache entry that can be
 * closed and reopened with open_by_handle_at(). Without a handle the fd
 * stays pinned. A file that is only looked up (git status) never gets an
 * fd: the first is opened by the name it was last seen by, and checked.
 *
 * Who may touch what:
 *   [const]  set before the inode is published in the table, then only read;
 *   [lock]   read and written under fs->lock only (copy out, then use);
 *   [atomic] an atomic, read and written without the lock;
 *   [users]  fd: stable while the caller holds a users count
 *            (inode_fd_get/put), which keeps it from being evicted.
 * A stand-in (standin, on a worker's stack for policy_check) is private to
 * its worker and needs no lock.
 */
struct inode {
	uint32_t idx;	      /* [const] its slot in the mount's node table (table.c) */
	_Atomic uint32_t gen; /* [lock] the slot's generation; read unlocked by node_of */
	bool used;	      /* [lock] in the table (not a free slot) */
	uint32_t free_next;   /* [lock] next free slot, while free */
	dev_t dev;			   /* [const] */
	ino_t ino;			   /* [const] */
	mode_t type;			   /* [const] S_IFMT bits, fixed for life */
	uint64_t nlookup;		   /* [lock] kernel references */
	struct file_handle *handle;	   /* [lock] NULL: see lazy; else fd pinned */
	bool lazy;			   /* [lock] no handle yet: made when the fd is evicted */
	struct fs_mount *owner;		   /* [const] for making it then */
	struct inode_birth {
		int64_t sec;
		uint32_t nsec;
		bool known; /* the filesystem gave one (statx STATX_BTIME) */
	} birth;		/* [const] with dev and ino, who it is: numbers are reused */
	bool byname;		/* [const] looked up without an fd: first opened by name */
	int mount_fd_idx;		   /* [lock] index into m->mount_fds for the handle */
	int fd;				   /* [lock], [users] cached O_PATH fd, or -1 */
	unsigned users;			   /* [lock] workers using fd right now; no eviction */
	struct inode *lru_prev, *lru_next; /* [lock] unused cached fds, most recent first */
	unsigned refs;			   /* [lock] children whose parent this is */
	struct inode *parent;		   /* [lock] the folder it was last looked up in (ref) */
	char *name;			   /* [lock] the name it was last looked up by */
	unsigned cls;			   /* [lock] CLS_*; bits are only ever added */
	struct guard_cls gcls;		   /* [lock] gitguard's class, valid while ggen is current */
	uint64_t ggen;			   /* [lock] */
	nlink_t nlink;	 /* [lock] at the last lookup or write-open: > 1 asks for the HL check */
	bool standin;	 /* [const] a copy on the stack for policy_check(), not in a table */
	off_t seen_size; /* [lock] size and mtime at the last open, for keep_cache */
	struct timespec seen_mtime; /* [lock] */
	int backing_id;		/* [lock] kernel passthrough id, 0 if none (backing.c) */
	unsigned backing_users; /* [lock] open handles passing through to it */
	unsigned plain_opens;	/* [lock] open handles served by read and write requests */
	unsigned write_opens;	/* [lock] open handles that may write, and truncates running */
	bool sealed;		/* [lock] renamed onto a content-checked name: no write ever (seal.c) */
};

/* inode.c: open addressing; i is NULL for a free slot, TOMB for a removed one */
struct inode_slot {
	ino_t ino;
	struct inode *i;
};

struct inode_table {
	struct inode_slot *slots;
	size_t nslots;	    /* a power of 2 */
	size_t count, used; /* inodes; inodes and tombstones */
	uint64_t seed;	    /* keys the hash (inode.c) */
};

/*
 * The ids the kernel holds (table.c): a node id is a slot of the mount's
 * node table and its generation, an open file's fh a slot of its handle
 * table and its generation, so both can be found again by another process
 * (restore.c). Each slot has a record in the mount's table memfd, a shared
 * mapping that outlives the process while the keeper or systemd's fd store
 * holds it: what a new server needs to serve the ids the kernel still uses.
 * Records are written under fs->lock before the reply that gives the id out.
 */
#define NODE_SHIFT 13
#define NODE_CHUNK (1u << NODE_SHIFT)
#define NODE_CHUNKS 512u /* 4M nodes a mount */
#define NODE_CHUNK_MAP (2u << 20) /* a chunk of inodes past the first: one 2 MB huge page */
#define FH_SHIFT 12
#define FH_CHUNK (1u << FH_SHIFT)
#define FH_CHUNKS 256u /* 1M open handles a mount */
#define HANDLE_MAX 128
#define TABLE_MOUNTS 32	 /* underlying mounts whose handles a record can name */
#define JOURNAL_SLOTS 66 /* a mount's reader, 64 workers, the lock thread */
#define TABLE_REPOS 32	 /* repositories the bot made that a takeover keeps as its own */

#include "fusefs/table-rec.h" /* the table memfd's layout */

/* An open handle (table.c): fi->fh names it */
struct fh_ent {
	int fd;		      /* [const] while in use: the handle's own descriptor */
	_Atomic uint32_t gen; /* written under fs->lock, read unlocked by fh_of */
	struct inode *i;
	uint32_t flags;
	int open_flags;
	uint32_t free_next; /* [fs->lock] while free */
};

struct mtable {
	int memfd;		      /* the records' memfd, -1: anonymous (nothing outlives us) */
	char *map;		      /* all of it, shared */
	struct table_hdr *hdr;	      /* at map */
	void *_Atomic *nodes;	      /* NODE_CHUNKS chunks of struct inode, each made once */
	uint32_t node_hwm, node_free; /* [fs->lock] slots used; free list (0: none) */
	uint32_t node_ready;	      /* [fs->lock] slots below it made present (table.c) */
	void *_Atomic *fhs;	      /* FH_CHUNKS chunks of struct fh_ent */
	uint32_t fh_hwm, fh_free;     /* [fs->lock] */
	uint32_t ovf_hwm, ovf_free;   /* [fs->lock] overflow records used; free list */
};

/*
 * A blocking flock or POSIX lock, retried from the lock thread. A worker
 * allocates it, registers the request's interrupt callback and then puts it
 * on fs->lk_head (under lk_lock); from then on only the lock thread (or
 * lock_release_begin() at the handle's release) takes it off the list, and whoever
 * does replies and frees it. fd is the open handle's, valid until release.
 */
struct lock_wait {
	struct lock_wait *next;
	struct fs_mount *m; /* counted in m->nwaiters until lock_reply() */
	fuse_req_t req;
	uint64_t fh; /* the handle's, for keep_lock() */
	int fd;
	bool posix; /* F_OFD_SETLK with lk, else flock(op) */
	int op;
	struct flock lk;
	atomic_bool interrupted;
	unsigned tries;
};

/* A close for the closer thread: an fd, or (m set) a backing file of m. */
struct close_item {
	int fd;
	uint32_t backing_id;
	struct fs_mount *m; /* busy until closed */
};

/* A notification for another mount's kernel cache, sent by the notifier. */
struct inval {
	struct inval *next;
	struct fs_mount *m;
	fuse_ino_t ino;
	fuse_ino_t parent; /* nonzero: an entry invalidation of name */
	char name[];
};

/* A file under a read-only path that has other names (mount-ro.c finds, policy.c reads) */
struct ro_link {
	dev_t dev;
	ino_t ino;
};
int ro_link_cmp(const void *a, const void *b);

struct fs_mount {
	struct fs *fs;
	struct fs_mount *next;	 /* fs->mounts, under fs->lock */
	uint32_t slot, slot_gen; /* slot_gen 0: not attached to the pool */
	struct fuse_session *se;
	int fuse_fd;
	uint64_t mnt_id; /* the kernel's mount id, for detaching (reused: mount_fd_ours) */
	uint64_t mnt_uid; /* its 64-bit id, never reused (Linux 6.8), or 0 */
	dev_t kdev;	  /* its superblock's device, or 0 */
	char *source, *mountpoint;
	dev_t source_dev;
	atomic_uint siblings; /* other mounts on source_dev: 0 skips fs_invalidate */
	struct excl_dir **excl;	 /* [fs->excl_lock] its source's folder, then those above */
	size_t nexcl;
	atomic_bool readonly;
	unsigned kattrs;	  /* the kernel mount's MOUNT_ATTR_* at mount (immutable) */
	bool noatime, nodiratime; /* -o: the server's reads leave atimes (immutable) */
	atomic_bool allow_new_repos;
	double timeout;
	int poll_us; /* see fs_params; -o poll= */
	struct inode root;
	struct inode stale;	  /* what an id of no live node names: every use fails ESTALE */
	struct inode_table table; /* under fs->lock */
	struct mtable tab;	  /* node ids and open handles, and their records (table.c) */
	struct guard *guard;	  /* NULL for read-only mounts */
	bool handles;		  /* the source has file handles (its root's worked) */
	int *mount_fds;		  /* one fd per underlying mount id, for handles */
	int *mount_ids;
	size_t nmount_fds;
	dev_t *ro_dev;
	ino_t *ro_ino;
	size_t n_ro;
	struct ro_link *ro_links; /* files under read-only paths with st_nlink > 1, sorted */
	size_t n_ro_links;
	/* Worker bookkeeping, under fs->lock. */
	unsigned busy;		 /* workers processing a request of this mount */
	bool ended;		 /* a worker saw the end of the session */
	atomic_bool unmounting;	 /* fs_unmount() was called; read unlocked by pollers */
	atomic_bool handing_over; /* fs_handover(): served no more, kept for a new server */
	bool kept;		  /* [fs->lock] its descriptors are in the fd store (keep.c) */
	bool adopted;		  /* taken over from a previous server (restore.c) */
	bool initialised;	 /* INIT answered */
	bool want_passthrough;	 /* not -o nopassthrough */
	bool want_uring;	 /* -o uring (uring.c) */
	bool kernel_uring;	 /* and the kernel offered FUSE_OVER_IO_URING at INIT */
	struct uring_mount *uring; /* set: INIT's reply asked for io_uring (uring.c) */
	bool kernel_passthrough; /* and the kernel offered it at INIT */
	atomic_bool passthrough; /* and INIT's reply enabled it (read by every open) */
	atomic_bool polled;	 /* a worker polls it (worker_poll) */
	/*
	 * Its reader (reader.c): dev_fd set before it runs, reader and has_reader
	 * after. Atomic: a mount taken over is served by the pool while its reader
	 * starts, and a worker whose reply met ENOENT reads dev_fd meanwhile.
	 */
	atomic_int dev_fd;	 /* the reader's blocking clone of fuse_fd, or -1 */
	pthread_t reader;	 /* [fs->lock] once has_reader */
	/* set under fs->lock; read without it by the pool, which serves m alone until then */
	atomic_bool has_reader;	 /* a reader was started */
	bool reader_gone;	 /* [fs->lock] it no longer reads (no signal for it) */
	bool reader_later;	 /* [fs->lock] taken over: its reader starts in fs_readers_start */
	pthread_mutex_t arm_lock;
	unsigned pool_want; /* [arm_lock] reasons the pool serves it too; 0: disarmed */
	bool in_pool;	    /* [arm_lock] in the pool's epoll set */
	atomic_uint nhandles;	 /* open file handles (fs_handle_take), without groups */
	atomic_uint nwaiters;	 /* blocking lock requests waiting (fs_waiter_take), same */
	atomic_bool over_logged; /* a share refusal was logged (once per mount) */
	struct fs_group *groups[FS_GROUPS]; /* [const] held; their mounts counted (share.c) */
	void (*ready)(void *, struct fs_mount *);
	void *ready_arg;
	void *tag; /* fs_mount_params.tag (immutable) */
};

/*
 * The server. Lock order: fs->lock, then nothing else; the lock thread's
 * and notifier's queues have their own mutexes, never held with fs->lock.
 */
struct fs {
	struct fs_params p;
	pthread_mutex_t lock; /* mounts, every inode table, the fd cache */
	pthread_cond_t cond;  /* a mount's busy count dropped or it ended */
	struct fs_mount *mounts;
	atomic_uint nmounts;
	/* epoll data is a slot and generation, so a stale event is ignored */
	struct fs_mount *slots[FS_MAX_MOUNTS];
	uint32_t slot_gen;
	int epfd;
	int stopfd; /* eventfd: workers and helper threads stop */
	pthread_t *workers;
	unsigned nworkers;
	atomic_uint pollers;  /* workers in worker_poll() */
	atomic_uint worker_seq; /* numbers the workers, for their journal slots */
	uint64_t crash_after;	/* tests only: opcodes after which to die (journal.c) */
	uint64_t crash_handle;	/* tests only: opcodes after whose handle to die (journal.c) */
	uint64_t crash_during;	/* tests only: opcodes after whose syscall to die (journal.c) */
	uint64_t crash_resent;	/* tests only: opcodes sent again before whose reply to die */
	unsigned max_pollers; /* see worker_poll() */
	/* fd cache */
	struct inode lru; /* list head: lru.lru_next most recent */
	unsigned nfds, maxfds;
	/* open file handles and lock waiters: shares of what the process has */
	atomic_uint nhandles, nwaiters;
	unsigned max_handles, max_waiters;
	/* blocking locks */
	pthread_mutex_t lk_lock;
	pthread_cond_t lk_cond;
	struct lock_wait *lk_head;
	pthread_t lk_thread;
	/* the closer (closer.c): a ring of cl_max items */
	pthread_mutex_t cl_lock;
	pthread_cond_t cl_cond;
	struct close_item *cl_items;
	unsigned cl_max, cl_head, cl_len;
	bool cl_stopping;
	bool cl_idle; /* the closer waits for cl_cond (else it will look again) */
	pthread_t cl_thread;
	/* cross-mount invalidations */
	pthread_mutex_t nt_lock;
	pthread_cond_t nt_cond;
	struct inval *nt_head, **nt_tail;
	pthread_t nt_thread;
	/*
	 * Two locks on name changes, for two different promises; neither can
	 * serve the other's without weakening it:
	 *
	 * decide_all and decide_stripe (decide.c), G2 across mounts: a
	 * guard's check and the name it allows are one step. Held from
	 * before policy_check() to after the syscall, so for as long as the
	 * guard walks (a folder rename walks the subtree); taken only by
	 * operations that make a name, and only on guarded mounts (nothing
	 * there is decided from the tree's state). Striped by folder so
	 * unrelated creates run in parallel.
	 *
	 * ns_lock (seal.c), X2/X4 renames: no name changes anywhere in the
	 * server between a content-checked rename's last look at its source
	 * (same inode, one name) and the rename. Held around the syscall
	 * only, by every name change of every mount, guarded or not, also
	 * unlink and rmdir; exclusive only for that look and rename.
	 *
	 * ns_lock cannot be decide_all: a checked rename would then wait for
	 * every check in flight and stall every create of every mount while
	 * it seals and reads the index (up to SEAL_WAIT_MS and the index's
	 * size), and unguarded mounts and removals, which take no decision,
	 * would have to take one. decide_all cannot be ns_lock: a lock held
	 * only around the syscall does not cover the check before it. Order:
	 * decide_all, stripes, ns_lock, fs->lock.
	 */
	pthread_rwlock_t decide_all;
	pthread_mutex_t decide_stripe[FS_DECIDE_STRIPES];
	/* each user's share of the time decide_all is held whole (decide.c) */
	atomic_uint decide_waiting; /* threads waiting to take decide_all */
	pthread_mutex_t whole_lock;
	pthread_cond_t whole_cond; /* CLOCK_MONOTONIC: a user's hold ended */
	struct whole_user {
		uid_t uid;
		bool used, busy;  /* busy: it holds decide_all whole, or waits for it */
		uint64_t next_ns; /* its debt is paid then (CLOCK_MONOTONIC) */
	} whole_users[FS_WHOLE_USERS];
	struct fs_mount *nt_current; /* mount being notified right now */
	/* one server per folder (excl.c): the folders its mounts lock */
	pthread_mutex_t excl_lock;
	struct excl_dir *excl; /* [excl_lock] */
	bool excl_off;	       /* [excl_lock] handed over: no lock is taken again */
	bool helpers;		     /* lock and notifier threads started */
	bool stopping;
	gid_t root_groups[64];
	int n_root_groups;
	/* seal.c: content-checked renames and writes (gitguard X2, X4) */
	pthread_rwlock_t ns_lock; /* name changes shared, a checked rename exclusive (above) */
	pthread_mutex_t chk_lock; /* X4 writes in place, one at a time */
	struct {
		dev_t dev;
		ino_t ino;
	} sealing[SEAL_MAX]; /* under lock: being checked, no writer admitted */
	unsigned nsealing;
};

/* table.c: the (dev, ino) hash of a mount's inodes */
void inode_table_init(struct inode_table *t);
struct inode *inode_find(struct fs_mount *m, dev_t dev, ino_t ino);
struct inode *inode_find_file(struct fs_mount *m, const struct stat *st,
			      const struct inode_birth *b);
int inode_stat_birth(int dirfd, const char *name, int flags, struct stat *st,
		     struct inode_birth *b);
bool inode_table_room(struct inode_table *t);
void inode_hash(struct inode_table *t, struct inode *i);
void inode_unhash(struct fs_mount *m, struct inode *i);

/* inode.c */
int inode_lookup(struct fs_mount *m, struct inode *parent, const char *name,
		 struct fuse_entry_param *e);
int inode_lookup_made(struct fs_mount *m, struct inode *parent, const char *name,
		      struct fuse_entry_param *e);
void inode_forget(struct fs_mount *m, struct inode *ino, uint64_t n);
void inode_table_clear(struct fs_mount *m);
int inode_fd_get(struct fs_mount *m, struct inode *ino);
void inode_fd_put(struct fs_mount *m, struct inode *ino);
int inode_stat(struct fs_mount *m, struct inode *ino, struct stat *st);
char *inode_path(struct fs_mount *m, struct inode *ino, const char *name, bool exact);
int inode_root_init(struct fs_mount *m, int rootfd, struct fs_error *err);
void inode_fd_cache_drop(struct fs *fs, struct inode *ino);
void inode_closes_flush(void);
void inode_moved(struct fs_mount *m, struct inode *ino, struct inode *parent, const char *name);
struct inode *inode_pin_parent(struct fs_mount *m, struct inode *ino, char **name);
void inode_unpin(struct fs_mount *m, struct inode *ino);
void inode_keep_open(struct fs_mount *m, struct inode *ino);
void inode_opened(struct fs_mount *m, struct inode *i, int fd);

/*
 * policy.c: one write-ish operation to decide. Unused inodes are NULL and
 * unused fds 0: fds 0 to 2 are always open on something else (fs_new checks).
 */
struct preq {
	fuse_req_t req;	      /* for the caller's pid in a refusal's event */
	struct inode *ino;    /* the existing entry acted on (g.cls's) */
	struct inode *parent; /* folder of the new, removed or destination name (g.parent's) */
	struct inode *src_parent; /* rename and exchange: where ino comes from (g.src_parent's) */
	struct inode *victim;	  /* rename onto an existing entry, exchange (g.victim's) */
	/*
	 * gitguard's request: the op, mode, names, descriptors (-1: none) and
	 * target the handler knows; policy_check() adds the classes and facts
	 */
	struct guard_req g;
};
/* An op on the inode I alone (write, chmod, chown, touch), MODE as guard_req's */
#define PREQ_INODE(rq, o, i, md)                                                                   \
	((struct preq){.req = (rq), .ino = (i),                                                    \
		       .g = {.op = (o), .mode = (md), .fd = -1, .parent_fd = -1,                   \
			     .src_parent_fd = -1, .victim_fd = -1}})
/* An op on NAME in the folder P (open as PFD): made, linked or removed; I the entry or NULL */
#define PREQ_NAME(rq, o, i, md, p, pfd, nm, tgt)                                                   \
	((struct preq){.req = (rq), .ino = (i), .parent = (p),                                     \
		       .g = {.op = (o), .mode = (md), .fd = -1, .parent_fd = (pfd), .name = (nm),  \
			     .src_parent_fd = -1, .victim_fd = -1, .target = (tgt)}})
int policy_check(struct fs_mount *m, const struct preq *r);
unsigned policy_classify(struct fs_mount *m, struct inode *parent, const struct stat *st);
void policy_refresh(struct fs_mount *m, struct inode *i);
void policy_renamed(struct fs_mount *m, struct inode *i);
void policy_notify(struct fs_mount *m, enum guard_op op, struct inode *parent, int parent_fd,
		   const char *name, struct inode *ino);
unsigned policy_content_rule(struct fs_mount *m, struct inode *parent, const char *name);
int policy_refused(struct fs_mount *m, fuse_req_t req, const char *op, struct inode *where,
		   const char *name, bool dir, const char *rule, const char *why);
void policy_rename_changed(struct fs_mount *m, struct inode *p, const char *name, struct inode *np,
			   const char *newname, bool dir, bool replaced);
void policy_changed(struct fs_mount *m, enum fs_event_kind kind, struct inode *p, const char *name,
		    struct inode *p2, const char *name2, bool dir);

/* decide.c */
struct decide_hold {
	struct fs *fs; /* NULL: nothing held */
	bool whole;
	unsigned n, s[2];
	int user;	 /* whole: its slot in fs->whole_users, -1 unpaced */
	uint64_t t0; /* whole: when it was taken */
};
void decide_enter(struct fs_mount *m, struct decide_hold *h, const struct inode *p1,
		  const struct inode *p2, bool whole, uid_t uid);
void decide_leave(struct decide_hold *h);

/*
 * backing.c: kernel passthrough's backing files, one per inode while the
 * kernel knows it; the open and close ioctls, the counts of the opens
 * served each way. With libfuse 3.17 and later through its API
 * (fuse_passthrough_open, fi->backing_id); before, through wire.c.
 */
bool backing_open_begin(struct fs_mount *m, fuse_req_t req, struct inode *ino, bool plain,
			struct fuse_file_info *fi);
void backing_open_end(struct fs_mount *m, struct inode *ino, bool passthrough);
void backing_inode_free(struct fs_mount *m, struct inode *ino);
void backing_init(struct fs_mount *m, struct fuse_conn_info *conn);

#ifndef HAVE_FUSE_PASSTHROUGH
/* wire.c (libfuse before 3.17 only): passthrough patched into the raw bytes */
int wire_attach(struct fs_mount *m);
void wire_open_reply(int backing_id);
void wire_init_in(struct fs_mount *m, const void *buf, size_t len);
#endif

#include "fusefs/table.h" /* table.c, and the id lookups: after struct fs_mount */

/* seal.c */
int seal_write_begin(struct fs_mount *m, struct inode *i, bool *checked);
void seal_write_end(struct fs_mount *m, struct inode *i);
int seal_rename(struct fs_mount *m, int pfd, const char *name, struct inode *np, int npfd,
		const char *newname, unsigned flags, unsigned rule);
void seal_renamed(struct fs *fs, dev_t dev, ino_t ino);
ssize_t seal_checked_write(struct fs_mount *m, struct inode *i, int fh, const char *data,
			   size_t len, off_t off);
int seal_checked_truncate_begin(struct fs_mount *m, struct inode *i, off_t size);
int seal_made_empty(struct fs_mount *m, struct inode *p, const char *name, unsigned rule);
void seal_checked_release(struct fs_mount *m, struct inode *i);
void seal_checked_truncate_end(struct fs_mount *m);

/* gitlock.c: which git lock files (guard_lock_name) a mount made: the fact rule LK asks */
void gitlock_made(int fd);
bool gitlock_ours(int dirfd, const char *name);
void gitlock_gone(dev_t dev, ino_t ino);
void gitlock_init(void);
int gitlock_to_keep(void);
bool gitlock_adopt(int fd);

/* ops.c: the handlers' table (each handler's file: ops.h) */
extern const struct fuse_lowlevel_ops fs_ops;

/* ops-file.c */
void fsop_thread_exit(void);

/* ops*.c and seal.c reopen an O_PATH fd through /proc/self/fd/N */
#define PROC_FD_MAX 32

/* fs.c */
void fs_log(struct fs *fs, enum fs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool fs_handle_take(struct fs_mount *m);
void fs_handle_put(struct fs_mount *m);
void fs_handle_add(struct fs_mount *m);
bool fs_waiter_take(struct fs_mount *m);
void fs_waiter_put(struct fs_mount *m);
int fs_group_mount_take(struct fs *fs, struct fs_group *const *groups, struct fs_error *err);
void fs_group_mount_put(struct fs_group *const *groups);
int fs_as_caller(fuse_req_t req, bool with_groups);
/*
 * A write made for REQ's caller (not root) as the caller's own would be:
 * root's write capabilities dropped (ids.c) and the caller's ids taken
 * (its uid; its groups too where a setgid file's bit depends on them), so
 * a write to FD clears setuid and stays out of root's reserved blocks;
 * fs_write_end goes back. 0, or the -errno of a switch that failed
 * (nothing then to undo).
 */
int fs_write_begin(fuse_req_t req, struct fs_caps *caps, int fd);
void fs_write_end(struct fs *fs, struct fs_caps *caps);
int fs_as_uid_only(uid_t uid);
void fs_as_root(struct fs *fs);
int fs_attach(struct fs *fs, struct fs_mount *m, struct fs_error *err);
void fs_mount_arm(struct fs_mount *m, int op, uint32_t events);
void fs_mount_ended(struct fs_mount *m);
void fs_serve(struct fs *fs, struct fs_mount *m, struct fuse_buf *buf);
bool fs_request_may_block(const struct fuse_buf *buf);
void fs_stop_threads(struct fs *fs);
void fs_worker_init(struct fs *fs);

/* reader.c: a mount's reader and the session's I/O on /dev/fuse */
struct fs_cur {
	uint64_t unique; /* the request this thread read last, 0: none */
	uint32_t opcode;
};
extern __thread struct fs_cur fs_cur;
struct fs_capture {
	unsigned char buf[512]; /* a reply's bytes, its header first */
	size_t len;
};
extern __thread struct fs_capture *fs_capture; /* set: replies are kept here, not written */
void fs_dev_seen(struct fs_mount *m, const void *buf, ssize_t n);
void fs_dev_replied(struct fs_mount *m, const struct iovec *iov, int count, ssize_t n);
void reader_wake(struct fs_mount *m);
void reader_init_signal(void);
void reader_start(struct fs_mount *m);
void reader_stop(struct fs_mount *m);
void reader_free(struct fs_mount *m);
void reader_pool_rearm(struct fs_mount *m);

/* uring.c, uring-keep.c: requests over io_uring, under the same hooks */
struct uring_mount;
int uring_prepare(struct fs_mount *m, size_t payload);
void uring_start(struct fs_mount *m);
bool uring_reply(struct fs_mount *m, const struct iovec *iov, int count, ssize_t *res);
void uring_stop(struct fs_mount *m);
void uring_free(struct fs_mount *m);
const char *uring_adopt(struct fs_mount *m, int memfd);
void uring_handover(struct fs *fs);
int uring_memfd(const struct fs_mount *m);
void wire_begin(void);
ssize_t fs_dev_read(int fd, void *buf, size_t len);
ssize_t fs_dev_writev(struct fs_mount *m, int fd, struct iovec *iov, int count);
#ifdef HAVE_FUSE_PASSTHROUGH
extern const struct fuse_custom_io fs_dev_io;
#endif

/* closer.c: the closer thread */
void *closer_thread(void *fs);
void closer_later_fd(struct fs *fs, int fd);
void closer_later_backing(struct fs_mount *m, uint32_t id);
void closer_flush(void);

/* lock.c: blocking locks, retried by the lock thread */
void *lock_thread(void *fs);
void lock_queue_locked(struct fs *fs, struct lock_wait *w);
struct lock_wait *lock_release_begin(struct fs *fs, int fd);
void lock_release_end(struct fs *fs, struct lock_wait *done);
void lock_drop_mount(struct fs *fs, struct fs_mount *m);
void lock_abandon_mount(struct fs *fs, struct fs_mount *m, bool reply_eintr);

/* notify.c: other mounts' kernel caches, told by the notifier thread */
void *notify_thread(void *fs);
void fs_invalidate(struct fs_mount *from, struct inode *ino, struct inode *parent,
		   const char *name);
void notify_forget_mount(struct fs *fs, struct fs_mount *m);
void fs_invalidate_entry(struct fs_mount *m, struct inode *parent, const char *name);

/* journal.c: name changes and writes done but not answered before a crash */
void journal_thread(unsigned slot);
void journal_begin(struct fs_mount *m);
int64_t journal_end(struct fs_mount *m, int64_t r, int again, int already);
int journal_seen(struct fs_mount *m, int64_t *result);
void journal_made(struct fs_mount *m, uint64_t fh);
uint64_t journal_made_before(struct fs_mount *m);
void journal_note(struct fs_mount *m, uint64_t aux);
void journal_syscalled(struct fs_mount *m);
void journal_replying(struct fs_mount *m);
uint64_t journal_aux(struct fs_mount *m);
void journal_adopt(struct fs_mount *m);

/* excl.c: one server per folder */
int excl_take(struct fs_mount *m, int rootfd, bool adopt, struct fs_error *err);
void excl_drop(struct fs_mount *m);
void excl_handover(struct fs *fs);

/* keep.c: descriptors in the fd store, and the handover to a new server */
static inline bool mount_stopping(const struct fs_mount *m)
{
	return atomic_load_explicit(&m->unmounting, memory_order_relaxed) ||
	       atomic_load_explicit(&m->handing_over, memory_order_relaxed);
}
void keep_name(const struct fs_mount *m, char *buf, size_t len, const char *role);
void keep_mount(struct fs_mount *m);
void keep_mount_fd(struct fs_mount *m, size_t idx);
void keep_lock(struct fs_mount *m, uint64_t fh, int fd);
void keep_release(struct fs_mount *m, uint64_t fh, int fd);
void keep_unmount(struct fs_mount *m);

/* mount.c */
int mount_open_dir(const char *path, struct fs_error *err, const char *what);
struct mount_opts;
struct fs_mount *mount_new(struct fs *fs, const struct fs_mount_params *p,
			   const struct mount_opts *o, dev_t source_dev);
int mount_groups(struct fs_mount *m, const struct fs_mount_params *p, struct fs_error *err);
int mount_prepare(struct fs_mount *m, int rootfd, const struct fs_mount_params *p,
		  const struct mount_opts *o, struct fs_error *err);
int mount_session_attach(struct fs_mount *m);

/* mount-opts.c */
struct mount_opts {
	bool suid, dev, debug, readonly, noguard, nopassthrough, uring;
	bool noexec, noatime, nodiratime, nonempty;
	double timeout;
	int poll_us;
	char fsname[PATH_MAX];
};
int mount_parse_options(const char *s, struct mount_opts *o, struct fs_error *err);
unsigned mount_attrs(const struct mount_opts *o, bool readonly);
unsigned long mount_ms_flags(unsigned attrs);

/* mount-ro.c */
int mount_ro_paths(struct fs_mount *m, int rootfd, const struct fs_mount_params *p,
		   struct fs_error *err);

/* mount-kernel.c */
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U /* Linux 6.8: a mount id that is never reused */
#endif
int mount_make(struct fs_mount *m, int mpfd, const struct mount_opts *o, struct fs_error *err);
int mount_detach(struct fs_mount *m);
void mount_learn(struct fs_mount *m, int fd);
bool mount_fd_ours(const struct fs_mount *m, int fd);
void mount_end(struct fs *fs, uint64_t mnt_id, const char *expect);
int mountinfo_path_of(uint64_t id, const char *expect, char *path, size_t len);
int mountinfo_each_source(int (*fn)(void *arg, uint64_t id, const char *mp, const char *fstype,
				    const char *source),
			  void *arg);
int mount_set_kernel_ro(struct fs_mount *m, bool readonly);
void fs_seterr(struct fs_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline struct fs_mount *req_mount(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct inode *ino_of(struct fs_mount *m, fuse_ino_t ino)
{
	return node_of(m, ino);
}

#endif
