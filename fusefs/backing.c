/* SPDX-License-Identifier: MIT */
/*
 * Kernel passthrough (Linux 6.9 and later): a passthrough open hands the
 * kernel a backing file, and from then on reads, writes and mmap of that
 * file go straight to the source filesystem's page cache without a round
 * trip through this server. Policy is unchanged: it is decided at open,
 * and a handle that may write exists only if policy_check() allowed it.
 *
 * This file owns the backing files' lifecycle: which inode has one, the
 * ioctls that make and drop them, and the counts of the opens served each
 * way. libfuse 3.17 and later offer FUSE_CAP_PASSTHROUGH,
 * fuse_passthrough_open() and fi->backing_id; before, wire.c negotiates it
 * at INIT and writes the backing id into the open reply's bytes.
 *
 * Closes use the ioctl on the mount's /dev/fuse fd in both cases:
 * fuse_passthrough_close() needs a live request only to find that fd, and
 * a backing file is closed when the kernel forgets its inode, after the
 * request that made us forget it was answered (see backing_inode_free).
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>

/* From the kernel's uapi (7.40), which Debian 12's headers predate. */
struct backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define BACKING_IOC_OPEN _IOW(229, 1, struct backing_map)

/*
 * INIT: ask for passthrough if the mount wants it and the kernel offers
 * it. Depth 0 beneath us: the source may be any disk filesystem, not
 * another stacking one (a backing file on overlayfs is refused, and that
 * file is then served without passthrough).
 */
void backing_init(struct fs_mount *m, struct fuse_conn_info *conn)
{
#ifdef HAVE_FUSE_PASSTHROUGH
	m->kernel_passthrough = m->want_passthrough && (conn->capable & FUSE_CAP_PASSTHROUGH);
	if (m->kernel_passthrough) {
		conn->want |= FUSE_CAP_PASSTHROUGH;
		conn->max_backing_stack_depth = 0;
		m->passthrough = true;
	}
#else
	(void)m; /* wire.c did it from INIT's bytes */
	(void)conn;
#endif
}

/*
 * A backing file for fd, made on req's connection: its id, or <= 0.
 * The kernel writes through a backing file with the credentials it was
 * made with, whoever writes through it. Made by a worker, it has no
 * CAP_FSETID (ids.c): a write through it clears setuid as a user's own
 * would. Made for an open that writes, it also lacks CAP_SYS_RESOURCE and
 * has the opener's uid as filesystem uid (nobody's for root; and its
 * groups for a setgid file without group execute, which keeps its bit for
 * a writer in its group): such writes stay out of root's reserved blocks,
 * which ext4 gives the root uid too. One made for a read-only open, the
 * first open of most inodes, is made as it comes (a change of credentials
 * costs some us each way here; a write through it may reach the reserve).
 */
static int backing_make(struct fs_mount *m, fuse_req_t req, int fd, bool writes)
{
	struct fs_caps caps;
	struct stat st;
	int id, r;

	if (!writes) /* CAP_FSETID is out already (ids.c): nothing to change */
		goto make;
	fs_write_caps_drop(&caps);
	/* groups (a read of /proc) only where they count */
	if (fuse_req_ctx(req)->uid == 0)
		r = fs_as_uid_only(65534);
	else if (fstat(fd, &st) == 0 && (st.st_mode & (S_ISGID | S_IXGRP)) == S_ISGID)
		r = fs_as_caller(req, true);
	else
		r = fs_as_uid_only(fuse_req_ctx(req)->uid);
	if (r != 0) {
		fs_write_end(m->fs, &caps);
		return -1; /* served by requests */
	}
make:
#ifdef HAVE_FUSE_PASSTHROUGH
	id = fuse_passthrough_open(req, fd);
#else
	struct backing_map map = {.fd = fd};

	id = ioctl(m->fuse_fd, BACKING_IOC_OPEN, &map);
#endif
	if (writes)
		fs_write_end(m->fs, &caps);
	return id;
}

/* The open reply being made passes through to backing file id (0: it does not). */
static void backing_reply(struct fuse_file_info *fi, int id)
{
	/* The kernel refuses keep_cache with passthrough: no FUSE page cache to keep. */
	if (id > 0) {
		fi->keep_cache = 0;
		fi->direct_io = 0;
	}
#ifdef HAVE_FUSE_PASSTHROUGH
	fi->backing_id = id;
#else
	wire_open_reply(id);
#endif
}

/*
 * A regular file opened: use the inode's backing file, or make one.
 * The kernel holds one backing file per FUSE inode while it is open, and
 * fails an open that names another (EIO), also for a moment after the
 * last release, which it processes after our reply. So the backing id
 * lives as long as our inode, not as long as its opens: it goes when the
 * kernel forgets the inode (backing_inode_free). All opens of an inode agree
 * for the same reason: one whose backing file could not be made (a source
 * on a stacking filesystem, say) is served by read and write requests,
 * and so is every open of that inode until the last one is released.
 * PLAIN asks for an open served by requests (writes the server must see).
 * Returns whether the reply (fi) passes through; backing_open_end() undoes it.
 */
bool backing_open_begin(struct fs_mount *m, fuse_req_t req, struct inode *i, bool plain,
			struct fuse_file_info *fi)
{
	bool pt = false, first, writes = (fi->flags & O_ACCMODE) != O_RDONLY;
	int fd = -1, id;

	if (!m->passthrough || !S_ISREG(i->type))
		return false;
	/*
	 * The backing file is the inode's O_PATH file, not the handle: the
	 * kernel keeps it until the inode is forgotten, and flock and OFD
	 * locks taken on the handle must go when the handle does. The kernel
	 * reopens it with each passthrough open's own flags.
	 */
	pthread_mutex_lock(&m->fs->lock);
	first = !plain && i->plain_opens == 0 && i->backing_id == 0;
	pthread_mutex_unlock(&m->fs->lock);
	if (first)
		fd = inode_fd_get(m, i);
	pthread_mutex_lock(&m->fs->lock);
	if (!plain && i->plain_opens == 0 && i->backing_id == 0) {
		/*
		 * Under the lock, so two first opens make one backing file. An
		 * open that raced the last release of a plain-served inode has
		 * no fd here and is served plain too: consistent, only slower.
		 */
		id = fd < 0 ? -1 : backing_make(m, req, fd, writes);
		if (id > 0) {
			i->backing_id = id;
			node_rec(m, i)->backing_id = id; /* a new server closes it */
		}
	}
	if (!plain && i->plain_opens == 0 && i->backing_id > 0) {
		i->backing_users++;
		backing_reply(fi, i->backing_id);
		pt = true;
	} else {
		i->plain_opens++;
	}
	pthread_mutex_unlock(&m->fs->lock);
	if (fd >= 0)
		inode_fd_put(m, i);
	return pt;
}

/* A handle of a regular file is gone (release, or an open reply that failed). */
void backing_open_end(struct fs_mount *m, struct inode *i, bool passthrough)
{
	if (!m->passthrough || !S_ISREG(i->type))
		return;
	pthread_mutex_lock(&m->fs->lock);
	if (passthrough && i->backing_users > 0)
		i->backing_users--;
	else if (!passthrough && i->plain_opens > 0)
		i->plain_opens--;
	pthread_mutex_unlock(&m->fs->lock);
#ifndef HAVE_FUSE_PASSTHROUGH
	wire_open_reply(0);
#endif
}

/*
 * The kernel forgot the inode: its backing file goes too, closed by the
 * closer thread once fs->lock (held here) is let go: dropping the last
 * reference to a file unlinked through the mount frees it, which may wait
 * for the disk (closer.c). A mount being freed has no fd any more, and its
 * backing files went with the connection.
 */
void backing_inode_free(struct fs_mount *m, struct inode *i)
{
	uint32_t id = (uint32_t)i->backing_id;

	i->backing_id = 0;
	if (id == 0 || m->fuse_fd < 0)
		return;
	closer_later_backing(m, id);
}
