/* SPDX-License-Identifier: MIT */
/*
 * The node records of a mount's table memfd (table-rec.h), and the
 * conversion of a table an older agentfsd made.
 *
 * A record is 128 bytes, so a first git status that makes a node a file
 * touches a fresh page of records every 32 nodes (it was every 8 with the
 * 512-byte records of version 1, each page's first store some microseconds
 * in a VM). A node's file handle and name are in its record when both fit,
 * else both in an overflow record of their own area of the memfd, taken
 * from a free list as handle slots are. Whatever is in the record is
 * written while the record is unpublished (gen 0), or while ovf names an
 * overflow record already complete: a live record changes from one whole
 * handle-and-name to another by the one store of ovf, so a server killed
 * at any instant leaves either the old pair or the new one (table.c's rule).
 * The free list is this process's: a new server builds it again from the
 * records that name overflow records (table_ovf_rebuild), so one written
 * and never named by a record (killed before its switch) is not lost.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

_Static_assert(sizeof(struct node_rec) == 128, "node records are 128 bytes");
_Static_assert(sizeof(struct fh_rec) == 32, "handle records are 32 bytes");
_Static_assert(sizeof(struct table_hdr) <= TABLE_HDR_SIZE, "the header fits its room");
_Static_assert(HANDLE_MAX <= UINT8_MAX && TABLE_MOUNTS <= INT8_MAX, "the record's fields hold them");

/* The layout this binary writes, in a header */
static void hdr_layout(struct table_hdr *h)
{
	memcpy(h->magic, TABLE_MAGIC, sizeof h->magic);
	h->version = TABLE_VERSION;
	h->hdr_size = TABLE_HDR_SIZE;
	h->node_rec_size = sizeof(struct node_rec);
	h->fh_rec_size = sizeof(struct fh_rec);
	h->node_base = NODE_BASE;
	h->fh_base = FH_BASE;
	h->size = TABLE_SIZE;
	h->ovf_base = OVF_BASE;
	h->ovf_rec_size = sizeof(struct node_ovf);
}

/*
 * A new table memfd, sized once and sparse, mapped whole, its header's
 * layout written. Without a memfd (out of descriptors, say) the records go
 * to anonymous memory: the mount works, but cannot be handed over.
 */
int table_create(struct mtable *t)
{
	t->memfd = memfd_create("agentfs-table", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (t->memfd >= 0 && (ftruncate(t->memfd, (off_t)TABLE_SIZE) != 0 ||
			      fcntl(t->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)) {
		close(t->memfd);
		t->memfd = -1;
	}
	t->map = mmap(NULL, TABLE_SIZE, PROT_READ | PROT_WRITE,
		      t->memfd >= 0 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
		      t->memfd, 0);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		if (t->memfd >= 0)
			close(t->memfd);
		t->memfd = -1;
		return -ENOMEM;
	}
	t->hdr = (struct table_hdr *)t->map;
	hdr_layout(t->hdr);
	t->ovf_hwm = t->hdr->ovf_hwm = 1; /* 0 means none */
	t->ovf_free = 0;
	return 0;
}

struct node_rec *table_rec(const struct mtable *t, uint32_t idx)
{
	return (struct node_rec *)(t->map + NODE_BASE) + idx;
}

static struct node_ovf *table_ovf(const struct mtable *t, uint32_t idx)
{
	return (struct node_ovf *)(t->map + OVF_BASE) + idx;
}

/* A free overflow record (fs->lock held), 0: none left */
static uint32_t ovf_get(struct mtable *t)
{
	uint32_t k = t->ovf_free;

	if (k != 0) {
		t->ovf_free = table_ovf(t, k)->free_next;
		return k;
	}
	if (t->ovf_hwm >= OVF_COUNT)
		return 0;
	k = t->ovf_hwm++;
	t->hdr->ovf_hwm = t->ovf_hwm; /* before any record names it */
	return k;
}

static void ovf_put(struct mtable *t, uint32_t k)
{
	table_ovf(t, k)->free_next = t->ovf_free;
	t->ovf_free = k;
}

static void put_inline(struct node_rec *r, const struct rec_names *n, size_t len)
{
	r->handle_type = n->handle_type;
	r->handle_bytes = n->handle_bytes;
	r->mount_idx = n->mount_idx;
	memcpy(r->in, n->handle, n->handle_bytes);
	memcpy(r->in + n->handle_bytes, n->name, len);
	r->in[n->handle_bytes + len] = '\0';
}

static void put_ovf(struct node_ovf *o, const struct rec_names *n, size_t len)
{
	o->handle_type = n->handle_type;
	o->handle_bytes = n->handle_bytes;
	o->mount_idx = n->mount_idx;
	memcpy(o->handle, n->handle, n->handle_bytes);
	memcpy(o->name, n->name, len);
	o->name[len] = '\0';
}

/*
 * Record n as r's handle and name (fs->lock held). An unpublished record
 * (gen 0) is written in place; a live one switches to an overflow record
 * written whole first, and back into the record the same way when the new
 * pair fits it. Out of overflow records (not with one a node), the node
 * is recorded with neither: a new server answers ESTALE for it.
 */
void rec_names_set(struct mtable *t, struct node_rec *r, const struct rec_names *n)
{
	size_t len = n->name_cut ? 0 : strnlen(n->name, sizeof n->name - 1);
	bool fits = n->handle_bytes + len + 1 <= NR_INLINE, live = r->gen != 0;
	uint32_t old = r->ovf, o;
	bool ok = true;

	if (n->name_cut)
		r->flags |= NR_NAME_CUT; /* before any switch: no name is read meanwhile */
	atomic_signal_fence(memory_order_seq_cst);
	if (!live && fits) {
		put_inline(r, n, len);
		r->ovf = 0;
	} else if ((o = ovf_get(t)) != 0) {
		put_ovf(table_ovf(t, o), n, len);
		atomic_signal_fence(memory_order_seq_cst);
		r->ovf = o; /* the switch */
		atomic_signal_fence(memory_order_seq_cst);
		if (fits) { /* live: back into the record, now that nothing reads it */
			put_inline(r, n, len);
			atomic_signal_fence(memory_order_seq_cst);
			r->ovf = 0;
			atomic_signal_fence(memory_order_seq_cst);
			ovf_put(t, o);
		}
	} else {
		ok = false;
		r->flags |= NR_NAME_CUT | NR_NOHANDLE;
		atomic_signal_fence(memory_order_seq_cst);
		r->ovf = 0;
	}
	if (old != 0)
		ovf_put(t, old);
	atomic_signal_fence(memory_order_seq_cst);
	if (ok) {
		if (!n->name_cut)
			r->flags &= ~NR_NAME_CUT;
		r->flags &= ~NR_NOHANDLE;
	}
}

/* r's handle and name as recorded (restore.c; the unit test) */
void rec_names_get(const struct mtable *t, const struct node_rec *r, struct rec_names *n)
{
	const struct node_ovf *o;
	const unsigned char *h;
	const char *name;
	size_t room, len;
	uint8_t hb;

	n->handle_type = 0;
	n->handle_bytes = 0;
	n->mount_idx = -1;
	n->name_cut = true;
	n->name[0] = '\0';
	if (r->ovf != 0) {
		if (r->ovf >= t->hdr->ovf_hwm || r->ovf >= OVF_COUNT)
			return; /* not this table's: neither */
		o = table_ovf(t, r->ovf);
		n->handle_type = o->handle_type;
		n->mount_idx = o->mount_idx;
		hb = o->handle_bytes;
		h = o->handle;
		name = o->name;
		room = sizeof o->name;
		if (hb > HANDLE_MAX)
			return;
	} else {
		n->handle_type = r->handle_type;
		n->mount_idx = r->mount_idx;
		hb = r->handle_bytes;
		if (hb > NR_INLINE)
			return;
		h = r->in;
		name = (const char *)r->in + hb;
		room = NR_INLINE - hb;
	}
	if (!(r->flags & NR_NOHANDLE) && n->mount_idx >= 0 && n->mount_idx < TABLE_MOUNTS &&
	    hb > 0) {
		memcpy(n->handle, h, hb);
		n->handle_bytes = hb;
	} else {
		n->mount_idx = -1;
	}
	if (!(r->flags & (NR_NAME_CUT | NR_NOHANDLE)) && (len = strnlen(name, room)) < room) {
		memcpy(n->name, name, len + 1);
		n->name_cut = false;
	}
}

/* The node of r went (fs->lock held): the record is free first, then its overflow record */
void rec_gone(struct mtable *t, struct node_rec *r)
{
	uint32_t o;

	r->gen = 0;
	atomic_signal_fence(memory_order_seq_cst);
	if ((o = r->ovf) != 0) {
		r->ovf = 0;
		ovf_put(t, o);
	}
}

/*
 * A table taken over (restore.c, after its node count is known): the free
 * overflow records are those below its high mark no live record names.
 */
void table_ovf_rebuild(struct mtable *t)
{
	uint32_t hwm = t->hdr->ovf_hwm, k;
	struct node_rec *r;
	unsigned char *used;

	if (hwm == 0 || hwm > OVF_COUNT)
		hwm = t->hdr->ovf_hwm = hwm == 0 ? 1 : OVF_COUNT;
	t->ovf_hwm = hwm;
	t->ovf_free = 0;
	used = calloc(hwm / 8 + 1, 1);
	for (k = 1; k < t->node_hwm; k++) {
		r = table_rec(t, k);
		if (r->gen == 0)
			r->ovf = 0; /* a free slot's, left by a server killed in rec_gone */
		else if (r->ovf != 0 && r->ovf < hwm && used != NULL)
			used[r->ovf / 8] |= (unsigned char)(1u << (r->ovf % 8));
	}
	if (used == NULL)
		return; /* out of memory: new ones come from the high mark, the free ones lost */
	for (k = hwm - 1; k >= 1; k--)
		if (!(used[k / 8] & (1u << (k % 8))))
			ovf_put(t, k);
	free(used);
}

/*
 * Version 1 (agentfsd before the overflow records): 512-byte node records
 * with room for any handle and a 255-byte name, the handle records as now.
 * A table of it is converted when a new agentfsd takes its mount over.
 */
struct node_rec_v1 {
	uint32_t gen, flags;
	uint64_t dev, ino, nlookup, parent;
	int64_t birth_sec;
	uint32_t birth_nsec, type, cls;
	int32_t backing_id, mount_idx;
	uint32_t handle_bytes;
	int32_t handle_type;
	uint32_t nlink;
	unsigned char handle[HANDLE_MAX];
	char name[256];
	char pad[48];
};
_Static_assert(sizeof(struct node_rec_v1) == 512, "version 1's node records are 512 bytes");

#define V1_NODES (4096u * 1024u)
#define V1_FH_BASE ((uint64_t)TABLE_HDR_SIZE + (uint64_t)V1_NODES * sizeof(struct node_rec_v1))
#define V1_SIZE (V1_FH_BASE + (uint64_t)FH_CHUNKS * FH_CHUNK * sizeof(struct fh_rec))

bool table_v1_layout(const struct table_hdr *h)
{
	return h->version == 1 && h->hdr_size == TABLE_HDR_SIZE &&
	       h->node_rec_size == sizeof(struct node_rec_v1) &&
	       h->fh_rec_size == sizeof(struct fh_rec) && h->node_base == TABLE_HDR_SIZE &&
	       h->fh_base == V1_FH_BASE && h->size == V1_SIZE && h->node_hwm <= V1_NODES &&
	       h->node_hwm <= NODE_CHUNKS * NODE_CHUNK && h->fh_hwm <= FH_CHUNKS * FH_CHUNK;
}

/* Node record o of version 1 into r of this one, unpublished: the caller publishes it */
static void convert_node(struct mtable *t, struct node_rec *r, const struct node_rec_v1 *o)
{
	struct rec_names n = {.mount_idx = -1};

	r->flags = o->flags & (NR_BYNAME | NR_BIRTH | NR_SEALED | NR_NAME_CUT);
	r->dev = o->dev;
	r->ino = o->ino;
	r->nlookup = o->nlookup;
	r->parent = o->parent;
	r->birth_sec = o->birth_sec;
	r->birth_nsec = o->birth_nsec;
	r->cls = o->cls;
	r->backing_id = o->backing_id;
	r->nlink = o->nlink;
	r->type = (uint16_t)(o->type & S_IFMT);
	if (o->mount_idx >= 0 && o->mount_idx < TABLE_MOUNTS && o->handle_bytes > 0 &&
	    o->handle_bytes <= HANDLE_MAX) {
		n.handle_type = o->handle_type;
		n.handle_bytes = (uint8_t)o->handle_bytes;
		n.mount_idx = (int8_t)o->mount_idx;
		memcpy(n.handle, o->handle, o->handle_bytes);
	}
	n.name_cut = (o->flags & NR_NAME_CUT) || strnlen(o->name, sizeof o->name) == sizeof o->name;
	if (!n.name_cut)
		memcpy(n.name, o->name, strlen(o->name) + 1);
	rec_names_set(t, r, &n);
}

/*
 * The table of version 1 on oldfd, in a new memfd of this version: the
 * same header (its layout fields this version's), node records, handle
 * records. Returns the new memfd, or -errno; oldfd is left as it was.
 */
int table_convert_v1(int oldfd)
{
	struct mtable t = {.memfd = -1};
	const struct node_rec_v1 *o;
	const struct table_hdr *oh;
	struct node_rec *r;
	char *old;
	uint32_t k;
	int fd;

	old = mmap(NULL, V1_SIZE, PROT_READ, MAP_SHARED, oldfd, 0);
	if (old == MAP_FAILED)
		return -errno;
	oh = (const struct table_hdr *)old;
	if (memcmp(oh->magic, TABLE_MAGIC, sizeof oh->magic) != 0 || !table_v1_layout(oh)) {
		munmap(old, V1_SIZE);
		return -EPROTO;
	}
	if (table_create(&t) != 0 || t.memfd < 0) {
		if (t.map != NULL)
			munmap(t.map, TABLE_SIZE);
		munmap(old, V1_SIZE);
		return -ENOMEM;
	}
	memcpy(t.map, old, TABLE_HDR_SIZE);
	hdr_layout(t.hdr);
	t.hdr->ovf_hwm = 1;
	t.node_hwm = oh->node_hwm;
	o = (const struct node_rec_v1 *)(old + TABLE_HDR_SIZE);
	for (k = 1; k < oh->node_hwm; k++) {
		if (o[k].gen == 0)
			continue; /* a free slot: all zero here */
		r = table_rec(&t, k);
		convert_node(&t, r, &o[k]);
		r->gen = o[k].gen;
	}
	memcpy(t.map + FH_BASE, old + V1_FH_BASE, (size_t)oh->fh_hwm * sizeof(struct fh_rec));
	fd = t.memfd;
	munmap(t.map, TABLE_SIZE);
	munmap(old, V1_SIZE);
	return fd;
}
