/* SPDX-License-Identifier: MIT */
/*
 * Private to fusefs/ops*.c: the FUSE handlers by file (fs_ops, the table
 * in ops.c, names them all) and the helpers they share. Handlers reply
 * to every request themselves; errors inside are -errno.
 */
#ifndef AGENTFS_FUSEFS_OPS_H
#define AGENTFS_FUSEFS_OPS_H

#include "fusefs/fs-int.h"

/* ops.c: INIT, lookups, attributes, statfs; and these helpers */
void fsop_proc_path(char *buf, int fd);
bool fsop_raises_privilege(mode_t mode, mode_t type, mode_t had);
void fsop_reply_entry(fuse_req_t req, int r, const struct fuse_entry_param *e);

/* ops-name.c: names made, removed and moved */
int fsop_made(struct fs_mount *m, enum guard_op op, struct inode *p, int pfd, const char *name,
	      struct fuse_entry_param *e);
void fsop_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void fsop_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fsop_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void fsop_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsop_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fsop_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		 const char *newname, unsigned int flags);
void fsop_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);

/* ops-file.c: open files and their data */
int fsop_open_atime(struct fs_mount *m, int dirfd, const char *path, int flags);
void fsop_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsop_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 struct fuse_file_info *fi);
void fsop_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fsop_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		    struct fuse_file_info *fi);
void fsop_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsop_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsop_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fsop_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		    struct fuse_file_info *fi);
void fsop_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			  struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			  struct fuse_file_info *fi_out, size_t len, int flags);
void fsop_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);

/* ops-dir.c: folder listings */
void fsop_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fsop_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		  struct fuse_file_info *fi);
void fsop_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi);
void fsop_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

/* ops-xattr.c: extended attributes */
void fsop_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
		   int flags);
void fsop_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void fsop_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fsop_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);

/* ops-lock.c: POSIX locks and flock */
void fsop_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock);
void fsop_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		int sleep);
void fsop_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);

#endif
