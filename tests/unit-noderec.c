/* SPDX-License-Identifier: MIT */
/*
 * The node records of a mount's table memfd (fusefs/noderec.c): a table of
 * version 1, as agentfsd made it before the 128-byte records, converted,
 * and every record read back; a live record switched between its inline
 * room and an overflow record; the overflow free list a new server builds.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "tests/guard-tap.h"

/* Version 1's node record, as the agentfsd of that version wrote it */
struct v1_rec {
	uint32_t gen, flags;
	uint64_t dev, ino, nlookup, parent;
	int64_t birth_sec;
	uint32_t birth_nsec, type, cls;
	int32_t backing_id, mount_idx;
	uint32_t handle_bytes;
	int32_t handle_type;
	uint32_t nlink;
	unsigned char handle[128];
	char name[256];
	char pad[48];
};

#define V1_NODES (4096u * 1024u)
#define V1_FH_BASE (65536ull + (uint64_t)V1_NODES * 512u)
#define V1_SIZE (V1_FH_BASE + 256ull * 4096u * 32u)
#define NNODES 3000u
#define NFHS 40u

static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

/* Node k's name: of every length 1-255 across the table, some exactly at the inline edge */
static void name_of(uint32_t k, uint32_t hb, char *buf)
{
	size_t len = k % 7 == 0 ? 1 + k % 255 : k % 5 == 0 ? NR_INLINE - 1 - hb : 1 + k % 30;
	size_t j;

	if (len == 0 || len > 255)
		len = 1;
	for (j = 0; j < len; j++)
		buf[j] = (char)('a' + (k + j) % 26);
	buf[len] = '\0';
}

static uint32_t handle_bytes_of(uint32_t k)
{
	static const uint32_t sizes[] = {0, 8, 12, 8, 12, 20, 40, 128, 8, 12};

	return sizes[k % 10];
}

/* A version 1 table with NNODES nodes (some free, some names cut) and NFHS open handles */
static int make_v1(void)
{
	int fd = memfd_create("unit-noderec-v1", MFD_CLOEXEC);
	struct table_hdr *h;
	struct v1_rec *r;
	struct fh_rec *f;
	char *map;
	uint32_t k, j;

	if (fd < 0 || ftruncate(fd, (off_t)V1_SIZE) != 0)
		return -1;
	map = mmap(NULL, V1_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -1;
	h = (struct table_hdr *)map;
	memcpy(h->magic, TABLE_MAGIC, sizeof h->magic);
	h->version = 1;
	h->hdr_size = TABLE_HDR_SIZE;
	h->node_rec_size = 512;
	h->fh_rec_size = 32;
	h->node_base = 65536;
	h->fh_base = V1_FH_BASE;
	h->size = V1_SIZE;
	h->node_hwm = NNODES;
	h->fh_hwm = NFHS;
	h->key = 0x1234abcd5678ef01ull;
	h->mnt_id = 77;
	h->flags = TH_INIT | TH_RESEND;
	h->init_in_len = 3;
	memcpy(h->init_in, "abc", 3);
	snprintf(h->source, sizeof h->source, "/src/dir");
	snprintf(h->mountpoint, sizeof h->mountpoint, "/mnt/point");
	r = (struct v1_rec *)(map + 65536);
	for (k = 1; k < NNODES; k++) {
		if (k % 11 == 0) { /* a free slot, its bytes left from a node that went */
			memset(&r[k], 0x5a, sizeof r[k]);
			r[k].gen = 0;
			continue;
		}
		r[k].gen = 1000 + k;
		r[k].flags = (k % 3 == 0 ? NR_BIRTH : 0) | (k % 4 == 0 ? NR_SEALED : 0);
		r[k].dev = 0x800 + k % 2;
		r[k].ino = 100000 + k;
		r[k].nlookup = k % 9 + 1;
		r[k].parent = k > 1 ? (uint64_t)(1000 + k / 2) << 32 | k / 2 : 1;
		r[k].birth_sec = 1700000000 + k;
		r[k].birth_nsec = k * 3;
		r[k].type = k % 6 == 0 ? S_IFDIR : S_IFREG;
		r[k].cls = k % 5;
		r[k].backing_id = k % 8 == 0 ? (int32_t)k : 0;
		r[k].nlink = k % 4 + 1;
		r[k].handle_bytes = handle_bytes_of(k);
		r[k].mount_idx = r[k].handle_bytes > 0 ? (int32_t)(k % 3) : -1;
		r[k].handle_type = r[k].handle_bytes > 0 ? 0x81 + (int32_t)(k % 2) : 0;
		for (j = 0; j < r[k].handle_bytes; j++)
			r[k].handle[j] = (unsigned char)rnd();
		if (k % 13 == 0) {
			r[k].flags |= NR_NAME_CUT;
			r[k].name[0] = '\0';
		} else {
			name_of(k, r[k].handle_bytes, r[k].name);
		}
	}
	f = (struct fh_rec *)(map + V1_FH_BASE);
	for (k = 1; k < NFHS; k++) {
		f[k].gen = k % 4 == 0 ? 0 : 500 + k;
		f[k].flags = k % 16;
		f[k].node = (uint64_t)(1000 + k) << 32 | k;
		f[k].open_flags = (int32_t)k;
	}
	munmap(map, V1_SIZE);
	return fd;
}

/* Every record of the converted table t against the v1 table at old */
static void check_converted(const struct mtable *t, const char *old)
{
	const struct v1_rec *o = (const struct v1_rec *)(old + 65536);
	const struct fh_rec *of = (const struct fh_rec *)(old + V1_FH_BASE),
			    *nf = (const struct fh_rec *)(t->map + FH_BASE);
	unsigned bad_fixed = 0, bad_handle = 0, bad_name = 0, inl = 0, ovf = 0, cut = 0;
	struct rec_names n;
	const struct node_rec *r;
	uint32_t k;

	for (k = 1; k < NNODES; k++) {
		r = table_rec(t, k);
		if (o[k].gen == 0) {
			bad_fixed += r->gen != 0 || r->ovf != 0;
			continue;
		}
		bad_fixed += r->gen != o[k].gen || r->dev != o[k].dev || r->ino != o[k].ino ||
			     r->nlookup != o[k].nlookup || r->parent != o[k].parent ||
			     r->birth_sec != o[k].birth_sec || r->birth_nsec != o[k].birth_nsec ||
			     r->type != o[k].type || r->cls != o[k].cls ||
			     r->backing_id != o[k].backing_id || r->nlink != o[k].nlink ||
			     (r->flags & (NR_BIRTH | NR_SEALED)) !=
				     (o[k].flags & (NR_BIRTH | NR_SEALED));
		rec_names_get(t, r, &n);
		if (o[k].mount_idx < 0)
			bad_handle += n.mount_idx != -1 || n.handle_bytes != 0;
		else
			bad_handle += n.mount_idx != o[k].mount_idx ||
				      n.handle_bytes != o[k].handle_bytes ||
				      n.handle_type != o[k].handle_type ||
				      memcmp(n.handle, o[k].handle, n.handle_bytes) != 0;
		if (o[k].flags & NR_NAME_CUT) {
			bad_name += !n.name_cut;
			cut++;
		} else {
			bad_name += n.name_cut || strcmp(n.name, o[k].name) != 0;
		}
		if (r->ovf != 0)
			ovf++;
		else
			inl++;
		/* inline exactly when the handle, the name and its NUL fit */
		if (!(o[k].flags & NR_NAME_CUT))
			bad_name += (r->ovf == 0) != (o[k].handle_bytes * (o[k].mount_idx >= 0) +
							      strlen(o[k].name) + 1 <=
						      NR_INLINE);
	}
	tap_ok(bad_fixed == 0, "every node's fixed fields as in version 1 (%u differ)", bad_fixed);
	tap_ok(bad_handle == 0, "every node's handle as in version 1 (%u differ)", bad_handle);
	tap_ok(bad_name == 0, "every node's name as in version 1, inline when it fits (%u differ)",
	       bad_name);
	tap_ok(inl > 1000 && ovf > 300 && cut > 100,
	       "both kinds met: %u inline, %u overflow, %u names cut", inl, ovf, cut);
	tap_ok(t->hdr->ovf_hwm == ovf + 1, "one overflow record a node that needs one (%u for %u)",
	       t->hdr->ovf_hwm - 1, ovf);
	tap_ok(memcmp(nf, of, NFHS * sizeof *nf) == 0, "the open handles' records as they were");
}

/* A live record switched between inline and overflow: each state read back whole */
static void check_switch(struct mtable *t)
{
	struct rec_names n = {.handle_type = 7, .handle_bytes = 8, .mount_idx = 1}, got;
	struct node_rec *r = table_rec(t, 1);
	uint32_t hwm, round;
	unsigned bad = 0;

	memcpy(n.handle, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	hwm = t->ovf_hwm;
	for (round = 0; round < 50; round++) {
		memset(n.name, 'q', 200);
		n.name[round % 2 ? 10 : 200] = '\0';
		rec_names_set(t, r, &n);
		rec_names_get(t, r, &got);
		bad += got.name_cut || strcmp(got.name, n.name) != 0 || got.handle_bytes != 8 ||
		       memcmp(got.handle, n.handle, 8) != 0 || got.mount_idx != 1 ||
		       got.handle_type != 7 || (r->ovf != 0) != (round % 2 == 0);
	}
	tap_ok(bad == 0, "a live record switched 50 times, inline and overflow, read back whole");
	tap_ok(t->ovf_hwm <= hwm + 2, "its overflow records reused (high mark %u, was %u)",
	       t->ovf_hwm, hwm);
	n.name_cut = true;
	rec_names_set(t, r, &n);
	rec_names_get(t, r, &got);
	tap_ok(got.name_cut && got.handle_bytes == 8, "a name cut: no name, the handle kept");
}

int main(void)
{
	struct mtable t = {.memfd = -1};
	int oldfd = make_v1(), fd;
	uint32_t k, freed = 0, hwm;
	struct table_hdr *oh;
	char *old;

	if (oldfd < 0) {
		printf("1..0 # SKIP cannot make a memfd: %s\n", strerror(errno));
		return 0;
	}
	old = mmap(NULL, V1_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, oldfd, 0);
	if (old == MAP_FAILED)
		return 99;
	oh = (struct table_hdr *)old;
	tap_ok(table_v1_layout(oh), "a table of version 1 is known as one");
	fd = table_convert_v1(oldfd);
	tap_ok(fd >= 0, "converted (%d)", fd);
	if (fd < 0)
		return tap_done();
	t.memfd = fd;
	t.map = mmap(NULL, TABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t.map == MAP_FAILED)
		return 99;
	t.hdr = (struct table_hdr *)t.map;
	tap_ok(t.hdr->version == TABLE_VERSION && t.hdr->node_rec_size == 128 &&
		       t.hdr->size == TABLE_SIZE && t.hdr->ovf_base == OVF_BASE,
	       "the new table has this version's layout");
	tap_ok(t.hdr->key == oh->key && t.hdr->mnt_id == 77 && t.hdr->node_hwm == NNODES &&
		       t.hdr->fh_hwm == NFHS && t.hdr->flags == oh->flags &&
		       memcmp(t.hdr->init_in, "abc", 3) == 0 &&
		       strcmp(t.hdr->mountpoint, "/mnt/point") == 0 &&
		       strcmp(t.hdr->source, "/src/dir") == 0,
	       "its header as the old one's: key, counts, INIT, paths");
	check_converted(&t, old);

	/* as a new server takes it over: the free list from the live records */
	t.node_hwm = t.hdr->node_hwm;
	hwm = t.hdr->ovf_hwm;
	for (k = 1; k < NNODES; k++) {
		if (table_rec(&t, k)->ovf != 0 && k % 2 == 0) {
			rec_gone(&t, table_rec(&t, k));
			freed++;
		}
	}
	table_ovf_rebuild(&t);
	for (k = 0; k < freed && t.ovf_free != 0; k++) {
		uint32_t f = t.ovf_free;

		t.ovf_free = ((struct node_ovf *)(t.map + OVF_BASE))[f].free_next;
	}
	tap_ok(k == freed && t.ovf_free == 0 && t.ovf_hwm == hwm,
	       "a new server's free list: the %u records of nodes gone, no other (%u)", freed, k);
	table_ovf_rebuild(&t);
	check_switch(&t);

	oh->size++;
	tap_ok(!table_v1_layout(oh) && table_convert_v1(oldfd) == -EPROTO,
	       "a version 1 table of another size is refused");
	munmap(t.map, TABLE_SIZE);
	munmap(old, V1_SIZE);
	close(fd);
	close(oldfd);
	return tap_done();
}
