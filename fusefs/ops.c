/* SPDX-License-Identifier: MIT */
/*
 * The FUSE operations. Each one is an *at() call on a parent fd with a
 * single name, or a reopen of the inode's O_PATH fd through /proc/self/fd;
 * no path string is ever resolved through the source tree. Every
 * write-ish handler asks policy_check() first and replies from one place.
 */
#include "fusefs/fs-int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#define PROC_FD_MAX 32

static void proc_path(char *buf, int fd)
{
	snprintf(buf, PROC_FD_MAX, "/proc/self/fd/%d", fd);
}

/*
 * Nothing made or changed through a mount may make a host file more
 * privileged than its maker: a setuid bit (anything), a setgid bit on a
 * non-folder, or a security.* xattr (file capabilities, labels). The
 * mount's nosuid protects only the mount; the source is the host's own
 * file. Setgid folders stay: git's core.sharedRepository makes them.
 * `had` is the mode the file has already: a bit it has may stay.
 */
static bool raises_privilege(mode_t mode, mode_t type, mode_t had)
{
	mode_t added = mode & ~had;

	return (added & S_ISUID) || ((added & S_ISGID) && !S_ISDIR(type));
}

static bool xattr_privileged(const char *name)
{
	return strncmp(name, "security.", 9) == 0;
}

static void reply_entry_or_err(fuse_req_t req, int r, const struct fuse_entry_param *e)
{
	if (r != 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_entry(req, e);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs_mount *m = userdata;
	unsigned wanted = FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_READDIRPLUS |
			  FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS |
			  FUSE_CAP_ASYNC_READ | FUSE_CAP_CACHE_SYMLINKS | FUSE_CAP_ASYNC_DIO;

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

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
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
	reply_entry_or_err(req, r, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs_mount *m = req_mount(req);

	inode_forget(m, ino_of(m, ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs_mount *m = req_mount(req);
	size_t i;

	for (i = 0; i < count; i++)
		inode_forget(m, ino_of(m, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct stat st;
	int r;

	if (fi != NULL)
		r = fstat(fh_fd(fi), &st) == 0 ? 0 : -errno;
	else
		r = inode_stat(m, ino_of(m, ino), &st);
	if (r != 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, m->timeout);
}

static int do_setattr(struct fs_mount *m, struct inode *i, int fd, struct stat *attr, int valid,
		      struct fuse_file_info *fi)
{
	char path[PROC_FD_MAX];
	struct timespec ts[2];
	uid_t uid;
	gid_t gid;

	proc_path(path, fd);
	if (valid & FUSE_SET_ATTR_MODE) {
		if (fi != NULL	       ? fchmod(fh_fd(fi), attr->st_mode) != 0
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
	if (valid & FUSE_SET_ATTR_SIZE) {
		if (fi != NULL ? ftruncate(fh_fd(fi), attr->st_size) != 0
			       : truncate(path, attr->st_size) != 0)
			return -errno;
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
		if (fi != NULL ? futimens(fh_fd(fi), ts) != 0
			       : utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
			return -errno;
	}
	return 0;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	bool checked = false;
	struct stat st;
	int fd, r = 0;

	if (valid & FUSE_SET_ATTR_MODE)
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_CHMOD, .ino = i, .mode = i->type));
	if (r == 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_CHOWN, .ino = i, .mode = i->type));
	if (r == 0 && (valid & FUSE_SET_ATTR_SIZE))
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_WRITE, .ino = i, .mode = i->type));
	else if (r == 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_TOUCH, .ino = i, .mode = i->type));
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
		 raises_privilege(attr->st_mode, st.st_mode, st.st_mode))
		r = -EPERM;
	else
		r = do_setattr(m, i, fd, attr, valid, fi);
	if (checked)
		seal_checked_truncate_end(m);
	if (valid & FUSE_SET_ATTR_SIZE)
		seal_write_end(m, i);
	if (fd < 0)
		goto out;
	if (r == 0 && fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
		r = -errno;
	inode_fd_put(m, i);
	if (r == 0) {
		if (valid & FUSE_SET_ATTR_SIZE)
			policy_changed(m, FS_EV_MODIFIED, i, NULL, NULL, NULL, false);
		fs_invalidate(m, i, NULL, NULL);
		fuse_reply_attr(req, &st, m->timeout);
		return;
	}
out:
	fuse_reply_err(req, -r);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
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

/*
 * A name was made in p: gitguard hears of it first (a bot's new repository
 * is recorded before its .git is classified), then the other mounts, then
 * it is looked up for the reply.
 */
static int made(struct fs_mount *m, enum guard_op op, struct inode *p, int pfd, const char *name,
		struct fuse_entry_param *e)
{
	policy_notify(m, op, p, pfd, name, NULL);
	policy_changed(m, FS_EV_CREATED, p, name, NULL, NULL, op == GUARD_OP_MKDIR);
	fs_invalidate(m, NULL, p, name);
	return inode_lookup(m, p, name, e);
}

/* mknod, mkdir and symlink: made as the caller, then looked up. */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
		       const char *link)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent);
	enum guard_op op = link != NULL	   ? GUARD_OP_SYMLINK
			   : S_ISDIR(mode) ? GUARD_OP_MKDIR
					   : GUARD_OP_CREATE;
	struct fuse_entry_param e;
	struct decide_hold h;
	int pfd, r;

	pfd = inode_fd_get(m, p);
	if (pfd < 0) {
		r = pfd;
		goto out;
	}
	decide_enter(m, &h, p, NULL, false);
	r = policy_check(m, &PREQ(.req = req, .op = op, .mode = mode & S_IFMT, .parent = p,
				  .parent_fd = pfd, .name = name, .target = link));
	if (r == 0 && link == NULL && raises_privilege(mode, mode, 0))
		r = -EPERM;
	if (r == 0)
		r = fs_as_caller(req, true);
	if (r == 0) {
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		if (link != NULL)
			r = symlinkat(link, pfd, name);
		else if (S_ISDIR(mode))
			r = mkdirat(pfd, name, mode);
		else
			r = mknodat(pfd, name, mode, rdev);
		if (r != 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
		fs_as_root(m->fs);
		if (r == 0)
			r = made(m, op, p, pfd, name, &e);
	}
	decide_leave(&h);
	inode_fd_put(m, p);
out:
	reply_entry_or_err(req, r, &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_entry(req, parent, name, S_IFDIR | mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_entry(req, parent, name, S_IFLNK, 0, link);
}

/*
 * The entry `name` in the folder p (open as pfd), classified now, as a
 * stand-in inode for policy_check(). *real is the table's inode, if any.
 * Protection follows the inode: a stand-in never protects less than it.
 */
static int child_of(struct fs_mount *m, struct inode *p, int pfd, const char *name,
		    struct inode *out, struct inode **real)
{
	struct guard_cls pgc;
	struct stat st;
	struct inode *i;
	int r;

	memset(out, 0, sizeof *out);
	out->standin = true;
	out->fd = -1; /* a stand-in has no cached fd */
	*real = NULL;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	out->type = st.st_mode & S_IFMT;
	out->nlink = st.st_nlink;
	out->parent = p;
	out->name = (char *)name;
	if (m->guard != NULL) {
		policy_refresh(m, p);
		pthread_mutex_lock(&m->fs->lock);
		pgc = p->gcls;
		pthread_mutex_unlock(&m->fs->lock);
		r = guard_classify(m->guard, &pgc, pfd, name, &st, -1, &out->gcls);
		if (r != 0)
			return r;
	}
	pthread_mutex_lock(&m->fs->lock);
	out->cls = policy_classify(m, p, &st);
	i = inode_find(m, st.st_dev, st.st_ino);
	if (i != NULL) {
		out->cls |= i->cls;
		if (guard_cls_protected(&i->gcls) && !guard_cls_protected(&out->gcls))
			out->gcls = i->gcls;
		*real = i;
	}
	pthread_mutex_unlock(&m->fs->lock);
	return 0;
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent), child, *real;
	enum guard_op op = flags ? GUARD_OP_RMDIR : GUARD_OP_UNLINK;
	int pfd, r;

	pfd = inode_fd_get(m, p);
	if (pfd < 0) {
		fuse_reply_err(req, -pfd);
		return;
	}
	r = child_of(m, p, pfd, name, &child, &real);
	if (r == 0)
		r = policy_check(m, &PREQ(.req = req, .op = op, .ino = &child, .mode = child.type, .parent = p,
					  .parent_fd = pfd, .name = name));
	if (r == 0) {
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		if (unlinkat(pfd, name, flags) != 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
	}
	if (r == 0) {
		policy_notify(m, op, p, pfd, name, NULL);
		policy_changed(m, FS_EV_DELETED, p, name, NULL, NULL, flags != 0);
	}
	inode_fd_put(m, p);
	if (r == 0)
		fs_invalidate(m, &child, p, name);
	fuse_reply_err(req, -r);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

static int open_dir_fd(int pfd, const char *name, mode_t type)
{
	if (!S_ISDIR(type))
		return -1;
	return openat(pfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
}

/* Is name in pfd a folder now? (A wrong guess is caught: child_of() re-reads it.) */
static bool is_dir_at(int pfd, const char *name)
{
	struct stat st;

	return fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent), *np = ino_of(m, newparent);
	struct inode src, dst, *rsrc, *rdst = NULL;
	enum guard_op op = (flags & RENAME_EXCHANGE) ? GUARD_OP_EXCHANGE : GUARD_OP_RENAME;
	int pfd = -1, npfd = -1, sfd = 0, vfd = 0, r;
	struct decide_hold h = {0};
	unsigned rule;
	bool have_dst;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	pfd = inode_fd_get(m, p);
	if (pfd < 0) {
		fuse_reply_err(req, -pfd);
		return;
	}
	npfd = inode_fd_get(m, np);
	if (npfd < 0) {
		r = npfd;
		goto out;
	}
	/* a folder moved with its contents, or an exchange: the guard walks them */
	decide_enter(m, &h, p, np, op == GUARD_OP_EXCHANGE || is_dir_at(pfd, name));
	r = child_of(m, p, pfd, name, &src, &rsrc);
	if (r != 0)
		goto out;
	have_dst = child_of(m, np, npfd, newname, &dst, &rdst) == 0;
	if (m->guard != NULL) {
		sfd = open_dir_fd(pfd, name, src.type);
		if (have_dst && op == GUARD_OP_EXCHANGE)
			vfd = open_dir_fd(npfd, newname, dst.type);
		/* A folder that vanished meanwhile: the rename below says so. */
		sfd = sfd < 0 ? 0 : sfd;
		vfd = vfd < 0 ? 0 : vfd;
	}
	r = policy_check(m,
			 &PREQ(.req = req, .op = op, .ino = &src, .fd = sfd, .mode = src.type, .src_parent = p,
			       .src_parent_fd = pfd, .src_name = name, .parent = np,
			       .parent_fd = npfd, .name = newname, .victim = have_dst ? &dst : NULL,
			       .victim_fd = vfd, .victim_mode = have_dst ? dst.type : 0));
	/* onto an index or a strategy file: its content is checked first (seal.c) */
	rule = r == 0 && op == GUARD_OP_RENAME ? policy_content_rule(m, np, newname) : 0;
	if (r == 0 && rule != 0) {
		r = seal_rename(m, pfd, name, np, npfd, newname, flags, rule);
	} else if (r == 0) {
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		if (renameat2(pfd, name, npfd, newname, flags) != 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
	}
	if (r == 0) {
		policy_notify(m, op, np, npfd, newname, NULL);
		if (op == GUARD_OP_EXCHANGE)
			policy_notify(m, op, p, pfd, name, NULL);
		if (op == GUARD_OP_EXCHANGE) {
			/* both names stay, each with the other's content */
			policy_changed(m, FS_EV_MODIFIED, p, name, NULL, NULL, S_ISDIR(src.type));
			policy_changed(m, FS_EV_MODIFIED, np, newname, NULL, NULL,
				       S_ISDIR(dst.type));
		} else {
			policy_changed(m, FS_EV_RENAMED, p, name, np, newname, S_ISDIR(src.type));
		}
		if (rsrc != NULL)
			inode_moved(m, rsrc, np, newname);
		if (op == GUARD_OP_EXCHANGE && rdst != NULL)
			inode_moved(m, rdst, p, name);
		fs_invalidate(m, NULL, p, name);
		fs_invalidate(m, NULL, np, newname);
	}
out:
	decide_leave(&h);
	if (sfd > 0)
		close(sfd);
	if (vfd > 0)
		close(vfd);
	if (npfd >= 0)
		inode_fd_put(m, np);
	inode_fd_put(m, p);
	fuse_reply_err(req, -r);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino), *np = ino_of(m, newparent);
	struct fuse_entry_param e;
	int fd, npfd, r;

	fd = inode_fd_get(m, i);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	npfd = inode_fd_get(m, np);
	if (npfd < 0) {
		r = npfd;
	} else {
		struct decide_hold h;

		decide_enter(m, &h, np, NULL, false);
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_LINK, .ino = i, .mode = i->type,
					  .parent = np, .parent_fd = npfd, .name = newname));
		if (r == 0) {
			pthread_rwlock_rdlock(&m->fs->ns_lock);
			if (linkat(fd, "", npfd, newname, AT_EMPTY_PATH) != 0)
				r = -errno;
			pthread_rwlock_unlock(&m->fs->ns_lock);
		}
		if (r == 0) {
			policy_notify(m, GUARD_OP_LINK, np, npfd, newname, NULL);
			policy_changed(m, FS_EV_CREATED, np, newname, NULL, NULL, false);
		}
		decide_leave(&h);
		inode_fd_put(m, np);
	}
	inode_fd_put(m, i);
	if (r == 0) {
		fs_invalidate(m, i, np, newname);
		r = inode_lookup(m, np, newname, &e);
	}
out:
	reply_entry_or_err(req, r, &e);
}

static bool open_writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/* Keep the kernel's page cache only if the file did not change since we last saw it. */
static void set_keep_cache(struct fs_mount *m, struct inode *i, int fd, struct fuse_file_info *fi)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return;
	pthread_mutex_lock(&m->fs->lock);
	fi->keep_cache = i->seen_size == st.st_size && i->seen_mtime.tv_sec == st.st_mtim.tv_sec &&
			 i->seen_mtime.tv_nsec == st.st_mtim.tv_nsec;
	i->seen_size = st.st_size;
	i->seen_mtime = st.st_mtim;
	pthread_mutex_unlock(&m->fs->lock);
}

/*
 * -o noatime (or nodiratime, for folders): the kernel keeps no atime on a
 * FUSE mount, the source does, so the server's own opens carry O_NOATIME.
 * That needs the owner's fsuid or CAP_FOWNER: without, open as usual.
 */
static int open_atime(struct fs_mount *m, int dirfd, const char *path, int flags)
{
	bool dir = (flags & O_DIRECTORY) != 0;
	int fd;

	if (m->noatime || (dir && m->nodiratime)) {
		fd = openat(dirfd, path, flags | O_NOATIME);
		if (fd >= 0 || errno != EPERM)
			return fd;
	}
	return openat(dirfd, path, flags);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	char path[PROC_FD_MAX];
	int fd, nfd, r = 0;
	bool pt, wr, checked;

	fd = inode_fd_get(m, i);
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	if (open_writes(fi->flags)) {
		struct stat st;

		/* A hard link made on the host since the lookup must still be seen. */
		if (m->guard != NULL && !S_ISDIR(i->type) &&
		    fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0) {
			pthread_mutex_lock(&m->fs->lock);
			i->nlink = st.st_nlink;
			pthread_mutex_unlock(&m->fs->lock);
		}
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_WRITE, .ino = i, .mode = i->type));
		if (r != 0) {
			inode_fd_put(m, i);
			fuse_reply_err(req, -r);
			return;
		}
	}
	proc_path(path, fd);
	/* The /proc/self/fd reopen must follow its magic link: no O_NOFOLLOW. */
	nfd = open_atime(m, AT_FDCWD, path,
			 (fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_TRUNC)) |
				 O_CLOEXEC);
	r = nfd < 0 ? -errno : 0;
	inode_fd_put(m, i);
	if (r != 0) {
		fuse_reply_err(req, -r);
		return;
	}
	/* the mount's share of open files (fs.c) */
	if (!fs_handle_take(m)) {
		close(nfd);
		fuse_reply_err(req, ENFILE);
		return;
	}
	/* a handle that may write is counted, and refused on a sealed inode (seal.c) */
	wr = open_writes(fi->flags);
	checked = false;
	if (wr && (r = seal_write_begin(m, i, &checked)) != 0) {
		close(nfd);
		fs_handle_put(m);
		fuse_reply_err(req, -r);
		return;
	}
	/* reported at the open, which the writer waits for; its release comes later */
	if (wr)
		policy_changed(m, FS_EV_MODIFIED, i, NULL, NULL, NULL, false);
	set_keep_cache(m, i, nfd, fi);
	fi->noflush = 1; /* see op_flush */
	pt = backing_open_begin(m, req, i, checked, fi);
	fi->fh = fh_make(nfd, pt, checked);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* interrupted: no release will come */
		backing_open_end(m, i, pt);
		if (wr)
			seal_write_end(m, i);
		close(nfd);
		fs_handle_put(m);
	}
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent), *i;
	struct fuse_entry_param e;
	struct decide_hold h;
	int pfd, fd = -1, r;
	bool pt, wr, checked;

	/* the mount's share of open files (fs.c), before anything is made */
	if (!fs_handle_take(m)) {
		fuse_reply_err(req, ENFILE);
		return;
	}
	pfd = inode_fd_get(m, p);
	if (pfd < 0) {
		r = pfd;
		goto out;
	}
	decide_enter(m, &h, p, NULL, false);
	r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_CREATE, .mode = S_IFREG, .parent = p,
				  .parent_fd = pfd, .name = name));
	if (r == 0 && raises_privilege(mode, S_IFREG, 0))
		r = -EPERM;
	if (r == 0)
		r = fs_as_caller(req, true);
	if (r == 0) {
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		fd = openat(pfd, name, (fi->flags & ~O_NOCTTY) | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd < 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
		fs_as_root(m->fs);
		if (r == 0)
			r = made(m, GUARD_OP_CREATE, p, pfd, name, &e);
	}
	decide_leave(&h);
	inode_fd_put(m, p);
	if (r != 0) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	i = ino_of(m, e.ino);
	wr = open_writes(fi->flags);
	checked = false;
	if (wr && (r = seal_write_begin(m, i, &checked)) != 0) {
		close(fd);
		inode_forget(m, i, 1);
		goto out;
	}
	fi->noflush = 1; /* see op_flush */
	pt = backing_open_begin(m, req, i, checked, fi);
	fi->fh = fh_make(fd, pt, checked);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		backing_open_end(m, i, pt);
		if (wr)
			seal_write_end(m, i);
		close(fd);
		inode_forget(m, i, 1);
		fs_handle_put(m);
	}
	return;
out:
	fs_handle_put(m);
	fuse_reply_err(req, -r);
}

static __thread char *read_buf;
static __thread size_t read_cap;

/* A worker ends: its read buffer goes with it. */
void ops_thread_exit(void)
{
	free(read_buf);
	read_buf = NULL;
	read_cap = 0;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	ssize_t n;
	char *b;

	if (size > read_cap) {
		b = realloc(read_buf, size);
		if (b == NULL) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		read_buf = b;
		read_cap = size;
	}
	n = pread(fh_fd(fi), read_buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, read_buf, (size_t)n);
}

/* A write to an X4 file: the content it would leave is checked first (seal.c). */
static void checked_write(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			  struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	size_t len = fuse_buf_size(in);
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(len);
	ssize_t n;

	if (len > GUARD_SEQ_MAX) {
		fuse_reply_err(req, EROFS);
		return;
	}
	mem.buf[0].mem = malloc(len ? len : 1);
	if (mem.buf[0].mem == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fuse_buf_copy(&mem, in, 0);
	if (n >= 0)
		n = seal_checked_write(m, ino_of(m, ino), fh_fd(fi), mem.buf[0].mem, (size_t)n,
				       off);
	free(mem.buf[0].mem);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	fs_invalidate(m, ino_of(m, ino), NULL, NULL);
	fuse_reply_write(req, (size_t)n);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			 struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	if (fh_checked(fi)) {
		checked_write(req, ino, in, off, fi);
		return;
	}
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fh_fd(fi);
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in, 0);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	fs_invalidate(m, ino_of(m, ino), NULL, NULL);
	fuse_reply_write(req, (size_t)n);
}

/*
 * Opens reply with noflush, so the kernel sends no FLUSH on close(): a
 * round trip per close saved. Nothing is lost: POSIX locks are OFD locks
 * released with the handle, not at FLUSH, and there is no writeback cache
 * to push. Only a source that reports write errors at close (NFS) would
 * report them at fsync() instead. Kept for a kernel that sends it anyway.
 */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* Reports errors a close() would (NFS-style delayed ones). */
	int fd = dup(fh_fd(fi));

	fuse_reply_err(req, fd < 0 ? errno : close(fd) == 0 ? 0 : errno);
}

/* i's guard role, read under fs->lock (a refresh may be storing its class) */
static unsigned role_of(struct fs_mount *m, struct inode *i)
{
	unsigned role;

	pthread_mutex_lock(&m->fs->lock);
	role = i->gcls.role;
	pthread_mutex_unlock(&m->fs->lock);
	return role;
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino), *p;
	char *name;
	int pfd;

	fs_lock_drop(m->fs, fh_fd(fi));
	close(fh_fd(fi));
	fs_handle_put(m);
	backing_open_end(m, i, fh_passthrough(fi));
	if (open_writes(fi->flags))
		seal_write_end(m, i);
	/* Passthrough writes bypass op_write_buf: other mounts learn of them here. */
	if (fh_passthrough(fi) && open_writes(fi->flags))
		fs_invalidate(m, i, NULL, NULL);
	/* A git config written (in a repository the bot made): its rules may change. */
	if (m->guard != NULL && open_writes(fi->flags) && role_of(m, i) == GUARD_R_CONFIG &&
	    (p = inode_pin_parent(m, i, &name)) != NULL) {
		pfd = inode_fd_get(m, p);
		if (pfd >= 0) {
			policy_notify(m, GUARD_OP_WRITE, p, pfd, name, i);
			inode_fd_put(m, p);
		}
		inode_unpin(m, p);
		free(name);
	}
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int r = datasync ? fdatasync(fh_fd(fi)) : fsync(fh_fd(fi));

	fuse_reply_err(req, r == 0 ? 0 : errno);
}

/*
 * No OPENDIR or RELEASEDIR: the first OPENDIR answers ENOSYS, and the
 * kernel then opens folders by itself (no_opendir) with FOPEN_KEEP_CACHE
 * and FOPEN_CACHE_DIR, the flags we gave before. That saves two round trips
 * per listing; a git status lists every folder of the tree. READDIR is
 * then stateless: each request opens the folder, seeks to the kernel's
 * offset (the d_off of the last entry it got, stable for every Linux disk
 * filesystem) and reads from there. The kernel keeps listings itself and
 * drops one when the folder changes through this mount, when another mount
 * of ours notifies it, and when a refreshed attribute shows a new mtime.
 */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* The folder ino as a readable fd, or -errno. */
static int dir_open(struct fs_mount *m, struct inode *i)
{
	int fd = inode_fd_get(m, i), dfd;

	if (fd < 0)
		return fd;
	dfd = open_atime(m, fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		dfd = -errno;
	inode_fd_put(m, i);
	return dfd;
}

static __thread char dents[16384];

/*
 * Whether the kernel already holds the inode a listed name is for. Such a
 * name goes out in READDIRPLUS without attributes (nodeid 0): refreshing
 * them would cost a stat and a classification here, an attribute update
 * and a lookup count in the kernel, and a FORGET later. git status looks
 * up every file before it lists the folders. A name whose inode is new to
 * us is looked up as before, so ls -l of a fresh folder still needs no
 * LOOKUP per entry.
 */
static bool known(struct fs_mount *m, struct inode *dir, const struct dirent64 *de)
{
	struct inode *i;
	bool k;

	pthread_mutex_lock(&m->fs->lock);
	i = inode_find(m, dir->dev, de->d_ino);
	k = i != NULL && i != &m->root && i->nlookup > 0 &&
	    (de->d_type == DT_UNKNOWN || (mode_t)de->d_type << 12 == i->type);
	pthread_mutex_unlock(&m->fs->lock);
	return k;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, bool plus)
{
	struct fs_mount *m = req_mount(req);
	struct inode *dir = ino_of(m, ino);
	struct fuse_entry_param e;
	struct dirent64 *de;
	char *buf, *p;
	size_t rem = size, entsize;
	ssize_t n, at;
	int err = 0, r, dfd;
	bool full = false;

	buf = malloc(size);
	if (buf == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	p = buf;
	dfd = dir_open(m, dir);
	if (dfd < 0) {
		err = -dfd;
		goto out;
	}
	if (offset != 0 && lseek(dfd, offset, SEEK_SET) < 0) {
		err = errno;
		goto out;
	}
	while (!full && (n = getdents64(dfd, dents, sizeof dents)) > 0) {
		for (at = 0; at < n; at += de->d_reclen) {
			const char *name;

			de = (struct dirent64 *)(dents + at);
			name = de->d_name;
			if (plus) {
				memset(&e, 0, sizeof e);
				if (is_dot_or_dotdot(name) || known(m, dir, de)) {
					/* nodeid 0: a name without attributes */
					e.attr.st_ino = de->d_ino;
					e.attr.st_mode = (mode_t)de->d_type << 12;
				} else {
					r = inode_lookup(m, dir, name, &e);
					if (r == -ENOENT) /* gone since getdents saw it */
						continue;
					if (r != 0) {
						err = -r;
						full = true;
						break;
					}
				}
				entsize = fuse_add_direntry_plus(req, p, rem, name, &e, de->d_off);
				if (entsize > rem) {
					if (e.ino != 0)
						inode_forget(m, ino_of(m, e.ino), 1);
					full = true;
					break;
				}
			} else {
				struct stat st = {.st_ino = de->d_ino,
						  .st_mode = (mode_t)de->d_type << 12};

				entsize = fuse_add_direntry(req, p, rem, name, &st, de->d_off);
				if (entsize > rem) {
					full = true;
					break;
				}
			}
			p += entsize;
			rem -= entsize;
		}
	}
	if (!full && n < 0)
		err = errno;
out:
	if (dfd >= 0)
		close(dfd);
	/* An error after some entries is reported on the next call. */
	if (err != 0 && p == buf)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, (size_t)(p - buf));
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	int fd = dir_open(m, ino_of(m, ino));

	(void)fi;
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	fuse_reply_err(req, (datasync ? fdatasync(fd) : fsync(fd)) == 0 ? 0 : errno);
	close(fd);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
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

/*
 * xattrs go through /proc/self/fd/N, which reaches the inode itself. There
 * is no race-free way to do that for a symlink, so those get ENOTSUP.
 */
static int xattr_fd(fuse_req_t req, fuse_ino_t ino, struct inode **ip, char *path)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino);
	int fd;

	*ip = i;
	if (S_ISLNK(i->type))
		return -ENOTSUP;
	fd = inode_fd_get(m, i);
	if (fd >= 0)
		proc_path(path, fd);
	return fd;
}

/* setxattr and removexattr: a write of the inode, then the change itself. */
static void xattr_change(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	struct fs_mount *m = req_mount(req);
	char path[PROC_FD_MAX];
	struct inode *i;
	int fd, r;

	/*
	 * Removing security.capability lowers privilege, and the kernel does it
	 * itself when a file with one is written: it stays allowed.
	 */
	if (xattr_privileged(name) && (value != NULL || strcmp(name, "security.capability") != 0))
		r = -EPERM;
	else
		r = policy_check(m, &PREQ(.req = req, .op = GUARD_OP_WRITE, .ino = ino_of(m, ino),
					  .mode = ino_of(m, ino)->type));
	if (r == 0 && (fd = xattr_fd(req, ino, &i, path)) < 0) {
		r = fd;
	} else if (r == 0) {
		if (value != NULL)
			r = setxattr(path, name, value, size, flags);
		else
			r = removexattr(path, name);
		r = r == 0 ? 0 : -errno;
		inode_fd_put(m, i);
		if (r == 0)
			fs_invalidate(m, i, NULL, NULL);
	}
	fuse_reply_err(req, -r);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	xattr_change(req, ino, name, value != NULL ? value : "", size, flags);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	xattr_change(req, ino, name, NULL, 0, 0);
}

static void xattr_reply(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/*
 * getxattr (name set) and listxattr (name NULL). A symlink's xattrs cannot be
 * reached race-free: it has none as far as the mount tells.
 */
static void xattr_query(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs_mount *m = req_mount(req);
	char path[PROC_FD_MAX], *buf = NULL;
	struct inode *i;
	ssize_t n;
	int fd;

	fd = xattr_fd(req, ino, &i, path);
	if (fd == -ENOTSUP) {
		if (name != NULL)
			fuse_reply_err(req, ENODATA);
		else
			xattr_reply(req, 0, "", size);
		return;
	}
	if (fd < 0 || (size > 0 && (buf = malloc(size)) == NULL)) {
		if (fd >= 0)
			inode_fd_put(m, i);
		fuse_reply_err(req, fd < 0 ? -fd : ENOMEM);
		return;
	}
	n = name != NULL ? getxattr(path, name, buf, size) : listxattr(path, buf, size);
	if (n < 0)
		n = -errno;
	inode_fd_put(m, i);
	xattr_reply(req, n, buf, size);
	free(buf);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	xattr_query(req, ino, name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	xattr_query(req, ino, NULL, size);
}

/*
 * POSIX locks become OFD locks on the per-open backing fd, so they exclude
 * other mounts and the host; a blocking one waits in the lock thread.
 */
static void op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct flock lk = *lock;

	lk.l_pid = 0;
	if (fcntl(fh_fd(fi), F_OFD_GETLK, &lk) != 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fuse_reply_lock(req, &lk);
}

static void lock_wait(fuse_req_t req, int fd, bool posix, int op, const struct flock *lk)
{
	struct fs_mount *m = req_mount(req);
	struct lock_wait *w;

	if (!fs_waiter_take(m)) {
		fuse_reply_err(req, ENOLCK);
		return;
	}
	w = calloc(1, sizeof *w);
	if (w == NULL) {
		atomic_fetch_sub(&m->nwaiters, 1);
		atomic_fetch_sub(&m->fs->nwaiters, 1);
		fuse_reply_err(req, ENOLCK);
		return;
	}
	w->m = m;
	w->req = req;
	w->fd = fd;
	w->posix = posix;
	w->op = op;
	if (lk != NULL)
		w->lk = *lk;
	fs_lock_queue(m->fs, w);
}

static void op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		     int sleep)
{
	struct flock lk = *lock;
	int fd = fh_fd(fi);

	lk.l_pid = 0;
	if (fcntl(fd, F_OFD_SETLK, &lk) == 0) {
		fuse_reply_err(req, 0);
	} else if (sleep && (errno == EAGAIN || errno == EACCES)) {
		lock_wait(req, fd, true, 0, &lk);
	} else {
		fuse_reply_err(req, errno);
	}
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	int fd = fh_fd(fi);

	if (flock(fd, op | LOCK_NB) == 0)
		fuse_reply_err(req, 0);
	else if (errno == EWOULDBLOCK && !(op & LOCK_NB))
		lock_wait(req, fd, false, op, NULL);
	else
		fuse_reply_err(req, errno);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	int r = fh_checked(fi) ? -EROFS
				       : policy_check(m, &PREQ(.req = req, .op = GUARD_OP_WRITE,
							       .ino = ino_of(m, ino),
							       .mode = ino_of(m, ino)->type));

	if (r == 0 && fallocate(fh_fd(fi), mode, off, len) != 0)
		r = -errno;
	if (r == 0)
		fs_invalidate(m, ino_of(m, ino), NULL, NULL);
	fuse_reply_err(req, -r);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct fs_mount *m = req_mount(req);
	int r = fh_checked(fi_out) ? -EROFS
					   : policy_check(m, &PREQ(.req = req, .op = GUARD_OP_WRITE,
								   .ino = ino_of(m, ino_out),
								   .mode = ino_of(m, ino_out)->type));
	ssize_t n;

	if (r != 0) {
		fuse_reply_err(req, -r);
		return;
	}
	n = copy_file_range(fh_fd(fi_in), &off_in, fh_fd(fi_out), &off_out, len,
			    (unsigned)flags);
	if (n < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fs_invalidate(m, ino_of(m, ino_out), NULL, NULL);
	fuse_reply_write(req, (size_t)n);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t r = lseek(fh_fd(fi), off, whence);

	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, r);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write_buf = op_write_buf,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.getlk = op_getlk,
	.setlk = op_setlk,
	.flock = op_flock,
	.fallocate = op_fallocate,
	.copy_file_range = op_copy_file_range,
	.lseek = op_lseek,
};
