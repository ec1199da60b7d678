/* SPDX-License-Identifier: MIT */
/*
 * D7's multi-pack-index: objects/pack/multi-pack-index names the packs it
 * indexes, and git 2.39 (midx.c load_multi_pack_index, prepare_midx_pack)
 * opens each as objects/pack/NAME without checking NAME: a name with a '/'
 * ("../../../../other/.git/objects/pack/pack-X.idx") borrows objects from
 * any path, as alternates do, and the person's `git multi-pack-index
 * expire`, which `git maintenance` runs in its incremental-repack task,
 * deletes that pack (its .pack, .idx, .rev, .bitmap and .promisor) when the
 * index holds no object of it.  So the file git renames in may name only
 * packs of its own folder.
 *
 * The format (Documentation/technical/multi-pack-index.txt, chunk-format.c):
 * a 12-byte header ("MIDX", version 1, hash version, chunk count, base
 * count, pack count, big-endian), a table of (chunk count + 1) entries of a
 * 4-byte id and an 8-byte offset, the last id 0, offsets rising within the
 * file; the PNAM chunk holds the pack names, each ended by a NUL, in order.
 * Anything this reader cannot follow is refused: git wrote none of it.
 *
 * git 2.47 and later also read an incremental chain when there is no plain
 * file (midx.c load_multi_pack_index_chain): objects/pack/multi-pack-index.d/
 * multi-pack-index-chain lists layer hashes, each layer is that folder's
 * multi-pack-index-HASH.midx, in this format (version 1, or 2, which
 * `git multi-pack-index compact` writes), and its pack names are opened as
 * objects/pack/NAME just the same.  The chain holds hashes only (git refuses
 * a line that is not one), so the layers are what is checked, by the same
 * rule: a bot cannot plant one that the person's newer git, after an
 * upgrade, follows out of the root.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "gitguard/gitguard.h"

#define MIDX_HEADER 12
#define MIDX_TOC_ENTRY 12
#define MIDX_PNAM 0x504e414du /* "PNAM" */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* The NUL-ended names of PNAM (LEN bytes at P): N plain file names? */
static int pack_names(const char *p, size_t len, uint32_t n, const char **why)
{
	const char *end = p + len, *nul;

	for (; n > 0; n--) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul) {
			*why = "multi-pack-index: a pack name runs past its chunk";
			return -EINVAL;
		}
		if (nul == p || memchr(p, '/', (size_t)(nul - p)) || !strcmp(p, ".") ||
		    !strcmp(p, "..")) {
			*why = "multi-pack-index: a pack name that is no file of objects/pack "
			       "(git would read, and its expire delete, a pack anywhere)";
			return -EINVAL;
		}
		p = nul + 1;
	}
	return 0;
}

/* A multi-pack-index of version 1 (or up to MAXV) whose pack names are files of objects/pack */
static int midx_check(const char *buf, size_t len, unsigned maxv, const char **why)
{
	const unsigned char *b = (const unsigned char *)buf;
	uint64_t off, next, pnam_off = 0, pnam_len = 0;
	unsigned chunks, i;
	uint32_t packs, id;
	bool seen = false;

	if (len < MIDX_HEADER || memcmp(buf, "MIDX", 4) || b[4] < 1 || b[4] > maxv) {
		*why = maxv == 1 ? "multi-pack-index: not one git 2.39 reads (signature, version)"
				 : "multi-pack-index layer: not one git reads (signature, version)";
		return -EINVAL;
	}
	chunks = b[6];
	packs = be32(b + 8);
	if (len < MIDX_HEADER + (size_t)(chunks + 1) * MIDX_TOC_ENTRY) {
		*why = "multi-pack-index: its chunk table runs past the file";
		return -EINVAL;
	}
	for (i = 0; i < chunks; i++) {
		const unsigned char *e = b + MIDX_HEADER + (size_t)i * MIDX_TOC_ENTRY;

		id = be32(e);
		off = be64(e + 4);
		next = be64(e + MIDX_TOC_ENTRY + 4);
		if (id == 0 || off > next || next > len) {
			*why = "multi-pack-index: a chunk out of the file";
			return -EINVAL;
		}
		if (id == MIDX_PNAM) {
			if (seen) {
				*why = "multi-pack-index: two chunks of pack names";
				return -EINVAL;
			}
			seen = true;
			pnam_off = off;
			pnam_len = next - off;
		}
	}
	if (be32(b + MIDX_HEADER + (size_t)chunks * MIDX_TOC_ENTRY) != 0) {
		*why = "multi-pack-index: its chunk table does not end";
		return -EINVAL;
	}
	if (packs > 0 && !seen) {
		*why = "multi-pack-index: packs without their names";
		return -EINVAL;
	}
	return pack_names(buf + pnam_off, (size_t)pnam_len, packs, why);
}

int guard_midx_check(const char *buf, size_t len, const char **why)
{
	return midx_check(buf, len, 1, why);
}

int guard_midx_layer_check(const char *buf, size_t len, const char **why)
{
	return midx_check(buf, len, 2, why);
}
