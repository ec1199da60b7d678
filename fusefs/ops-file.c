/* SPDX-License-Identifier: MIT */
/*
 * Operations on open files: open and create (with the handle's passthrough
 * decided in backing.c), read, write, flush, release, fsync, fallocate,
 * copy_file_range and lseek. fi->fh is read through fh_fd() and friends
 * (fs-int.h).
 */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool open_writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static uint32_t fh_flags(bool passthrough, bool checked, bool writes)
{
	return (passthrough ? FHF_PASSTHROUGH : 0) | (checked ? FHF_CHECKED : 0) |
	       (writes ? FHF_WRITES : 0);
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
int fsop_open_atime(struct fs_mount *m, int dirfd, const char *path, int flags)
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

/*
 * An open or create whose handle could not be made (fi->fh 0: out of
 * memory) or whose reply the kernel refused (interrupted): no release will
 * come, so everything the open took for FD is given back here.
 */
static void open_unwind(fuse_req_t req, struct fs_mount *m, struct inode *i,
			const struct fuse_file_info *fi, int fd, bool pt, bool wr)
{
	if (fi->fh == 0)
		fuse_reply_err(req, ENOMEM);
	fh_gone(m, fi->fh);
	backing_open_end(m, i, pt);
	if (wr)
		seal_write_end(m, i);
	close(fd);
	fs_handle_put(m);
}

void fsop_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
		r = policy_check(m, &PREQ_INODE(req, GUARD_OP_WRITE, i, i->type));
		if (r != 0) {
			inode_fd_put(m, i);
			fuse_reply_err(req, -r);
			return;
		}
	}
	fsop_proc_path(path, fd);
	/* The /proc/self/fd reopen must follow its magic link: no O_NOFOLLOW. */
	nfd = fsop_open_atime(m, AT_FDCWD, path,
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
	inode_opened(m, i, nfd);
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
	fi->noflush = 1; /* see fsop_flush */
	pt = backing_open_begin(m, req, i, checked, fi);
	fi->fh = fh_new(m, i, nfd, fh_flags(pt, checked, wr), fi->flags);
	if (fi->fh == 0 || fuse_reply_open(req, fi) == -ENOENT)
		open_unwind(req, m, i, fi, nfd, pt, wr);
}

/*
 * A create without O_EXCL opened fd, and the file may not be new: the name
 * can have been made on the host since the kernel's lookup (a negative
 * entry lasts the timeout), the kernel then sends CREATE, and the host may
 * have given that name to a protected file, or to one under a read-only
 * path. A file with other names is decided as the open for writing it is
 * (as in fsop_open: HL, read-only paths), and O_TRUNC, held back from the
 * open, acts only then.
 */
static int create_existing(struct fs_mount *m, fuse_req_t req, struct inode *i, int fd, bool trunc)
{
	struct fs_caps caps;
	struct stat st;
	int r = 0;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (st.st_nlink > 1) {
		pthread_mutex_lock(&m->fs->lock);
		i->nlink = st.st_nlink;
		pthread_mutex_unlock(&m->fs->lock);
		r = policy_check(m, &PREQ_INODE(req, GUARD_OP_WRITE, i, i->type));
	}
	if (r == 0 && trunc && st.st_size > 0 && (r = fs_write_begin(req, &caps, fd)) == 0) {
		if (ftruncate(fd, 0) != 0)
			r = -errno;
		fs_write_end(m->fs, &caps);
	}
	return r;
}

/*
 * The open of a CREATE, which never waits on another process. The kernel
 * sends CREATE for a name it last saw missing; since then another mount of
 * this server (another bot over the same folder) or the host can have made
 * it a FIFO, and a plain open(O_CREAT) of a FIFO waits until someone opens
 * its other end, here with the decision hold and ns_lock held: every other
 * mount's creates, index renames and then whole mounts would wait with it.
 * So an existing name that is not a regular file is not opened, and the
 * open is O_NONBLOCK with its result checked by fstat (a swap between the
 * two): anything but a regular file is ENXIO, as a non-blocking open of a
 * FIFO without a reader is natively. O_NOCTTY always: the server is a
 * session leader and must not take a terminal the host put there.
 */
static int create_open(int pfd, const char *name, int flags, mode_t mode, bool excl)
{
	struct stat st;
	int fd, fl;

	if (!excl && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : S_ISLNK(st.st_mode) ? -ELOOP : -ENXIO;
	fd = openat(pfd, name,
		    (flags & ~(excl ? 0 : O_TRUNC)) | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			    O_CLOEXEC,
		    mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENXIO;
	}
	if (!(flags & O_NONBLOCK) && ((fl = fcntl(fd, F_GETFL)) < 0 ||
				       fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) {
		fl = -errno;
		close(fd);
		return fl;
	}
	return fd;
}

/* Close the handle fh (f) of i, opened with open_flags, and what it counts */
static void fh_close(struct fs_mount *m, struct inode *i, struct fh_ent *f, uint64_t fh,
		     int open_flags)
{
	bool pt = (f->flags & FHF_PASSTHROUGH) != 0;
	struct lock_wait *waiters;

	/* no lock request reads the descriptor until it is gone (lock.c) */
	waiters = lock_release_begin(m->fs, f->fd);
	keep_release(m, fh, f->fd);
	close(f->fd);
	fh_gone(m, fh);
	lock_release_end(m->fs, waiters);
	fs_handle_put(m);
	backing_open_end(m, i, pt);
	if (open_writes(open_flags))
		seal_write_end(m, i);
	/* Passthrough writes bypass fsop_write_buf: other mounts learn of them here. */
	if (pt && open_writes(open_flags))
		fs_invalidate(m, i, NULL, NULL);
}

/*
 * A create made before a restart and never answered may have got as far
 * as its handle (journal_made). The kernel never learnt of that handle, so
 * no RELEASE would ever close it, and a handle that may write keeps its
 * file from being renamed onto an index or a ref for good (seal.c waits
 * for every writer): a bot's git would fail to commit its lock file. It is
 * closed here, as a RELEASE would, and so is the node the reply would have
 * given the kernel; the create is then answered with a new handle. Returns
 * the inode number of the file it made, or 0 if there was no handle.
 */
static ino_t create_orphan_close(struct fs_mount *m)
{
	struct fuse_file_info fi = {.fh = journal_made_before(m)};
	struct fh_ent *f;
	struct inode *i;
	ino_t made;

	if (fi.fh == 0 || (f = fh_of(m, &fi)) == &fh_none || f->fd < 0 || (i = f->i) == NULL)
		return 0;
	made = i->ino;
	fh_close(m, i, f, fi.fh, f->open_flags);
	inode_forget(m, i, 1);
	return made;
}

/*
 * A create the last server made and never answered, opened again after
 * the caller's own open of it failed with EACCES. The first open could not
 * fail so: the mode of a file made restricts only the opens after the one
 * that made it (git makes its objects 0444 and writes them through that
 * first descriptor), so the bot would see an error a native create never
 * gives. The file is opened as root, as the first create would have opened
 * it, only if it is the one made then: the inode of the handle the last
 * server opened for it (when it got that far), a regular file, still empty (its caller
 * has not had a descriptor to write with) and the caller's own, so the
 * access is what its owner may give itself anyway with chmod. Through an
 * O_PATH descriptor checked first, never by the name again. Anything else:
 * the caller's EACCES.
 */
static int create_reopen(struct fs_mount *m, fuse_req_t req, int pfd, const char *name, int flags,
			 ino_t made)
{
	char path[PROC_FD_MAX];
	struct stat st;
	int o, fd;

	fs_as_root(m->fs);
	o = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (o < 0)
		return -EACCES;
	if (fstat(o, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != fuse_req_ctx(req)->uid ||
	    st.st_size != 0 || (made != 0 && st.st_ino != made)) {
		close(o);
		return -EACCES;
	}
	fsop_proc_path(path, o);
	/* the /proc/self/fd reopen follows its magic link, to the inode checked */
	fd = open(path, (flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_TRUNC)) | O_NOCTTY |
				O_CLOEXEC);
	close(o);
	return fd < 0 ? -errno : fd;
}

void fsop_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent), *i;
	struct fuse_entry_param e;
	struct decide_hold h;
	int64_t was = 0;
	int pfd, fd = -1, r, again = journal_seen(m, &was);
	bool pt, wr, checked, excl;
	ino_t made = 0;

	/*
	 * Made before a restart and not answered (journal.c): its error, or
	 * the file it made, opened again as it is (no O_EXCL, no O_TRUNC:
	 * its caller has written nothing yet).
	 */
	if (again > 0 && was != 0) {
		fuse_reply_err(req, (int)-was);
		return;
	}
	if (again != 0) {
		made = create_orphan_close(m);
		fi->flags &= ~(O_EXCL | O_TRUNC);
	}
	excl = (fi->flags & O_EXCL) != 0;
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
	decide_enter(m, &h, p, NULL, false, 0);
	r = policy_check(m, &PREQ_NAME(req, GUARD_OP_CREATE, NULL, S_IFREG, p, pfd, name, NULL));
	if (r == 0 && fsop_raises_privilege(mode, S_IFREG, 0))
		r = -EPERM;
	if (r == 0)
		r = fs_as_caller(req, true);
	if (r == 0) {
		journal_begin(m);
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		fd = create_open(pfd, name, fi->flags, mode, excl);
		if (fd == -EACCES && again != 0)
			fd = create_reopen(m, req, pfd, name, fi->flags, made);
		if (fd < 0)
			r = fd;
		pthread_rwlock_unlock(&m->fs->ns_lock);
		journal_end(m, r, again, 0);
		fs_as_root(m->fs);
		if (r == 0)
			r = fsop_made(m, GUARD_OP_CREATE, p, pfd, name, &e);
	}
	decide_leave(&h);
	inode_fd_put(m, p);
	if (r != 0) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	i = ino_of(m, e.ino);
	inode_opened(m, i, fd);
	if (!excl && (r = create_existing(m, req, i, fd, (fi->flags & O_TRUNC) != 0)) != 0) {
		close(fd);
		inode_forget(m, i, 1);
		goto out;
	}
	if (guard_lock_name(name)) {
		bool in_git;

		pthread_mutex_lock(&m->fs->lock);
		in_git = i->gcls.kind == GUARD_INGIT;
		pthread_mutex_unlock(&m->fs->lock);
		if (in_git) /* a git's lock file, this mount's (rule LK) */
			gitlock_made(fd);
	}
	wr = open_writes(fi->flags);
	checked = false;
	if (wr && (r = seal_write_begin(m, i, &checked)) != 0) {
		close(fd);
		inode_forget(m, i, 1);
		goto out;
	}
	fi->noflush = 1; /* see fsop_flush */
	pt = backing_open_begin(m, req, i, checked, fi);
	fi->fh = fh_new(m, i, fd, fh_flags(pt, checked, wr), fi->flags);
	if (fi->fh != 0)
		journal_made(m, fi->fh);
	if (fi->fh == 0 || fuse_reply_create(req, &e, fi) == -ENOENT) {
		open_unwind(req, m, i, fi, fd, pt, wr);
		inode_forget(m, i, 1);
	}
	return;
out:
	fs_handle_put(m);
	fuse_reply_err(req, -r);
}

static __thread char *read_buf;
static __thread size_t read_cap;

/* A worker ends: its read buffer goes with it. */
void fsop_thread_exit(void)
{
	free(read_buf);
	read_buf = NULL;
	read_cap = 0;
}

void fsop_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
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
	n = pread(fh_fd(m, fi), read_buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, read_buf, (size_t)n);
}

/* A write to a content-checked file: the content it would leave is checked first (seal.c). */
static void checked_write(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			  struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	size_t len = fuse_buf_size(in); /* at most the mount's max_write */
	struct fuse_bufvec mem = FUSE_BUFVEC_INIT(len);
	struct fs_caps caps;
	ssize_t n;
	int r;

	mem.buf[0].mem = malloc(len ? len : 1);
	if (mem.buf[0].mem == NULL) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fuse_buf_copy(&mem, in, 0);
	if (n >= 0 && (r = fs_write_begin(req, &caps, fh_fd(m, fi))) != 0)
		n = r;
	else if (n >= 0) {
		n = seal_checked_write(m, ino_of(m, ino), fh_fd(m, fi), mem.buf[0].mem, (size_t)n,
				       off);
		fs_write_end(m->fs, &caps);
	}
	journal_end(m, n, 0, 0);
	free(mem.buf[0].mem);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	fs_invalidate(m, ino_of(m, ino), NULL, NULL);
	fuse_reply_write(req, (size_t)n);
}

/*
 * An append the last server started, and may have made before it was
 * killed (journal.c): made if the file holds its bytes where the file
 * ended then, as noted before it (the size + 1). Made again, a line would
 * be there twice; a write at an offset is the same done twice.
 */
static bool append_was_made(struct fs_mount *m, struct inode *i, const struct fuse_bufvec *in)
{
	const struct fuse_buf *b = &in->buf[0];
	uint64_t end = journal_aux(m);
	char path[PROC_FD_MAX], *have;
	bool made = false;
	int o, fd;

	if (end == 0 || in->count != 1 || (b->flags & FUSE_BUF_IS_FD) || b->size == 0)
		return false;
	/* the handle may be write-only: read through the inode's own file */
	if ((o = inode_fd_get(m, i)) < 0)
		return false;
	fsop_proc_path(path, o);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	inode_fd_put(m, i);
	if (fd < 0)
		return false;
	if ((have = malloc(b->size)) != NULL)
		made = pread(fd, have, b->size, (off_t)(end - 1)) == (ssize_t)b->size &&
		       memcmp(have, b->mem, b->size) == 0;
	free(have);
	close(fd);
	return made;
}

void fsop_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	int64_t was = 0;
	int again = journal_seen(m, &was), fd = fh_fd(m, fi);
	bool append = (fh_of(m, fi)->open_flags & O_APPEND) != 0;
	struct fs_caps caps;
	struct stat st;
	ssize_t n;

	/* written before a restart, not answered: its answer (an append is not made twice) */
	if (again > 0) {
		if (was < 0)
			fuse_reply_err(req, (int)-was);
		else
			fuse_reply_write(req, (size_t)was);
		return;
	}
	if (again < 0 && append && append_was_made(m, ino_of(m, ino), in)) {
		fuse_reply_write(req, fuse_buf_size(in));
		return;
	}
	journal_begin(m);
	if (fh_checked(m, fi)) {
		checked_write(req, ino, in, off, fi);
		return;
	}
	if (append)
		journal_note(m, fstat(fd, &st) == 0 ? (uint64_t)st.st_size + 1 : 0);
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = fd;
	out.buf[0].pos = off;
	n = fs_write_begin(req, &caps, fd);
	if (n == 0) {
		n = fuse_buf_copy(&out, in, 0);
		fs_write_end(m->fs, &caps);
	}
	journal_end(m, n, again, 0);
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
void fsop_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	/* Reports errors a close() would (NFS-style delayed ones). */
	int fd = dup(fh_fd(m, fi));

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

void fsop_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino), *p;
	bool checked = fh_checked(m, fi) && open_writes(fi->flags);
	char *name;
	int pfd;

	fh_close(m, i, fh_of(m, fi), fi->fh, fi->flags);
	/* left empty, a strategy file would name the strategy "" (seal.c) */
	if (checked)
		seal_checked_release(m, i);
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

void fsop_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	int r = datasync ? fdatasync(fh_fd(m, fi)) : fsync(fh_fd(m, fi));

	fuse_reply_err(req, r == 0 ? 0 : errno);
}

void fsop_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		    struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	struct fs_caps caps;
	int r = fh_checked(m, fi) ? -EROFS
				  : policy_check(m, &PREQ_INODE(req, GUARD_OP_WRITE, ino_of(m, ino),
								ino_of(m, ino)->type));

	if (r == 0 && (r = fs_write_begin(req, &caps, fh_fd(m, fi))) == 0) {
		if (fallocate(fh_fd(m, fi), mode, off, len) != 0)
			r = -errno;
		fs_write_end(m->fs, &caps);
	}
	if (r == 0)
		fs_invalidate(m, ino_of(m, ino), NULL, NULL);
	fuse_reply_err(req, -r);
}

void fsop_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			  struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			  struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct fs_mount *m = req_mount(req);
	struct fs_caps caps;
	int r = fh_checked(m, fi_out) ? -EROFS
				      : policy_check(m, &PREQ_INODE(req, GUARD_OP_WRITE,
								    ino_of(m, ino_out),
								    ino_of(m, ino_out)->type));
	ssize_t n;

	if (r != 0) {
		fuse_reply_err(req, -r);
		return;
	}
	if ((r = fs_write_begin(req, &caps, fh_fd(m, fi_out))) != 0) {
		fuse_reply_err(req, -r);
		return;
	}
	n = copy_file_range(fh_fd(m, fi_in), &off_in, fh_fd(m, fi_out), &off_out, len,
			    (unsigned)flags);
	r = n < 0 ? errno : 0;
	fs_write_end(m->fs, &caps);
	if (n < 0) {
		fuse_reply_err(req, r);
		return;
	}
	fs_invalidate(m, ino_of(m, ino_out), NULL, NULL);
	fuse_reply_write(req, (size_t)n);
}

void fsop_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct fs_mount *m = req_mount(req);
	off_t r = lseek(fh_fd(m, fi), off, whence);

	if (r < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, r);
}
