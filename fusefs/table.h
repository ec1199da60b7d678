/* SPDX-License-Identifier: MIT */
/*
 * fusefs/table.h: table.c's functions and the lookups of the ids the kernel
 * holds (node ids, open handles), inline on every request's path. Part of
 * fs-int.h, which includes it once struct fs_mount is known: include
 * fs-int.h, never this file alone.
 */
#ifndef AGENTFS_FS_TABLE_H
#define AGENTFS_FS_TABLE_H

/* table.c: node ids and open handles (struct mtable) */
int table_init(struct fs_mount *m, struct fs_error *err);
int table_map(struct fs_mount *m, int memfd);
void table_free(struct fs_mount *m);
struct inode *node_new(struct fs_mount *m);
void node_gone(struct fs_mount *m, struct inode *i);
void table_mounted(struct fs_mount *m);
void table_mount_seen(struct fs_mount *m, size_t idx, int mount_id);
void table_init_in(struct fs_mount *m, const void *in, size_t len);
struct iovec;
void table_init_out(struct fs_mount *m, const struct iovec *iov, int count);
void table_bot_repos(struct fs_mount *m);
struct node_rec *node_rec(struct fs_mount *m, const struct inode *i);
struct fh_rec *fh_rec(struct fs_mount *m, uint32_t idx);
struct inode *node_at(struct fs_mount *m, uint32_t idx);
struct fh_ent *fh_at(struct fs_mount *m, uint32_t idx);
void node_rec_fill(struct fs_mount *m, struct inode *i);
void node_rec_place(struct fs_mount *m, struct inode *i);
void node_rec_handle(struct fs_mount *m, struct inode *i);
uint64_t fh_new(struct fs_mount *m, struct inode *i, int fd, uint32_t flags, int open_flags);
void fh_gone(struct fs_mount *m, uint64_t fh);
void fh_set_kept(struct fs_mount *m, uint64_t fh);
extern struct fh_ent fh_none;

static inline struct inode *node_of(struct fs_mount *m, fuse_ino_t id)
{
	uint32_t idx = (uint32_t)id, gen = (uint32_t)(id >> 32);
	struct inode *c;

	if (id == FUSE_ROOT_ID)
		return &m->root;
	if (idx == 0 || idx >= NODE_CHUNKS * NODE_CHUNK ||
	    (c = atomic_load_explicit(&m->tab.nodes[idx >> NODE_SHIFT], memory_order_acquire)) ==
		    NULL)
		return &m->stale; /* a stale id: every use fails with ESTALE */
	c += idx & (NODE_CHUNK - 1);
	/* acquire: pairs with node_rec_fill's release (the node's fields) */
	return atomic_load_explicit(&c->gen, memory_order_acquire) == gen ? c : &m->stale;
}

static inline fuse_ino_t node_id(struct fs_mount *m, struct inode *i)
{
	return i == &m->root
		       ? FUSE_ROOT_ID
		       : (fuse_ino_t)atomic_load_explicit(&i->gen, memory_order_relaxed) << 32 |
				 i->idx;
}

/* fi->fh names an entry of the mount's handle table: its fd and flags */
static inline struct fh_ent *fh_of(struct fs_mount *m, const struct fuse_file_info *fi)
{
	uint32_t idx = (uint32_t)fi->fh, gen = (uint32_t)(fi->fh >> 32);
	struct fh_ent *c;

	if (idx == 0 || idx >= FH_CHUNKS * FH_CHUNK ||
	    (c = atomic_load_explicit(&m->tab.fhs[idx >> FH_SHIFT], memory_order_acquire)) == NULL)
		return &fh_none;
	c += idx & (FH_CHUNK - 1);
	/* acquire: pairs with fh_new's release, so fd, i and flags are the handle's */
	return atomic_load_explicit(&c->gen, memory_order_acquire) == gen ? c : &fh_none;
}

static inline int fh_fd(struct fs_mount *m, const struct fuse_file_info *fi)
{
	return fh_of(m, fi)->fd;
}

static inline bool fh_passthrough(struct fs_mount *m, const struct fuse_file_info *fi)
{
	return (fh_of(m, fi)->flags & FHF_PASSTHROUGH) != 0;
}

static inline bool fh_checked(struct fs_mount *m, const struct fuse_file_info *fi)
{
	return (fh_of(m, fi)->flags & FHF_CHECKED) != 0;
}

#endif
