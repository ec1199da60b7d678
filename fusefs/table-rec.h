/* SPDX-License-Identifier: MIT */
/*
 * fusefs/table-rec.h: the layout of a mount's table memfd (table.c,
 * noderec.c), what a server that takes the mount over reads (restore.c).
 * Part of fs-int.h, which includes it after the table's sizes: include
 * fs-int.h, never this file alone.
 */
#ifndef AGENTFS_FS_TABLE_REC_H
#define AGENTFS_FS_TABLE_REC_H

/* node_rec.flags */
#define NR_BYNAME 0x1u	   /* no handle yet: opened by parent and name, checked */
#define NR_BIRTH 0x2u	   /* birth_* known */
#define NR_SEALED 0x4u	   /* inode.sealed */
#define NR_NAME_CUT 0x8u   /* the name did not fit: not reopened by name */
#define NR_NOHANDLE 0x10u  /* its handle could not be recorded: not reopened by handle */
#define NR_INLINE 52	   /* a node record's room for its handle and name */

/*
 * A node's durable record (128 bytes; restore.c rebuilds the inode from
 * it). Its file handle and name are in the record (in: handle_bytes of
 * handle, then the name and its NUL) when both fit, as they do for most
 * (ext4, xfs and tmpfs handles are 8-12 bytes); else both are in an
 * overflow record, ovf, and the record's own handle fields mean nothing.
 * The one store of ovf switches a live record between the two (noderec.c).
 */
struct node_rec {
	uint32_t gen; /* 0: a free slot; written last when a node is made */
	uint32_t flags;
	uint64_t dev, ino;
	uint64_t nlookup; /* the kernel's references */
	uint64_t parent;  /* its folder's node id, 0: none */
	int64_t birth_sec;
	uint32_t birth_nsec;
	uint32_t cls; /* CLS_* */
	int32_t backing_id;
	uint32_t nlink;
	uint32_t ovf; /* its overflow record, 0: handle and name are in the record */
	int32_t handle_type;
	uint16_t type;	      /* S_IFMT bits */
	uint8_t handle_bytes; /* in the record */
	int8_t mount_idx;     /* its handle's underlying mount (table_hdr.mount_ids), -1: none */
	unsigned char in[NR_INLINE];
};

/* A node's handle and name that do not fit its record (noderec.c) */
struct node_ovf {
	uint32_t free_next; /* while free: the next free one (this process's list) */
	int32_t handle_type;
	uint8_t handle_bytes;
	int8_t mount_idx; /* -1: no handle */
	uint8_t pad[2];
	unsigned char handle[HANDLE_MAX];
	char name[256];
};

/* fh_ent.flags and fh_rec.flags */
#define FHF_PASSTHROUGH 0x1u /* backing_open_begin() said yes */
#define FHF_CHECKED 0x2u     /* writes to an X4 file: each checked (seal.c) */
#define FHF_KEPT 0x4u	     /* its fd is held by the fd store too (locks outlive us) */
#define FHF_WRITES 0x8u	     /* opened to write: counted in write_opens */

/* An open handle's durable record */
struct fh_rec {
	uint32_t gen; /* 0: free */
	uint32_t flags;
	uint64_t node; /* node id */
	int32_t open_flags;
	uint32_t pad[3];
};

/*
 * The request a thread is serving, for one that comes again after a crash
 * (FUSE_NOTIFY_RESEND): a name change or write done but not answered is
 * answered from here, not done twice (restore.c, journal.c).
 */
#define JS_STARTED 1u
#define JS_DONE 2u
struct journal_slot {
	uint64_t unique; /* without FUSE_UNIQUE_RESEND; 0: none */
	uint32_t opcode;
	uint32_t state; /* 0: none, JS_STARTED, JS_DONE */
	int64_t result; /* 0 or -errno; a write's count */
	uint64_t aux;	/* the handle a create opened (0: none yet); or journal_note's */
};

#define TABLE_MAGIC "agentfs\x01"
#define TABLE_VERSION 2u /* 1: 512-byte node records, no overflow records */

/* The first 64 KiB of a mount's table memfd: what the mount is, and how it was set up */
struct table_hdr {
	char magic[8];
	uint32_t version, hdr_size, node_rec_size, fh_rec_size;
	uint64_t node_base, fh_base, size;
	uint32_t node_hwm, fh_hwm; /* slots ever used */
	uint64_t key;		   /* names its descriptors in the fd store (keep.c) */
	uint64_t mnt_id;
	uint32_t kattrs;
	uint32_t flags; /* TH_* */
	uint32_t restarts;
	uint32_t nmount_ids;
	int64_t mounted_at;
	uint32_t init_in_len, init_out_len;
	unsigned char init_in[128], init_out[128]; /* INIT's bytes, after the in header */
	int32_t mount_ids[TABLE_MOUNTS];
	struct journal_slot journal[JOURNAL_SLOTS]; /* each serving thread's, now (journal.c) */
	struct journal_slot replay[JOURNAL_SLOTS];  /* the last server's, for requests resent */
	uint32_t nbot_repos; /* the repositories the bot made (allow_new_repos), for a takeover */
	struct table_repo {
		uint64_t dev, ino;
		char path[1024]; /* from the root */
	} bot_repos[TABLE_REPOS];
	char source[PATH_MAX], mountpoint[PATH_MAX];
	/*
	 * -o uring (uring.c): the arena kept as m<key>.ring, mapped at ring_addr
	 * in every server; 0: not over io_uring. Last, so that a table made
	 * before these fields has them 0.
	 */
	uint64_t ring_addr, ring_len;
	uint32_t ring_nq, ring_epq, ring_payload, ring_slot;
	/* version 2: the overflow records of handles and names (noderec.c) */
	uint64_t ovf_base;
	uint32_t ovf_rec_size, ovf_hwm;
};
#define TH_INIT 0x1u	    /* INIT answered, init_* hold it */
#define TH_PASSTHROUGH 0x2u /* and passthrough was enabled */
#define TH_HANDLES 0x4u	    /* the source has file handles */
#define TH_RESEND 0x8u	    /* the kernel resends requests a dead server read (FUSE_HAS_RESEND) */
#define TABLE_HDR_SIZE 65536u

/* The table memfd: its header, node records, handle records, overflow records */
#define OVF_COUNT (NODE_CHUNKS * NODE_CHUNK + 64u) /* one a node, and one moving */
#define NODE_BASE ((uint64_t)TABLE_HDR_SIZE)
#define FH_BASE (NODE_BASE + (uint64_t)NODE_CHUNKS * NODE_CHUNK * sizeof(struct node_rec))
#define OVF_BASE (FH_BASE + (uint64_t)FH_CHUNKS * FH_CHUNK * sizeof(struct fh_rec))
#define TABLE_SIZE (OVF_BASE + (uint64_t)OVF_COUNT * sizeof(struct node_ovf))

/* A node's file handle and name, as noderec.c records them and reads them back */
struct rec_names {
	int32_t handle_type;
	uint8_t handle_bytes; /* 0: no handle */
	int8_t mount_idx;     /* -1: no handle */
	bool name_cut;	      /* no name: not found again by it */
	unsigned char handle[HANDLE_MAX];
	char name[256];
};

/* noderec.c: the records' layout, and the conversion of a table of version 1 */
struct mtable;
int table_create(struct mtable *t);
struct node_rec *table_rec(const struct mtable *t, uint32_t idx);
void rec_names_set(struct mtable *t, struct node_rec *r, const struct rec_names *n);
void rec_names_get(const struct mtable *t, const struct node_rec *r, struct rec_names *n);
void rec_gone(struct mtable *t, struct node_rec *r);
void table_ovf_rebuild(struct mtable *t);
bool table_v1_layout(const struct table_hdr *h);
int table_convert_v1(int oldfd);

#endif
