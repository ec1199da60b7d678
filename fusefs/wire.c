/* SPDX-License-Identifier: MIT */
/*
 * The bytes between libfuse 3.14 and the kernel. libfuse reads requests
 * and writes replies through these two hooks (fuse_session_custom_io), so
 * we can use what the kernel offers and libfuse 3.14 does not know yet:
 * FUSE passthrough (kernel 6.9 and later). A passthrough open hands the
 * kernel a backing file, and from then on reads, writes and mmap of that
 * file go straight to the source filesystem's page cache without a round
 * trip through this server. Policy is unchanged: it is decided at open,
 * and a handle that may write exists only if policy_check() allowed it.
 *
 * Every hook works on the request the calling worker just read: libfuse
 * reads a request and dispatches it on the same thread, and open and
 * create reply before they return, so a thread-local is all it needs.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/fuse.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

/* From the kernel's uapi (7.40), which Debian 12's headers predate. */
#define WIRE_INIT_EXT (1u << 30)
#define WIRE_PASSTHROUGH_HI (1u << 5) /* FUSE_PASSTHROUGH is bit 37: flags2 bit 5 */
#define WIRE_FOPEN_PASSTHROUGH (1u << 7)
#define WIRE_OP_INIT FUSE_INIT

struct wire_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define WIRE_IOC_BACKING_OPEN _IOW(229, 1, struct wire_backing_map)
#define WIRE_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* The kernel's fuse_init_in as of 7.36: flags2 follows the 7.6 fields. */
struct wire_init_in {
	uint32_t major, minor, max_readahead, flags, flags2, unused[11];
};

/* fuse_init_out as of 7.40: max_stack_depth took the first unused word. */
struct wire_init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2, max_stack_depth, unused[6];
};

/* fuse_open_out as of 7.40: the padding became backing_id. */
struct wire_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

static __thread struct {
	uint64_t unique;
	uint32_t opcode;
	int backing_id; /* > 0: the open reply being sent passes through to it */
} tl;

static ssize_t wire_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs_mount *m = userdata;
	const struct fuse_in_header *h = buf;
	ssize_t n = read(fd, buf, len);

	tl.backing_id = 0;
	tl.unique = 0;
	if (n < (ssize_t)sizeof *h)
		return n;
	tl.unique = h->unique;
	tl.opcode = h->opcode;
	if (h->opcode == WIRE_OP_INIT && (size_t)n >= sizeof *h + sizeof(struct wire_init_in)) {
		const struct wire_init_in *in = (const void *)(h + 1);

		m->kernel_passthrough = m->want_passthrough && (in->flags & WIRE_INIT_EXT) &&
					(in->flags2 & WIRE_PASSTHROUGH_HI);
	}
	return n;
}

static ssize_t wire_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs_mount *m = userdata;
	struct fuse_out_header *oh = iov[0].iov_base;
	struct wire_open_out *oo;
	struct wire_init_out *io;
	size_t len;

	if (count < 2 || iov[0].iov_len < sizeof *oh || oh->error != 0 || oh->unique != tl.unique)
		return writev(fd, iov, count);
	if (tl.opcode == WIRE_OP_INIT && m->kernel_passthrough &&
	    iov[1].iov_len >= sizeof(struct wire_init_out)) {
		/*
		 * Depth 1: the source may be any disk filesystem, not another
		 * stacking one (a backing file on overlayfs is refused, and
		 * that file is then served without passthrough).
		 */
		io = iov[1].iov_base;
		io->flags |= WIRE_INIT_EXT;
		io->flags2 |= WIRE_PASSTHROUGH_HI;
		io->max_stack_depth = 1;
		m->passthrough = true;
	} else if (tl.backing_id > 0) {
		/*
		 * An open or create reply: fuse_open_out ends the last argument.
		 * The kernel refuses keep_cache with passthrough (there is no
		 * FUSE page cache to keep).
		 */
		len = iov[count - 1].iov_len;
		if (len >= sizeof *oo) {
			oo = (void *)((char *)iov[count - 1].iov_base + len - sizeof *oo);
			oo->open_flags &= ~(uint32_t)(FOPEN_KEEP_CACHE | FOPEN_DIRECT_IO);
			oo->open_flags |= WIRE_FOPEN_PASSTHROUGH;
			oo->backing_id = tl.backing_id;
		}
		tl.backing_id = 0;
	}
	return writev(fd, iov, count);
}

static const struct fuse_custom_io wire_io = {
	.read = wire_read,
	.writev = wire_writev,
};

/* Whether the request just read may keep its worker long: data, syncs, locks. */
bool wire_request_may_block(void)
{
	switch (tl.opcode) {
	case FUSE_READ:
	case FUSE_WRITE:
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
	case FUSE_SETLKW:
	case FUSE_FALLOCATE:
	case FUSE_LSEEK:
	case FUSE_COPY_FILE_RANGE:
		return true;
	default:
		return tl.unique == 0; /* not read through wire_read: assume so */
	}
}

int wire_attach(struct fs_mount *m)
{
	return fuse_session_custom_io(m->se, &wire_io, m->fuse_fd);
}

/*
 * A regular file opened as fd: use the inode's backing file, or make one.
 * The kernel holds one backing file per FUSE inode while it is open, and
 * fails an open that names another (EIO), also for a moment after the
 * last release, which it processes after our reply. So the backing id
 * lives as long as our inode, not as long as its opens: it goes when the
 * kernel forgets the inode (wire_inode_free). All opens of an inode agree
 * for the same reason: one whose backing file could not be made (a source
 * on a stacking filesystem, say) is served by read and write requests,
 * and so is every open of that inode until the last one is released.
 * PLAIN asks for an open served by requests (writes the server must see).
 * Returns whether the reply passes through; wire_open_end() undoes it.
 */
bool wire_open_begin(struct fs_mount *m, struct inode *i, bool plain)
{
	struct wire_backing_map map = {.fd = -1};
	bool pt = false, first;
	int id;

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
		map.fd = inode_fd_get(m, i);
	pthread_mutex_lock(&m->fs->lock);
	if (!plain && i->plain_opens == 0 && i->backing_id == 0) {
		/*
		 * Under the lock, so two first opens make one backing file. An
		 * open that raced the last release of a plain-served inode has
		 * no fd here and is served plain too: consistent, only slower.
		 */
		id = map.fd < 0 ? -1 : ioctl(m->fuse_fd, WIRE_IOC_BACKING_OPEN, &map);
		if (id > 0)
			i->backing_id = id;
	}
	if (!plain && i->plain_opens == 0 && i->backing_id > 0) {
		i->backing_users++;
		tl.backing_id = i->backing_id;
		pt = true;
	} else {
		i->plain_opens++;
	}
	pthread_mutex_unlock(&m->fs->lock);
	if (map.fd >= 0)
		inode_fd_put(m, i);
	return pt;
}

/* A handle of a regular file is gone (release, or an open reply that failed). */
void wire_open_end(struct fs_mount *m, struct inode *i, bool passthrough)
{
	if (!m->passthrough || !S_ISREG(i->type))
		return;
	pthread_mutex_lock(&m->fs->lock);
	if (passthrough && i->backing_users > 0)
		i->backing_users--;
	else if (!passthrough && i->plain_opens > 0)
		i->plain_opens--;
	pthread_mutex_unlock(&m->fs->lock);
	tl.backing_id = 0;
}

/*
 * The kernel forgot the inode: its backing file goes too. Called under
 * fs->lock, so the ioctl waits for wire_closes_flush(): dropping the last
 * reference to a file unlinked through the mount frees it, which may wait
 * for the disk (see inode.c, close_later). A mount being freed has no fd
 * any more, and its backing files went with the connection.
 */
#define BACKING_LATER_MAX 64
static __thread struct {
	int fuse_fd;
	uint32_t id;
} backing_queue[BACKING_LATER_MAX];
static __thread unsigned backing_queued;

void wire_inode_free(struct fs_mount *m, struct inode *i)
{
	uint32_t id = (uint32_t)i->backing_id;

	i->backing_id = 0;
	if (id == 0 || m->fuse_fd < 0)
		return;
	if (backing_queued < BACKING_LATER_MAX) {
		backing_queue[backing_queued].fuse_fd = m->fuse_fd;
		backing_queue[backing_queued++].id = id;
	} else {
		ioctl(m->fuse_fd, WIRE_IOC_BACKING_CLOSE, &id);
	}
}

/* Outside fs->lock, while the request's mount is still held (busy). */
void wire_closes_flush(void)
{
	while (backing_queued > 0) {
		backing_queued--;
		ioctl(backing_queue[backing_queued].fuse_fd, WIRE_IOC_BACKING_CLOSE,
		      &backing_queue[backing_queued].id);
	}
}
