/* SPDX-License-Identifier: MIT */
/* Listing folders: opendir (refused on purpose), readdir, readdirplus, fsyncdir. */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
void fsop_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
	dfd = fsop_open_atime(m, fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		dfd = -errno;
	inode_fd_put(m, i);
	return dfd;
}

/* getdents64's records are 8-aligned in it: so must it be (UBSan) */
static __thread char dents[16384] __attribute__((aligned(8)));

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

void fsop_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

void fsop_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

void fsop_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
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
