/* SPDX-License-Identifier: MIT */
/*
 * The FUSE operations. Each one is an *at() call on a parent fd with a
 * single name, or a reopen of the inode's O_PATH fd through /proc/self/fd;
 * no path string is ever resolved through the source tree. Every
 * write-ish handler asks policy_check() first and replies from one place.
 *
 * This file: the table (fs_ops), INIT, lookups, attributes, statfs and
 * the helpers the other ops-*.c share; which file has which handler is in
 * ops.h.
 */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>

void fsop_proc_path(char *buf, int fd)
{
	snprintf(buf, PROC_FD_MAX, "/proc/self/fd/%d", fd);
}

/*
 * Nothing made or changed through a mount may make a host file more
 * privileged than its maker: a setuid bit (anything), a setgid bit on a
 * non-folder, or a security.* xattr (file capabilities, labels; refused in
 * ops-xattr.c). The mount's nosuid protects only the mount; the source is
 * the host's own file. Setgid folders stay: git's core.sharedRepository
 * makes them.
 * `had` is the mode the file has already: a bit it has may stay.
 */
bool fsop_raises_privilege(mode_t mode, mode_t type, mode_t had)
{
	mode_t added = mode & ~had;

	return (added & S_ISUID) || ((added & S_ISGID) && !S_ISDIR(type));
}

void fsop_reply_entry(fuse_req_t req, int r, const struct fuse_entry_param *e)
{
	if (r != 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_entry(req, e);
}

static void fsop_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs_mount *m = userdata;
	unsigned wanted = FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_READDIRPLUS |
			  FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS |
			  FUSE_CAP_ASYNC_READ | FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_ASYNC_DIO |
			  FUSE_CAP_POSIX_ACL;

	/*
	 * POSIX ACLs: the kernel's permission checks (default_permissions)
	 * read an inode's ACL through getxattr and apply it, as the host
	 * would; without it only the mode bits counted, and a file whose ACL
	 * denies the bot's user (mode 0666, user:bot:---) was read and written
	 * through the mount, since the server opens existing files as root.
	 */
	/*
	 * No writeback cache: with it, host appends stayed invisible and
	 * appends through two mounts lost lines. No atomic O_TRUNC: a truncate
	 * must arrive as a size setattr so setuid bits are cleared as natively.
	 * No splice: libfuse keeps a pipe per session and thread.
	 */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_SPLICE_READ |
			FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_HANDLE_KILLPRIV);
	conn->want |= conn->capable & wanted;
	conn->max_write = 1024 * 1024;
	conn->max_readahead = 1024 * 1024;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->time_gran = 1;
	backing_init(m, conn);
	if (m->kernel_passthrough)
		fs_log(m->fs, FS_LOG_INFO,
		       "%s: kernel passthrough on: file reads and writes go "
		       "straight to the source",
		       m->mountpoint);
	else if (m->want_passthrough)
		fs_log(m->fs, FS_LOG_INFO,
		       "%s: the kernel offers no passthrough (Linux 6.9 and "
		       "later do): file reads and writes go through agentfs",
		       m->mountpoint);
	else
		fs_log(m->fs, FS_LOG_INFO,
		       "%s: passthrough off (%s): file reads and writes go through agentfs",
		       m->mountpoint,
		       m->noatime ? "noatime: the kernel's own reads would set atimes"
				  : "nopassthrough");
	pthread_mutex_lock(&m->fs->lock);
	m->initialised = true;
	pthread_mutex_unlock(&m->fs->lock);
	if (m->ready != NULL)
		m->ready(m->ready_arg, m);
}

static void fsop_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_mount *m = req_mount(req);
	struct fuse_entry_param e;
	int r;

	r = inode_lookup(m, ino_of(m, parent), name, &e);
	if (r == -ENOENT) {
		/* A negative entry: compilers and git probe many missing names. */
		memset(&e, 0, sizeof e);
		e.entry_timeout = m->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	fsop_reply_entry(req, r, &e);
}

static void fsop_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs_mount *m = req_mount(req);

	inode_forget(m, ino_of(m, ino), nlookup);
	fuse_reply_none(req);
}

static void fsop_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs_mount *m = req_mount(req);
	size_t i;

	for (i = 0; i < count; i++)
		inode_forget(m, ino_of(m, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void fsop_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct stat st;
	int r;

	if (fi != NULL)
		r = fstat(fh_fd(m, fi), &st) == 0 ? 0 : -errno;
	else
		r = inode_stat(m, ino_of(m, ino), &st);
	if (r != 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, m->timeout);
}

/* The mode and owner of a setattr */
static int setattr_owner(struct fs_mount *m, struct inode *i, int fd, const char *path,
			 const struct stat *attr, int valid, struct fuse_file_info *fi)
{
	uid_t uid;
	gid_t gid;

	if (valid & FUSE_SET_ATTR_MODE) {
		if (fi != NULL	       ? fchmod(fh_fd(m, fi), attr->st_mode) != 0
		    : S_ISLNK(i->type) ? (errno = EOPNOTSUPP, 1)
				       : chmod(path, attr->st_mode) != 0)
			return -errno;
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;
		if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
			return -errno;
	}
	return 0;
}

static int do_setattr(fuse_req_t req, struct fs_mount *m, struct inode *i, int fd,
		      struct stat *attr, int valid, struct fuse_file_info *fi)
{
	char path[PROC_FD_MAX];
	struct timespec ts[2];
	struct fs_caps caps;
	int tfd, r;

	fsop_proc_path(path, fd);
	/*
	 * A chmod or chown made for the caller, which the kernel checked, is
	 * made as root's was: with CAP_FSETID, which a worker leaves out of
	 * its writes (ids.c), so a setgid bit asked for stays.
	 */
	if (valid & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		fs_fsetid_raise(&caps);
		r = setattr_owner(m, i, fd, path, attr, valid, fi);
		fs_write_caps_restore(&caps);
		if (r != 0)
			return r;
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		/*
		 * As the caller's own truncate would (ids.c): it clears setuid,
		 * and stays out of root's blocks. The file is opened as root
		 * first: the kernel checked the caller's access.
		 */
		tfd = fi != NULL ? fh_fd(m, fi) : open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (tfd < 0)
			return -errno;
		r = fs_write_begin(req, &caps, tfd);
		if (r == 0) {
			r = ftruncate(tfd, attr->st_size) != 0 ? -errno : 0;
			fs_write_end(m->fs, &caps);
		}
		if (fi == NULL)
			close(tfd);
		if (r != 0)
			return r;
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		ts[0].tv_nsec = ts[1].tv_nsec = UTIME_OMIT;
		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			ts[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			ts[1] = attr->st_mtim;
		if (fi != NULL ? futimens(fh_fd(m, fi), ts) != 0
			       : utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
			return -errno;
	}
	return 0;
}

static void fsop_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
			 struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	bool checked = false;
	struct stat st;
	int fd, r = 0;

	if (valid & FUSE_SET_ATTR_MODE)
		r = policy_check(m, &PREQ_INODE(req, GUARD_OP_CHMOD, i,
						(i->type & S_IFMT) | (attr->st_mode & 07777)));
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = policy_check(m, &PREQ_INODE(req, GUARD_OP_CHOWN, i, i->type));
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE))
		r = policy_check(m, &PREQ_INODE(req, GUARD_OP_WRITE, i, i->type));
	else if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
		r = policy_check(m, &PREQ_INODE(req, GUARD_OP_TOUCH, i, i->type));
	if (r != 0)
		goto out;
	/* a truncate counts as a writer (seal.c); of an X4 file it is checked */
	if ((valid & FUSE_SET_ATTR_SIZE) && (r = seal_write_begin(m, i, &checked)) != 0)
		goto out;
	if (checked && (r = seal_checked_truncate_begin(m, i, attr->st_size)) != 0) {
		seal_write_end(m, i);
		goto out;
	}
	fd = inode_fd_get(m, i);
	if (fd < 0)
		r = fd;
	else if ((valid & FUSE_SET_ATTR_MODE) &&
		 fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0 &&
		 fsop_raises_privilege(attr->st_mode, st.st_mode, st.st_mode))
		r = -EPERM;
	else
		r = do_setattr(req, m, i, fd, attr, valid, fi);
	if (checked)
		seal_checked_truncate_end(m);
	if (valid & FUSE_SET_ATTR_SIZE)
		seal_write_end(m, i);
	/*
	 * A truncate that passed empty while a handle was open: if that
	 * handle closed meanwhile, its close saw this truncate as a writer
	 * and left the check to whoever ends last (seal.c)
	 */
	if (checked)
		seal_checked_release(m, i);
	if (fd < 0)
		goto out;
	if (r == 0 && fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
		r = -errno;
	inode_fd_put(m, i);
	if (r == 0) {
		/* a file made executable is a change a reviewer must see too */
		if (valid & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
			     FUSE_SET_ATTR_GID))
			policy_changed(m, FS_EV_MODIFIED, i, NULL, NULL, NULL, S_ISDIR(i->type));
		fs_invalidate(m, i, NULL, NULL);
		fuse_reply_attr(req, &st, m->timeout);
		return;
	}
out:
	fuse_reply_err(req, -r);
}

static void fsop_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	char buf[PATH_MAX + 1];
	ssize_t n;
	int fd;

	fd = inode_fd_get(m, i);
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	n = readlinkat(fd, "", buf, sizeof buf);
	if (n < 0)
		n = -errno;
	inode_fd_put(m, i);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
	} else if (n >= (ssize_t)sizeof buf) {
		fuse_reply_err(req, ENAMETOOLONG);
	} else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

static void fsop_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	struct statvfs sv;
	int fd, r;

	fd = inode_fd_get(m, i);
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	r = fstatvfs(fd, &sv) == 0 ? 0 : errno;
	inode_fd_put(m, i);
	if (r != 0)
		fuse_reply_err(req, r);
	else
		fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = fsop_init,
	.lookup = fsop_lookup,
	.forget = fsop_forget,
	.forget_multi = fsop_forget_multi,
	.getattr = fsop_getattr,
	.setattr = fsop_setattr,
	.readlink = fsop_readlink,
	.mknod = fsop_mknod,
	.mkdir = fsop_mkdir,
	.symlink = fsop_symlink,
	.unlink = fsop_unlink,
	.rmdir = fsop_rmdir,
	.rename = fsop_rename,
	.link = fsop_link,
	.open = fsop_open,
	.create = fsop_create,
	.read = fsop_read,
	.write_buf = fsop_write_buf,
	.flush = fsop_flush,
	.release = fsop_release,
	.fsync = fsop_fsync,
	.opendir = fsop_opendir,
	.readdir = fsop_readdir,
	.readdirplus = fsop_readdirplus,
	.fsyncdir = fsop_fsyncdir,
	.statfs = fsop_statfs,
	.setxattr = fsop_setxattr,
	.getxattr = fsop_getxattr,
	.listxattr = fsop_listxattr,
	.removexattr = fsop_removexattr,
	.getlk = fsop_getlk,
	.setlk = fsop_setlk,
	.flock = fsop_flock,
	.fallocate = fsop_fallocate,
	.copy_file_range = fsop_copy_file_range,
	.lseek = fsop_lseek,
};
