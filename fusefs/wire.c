/* SPDX-License-Identifier: MIT */
/*
 * Only with libfuse before 3.17, which knows nothing of kernel
 * passthrough: the bytes between libfuse and the kernel. libfuse reads
 * requests and writes replies through these two hooks
 * (fuse_session_custom_io), so INIT can ask for passthrough and an open
 * reply can carry the backing id that backing.c made. With libfuse 3.17
 * and later backing.c uses its API and this file is not built.
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
#include <sys/uio.h>

/* From the kernel's uapi (7.40), which Debian 12's headers predate. */
#define WIRE_INIT_EXT (1u << 30)
#define WIRE_PASSTHROUGH_HI (1u << 5) /* FUSE_PASSTHROUGH is bit 37: flags2 bit 5 */
#define WIRE_FOPEN_PASSTHROUGH (1u << 7)
#define WIRE_URING_HI (1u << 9) /* FUSE_OVER_IO_URING is bit 41: flags2 bit 9 (7.42) */
#define WIRE_MAX_PAGES (1u << 22)

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

static __thread int tl_backing_id; /* > 0: the open reply being sent passes through to it */

/* INIT's bytes after its header: does the kernel offer passthrough? (restore.c replays them) */
void wire_init_in(struct fs_mount *m, const void *buf, size_t len)
{
	const struct wire_init_in *in = buf;

	if (len >= sizeof *in) {
		m->kernel_passthrough = m->want_passthrough && (in->flags & WIRE_INIT_EXT) &&
					(in->flags2 & WIRE_PASSTHROUGH_HI);
		m->kernel_uring = (in->flags & WIRE_INIT_EXT) && (in->flags2 & WIRE_URING_HI);
	}
}

/* A request taken from a ring (uring.c): what wire_read() resets. */
void wire_begin(void)
{
	tl_backing_id = 0;
}

/*
 * INIT's reply asks for io_uring when -o uring asked, the kernel offered
 * it and this process has its rings (uring.c); else it logs why not. A
 * takeover replaying INIT (restore.c) has its rings already, or none.
 */
static bool wire_init_uring(struct fs_mount *m, struct wire_init_out *io)
{
	size_t pages = io->flags & WIRE_MAX_PAGES ? io->max_pages : 32, payload = 8192;
	int r;

	if (!m->want_uring || (fs_capture != NULL && m->uring == NULL))
		return false;
	if (m->uring != NULL) {
		io->flags |= WIRE_INIT_EXT;
		io->flags2 |= WIRE_URING_HI;
		return true;
	}
	if (!m->kernel_uring) {
		fs_log(m->fs, FS_LOG_WARN, "%s: -o uring: the kernel does not offer io_uring "
		       "(enable_uring is N, or Linux before 6.14): served over /dev/fuse",
		       m->mountpoint);
		return false;
	}
	if (io->max_write > payload)
		payload = io->max_write;
	if (pages * 4096 > payload)
		payload = pages * 4096;
	if ((r = uring_prepare(m, payload)) != 0) {
		fs_log(m->fs, FS_LOG_WARN, "%s: -o uring: %s: served over /dev/fuse",
		       m->mountpoint, strerror(-r));
		return false;
	}
	io->flags |= WIRE_INIT_EXT;
	io->flags2 |= WIRE_URING_HI;
	return true;
}

static ssize_t wire_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fs_mount *m = userdata;
	const struct fuse_in_header *h = buf;
	ssize_t n = fs_dev_read(fd, buf, len);

	tl_backing_id = 0;
	fs_dev_seen(m, buf, n);
	if (n >= (ssize_t)sizeof *h && h->opcode == FUSE_INIT)
		wire_init_in(m, h + 1, (size_t)n - sizeof *h);
	return n;
}

static ssize_t wire_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs_mount *m = userdata;
	struct fuse_out_header *oh = iov[0].iov_base;
	struct wire_open_out *oo;
	struct wire_init_out *io;
	size_t len;
	ssize_t n;

	if (count < 2 || iov[0].iov_len < sizeof *oh || oh->error != 0 ||
	    oh->unique != fs_cur.unique) {
		n = fs_dev_writev(m, fd, iov, count);
		fs_dev_replied(m, iov, count, n);
		return n;
	}
	if (fs_cur.opcode == FUSE_INIT && iov[1].iov_len >= sizeof(struct wire_init_out)) {
		io = iov[1].iov_base;
		if (m->kernel_passthrough) {
			/* Depth 1, that is 0 beneath us: see backing_init(). */
			io->flags |= WIRE_INIT_EXT;
			io->flags2 |= WIRE_PASSTHROUGH_HI;
			io->max_stack_depth = 1;
			m->passthrough = true;
		}
		if (wire_init_uring(m, io)) {
			n = fs_dev_writev(m, fd, iov, count);
			fs_dev_replied(m, iov, count, n);
			if (n > 0 && fs_capture == NULL)
				uring_start(m);
			return n;
		}
	} else if ((fs_cur.opcode == FUSE_OPEN || fs_cur.opcode == FUSE_CREATE) &&
		   tl_backing_id > 0) {
		/* An open or create reply: fuse_open_out ends the last argument. */
		len = iov[count - 1].iov_len;
		if (len >= sizeof *oo) {
			oo = (void *)((char *)iov[count - 1].iov_base + len - sizeof *oo);
			oo->open_flags &= ~(uint32_t)(FOPEN_KEEP_CACHE | FOPEN_DIRECT_IO);
			oo->open_flags |= WIRE_FOPEN_PASSTHROUGH;
			oo->backing_id = tl_backing_id;
		}
		tl_backing_id = 0;
	}
	n = fs_dev_writev(m, fd, iov, count);
	fs_dev_replied(m, iov, count, n); /* INIT's: what a new server takes over */
	return n;
}

static const struct fuse_custom_io wire_io = {
	.read = wire_read,
	.writev = wire_writev,
};

int wire_attach(struct fs_mount *m)
{
	return fuse_session_custom_io(m->se, &wire_io, m->fuse_fd);
}

/* The open or create reply this worker sends next passes through to id (0: none). */
void wire_open_reply(int backing_id)
{
	tl_backing_id = backing_id;
}
