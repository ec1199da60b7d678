/* SPDX-License-Identifier: MIT */
/*
 * Taking over a mount another server kept (keep.c): the same kernel mount
 * and FUSE connection, served by this process from the descriptors the fd
 * store handed back. The kernel never knows: it keeps the node ids and
 * open handles (fh) it was given, and its requests waited in its queue.
 *
 * What the kernel holds is found again from the mount's table (table.c):
 * every node id's file (by its file handle, or by its folder and name,
 * checked by identity, as a first open is), every open handle's file and
 * flags (its descriptor itself when it was kept: a file with locks, or
 * every one after a clean handover), passthrough backing ids. The guard
 * scans the source again, as at a mount; a node's class is worked out
 * again when it is next used (policy_refresh).
 *
 * FUSE_INIT is not sent again, and libfuse's session refuses requests until
 * it has answered one. So the INIT the kernel sent first is replayed into
 * the new session from the table, its reply caught (fs_capture) instead of
 * written, and compared with the reply the kernel took then: equal bytes
 * mean this session negotiated exactly what the kernel holds (protocol,
 * max_write, capabilities, passthrough), as if INIT had come to it. A
 * binary that would answer differently (another libfuse, other flags)
 * refuses the handover, and the mount is ended and mounted afresh.
 *
 * Last, FUSE_NOTIFY_RESEND puts back in the queue what the previous server
 * read and never answered (it was killed; or blocking lock requests after a
 * clean handover), and the mount is served.
 */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fuse.h>

#define NOTIFY_RESEND 7 /* FUSE_NOTIFY_RESEND, kernel 6.9; Debian 12's headers predate it */

struct handed_fh {
	uint64_t fh;
	int fd;
};

/* One mount's descriptors, as handed over; -1: not handed */
struct handed_mount {
	uint64_t key;
	struct table_hdr *hdr; /* a copy of its table's header, NULL: not readable */
	int table, fuse, clone, root, ring;
	int mnt[TABLE_MOUNTS];
	struct handed_fh *fhs;
	size_t nfhs;
	bool done;	/* adopted, or ended */
	bool converted; /* its table is a new one (adopt_convert), lent to the store */
};

/*
 * What the last server kept, filled by fs_handover_add() on one thread
 * before any fs_adopt(); then several fs_adopt() at once claim mounts in it
 * under lock, and each works on the one it claimed alone.
 */
struct fs_handover {
	struct handed_mount *v;
	size_t n;
	pthread_mutex_t lock; /* each v[k].done, once adopting starts */
};

struct fs_handover *fs_handover_new(void)
{
	struct fs_handover *h = calloc(1, sizeof(struct fs_handover));

	if (h != NULL)
		pthread_mutex_init(&h->lock, NULL);
	return h;
}

static struct handed_mount *handed_of(struct fs_handover *h, uint64_t key)
{
	struct handed_mount *v;
	size_t k;

	for (k = 0; k < h->n; k++)
		if (h->v[k].key == key)
			return &h->v[k];
	v = realloc(h->v, (h->n + 1) * sizeof *v);
	if (v == NULL)
		return NULL;
	h->v = v;
	v = &h->v[h->n++];
	memset(v, 0, sizeof *v);
	v->key = key;
	v->table = v->fuse = v->clone = v->root = v->ring = -1;
	for (k = 0; k < TABLE_MOUNTS; k++)
		v->mnt[k] = -1;
	return v;
}

/*
 * The header of a handed table, read (not mapped) to match it to a mount
 * first: only what is read before the table is mapped, its head (up to the
 * journal) and its paths. The rest of the header (the journal, the bot's
 * repositories, 40 KiB) is left unread here and never looked at through
 * this copy: the adoption reads it from the mapped table. Every mount's
 * header is read on the main thread before the first mount is taken over,
 * and copying all of each, page faults and all, was 0.2-0.4 ms a mount of
 * every bot's wait in a restart.
 */
_Static_assert(offsetof(struct table_hdr, source) > offsetof(struct table_hdr, bot_repos) &&
		       offsetof(struct table_hdr, mountpoint) > offsetof(struct table_hdr, source),
	       "the paths come last in the header: read_hdr reads them apart from its head");

static struct table_hdr *read_hdr(int fd)
{
	const size_t head = offsetof(struct table_hdr, journal),
		     paths = offsetof(struct table_hdr, source);
	struct table_hdr *hdr = malloc(sizeof *hdr);

	if (hdr == NULL)
		return NULL;
	if (pread(fd, hdr, head, 0) != (ssize_t)head ||
	    pread(fd, (char *)hdr + paths, sizeof *hdr - paths, (off_t)paths) !=
		    (ssize_t)(sizeof *hdr - paths)) {
		free(hdr);
		return NULL;
	}
	hdr->source[sizeof hdr->source - 1] = '\0';
	hdr->mountpoint[sizeof hdr->mountpoint - 1] = '\0';
	return hdr;
}

static void set_fd(int *slot, int fd)
{
	if (*slot >= 0)
		close(*slot);
	*slot = fd;
}

/* A descriptor the previous server kept: true if it is a mount's (then it is taken) */
bool fs_handover_add(struct fs_handover *h, const char *name, int fd)
{
	struct handed_mount *hm;
	struct handed_fh *f;
	char role[32], *end;
	uint64_t key;
	unsigned long k;

	if (strcmp(name, "gitlocks") == 0)
		return gitlock_adopt(fd); /* the lock files mounts made (gitlock.c) */
	if (name[0] != 'm' || strlen(name) < 19 || name[17] != '.' ||
	    snprintf(role, sizeof role, "%s", name + 18) >= (int)sizeof role)
		return false;
	key = strtoull(name + 1, &end, 16);
	if (end != name + 17 || (hm = handed_of(h, key)) == NULL)
		return false;
	if (strcmp(role, "table") == 0) {
		set_fd(&hm->table, fd);
		free(hm->hdr);
		hm->hdr = read_hdr(fd);
	} else if (strcmp(role, "fuse") == 0) {
		set_fd(&hm->fuse, fd);
	} else if (strcmp(role, "clone") == 0) {
		set_fd(&hm->clone, fd);
	} else if (strcmp(role, "root") == 0) {
		set_fd(&hm->root, fd);
	} else if (strcmp(role, "ring") == 0) {
		set_fd(&hm->ring, fd);
	} else if (strncmp(role, "mnt", 3) == 0 &&
		   (k = strtoul(role + 3, &end, 10)) < TABLE_MOUNTS && *end == '\0') {
		set_fd(&hm->mnt[k], fd);
	} else if (strncmp(role, "fh", 2) == 0 &&
		   (f = realloc(hm->fhs, (hm->nfhs + 1) * sizeof *f)) != NULL) {
		hm->fhs = f;
		f[hm->nfhs].fh = strtoull(role + 2, NULL, 16);
		f[hm->nfhs++].fd = fd;
	} else {
		return false;
	}
	return true;
}

bool fs_handover_has(const struct fs_handover *h, uint64_t mnt_id)
{
	size_t k;

	for (k = 0; h != NULL && k < h->n; k++)
		if (h->v[k].hdr != NULL && h->v[k].hdr->mnt_id == mnt_id)
			return true;
	return false;
}

static void handed_close(struct handed_mount *hm)
{
	size_t k;

	set_fd(&hm->table, -1);
	set_fd(&hm->fuse, -1);
	set_fd(&hm->clone, -1);
	set_fd(&hm->root, -1);
	set_fd(&hm->ring, -1);
	for (k = 0; k < TABLE_MOUNTS; k++)
		set_fd(&hm->mnt[k], -1);
	for (k = 0; k < hm->nfhs; k++)
		if (hm->fhs[k].fd >= 0)
			close(hm->fhs[k].fd);
	free(hm->fhs);
	hm->fhs = NULL;
	hm->nfhs = 0;
	free(hm->hdr);
	hm->hdr = NULL;
}

/*
 * Has the kernel ended hm's connection (its last mount went: unmounted
 * from outside and no longer held)? /dev/fuse polls POLLERR then. Its
 * mount id is free again and may be another mount's now, even one this
 * server just made at the same mount point: nothing may be done by it.
 */
static bool handed_dead(const struct handed_mount *hm)
{
	struct pollfd p = {.fd = hm->fuse, .events = POLLIN};

	return hm->fuse >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLNVAL));
}

/* A handed mount no server takes: its connection ends, its kernel mount goes, the store lets go */
static void handed_end(struct fs *fs, struct handed_mount *hm)
{
	char name[64];
	size_t k;

	/* done is h->lock's: fs_adopt set it when it took hm; fs_handover_free runs alone */
	if (hm->hdr != NULL && !handed_dead(hm))
		mount_end(fs, hm->hdr->mnt_id, hm->hdr->mountpoint);
	if (fs->p.unkeep != NULL) {
		static const char *const roles[] = {"table", "fuse", "clone", "root", "ring"};

		for (k = 0; k < 5; k++) {
			snprintf(name, sizeof name, "m%016" PRIx64 ".%s", hm->key, roles[k]);
			fs->p.unkeep(fs->p.keep_arg, name);
		}
		for (k = 0; k < TABLE_MOUNTS; k++) {
			snprintf(name, sizeof name, "m%016" PRIx64 ".mnt%zu", hm->key, k);
			if (hm->mnt[k] >= 0)
				fs->p.unkeep(fs->p.keep_arg, name);
		}
		for (k = 0; k < hm->nfhs; k++) {
			snprintf(name, sizeof name, "m%016" PRIx64 ".fh%" PRIx64, hm->key,
				 hm->fhs[k].fh);
			fs->p.unkeep(fs->p.keep_arg, name);
		}
	}
	handed_close(hm);
}

void fs_handover_free(struct fs *fs, struct fs_handover *h)
{
	size_t k;

	if (h == NULL)
		return;
	for (k = 0; k < h->n; k++) {
		if (!h->v[k].done) {
			fs_log(fs, FS_LOG_INFO, "%s: handed over, but no bot has it now: ended",
			       h->v[k].hdr != NULL ? h->v[k].hdr->mountpoint : "a mount");
			handed_end(fs, &h->v[k]);
		}
	}
	free(h->v);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

bool fs_mount_adopted(const struct fs_mount *m)
{
	return m->adopted;
}

unsigned fs_mount_restarts(const struct fs_mount *m)
{
	return m->tab.hdr != NULL ? m->tab.hdr->restarts : 0;
}

/* Why hdr cannot be taken over by this binary, or NULL */
static const char *hdr_unusable(const struct handed_mount *hm, const struct fs_mount_params *p)
{
	const struct table_hdr *h = hm->hdr;
	char path[PATH_MAX];
	int r;

	if (memcmp(h->magic, TABLE_MAGIC, sizeof h->magic) != 0)
		return "its table is not an agentfs table";
	if (!table_v1_layout(h) &&
	    (h->version != TABLE_VERSION || h->hdr_size != TABLE_HDR_SIZE ||
	     h->node_rec_size != sizeof(struct node_rec) ||
	     h->fh_rec_size != sizeof(struct fh_rec) || h->node_base != NODE_BASE ||
	     h->fh_base != FH_BASE || h->ovf_base != OVF_BASE ||
	     h->ovf_rec_size != sizeof(struct node_ovf) || h->size != TABLE_SIZE))
		return "its table has another layout than this agentfsd reads";
	if (!(h->flags & TH_INIT) || h->init_in_len < 16 || h->init_out_len < 24)
		return "its kernel INIT was not recorded";
	if (h->node_hwm == 0 || h->node_hwm > NODE_CHUNKS * NODE_CHUNK || h->fh_hwm == 0 ||
	    h->fh_hwm > FH_CHUNKS * FH_CHUNK || h->nmount_ids > TABLE_MOUNTS)
		return "its table's counts are out of range";
	if (strcmp(h->source, p->source) != 0)
		return "it serves another source";
	if (hm->fuse < 0 || hm->root < 0)
		return "its /dev/fuse or source descriptor was not handed over";
	/* unmounted from outside meanwhile (a lost root): mounted afresh, as a restart always did */
	if (handed_dead(hm))
		return "its connection has ended (unmounted from outside)";
	r = mountinfo_path_of(h->mnt_id, h->mountpoint, path, sizeof path);
	if (r != 0 && r != -ENOENT)
		return "the mount table cannot be read, nor its mount point looked at";
	if (r != 0 || strcmp(path, h->mountpoint) != 0)
		return "it is no longer mounted there";
	return NULL;
}

/*
 * Replay the kernel's first INIT into the new session (see the top):
 * 0 when its reply is the one the kernel took.
 */
static int replay_init(struct fs_mount *m, struct fs_error *err)
{
	const struct table_hdr *h = m->tab.hdr;
	struct {
		struct fuse_in_header ih;
		unsigned char in[sizeof h->init_in];
	} req;
	struct fuse_buf fb = {.mem = &req};
	struct fs_capture cap = {.len = 0};
	const struct fuse_out_header *oh = (const void *)cap.buf;

	memset(&req, 0, sizeof req);
	req.ih.opcode = FUSE_INIT;
	req.ih.unique = 2;
	req.ih.len = (uint32_t)(sizeof req.ih + h->init_in_len);
	memcpy(req.in, h->init_in, h->init_in_len);
	fb.size = req.ih.len;
#ifndef HAVE_FUSE_PASSTHROUGH
	wire_init_in(m, req.in, h->init_in_len);
#endif
	fs_cur.unique = req.ih.unique;
	fs_cur.opcode = FUSE_INIT;
	fs_capture = &cap;
	fuse_session_process_buf(m->se, &fb);
	fs_capture = NULL;
	fs_cur.unique = 0;
	if (cap.len == sizeof *oh + h->init_out_len && oh->error == 0 &&
	    memcmp(cap.buf + sizeof *oh, h->init_out, h->init_out_len) == 0)
		return 0;
	fs_seterr(err, EPROTO,
		  "this agentfsd would answer the kernel's INIT differently than the one that "
		  "mounted it (%zu bytes, error %d, against %u bytes)",
		  cap.len >= sizeof *oh ? cap.len - sizeof *oh : 0,
		  cap.len >= sizeof *oh ? oh->error : 0, h->init_out_len);
	return -EPROTO;
}

/* Later-born of two inodes with one (dev, ino): the one the hash must find */
static bool born_after(const struct inode *a, const struct inode *b)
{
	return a->birth.sec > b->birth.sec ||
	       (a->birth.sec == b->birth.sec && a->birth.nsec > b->birth.nsec);
}

/* Node idx from its record r (fs->lock held): false when out of memory */
static bool restore_node(struct fs_mount *m, struct inode *i, const struct node_rec *r)
{
	struct rec_names n;
	struct inode *o;

	i->used = true;
	atomic_store(&i->gen, r->gen);
	i->dev = (dev_t)r->dev;
	i->ino = (ino_t)r->ino;
	i->type = r->type & S_IFMT;
	i->nlookup = r->nlookup;
	i->birth.known = (r->flags & NR_BIRTH) != 0;
	i->birth.sec = r->birth_sec;
	i->birth.nsec = r->birth_nsec;
	i->sealed = (r->flags & NR_SEALED) != 0;
	i->cls = r->cls;
	i->nlink = r->nlink;
	i->backing_id = r->backing_id;
	i->owner = m;
	i->fd = -1;
	i->ggen = UINT64_MAX; /* classified again at its next use */
	rec_names_get(&m->tab, r, &n);
	i->mount_fd_idx = n.mount_idx;
	if (n.mount_idx >= 0 && (size_t)n.mount_idx < m->nmount_fds && n.handle_bytes > 0) {
		i->handle = malloc(sizeof *i->handle + n.handle_bytes);
		if (i->handle == NULL)
			return false;
		i->handle->handle_bytes = n.handle_bytes;
		i->handle->handle_type = n.handle_type;
		memcpy(i->handle->f_handle, n.handle, n.handle_bytes);
	}
	/* no handle: found again by its folder and name, checked by identity (inode.c) */
	i->byname = i->handle == NULL;
	i->lazy = i->handle == NULL && m->handles && !S_ISDIR(i->type);
	if (!n.name_cut && (i->name = strdup(n.name)) == NULL)
		return false;
	o = inode_find(m, i->dev, i->ino);
	if (o == NULL || o == &m->root) {
		if (o == NULL && !inode_table_room(&m->table))
			return false;
		if (o == NULL)
			inode_hash(&m->table, i);
	} else if (born_after(i, o)) {
		inode_unhash(m, o); /* retired: it lives on only until the kernel forgets it */
		inode_hash(&m->table, i);
	}
	return true;
}

/* Every node the kernel holds, from the table; then each one's folder */
static int restore_nodes(struct fs_mount *m, struct fs_error *err)
{
	struct mtable *t = &m->tab;
	const struct node_rec *r;
	struct inode *i, *p;
	uint32_t k;
	int res = 0;

	pthread_mutex_lock(&m->fs->lock);
	t->node_hwm = t->hdr->node_hwm;
	for (k = 1; k < t->node_hwm && res == 0; k++) {
		r = node_rec(m, &(struct inode){.idx = k});
		if ((i = node_at(m, k)) == NULL) {
			res = -ENOMEM;
			break;
		}
		i->idx = k;
		if (r->gen == 0) {
			i->free_next = t->node_free;
			t->node_free = k;
		} else if (!restore_node(m, i, r)) {
			res = -ENOMEM;
		}
	}
	table_ovf_rebuild(t); /* its free overflow records, from the live ones */
	for (k = 1; k < t->node_hwm && res == 0; k++) {
		i = node_at(m, k);
		if (!i->used || (r = node_rec(m, i))->parent == 0)
			continue;
		p = node_of(m, r->parent);
		if (p == &m->stale)
			continue; /* its folder is gone: found by its handle only */
		i->parent = p;
		if (p != &m->root)
			p->refs++;
	}
	pthread_mutex_unlock(&m->fs->lock);
	if (res != 0)
		fs_seterr(err, -res, "out of memory restoring %u nodes", t->node_hwm);
	return res;
}

/* An open handle's descriptor: the one kept, or the file opened again with its flags */
static int fh_reopen(struct fs_mount *m, struct handed_mount *hm, uint64_t fh, struct inode *i,
		     const struct fh_rec *r)
{
	char path[PROC_FD_MAX];
	size_t k;
	int fd, nfd;

	for (k = 0; k < hm->nfhs; k++) {
		if (hm->fhs[k].fh == fh && hm->fhs[k].fd >= 0) {
			fd = hm->fhs[k].fd;
			hm->fhs[k].fd = -1;
			return fd;
		}
	}
	fd = inode_fd_get(m, i);
	if (fd < 0)
		return fd;
	fsop_proc_path(path, fd);
	/* as fsop_open: the /proc/self/fd reopen follows its magic link; O_TRUNC acted already */
	nfd = fsop_open_atime(
		m, AT_FDCWD, path,
		(r->open_flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_TRUNC)) |
			O_CLOEXEC);
	if (nfd < 0)
		nfd = -errno;
	inode_fd_put(m, i);
	return nfd;
}

/* Every open handle the kernel holds, with the counts they make on their inodes */
static void restore_fhs(struct fs_mount *m, struct handed_mount *hm)
{
	struct mtable *t = &m->tab;
	struct fh_ent *f;
	struct fh_rec *r;
	struct inode *i;
	uint64_t fh;
	uint32_t k;
	unsigned lost = 0;
	int fd;

	t->fh_hwm = t->hdr->fh_hwm;
	for (k = 1; k < t->fh_hwm; k++) {
		r = fh_rec(m, k);
		if ((f = fh_at(m, k)) == NULL)
			break;
		f->fd = -1;
		if (r->gen == 0) {
			f->free_next = t->fh_free;
			t->fh_free = k;
			continue;
		}
		atomic_store(&f->gen, r->gen);
		fh = (uint64_t)r->gen << 32 | k;
		i = node_of(m, r->node);
		fd = i != &m->stale ? fh_reopen(m, hm, fh, i, r) : -ESTALE;
		if (fd < 0) {
			lost++; /* its calls fail with EBADF; its release frees it */
			r->flags &= ~FHF_KEPT;
			f->flags = 0;
			fs_handle_add(m); /* and gives back its share, as any release */
			continue;
		}
		f->fd = fd;
		f->i = i;
		f->flags = r->flags;
		f->open_flags = r->open_flags;
		atomic_store_explicit(&f->gen, r->gen, memory_order_release); /* as fh_new */
		fs_handle_add(m);
		pthread_mutex_lock(&m->fs->lock);
		if (r->flags & FHF_WRITES)
			i->write_opens++;
		if (S_ISREG(i->type) && (r->flags & FHF_PASSTHROUGH))
			i->backing_users++;
		else if (S_ISREG(i->type))
			i->plain_opens++;
		pthread_mutex_unlock(&m->fs->lock);
	}
	if (lost > 0)
		fs_log(m->fs, FS_LOG_WARN, "%s: %u open files could not be found again",
		       m->mountpoint, lost);
}

/* The underlying mounts handles name, as the previous server had them */
static void restore_mount_fds(struct fs_mount *m, struct handed_mount *hm)
{
	uint32_t k, n = m->tab.hdr->nmount_ids;

	m->mount_fds = calloc(n > 0 ? n : 1, sizeof *m->mount_fds);
	m->mount_ids = calloc(n > 0 ? n : 1, sizeof *m->mount_ids);
	if (m->mount_fds == NULL || m->mount_ids == NULL)
		return;
	for (k = 0; k < n; k++) {
		m->mount_ids[k] = m->tab.hdr->mount_ids[k];
		m->mount_fds[k] = hm->mnt[k];
		hm->mnt[k] = -1;
	}
	m->nmount_fds = n;
}

/*
 * The rest of what names the mount taken over (mount_learn), from its root
 * at its mount point, where hdr_unusable found the id: asks the server
 * nothing (AT_STATX_DONT_SYNC), as no one serves it yet.
 */
static void adopt_learn(struct fs_mount *m)
{
	struct statx stx;
	int fd = open(m->mountpoint, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id == m->mnt_id)
		mount_learn(m, fd);
	close(fd);
}

/* The serving part of fs_adopt, on a mount whose table is mapped */
static int adopt_serve(struct fs *fs, struct fs_mount *m, struct handed_mount *hm,
		       const struct fs_mount_params *p, const struct mount_opts *o,
		       struct fs_error *err)
{
	struct fuse_out_header resend = {.len = sizeof resend, .error = NOTIFY_RESEND};
	int rootfd, r;

	restore_mount_fds(m, hm);
	rootfd = openat(hm->root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		fs_seterr(err, errno, "source %s: %s", p->source, strerror(errno));
		return -errno;
	}
	if ((r = excl_take(m, rootfd, true, err)) != 0) {
		close(rootfd);
		return r;
	}
	if ((r = mount_prepare(m, rootfd, p, o, err)) != 0)
		return r;
	m->mnt_id = m->tab.hdr->mnt_id;
	adopt_learn(m);
	m->kattrs = m->tab.hdr->kattrs;
	m->fuse_fd = hm->fuse;
	hm->fuse = -1;
	m->dev_fd = hm->clone; /* its reader reads the same clone: no new one per restart */
	hm->clone = -1;
	if (mount_session_attach(m) != 0) {
		fs_seterr(err, EIO, "cannot attach the FUSE session to /dev/fuse");
		return -EIO;
	}
	if (m->tab.hdr->ring_len != 0) { /* served over io_uring: its arena first (uring-keep.c) */
		const char *why = uring_adopt(m, hm->ring);

		hm->ring = -1;
		if (why != NULL) {
			fs_seterr(err, EPROTO, "%s", why);
			return -EPROTO;
		}
	}
	if ((r = replay_init(m, err)) != 0 || (r = restore_nodes(m, err)) != 0)
		return r;
	restore_fhs(m, hm);
	journal_adopt(m);
	m->kept = true;
	m->adopted = true;
	m->tab.hdr->restarts++;
	if ((m->tab.hdr->flags & TH_RESEND) &&
	    write(m->fuse_fd, &resend, sizeof resend) != (ssize_t)sizeof resend)
		fs_log(fs, FS_LOG_WARN, "%s: FUSE_NOTIFY_RESEND: %s", m->mountpoint,
		       strerror(errno));
	if ((r = fs_attach(fs, m, err)) == 0)
		uring_start(m); /* its entries taken over, its queues poked */
	return r;
}

/*
 * A table of version 1 (an older agentfsd's, at an upgrade): converted
 * into a new memfd (noderec.c), which replaces the old one in the fd store
 * under its name, so a later server finds this version's. The keeper
 * replaces it in one step: a server killed at any point leaves the old
 * table there or the new one, and the next converts again or takes the
 * new. systemd's store takes two (the old let go of, the new added): a
 * server killed between them leaves the mount without a table there, and
 * the next one ends it and mounts afresh.
 */
static int adopt_convert(struct fs *fs, struct handed_mount *hm, struct fs_error *err)
{
	char name[64];
	int fd;

	if (hm->hdr->version != 1)
		return 0;
	fd = table_convert_v1(hm->table);
	if (fd < 0) {
		fs_seterr(err, -fd, "cannot convert its table of version 1: %s", strerror(-fd));
		return fd;
	}
	set_fd(&hm->table, fd);
	if (fs->p.keep != NULL) {
		/* lent, as keep_mount's: open at that number until unkept (fs_adopt's fail too) */
		snprintf(name, sizeof name, "m%016" PRIx64 ".table", hm->key);
		hm->converted = true;
		if (fs->p.keep(fs->p.keep_arg, name, fd, FS_KEEP_REPLACE) != 0)
			fs_log(fs, FS_LOG_WARN, "%s: cannot keep its converted table for a restart",
			       hm->hdr->mountpoint);
	}
	fs_log(fs, FS_LOG_INFO, "%s: its table converted from version 1", hm->hdr->mountpoint);
	return 0;
}

int fs_adopt(struct fs *fs, struct fs_handover *h, const struct fs_mount_params *p,
	     struct fs_mount **out, struct fs_error *err)
{
	struct mount_opts o = {.timeout = fs->p.timeout, .poll_us = fs->p.poll_us};
	struct handed_mount *hm = NULL;
	struct fs_mount *m = NULL;
	const char *why;
	struct stat st;
	size_t k;
	int r;

	*out = NULL;
	if (h == NULL)
		return -ENOENT;
	pthread_mutex_lock(&h->lock);
	for (k = 0; k < h->n && hm == NULL; k++)
		if (!h->v[k].done && h->v[k].hdr != NULL &&
		    strcmp(h->v[k].hdr->mountpoint, p->mountpoint) == 0)
			hm = &h->v[k];
	if (hm != NULL)
		hm->done = true; /* this call's alone from here */
	pthread_mutex_unlock(&h->lock);
	if (hm == NULL)
		return -ENOENT;
	if ((why = hdr_unusable(hm, p)) != NULL) {
		fs_seterr(err, EPROTO, "cannot take over %s: %s", p->mountpoint, why);
		r = -EPROTO;
		goto fail;
	}
	if ((r = mount_parse_options(p->options, &o, err)) != 0)
		goto fail;
	/*
	 * Passthrough as the mount had it, whatever the options say now (the
	 * daemon's "passthrough" may have changed): it is in the INIT reply the
	 * kernel holds, which the replay must give again byte for byte.
	 */
	o.nopassthrough = !(hm->hdr->flags & TH_PASSTHROUGH);
	if (fstat(hm->root, &st) != 0 || (m = mount_new(fs, p, &o, st.st_dev)) == NULL) {
		fs_seterr(err, ENOMEM, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	/* counted in its bot's groups as a fresh mount is, or refused as one */
	if ((r = mount_groups(m, p, err)) != 0)
		goto fail;
	if ((r = adopt_convert(fs, hm, err)) != 0)
		goto fail;
	if ((r = table_map(m, hm->table)) != 0) {
		fs_seterr(err, -r, "cannot map the table of %s: %s", p->mountpoint, strerror(-r));
		goto fail;
	}
	hm->table = -1; /* the mount's now */
	if ((r = adopt_serve(fs, m, hm, p, &o, err)) != 0)
		goto fail;
	/* kept files of handles released since: the store lets go of them too */
	for (k = 0; k < hm->nfhs; k++) {
		char name[64];

		if (hm->fhs[k].fd < 0 || fs->p.unkeep == NULL)
			continue;
		snprintf(name, sizeof name, "m%016" PRIx64 ".fh%" PRIx64, hm->key, hm->fhs[k].fh);
		fs->p.unkeep(fs->p.keep_arg, name);
	}
	handed_close(hm);
	*out = m;
	return 0;
fail:
	if (m != NULL) {
		m->kept = false; /* the store's copies go below, by name */
		if (hm->converted && hm->table < 0 && fs->p.unkeep != NULL) {
			char name[64]; /* the new table is the mount's: unkept before it is closed */

			snprintf(name, sizeof name, "m%016" PRIx64 ".table", hm->key);
			fs->p.unkeep(fs->p.keep_arg, name);
		}
		fs_mount_free(m);
	}
	handed_end(fs, hm);
	return r;
}
