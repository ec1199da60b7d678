/* SPDX-License-Identifier: MIT */
/*
 * The ids a mount gives the kernel, which the kernel keeps using for as
 * long as it holds the connection, whatever becomes of this process: node
 * ids and open file handles (fi->fh). Each is a slot of a chunked table and
 * the slot's generation (fs-int.h: node_of, fh_of), so a reused slot never
 * answers for an id the kernel dropped, and chunks never move, so a lookup
 * takes no lock.
 *
 * Each slot has a record in the mount's table memfd: what a new server
 * needs to serve the same id (restore.c). The memfd is a shared mapping,
 * so a record is written with plain stores, no syscall, under fs->lock and
 * before the reply that gives the id out; a server killed at any moment
 * leaves records the kernel's ids can be served from (a node it made but
 * never told the kernel of is only a leak). The memfd is sized once,
 * sparse: pages are used only as records are written.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/random.h>

/*
 * LeakSanitizer scans the heap, not anonymous mappings: under it the first
 * inode chunk is on the heap, and the later ones are roots of their own,
 * or a server that exits with its nodes (a handover) would be said to leak
 * every name and handle they point to. (Not the first as a root too: it
 * reads the process's mappings for each root at every exit, seconds for a
 * daemon of 50 mounts.)
 */
#if defined(__SANITIZE_ADDRESS__)
#define LSAN_ROOTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LSAN_ROOTS 1
#endif
#endif
#ifdef LSAN_ROOTS
#include <sanitizer/lsan_interface.h>
#define root_region(p, n) __lsan_register_root_region(p, n)
#define root_region_gone(p, n) __lsan_unregister_root_region(p, n)
#define CHUNK0_ON_HEAP 1
#else
#define root_region(p, n) ((void)(p), (void)(n))
#define root_region_gone(p, n) ((void)(p), (void)(n))
#define CHUNK0_ON_HEAP 0
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define POPULATE_NODES 256u /* node slots made present at once, at most: 190 KiB */

_Static_assert((size_t)NODE_CHUNK * sizeof(struct inode) <= NODE_CHUNK_MAP,
	       "a chunk of inodes fits a huge page");

/* What a stale or unknown fh names: every call on it fails with EBADF. */
struct fh_ent fh_none = {.fd = -1};

/*
 * The inodes of node slots are in chunks of NODE_CHUNK: the first an
 * anonymous mapping of its size, its pages made as nodes are, so an idle
 * mount holds little; every later one a 2 MB huge page where transparent
 * huge pages are allowed (madvise, Debian's default), so a first git
 * status does not pay a page's first touch every 16 nodes (some
 * microseconds each in a VM, bench/README.md). Where they are off, it is
 * only memory.
 */
static size_t node_chunk_len(unsigned k)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return k == 0 ? ((size_t)NODE_CHUNK * sizeof(struct inode) + page - 1) & ~(page - 1)
		      : NODE_CHUNK_MAP;
}

static struct inode *node_chunk_new(unsigned k)
{
	size_t len = node_chunk_len(k), lead;
	char *p;

	if (k == 0 && CHUNK0_ON_HEAP)
		return calloc(NODE_CHUNK, sizeof(struct inode));
	p = mmap(NULL, k == 0 ? len : 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (k == 0)
		return (struct inode *)p;
	/* 2 MB aligned: the part before and the part after go back */
	lead = (NODE_CHUNK_MAP - ((uintptr_t)p & (NODE_CHUNK_MAP - 1))) & (NODE_CHUNK_MAP - 1);
	if (lead > 0)
		munmap(p, lead);
	munmap(p + lead + len, len - lead);
	madvise(p + lead, len, MADV_HUGEPAGE);
	root_region(p + lead, len);
	return (struct inode *)(p + lead);
}

static void node_chunk_free(unsigned k, struct inode *c)
{
	if (c == NULL)
		return;
	if (k == 0 && CHUNK0_ON_HEAP) {
		free(c);
		return;
	}
	if (k > 0)
		root_region_gone(c, node_chunk_len(k));
	munmap(c, node_chunk_len(k));
}

/* A new mount's tables (the memfd's layout: noderec.c) */
int table_init(struct fs_mount *m, struct fs_error *err)
{
	struct mtable *t = &m->tab;

	t->nodes = calloc(NODE_CHUNKS, sizeof *t->nodes);
	t->fhs = calloc(FH_CHUNKS, sizeof *t->fhs);
	if (t->nodes == NULL || t->fhs == NULL || table_create(t) != 0) {
		table_free(m);
		fs_seterr(err, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	if (getrandom(&t->hdr->key, sizeof t->hdr->key, GRND_NONBLOCK) != sizeof t->hdr->key)
		t->hdr->key =
			(uint64_t)(uintptr_t)m ^ (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
	/* slot 0 is never used: id 0 means none */
	t->node_hwm = t->fh_hwm = t->hdr->node_hwm = t->hdr->fh_hwm = 1;
	return 0;
}

/* Adopt a handed-over memfd (restore.c): mapped whole, its sizes checked by the caller */
int table_map(struct fs_mount *m, int memfd)
{
	struct mtable *t = &m->tab;

	t->memfd = memfd;
	t->map = mmap(NULL, TABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	t->nodes = calloc(NODE_CHUNKS, sizeof *t->nodes);
	t->fhs = calloc(FH_CHUNKS, sizeof *t->fhs);
	if (t->map == MAP_FAILED || t->nodes == NULL || t->fhs == NULL) {
		if (t->map == MAP_FAILED)
			t->map = NULL;
		t->memfd = -1; /* the caller's still */
		table_free(m);
		return -ENOMEM;
	}
	t->hdr = (struct table_hdr *)t->map;
	return 0;
}

void table_free(struct fs_mount *m)
{
	struct mtable *t = &m->tab;
	unsigned c;

	if (t->nodes != NULL)
		for (c = 0; c < NODE_CHUNKS; c++)
			node_chunk_free(c, atomic_load(&t->nodes[c]));
	if (t->fhs != NULL)
		for (c = 0; c < FH_CHUNKS; c++)
			free(atomic_load(&t->fhs[c]));
	free(t->nodes);
	free(t->fhs);
	t->nodes = NULL;
	t->fhs = NULL;
	if (t->map != NULL)
		munmap(t->map, TABLE_SIZE);
	t->map = NULL;
	t->hdr = NULL;
	if (t->memfd >= 0)
		close(t->memfd);
	t->memfd = -1;
}

/* The kernel mount is made: what it is, for a server that adopts it */
void table_mounted(struct fs_mount *m)
{
	struct table_hdr *h = m->tab.hdr;

	h->mnt_id = m->mnt_id;
	h->kattrs = m->kattrs;
	h->mounted_at = time(NULL);
	snprintf(h->source, sizeof h->source, "%s", m->source);
	snprintf(h->mountpoint, sizeof h->mountpoint, "%s", m->mountpoint);
}

/* The underlying mount number idx of the source has this id (fs->lock held) */
void table_mount_seen(struct fs_mount *m, size_t idx, int mount_id)
{
	if (idx >= TABLE_MOUNTS)
		return;
	m->tab.hdr->mount_ids[idx] = mount_id;
	m->tab.hdr->nmount_ids = (uint32_t)idx + 1;
}

/* INIT as the kernel sent it (the bytes after its header) */
void table_init_in(struct fs_mount *m, const void *in, size_t len)
{
	struct table_hdr *h = m->tab.hdr;

	const uint32_t *w = in; /* major, minor, max_readahead, flags, flags2 */

	h->init_in_len = len < sizeof h->init_in ? (uint32_t)len : sizeof h->init_in;
	memcpy(h->init_in, in, h->init_in_len);
	/* FUSE_HAS_RESEND, flag 39: flags2 bit 7 behind FUSE_INIT_EXT (flag 30), kernel 6.9 */
	if (len >= 5 * sizeof *w && (w[3] & (1u << 30)) && (w[4] & (1u << 7)))
		h->flags |= TH_RESEND;
}

/* INIT's reply, as the kernel took it: iov[0] is its header */
void table_init_out(struct fs_mount *m, const struct iovec *iov, int count)
{
	struct table_hdr *h = m->tab.hdr;
	size_t n = 0, k;
	int v;

	for (v = 1; v < count; v++) {
		k = iov[v].iov_len;
		if (k > sizeof h->init_out - n)
			k = sizeof h->init_out - n;
		memcpy(h->init_out + n, iov[v].iov_base, k);
		n += k;
	}
	h->init_out_len = (uint32_t)n;
	h->flags |= TH_INIT | (atomic_load(&m->passthrough) ? TH_PASSTHROUGH : 0);
}

static void repo_note(void *arg, uint64_t dev, uint64_t ino, const char *path)
{
	struct table_hdr *h = arg;
	struct table_repo *r;

	if (h->nbot_repos >= TABLE_REPOS || path == NULL || strlen(path) >= sizeof r->path)
		return;
	r = &h->bot_repos[h->nbot_repos];
	r->dev = dev;
	r->ino = ino;
	strcpy(r->path, path);
	h->nbot_repos++;
}

/*
 * The repositories the bot made, as the guard has them now, for a server
 * that takes the mount over (mount.c gives them to its guard before the
 * scan); a server killed while this runs leaves a shorter list, as before.
 */
void table_bot_repos(struct fs_mount *m)
{
	m->tab.hdr->nbot_repos = 0;
	atomic_signal_fence(memory_order_seq_cst);
	guard_new_repos(m->guard, repo_note, m->tab.hdr);
}

struct node_rec *node_rec(struct fs_mount *m, const struct inode *i)
{
	return table_rec(&m->tab, i->idx);
}

struct fh_rec *fh_rec(struct fs_mount *m, uint32_t idx)
{
	return (struct fh_rec *)(m->tab.map + FH_BASE) + idx;
}

/*
 * Make len bytes at p present in one call rather than a fault a page, for
 * memory about to be written one record at a time. A page fault is dear in
 * a VM: 12-15 us a page on the 2-vCPU machine of bench/README.md, where
 * MADV_POPULATE_WRITE takes 1-1.6 us a page and the first touch after it
 * 5-6 us; and a first git status after a mount makes a node per file, two
 * pages touched every 8 to 16 of them. Best effort: a kernel before 5.14
 * says EINVAL, and the pages fault in as before.
 */
static void populate(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(page - 1), e = ((uintptr_t)p + len + page - 1) & ~(page - 1);

	madvise((void *)a, e - a, MADV_POPULATE_WRITE);
}

/*
 * Node slot idx, the first not present yet (fs->lock held): the next ones,
 * as many as are made already (16 at least, 256 at most), are made present
 * at once, their records and their inodes within idx's chunk. So a mount
 * holds at most twice the nodes' memory it uses, and an idle one little.
 */
static void node_populate(struct mtable *t, uint32_t idx, struct inode *i)
{
	uint32_t n = idx < 16 ? 16 : idx > POPULATE_NODES ? POPULATE_NODES : idx;
	uint32_t in_chunk = NODE_CHUNK - (idx & (NODE_CHUNK - 1));

	if (n > in_chunk)
		n = in_chunk; /* the chunk ends there; records too (NODE_CHUNKS * NODE_CHUNK) */
	populate((struct node_rec *)(t->map + NODE_BASE) + idx, (size_t)n * sizeof(struct node_rec));
	populate(i, (size_t)n * sizeof *i);
	t->node_ready = idx + n;
}

/* The slot idx of a chunked table, its chunk made if need be; NULL: out of memory */
static void *slot(void *_Atomic *chunks, uint32_t idx, unsigned shift, size_t size)
{
	char *c = atomic_load_explicit(&chunks[idx >> shift], memory_order_relaxed);

	if (c == NULL) {
		c = calloc((size_t)1 << shift, size);
		if (c == NULL)
			return NULL;
		atomic_store_explicit(&chunks[idx >> shift], c, memory_order_release);
	}
	return c + (idx & ((1u << shift) - 1)) * size;
}

/* Slot idx of the node table, its chunk made if need be; NULL: out of memory */
static struct inode *node_slot(struct mtable *t, uint32_t idx)
{
	unsigned k = idx >> NODE_SHIFT;
	struct inode *c = atomic_load_explicit(&t->nodes[k], memory_order_relaxed);

	if (c == NULL) {
		if ((c = node_chunk_new(k)) == NULL)
			return NULL;
		atomic_store_explicit(&t->nodes[k], c, memory_order_release);
	}
	return c + (idx & (NODE_CHUNK - 1));
}

/* Slot idx of the node table, or of the handle table, made if need be (restore.c) */
struct inode *node_at(struct fs_mount *m, uint32_t idx)
{
	return idx < NODE_CHUNKS * NODE_CHUNK ? node_slot(&m->tab, idx) : NULL;
}

struct fh_ent *fh_at(struct fs_mount *m, uint32_t idx)
{
	return idx < FH_CHUNKS * FH_CHUNK ? slot(m->tab.fhs, idx, FH_SHIFT, sizeof(struct fh_ent))
					  : NULL;
}

/* The slot idx of a chunked table if its chunk exists, else NULL */
static void *slot_find(void *_Atomic *chunks, uint32_t idx, unsigned shift, unsigned nchunks)
{
	char *c;

	if (idx >> shift >= nchunks ||
	    (c = atomic_load_explicit(&chunks[idx >> shift], memory_order_acquire)) == NULL)
		return NULL;
	return c;
}

/*
 * A new node, zeroed but for its slot and generation (fs->lock held); its
 * record is written by node_rec_fill() once the caller filled it in.
 * NULL: out of memory, or the table is full (4M nodes).
 */
struct inode *node_new(struct fs_mount *m)
{
	struct mtable *t = &m->tab;
	struct inode *i;
	uint32_t idx, gen;

	if (t->node_free != 0) {
		idx = t->node_free;
		i = node_slot(t, idx);
		t->node_free = i->free_next;
	} else {
		if (t->node_hwm >= NODE_CHUNKS * NODE_CHUNK)
			return NULL;
		idx = t->node_hwm;
		i = node_slot(t, idx);
		if (i == NULL)
			return NULL;
		if (idx >= t->node_ready)
			node_populate(t, idx, i);
		t->node_hwm++;
		t->hdr->node_hwm = t->node_hwm;
	}
	gen = atomic_load_explicit(&i->gen, memory_order_relaxed) + 1;
	memset(i, 0, sizeof *i);
	i->idx = idx;
	atomic_store_explicit(&i->gen, gen != 0 ? gen : 1, memory_order_relaxed);
	i->used = true;
	i->fd = -1;
	return i;
}

/* The kernel forgot i: its slot goes back, its generation moves on (fs->lock held) */
void node_gone(struct fs_mount *m, struct inode *i)
{
	rec_gone(&m->tab, node_rec(m, i));
	i->used = false;
	atomic_store_explicit(&i->gen, atomic_load_explicit(&i->gen, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	i->free_next = m->tab.node_free;
	m->tab.node_free = i->idx;
}

/* Its handle and name into the record, as the inode has them now (fs->lock held) */
static void node_rec_names(struct fs_mount *m, struct inode *i, struct node_rec *r)
{
	struct rec_names n = {.mount_idx = -1};
	size_t len = i->name != NULL ? strlen(i->name) : 0;

	if (i->handle != NULL && i->handle->handle_bytes > 0 &&
	    i->handle->handle_bytes <= HANDLE_MAX && i->mount_fd_idx >= 0 &&
	    i->mount_fd_idx < TABLE_MOUNTS) {
		n.handle_type = i->handle->handle_type;
		n.handle_bytes = (uint8_t)i->handle->handle_bytes;
		n.mount_idx = (int8_t)i->mount_fd_idx;
		memcpy(n.handle, i->handle->f_handle, n.handle_bytes);
	}
	n.name_cut = len >= sizeof n.name;
	if (!n.name_cut)
		memcpy(n.name, i->name != NULL ? i->name : "", len + 1);
	rec_names_set(&m->tab, r, &n);
	if (n.mount_idx >= 0)
		r->flags &= ~NR_BYNAME;
}

/* Its folder and name, as inode_set_parent() changed them (fs->lock held) */
void node_rec_place(struct fs_mount *m, struct inode *i)
{
	struct node_rec *r = node_rec(m, i);

	r->parent = i->parent != NULL ? node_id(m, i->parent) : 0;
	node_rec_names(m, i, r);
}

/* Its file handle, made now (fs->lock held) */
void node_rec_handle(struct fs_mount *m, struct inode *i)
{
	struct node_rec *r = node_rec(m, i);

	node_rec_names(m, i, r);
}

/* The whole record of a node just made (fs->lock held); its generation last */
void node_rec_fill(struct fs_mount *m, struct inode *i)
{
	struct node_rec *r = node_rec(m, i);

	r->gen = 0;
	atomic_signal_fence(memory_order_seq_cst);
	r->flags = (i->byname ? NR_BYNAME : 0) | (i->birth.known ? NR_BIRTH : 0) |
		   (i->sealed ? NR_SEALED : 0);
	r->dev = i->dev;
	r->ino = i->ino;
	r->nlookup = i->nlookup;
	r->birth_sec = i->birth.sec;
	r->birth_nsec = i->birth.nsec;
	r->type = (uint16_t)i->type;
	r->cls = i->cls;
	r->backing_id = i->backing_id;
	r->nlink = (uint32_t)i->nlink;
	r->parent = i->parent != NULL ? node_id(m, i->parent) : 0;
	node_rec_names(m, i, r);
	/* no store above may move past this one: a process killed here leaves a free slot */
	atomic_signal_fence(memory_order_seq_cst);
	r->gen = atomic_load_explicit(&i->gen, memory_order_relaxed);
	/*
	 * The inode's generation again, with release: node_of() finds it by
	 * that, with no lock, and its callers read what never changes (type,
	 * dev, ino) unlocked. The id reaches them through the kernel, an order
	 * ThreadSanitizer cannot see (as fh_new).
	 */
	atomic_store_explicit(&i->gen, r->gen, memory_order_release);
}

/*
 * An open handle of i on fd, recorded before the open's reply: its fh, or
 * 0 when out of memory or the table is full.
 */
uint64_t fh_new(struct fs_mount *m, struct inode *i, int fd, uint32_t flags, int open_flags)
{
	struct mtable *t = &m->tab;
	struct fh_ent *f = NULL;
	struct fh_rec *r;
	uint32_t idx = 0, gen;

	pthread_mutex_lock(&m->fs->lock);
	if (t->fh_free != 0) {
		idx = t->fh_free;
		f = slot(t->fhs, idx, FH_SHIFT, sizeof *f);
		t->fh_free = f->free_next;
	} else if (t->fh_hwm < FH_CHUNKS * FH_CHUNK &&
		   (f = slot(t->fhs, t->fh_hwm, FH_SHIFT, sizeof *f)) != NULL) {
		idx = t->fh_hwm++;
		t->hdr->fh_hwm = t->fh_hwm;
	}
	if (f == NULL) {
		pthread_mutex_unlock(&m->fs->lock);
		return 0;
	}
	gen = atomic_load_explicit(&f->gen, memory_order_relaxed) + 1;
	atomic_store_explicit(&f->gen, gen != 0 ? gen : 1, memory_order_relaxed);
	f->fd = fd;
	f->i = i;
	f->flags = flags;
	f->open_flags = open_flags;
	/*
	 * The same generation again, now with release: a thread that finds the
	 * handle by it (fh_of, no lock) reads these fields. The fh reaches it
	 * through the kernel (this reply, its next request), an order the
	 * hardware keeps but ThreadSanitizer cannot see; this one it can.
	 */
	atomic_store_explicit(&f->gen, atomic_load_explicit(&f->gen, memory_order_relaxed),
			      memory_order_release);
	r = fh_rec(m, idx);
	r->flags = flags;
	r->node = node_id(m, i);
	r->open_flags = open_flags;
	atomic_signal_fence(memory_order_seq_cst); /* the generation last, as in node_rec_fill */
	r->gen = gen = atomic_load_explicit(&f->gen, memory_order_relaxed);
	pthread_mutex_unlock(&m->fs->lock);
	return (uint64_t)gen << 32 | idx;
}

/* fh's entry while it is open, or NULL (fs->lock held) */
static struct fh_ent *fh_find(struct fs_mount *m, uint64_t fh)
{
	uint32_t idx = (uint32_t)fh;
	struct fh_ent *f;

	if (idx == 0 || (f = slot_find(m->tab.fhs, idx, FH_SHIFT, FH_CHUNKS)) == NULL)
		return NULL;
	f += idx & (FH_CHUNK - 1);
	if (atomic_load_explicit(&f->gen, memory_order_relaxed) != (uint32_t)(fh >> 32))
		return NULL;
	return f;
}

/* fh is released: its slot goes back (its fd is the caller's to close) */
void fh_gone(struct fs_mount *m, uint64_t fh)
{
	uint32_t idx = (uint32_t)fh;
	struct fh_ent *f;

	pthread_mutex_lock(&m->fs->lock);
	if ((f = fh_find(m, fh)) != NULL) {
		fh_rec(m, idx)->gen = 0;
		atomic_fetch_add_explicit(&f->gen, 1, memory_order_relaxed);
		f->fd = -1;
		f->i = NULL;
		f->free_next = m->tab.fh_free;
		m->tab.fh_free = idx;
	}
	pthread_mutex_unlock(&m->fs->lock);
}

/* fh's descriptor is held by the fd store too (fs->lock not held) */
void fh_set_kept(struct fs_mount *m, uint64_t fh)
{
	uint32_t idx = (uint32_t)fh;
	struct fh_ent *f;

	pthread_mutex_lock(&m->fs->lock);
	if ((f = fh_find(m, fh)) != NULL) {
		f->flags |= FHF_KEPT;
		fh_rec(m, idx)->flags = f->flags;
	}
	pthread_mutex_unlock(&m->fs->lock);
}

/*
 * The table is open addressing with linear probing over slots that hold
 * the inode number beside the pointer: a lookup of a name the table does
 * not hold yet (every file of a first git status) reads one or two slots
 * in one cache line and no inode. Chained buckets cost two cache misses
 * there, the bucket and the inode, and inode_find was the largest
 * userland symbol of the server (2.6% of its time). Removal leaves a
 * tombstone; the table is rebuilt when live entries and tombstones fill
 * 3/4 of it, doubling if live entries alone fill half.
 */
#define TOMB ((struct inode *)1)

/*
 * Keyed with a random seed per table (splitmix64's finalizer): a bot that
 * makes and keeps files whose numbers land together cannot build a long
 * run of slots that every lookup under fs->lock then walks (red team,
 * round six: 197,000 creates gave a 49,152-slot cluster with the unkeyed
 * multiplicative hash).
 */
static size_t hash(uint64_t seed, dev_t dev, ino_t ino)
{
	uint64_t x = ((uint64_t)ino ^ seed) + (uint64_t)dev * 0x9e3779b97f4a7c15ull;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return (size_t)(x ^ (x >> 31));
}

void inode_table_init(struct inode_table *t)
{
	struct timespec ts;

	t->nslots = 1024;
	t->count = t->used = 0;
	t->slots = calloc(t->nslots, sizeof *t->slots);
	if (getrandom(&t->seed, sizeof t->seed, GRND_NONBLOCK) != sizeof t->seed) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t->seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)t ^
			  (uint64_t)getpid() << 32;
	}
}

static void slot_put(struct inode_slot *slots, size_t n, uint64_t seed, struct inode *i)
{
	size_t h = hash(seed, i->dev, i->ino) & (n - 1);

	while (slots[h].i != NULL && slots[h].i != TOMB)
		h = (h + 1) & (n - 1);
	slots[h].ino = i->ino;
	slots[h].i = i;
}

/* Rebuild without tombstones, twice as large if half full; false: out of memory */
static bool table_rebuild(struct inode_table *t)
{
	size_t n = t->count * 2 > t->nslots ? t->nslots * 2 : t->nslots, k;
	struct inode_slot *s = calloc(n, sizeof *s);

	if (s == NULL)
		return false;
	for (k = 0; k < t->nslots; k++)
		if (t->slots[k].i != NULL && t->slots[k].i != TOMB)
			slot_put(s, n, t->seed, t->slots[k].i);
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	t->used = t->count;
	return true;
}

/* Whether one more inode fits: the table is rebuilt first if it is 3/4 full */
bool inode_table_room(struct inode_table *t)
{
	if ((t->used + 1) * 4 <= t->nslots * 3)
		return true;
	return table_rebuild(t) || t->used + 1 < t->nslots;
}

/* After table_room() */
void inode_hash(struct inode_table *t, struct inode *i)
{
	slot_put(t->slots, t->nslots, t->seed, i);
	t->count++;
	t->used++; /* an upper bound: a tombstone taken again counts twice until the rebuild */
}

struct inode *inode_find(struct fs_mount *m, dev_t dev, ino_t ino)
{
	const struct inode_table *t = &m->table;
	size_t mask = t->nslots - 1, h = hash(t->seed, dev, ino) & mask;
	struct inode *i;

	if (m->root.dev == dev && m->root.ino == ino)
		return &m->root;
	for (; (i = t->slots[h].i) != NULL; h = (h + 1) & mask)
		if (t->slots[h].ino == ino && i != TOMB && i->dev == dev)
			return i;
	return NULL;
}

/* Take i out of the table (it may be out already: retired by inode_match) */
void inode_unhash(struct fs_mount *m, struct inode *i)
{
	struct inode_table *t = &m->table;
	size_t mask = t->nslots - 1, h = hash(t->seed, i->dev, i->ino) & mask;

	for (; t->slots[h].i != NULL; h = (h + 1) & mask) {
		if (t->slots[h].i == i) {
			t->slots[h].i = TOMB;
			t->count--;
			return;
		}
	}
}
