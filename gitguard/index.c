/* SPDX-License-Identifier: MIT */
/*
 * X2: is an index file safe to become a git folder's `index` (or a
 * `sharedindex.<hash>`)?  git 2.39 trusts the paths of an on-disk index
 * (read-cache.c create_from_disk checks none of them), and `git restore .`
 * or `git checkout -f` then writes each entry where its path says.  So every
 * path must pass git's own verify_path() as it runs with core.protectHFS and
 * core.protectNTFS both on, every mode must be one git writes, and anything
 * this parser does not understand is refused.
 *
 * A pure parser over a buffer, for the fuzzer: the format is
 * Documentation/gitformat-index.txt (versions 2, 3 and 4, extensions TREE,
 * REUC, link, UNTR, FSMN, EOIE, IEOT, sdir).  The trailing checksum is not
 * verified: git 2.39 does not verify it either (only fsck does).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gitguard/index-int.h"

uint32_t ix_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned be16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

int ix_fail(struct ix *x, const char *why)
{
	if (!x->why)
		x->why = why;
	return -EINVAL;
}

/* git's decode_varint (varint.c), bounded by END */
static int varint(const unsigned char **pp, const unsigned char *end, size_t *out)
{
	const unsigned char *p = *pp;
	uint64_t val;
	unsigned char c;

	if (p >= end)
		return -EINVAL;
	c = *p++;
	val = c & 127;
	while (c & 128) {
		val += 1;
		if (!val || (val >> 57))
			return -EINVAL;
		if (p >= end)
			return -EINVAL;
		c = *p++;
		val = (val << 7) + (c & 127);
	}
	*pp = p;
	*out = (size_t)val;
	return 0;
}

/* utf8.c next_hfs_char: the next code point, skipping those HFS+ ignores; 0 at the end or on bad UTF-8 */
static uint32_t hfs_next(const char **in)
{
	const unsigned char *s;
	uint32_t c;
	int n, i;

	for (;;) {
		s = (const unsigned char *)*in;
		if (!*s)
			return 0;
		if (*s < 0x80) {
			n = 1;
			c = *s;
		} else if ((*s & 0xe0) == 0xc0) {
			n = 2;
			c = *s & 0x1f;
		} else if ((*s & 0xf0) == 0xe0) {
			n = 3;
			c = *s & 0x0f;
		} else if ((*s & 0xf8) == 0xf0) {
			n = 4;
			c = *s & 0x07;
		} else {
			return 0;
		}
		for (i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			c = c << 6 | (s[i] & 0x3f);
		}
		*in += n;
		if ((c >= 0x200c && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) ||
		    (c >= 0x206a && c <= 0x206f) || c == 0xfeff)
			continue;
		return c;
	}
}

/* utf8.c is_hfs_dot_generic: does the component at PATH read ".NEEDLE" on HFS+? */
static bool hfs_dot(const char *path, const char *needle)
{
	uint32_t c = hfs_next(&path);

	if (c != '.')
		return false;
	for (; *needle; needle++) {
		c = hfs_next(&path);
		if (c > 127 || (c >= 'A' && c <= 'Z' ? c + 32 : c) != (uint32_t)*needle)
			return false;
	}
	c = hfs_next(&path);
	return !c || c == '/';
}

static bool ntfs_tail(const char *s)
{
	for (;; s++) {
		if (!*s || *s == '/' || *s == '\\' || *s == ':')
			return true;
		if (*s != '.' && *s != ' ')
			return false;
	}
}

/* path.c is_ntfs_dotgit: ".git", "git~1", with trailing dots, spaces or a stream */
static bool ntfs_dotgit(const char *s)
{
	if (s[0] == '.' && !strncasecmp(s + 1, "git", 3))
		return ntfs_tail(s + 4);
	if (!strncasecmp(s, "git~1", 5))
		return ntfs_tail(s + 5);
	return false;
}

/* path.c is_ntfs_dot_generic for "gitmodules", short name prefix "gi7eba" */
static bool ntfs_dotgitmodules(const char *s)
{
	static const char pfx[] = "gi7eba";
	bool tilde = false;
	size_t i;

	if (s[0] == '.' && !strncasecmp(s + 1, "gitmodules", 10))
		return ntfs_tail(s + 11);
	if (!strncasecmp(s, "gitmod", 6) && s[6] == '~' && s[7] >= '1' && s[7] <= '4')
		return ntfs_tail(s + 8);
	for (i = 0; i < 8; i++) {
		if (!s[i])
			return false;
		if (tilde) {
			if (s[i] < '0' || s[i] > '9')
				return false;
		} else if (s[i] == '~') {
			i++;
			if (s[i] < '1' || s[i] > '9')
				return false;
			tilde = true;
		} else if (i >= 6 || (s[i] & 0x80) ||
			   (s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]) != pfx[i]) {
			return false;
		}
	}
	return ntfs_tail(s + 8);
}

/* The component starting at S (up to '/' or the end): git's verify_dotfile, HFS and NTFS */
static bool component_ok(const char *s, bool link)
{
	/*
	 * Every alias starts with '.', 'g' or 'G' (NTFS short names, "git~1",
	 * "gitmod~1", "gi7eba~1"), '~' (git's 8.3 fallback also takes "~1234567"),
	 * or a code point HFS+ ignores (not ASCII): any other first byte is an
	 * ordinary name.
	 */
	if ((unsigned char)s[0] < 0x80 && s[0] != '.' && s[0] != '~' && (s[0] | 32) != 'g')
		return true;
	if (hfs_dot(s, "git") || ntfs_dotgit(s))
		return false;
	if (link && (hfs_dot(s, "gitmodules") || ntfs_dotgitmodules(s)))
		return false;
	if (s[0] != '.')
		return true;
	if (!s[1] || s[1] == '/')
		return false; /* "." */
	if (s[1] == '.' && (!s[2] || s[2] == '/'))
		return false; /* ".." */
	if ((s[1] | 32) == 'g' && (s[2] | 32) == 'i' && (s[3] | 32) == 't') {
		if (!s[4] || s[4] == '/')
			return false;
		if (link && !strncasecmp(s + 4, "modules", 7) && (!s[11] || s[11] == '/'))
			return false;
	}
	return true;
}

/*
 * read-cache.c verify_path() with protectHFS and protectNTFS: no empty
 * component (so no leading or doubled '/'), no ".", "..", ".git" in any case
 * or alias, and for symlinks no ".gitmodules".  A backslash starts an NTFS
 * component too.  DIR allows one trailing '/' (a sparse folder entry).
 */
bool guard_index_path_ok(const char *path, unsigned mode)
{
	bool link = (mode & 0170000) == 0120000;
	bool dir = (mode & 0170000) == 0040000;
	const char *s = path;

	for (;;) {
		if (!*s || *s == '/')
			return false; /* empty component */
		if (!component_ok(s, link))
			return false;
		while (*s && *s != '/') {
			if (*s == '\\' &&
			    (ntfs_dotgit(s + 1) || (link && ntfs_dotgitmodules(s + 1))))
				return false;
			s++;
		}
		if (!*s)
			return true;
		s++;
		if (!*s)
			return dir;
	}
}

bool ix_mode_ok(uint32_t mode, bool sdir)
{
	switch (mode) {
	case 0100644:
	case 0100755:
	case 0120000:
	case 0160000:
		return true;
	case 0040000:
		return sdir;
	}
	return false;
}

/* git's cache_name_stage_compare */
static int name_cmp(const char *a, size_t al, unsigned as, const char *b, size_t bl, unsigned bs)
{
	size_t n = al < bl ? al : bl;
	int c = memcmp(a, b, n);

	if (c)
		return c;
	if (al != bl)
		return al < bl ? -1 : 1;
	return as < bs ? -1 : as > bs;
}

/*
 * Walk the entries from offset 12.  For each: fixed part, flags, the name
 * (v4: a strip count against the previous name, then a NUL-terminated
 * suffix; v2/v3: the name and NUL padding to 8 bytes).  STARTS, when not
 * NULL, receives each entry's offset and FRESH whether its name reads the
 * same without the previous one (v4: it strips all of it).
 */
int ix_walk(struct ix *x, size_t *starts, bool *fresh)
{
	char bufa[IDX_PATH_MAX + 1], bufb[IDX_PATH_MAX + 1], last[IDX_PATH_MAX + 1];
	char *prev = bufa, *name = bufb, *swap;
	size_t off = IDX_HDR, prevlen = 0, lastlen = 0, limit = x->len - x->hashsz;
	unsigned laststage = 0;
	bool have_last = false;
	uint32_t i;

	for (i = 0; i < x->nr; i++) {
		const unsigned char *e = x->p + off, *f, *nm, *nul;
		size_t fixed = IDX_STAT + x->hashsz, nlen, copy = 0, strip = 0, sfx, total;
		unsigned flags, stage, xflags = 0;
		uint32_t mode;

		if (off + fixed + 2 > limit)
			return ix_fail(x, "index entry past the end of the file");
		if (starts)
			starts[i] = off;
		mode = ix_be32(e + 24);
		f = e + fixed;
		flags = be16(f);
		if (flags & IDX_EXTENDED) {
			if (x->version < 3)
				return ix_fail(x, "extended index entry in a version 2 index");
			if (off + fixed + 4 > limit)
				return ix_fail(x, "index entry past the end of the file");
			xflags = be16(f + 2);
			if (xflags & ~IDX_X_ALLOWED)
				return ix_fail(x, "index entry with unknown extended flags");
			nm = f + 4;
		} else {
			nm = f + 2;
		}
		nlen = flags & IDX_NAMEMASK;
		stage = (flags & IDX_STAGE) >> 12;
		if (x->version == 4) {
			if (varint(&nm, x->p + limit, &strip) < 0)
				return ix_fail(x, "bad path compression in index");
			if (strip > prevlen)
				return ix_fail(x, "index path strips more than the previous path");
			copy = prevlen - strip;
		}
		if (fresh)
			fresh[i] = copy == 0;
		nul = memchr(nm, '\0', (size_t)(x->p + limit - nm));
		if (!nul)
			return ix_fail(x, "unterminated path in index");
		sfx = (size_t)(nul - nm);
		if (copy + sfx > IDX_PATH_MAX)
			return ix_fail(x, "index path too long");
		if (nlen == IDX_NAMEMASK ? copy + sfx < IDX_NAMEMASK : copy + sfx != nlen)
			return ix_fail(x, "index path length does not match its flags");
		memcpy(name, prev, copy);
		memcpy(name + copy, nm, sfx);
		name[copy + sfx] = '\0';
		nlen = copy + sfx;
		if (x->version == 4) {
			total = (size_t)(nul + 1 - e);
		} else {
			total = (size_t)(nm - e) + sfx;
			total = (total + 8) & ~(size_t)7;
		}
		if (off + total > limit)
			return ix_fail(x, "index entry past the end of the file");
		if (!x->strict) {
			/* the layout only */
		} else if (!ix_mode_ok(mode, x->sdir)) {
			return ix_fail(x, "index entry with a mode git does not write");
		} else if (!nlen) {
			if (!x->link)
				return ix_fail(x, "index entry with an empty path");
			x->cur_flags = flags;
			x->cur_xflags = xflags;
			if (x->each && x->each(x, i, name, 0, mode, e + IDX_STAT))
				return -EINVAL;
		} else {
			if (mode == 0040000 && (!(xflags & IDX_X_SKIP) || name[nlen - 1] != '/'))
				return ix_fail(x, "sparse folder entry not marked as one");
			if (!guard_index_path_ok(name, mode))
				return ix_fail(x,
					       "index path git would refuse (.git, .., absolute, "
					       "empty part)");
			/* without link every name is the previous one: no copy */
			if (have_last && name_cmp(x->link ? last : prev, lastlen, laststage, name,
						  nlen, stage) >= 0)
				return ix_fail(x, "index entries out of order or repeated");
			if (x->link)
				memcpy(last, name, nlen + 1);
			if (x->fn && x->fn(x->arg, name, mode, e + IDX_STAT, &x->why))
				return -EINVAL;
			x->cur_flags = flags;
			x->cur_xflags = xflags;
			if (x->each && x->each(x, i, name, nlen, mode, e + IDX_STAT))
				return -EINVAL;
			lastlen = nlen;
			laststage = stage;
			have_last = true;
		}
		swap = prev;
		prev = name;
		name = swap;
		prevlen = nlen;
		off += total;
	}
	x->end = off;
	return 0;
}

/* REUC: path NUL, three octal modes each NUL-ended, then a hash per non-zero mode */
static int check_reuc(struct ix *x, const unsigned char *p, size_t sz)
{
	const unsigned char *end = p + sz, *nul;
	unsigned long mode, modes[3];
	const char *path;
	char *stop;
	int k, hashes, seen;

	while (p < end) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul || nul - p > IDX_PATH_MAX)
			return ix_fail(x, "bad resolve-undo extension");
		if (!guard_index_path_ok((const char *)p, 0100644))
			return ix_fail(x, "resolve-undo path git would refuse");
		path = (const char *)p;
		p = nul + 1;
		for (k = 0, hashes = 0; k < 3; k++) {
			nul = memchr(p, '\0', (size_t)(end - p));
			if (!nul || nul == p || nul - p > 7)
				return ix_fail(x, "bad resolve-undo extension");
			mode = strtoul((const char *)p, &stop, 8);
			if ((const unsigned char *)stop != nul)
				return ix_fail(x, "bad resolve-undo extension");
			if (mode && !ix_mode_ok((uint32_t)mode, false))
				return ix_fail(x,
					       "resolve-undo entry with a mode git does not write");
			modes[k] = mode;
			hashes += mode != 0;
			p = nul + 1;
		}
		if ((size_t)(end - p) < hashes * x->hashsz)
			return ix_fail(x, "bad resolve-undo extension");
		/* git checkout -m writes from these: the same content rule as entries */
		for (k = 0, seen = 0; x->reuc_fn && k < 3; k++)
			if (modes[k] && x->reuc_fn(x->reuc_arg, path, (uint32_t)modes[k],
						   p + (size_t)seen++ * x->hashsz, &x->why))
				return -EINVAL;
		p += hashes * x->hashsz;
	}
	return 0;
}

/*
 * IEOT: a version, then (offset, count) per block.  git may load each block
 * on its own thread with no previous name, so a block must start where the
 * walk found an entry and, in v4, strip the whole previous name.
 */
static int check_ieot(struct ix *x, const unsigned char *p, size_t sz)
{
	size_t *starts, n, k, idx = 0;
	bool *fresh;
	int rc = 0;

	if (sz < 4 || (sz - 4) % 8 || ix_be32(p) != 1)
		return ix_fail(x, "bad index entry offset table");
	n = (sz - 4) / 8;
	starts = calloc((size_t)x->nr + 1, sizeof(*starts));
	fresh = calloc((size_t)x->nr + 1, sizeof(*fresh));
	if (!starts || !fresh) {
		rc = ix_fail(x, "out of memory checking the index");
		goto out;
	}
	if (ix_walk(x, starts, fresh) < 0) {
		rc = -1;
		goto out;
	}
	for (k = 0; k < n && !rc; k++) {
		uint32_t off = ix_be32(p + 4 + 8 * k), cnt = ix_be32(p + 8 + 8 * k);

		if (idx >= x->nr || starts[idx] != off || cnt > x->nr - idx || !fresh[idx])
			rc = ix_fail(x, "index entry offset table does not match the entries");
		idx += cnt;
	}
	if (!rc && idx != x->nr)
		rc = ix_fail(x, "index entry offset table does not cover the entries");
out:
	free(starts);
	free(fresh);
	return rc;
}

/*
 * The extensions gitguard knows.  git 2.39 never writes one twice, and reads
 * a second copy over the first (read_index_extension: the cache-tree, the
 * resolve-undo records, the link and its bitmaps, the untracked cache all
 * overwritten) while gitguard's finders take the first: so each at most once.
 */
static const char ext_sigs[][4] = {"TREE", "REUC", "link", "UNTR", "FSMN", "sdir", "IEOT", "EOIE"};

/* Refuses an extension gitguard does not know or one seen before (bit in *SEEN) */
static int ext_once(struct ix *x, const unsigned char *h, unsigned *seen)
{
	unsigned k;

	for (k = 0; k < sizeof(ext_sigs) / sizeof(ext_sigs[0]); k++) {
		if (memcmp(h, ext_sigs[k], 4))
			continue;
		if (*seen & 1u << k)
			return ix_fail(x, "an index extension given twice (git reads the last "
					  "copy, git never writes two)");
		*seen |= 1u << k;
		return 0;
	}
	return ix_fail(x, "index extension gitguard does not know");
}

static int check_extensions(struct ix *x)
{
	size_t off = x->end, limit = x->len - x->hashsz;
	const unsigned char *ieot = NULL;
	size_t ieot_sz = 0;
	unsigned seen = 0;

	while (off + 8 <= limit) {
		const unsigned char *h = x->p + off;
		uint32_t sz = ix_be32(h + 4);

		if (sz > limit - off - 8)
			return ix_fail(x, "index extension past the end of the file");
		if (ext_once(x, h, &seen) < 0)
			return -EINVAL;
		if (!memcmp(h, "TREE", 4)) {
			/* valid nodes name trees git commit takes as they are */
			if (ix_check_tree(x, h + 8, sz) < 0)
				return -EINVAL;
		} else if (!memcmp(h, "UNTR", 4) || !memcmp(h, "FSMN", 4)) {
			/*
			 * directories and stat data only: git writes nothing from
			 * them; but git status trusts UNTR's lists of untracked
			 * files (guard_index_untracked: audit says so)
			 */
			x->untr = x->untr || !memcmp(h, "UNTR", 4);
		} else if (!memcmp(h, "REUC", 4)) {
			if (check_reuc(x, h + 8, sz) < 0)
				return -EINVAL;
		} else if (!memcmp(h, "link", 4)) {
			if (sz < x->hashsz)
				return ix_fail(x, "bad split index extension");
		} else if (!memcmp(h, "sdir", 4)) {
			/* checked below: it had to be known before the entries */
		} else if (!memcmp(h, "IEOT", 4)) {
			ieot = h + 8;
			ieot_sz = sz;
		} else if (!memcmp(h, "EOIE", 4)) {
			/* git reads the extensions from the offset EOIE names */
			if (sz != 4 + x->hashsz || ix_be32(h + 8) != x->end ||
			    off + 8 + sz != limit)
				return ix_fail(x, "end-of-index-entries extension does not match");
		} else {
			return ix_fail(x, "index extension gitguard does not know");
		}
		off += 8 + (size_t)sz;
	}
	if (off != limit)
		return ix_fail(x, "trailing bytes after the index extensions");
	if (ieot && check_ieot(x, ieot, ieot_sz) < 0)
		return -EINVAL;
	return 0;
}

/* Which of link and sdir are present: they change what entries may be. */
static void scan_flags(struct ix *x)
{
	size_t off = x->end, limit = x->len - x->hashsz;

	while (off + 8 <= limit) {
		uint32_t sz = ix_be32(x->p + off + 4);

		if (!memcmp(x->p + off, "link", 4))
			x->link = true;
		if (!memcmp(x->p + off, "sdir", 4))
			x->sdir = true;
		if (sz > limit - off - 8)
			return;
		off += 8 + (size_t)sz;
	}
}

/*
 * 0 if BUF (LEN bytes) is an index that git 2.39 would read and whose every
 * entry git would itself have written, for a repository with hashes of
 * HASHSZ bytes (20 for SHA-1, 32 for SHA-256); else -1 with *WHY set.
 */
int guard_index_check_hash(const char *buf, size_t len, size_t hashsz, const char **why)
{
	return guard_index_entries(buf, len, hashsz, NULL, NULL, why);
}

/*
 * guard_index_check_hash, calling FN (if not NULL) with each entry's path,
 * mode and object name as it is checked; FN returns non-zero, with *why set,
 * to refuse the index.
 */
int guard_index_entries(const char *buf, size_t len, size_t hashsz, guard_index_entry_fn fn,
			void *arg, const char **why)
{
	struct ix x = {.p = (const unsigned char *)buf,
		       .len = len,
		       .hashsz = hashsz,
		       .fn = fn,
		       .arg = arg};

	return ix_run(&x, why);
}

/* The whole check of the index X was set up with; 0, or -EINVAL with *WHY */
int ix_run(struct ix *x, const char **why)
{
	int rc;

	if (x->hashsz != 20 && x->hashsz != 32) {
		x->why = "unknown hash size";
		goto bad;
	}
	if (x->len > GUARD_INDEX_MAX) {
		x->why = "index larger than gitguard reads (256 MiB)";
		goto bad;
	}
	if (x->len < IDX_HDR + x->hashsz || memcmp(x->p, "DIRC", 4)) {
		x->why = "not an index file";
		goto bad;
	}
	x->version = ix_be32(x->p + 4);
	x->nr = ix_be32(x->p + 8);
	if (x->version < 2 || x->version > 4) {
		x->why = "index version git 2.39 does not read";
		goto bad;
	}
	if (x->nr > (x->len - IDX_HDR) / (IDX_STAT + 20 + 2 + 1)) {
		x->why = "index entry count larger than the file";
		goto bad;
	}
	/*
	 * Strictly, as if there were neither link nor sdir (the usual index: one
	 * pass).  Those extensions, after the entries, allow empty names and
	 * folder entries: if the entries failed, find them and walk again.
	 */
	x->strict = true;
	rc = ix_walk(x, NULL, NULL);
	if (rc) {
		const char *first = x->why;

		x->strict = false;
		x->why = NULL;
		if (!ix_walk(x, NULL, NULL))
			scan_flags(x);
		x->strict = true;
		x->why = NULL;
		if (x->link || x->sdir)
			rc = ix_walk(x, NULL, NULL);
		else
			x->why = first;
	} else {
		/* a split index that replaces nothing is one still: its shared entries count */
		scan_flags(x);
	}
	if (!rc)
		rc = check_extensions(x);
	if (!rc)
		return 0;
bad:
	if (why)
		*why = x->why ? x->why : "malformed index";
	return -EINVAL;
}

int guard_index_check(const char *buf, size_t len, const char **why)
{
	return guard_index_check_hash(buf, len, 20, why);
}

struct hidden {
	void (*fn)(void *arg, const char *path, const char *what);
	void *arg;
	long n;
};

static int hidden_entry(struct ix *x, uint32_t i, const char *name, size_t nlen, uint32_t mode,
			const unsigned char *oid)
{
	struct hidden *h = x->each_arg;
	bool valid = x->cur_flags & 0x8000u, skip = x->cur_xflags & IDX_X_SKIP;

	(void)i;
	(void)oid;
	if (!nlen || mode == 0040000 || (!valid && !skip))
		return 0;
	h->n++;
	if (h->fn)
		h->fn(h->arg, name, valid ? "assume-unchanged" : "skip-worktree");
	return 0;
}

long guard_index_hidden(const char *buf, size_t len, size_t hashsz,
			void (*fn)(void *arg, const char *path, const char *what), void *arg)
{
	struct ix x = {.p = (const unsigned char *)buf, .len = len, .hashsz = hashsz};
	struct hidden h = {.fn = fn, .arg = arg};

	if (ix_run(&x, NULL))
		return -EINVAL;
	x.each = hidden_entry;
	x.each_arg = &h;
	x.why = NULL;
	if (ix_walk(&x, NULL, NULL))
		return -EINVAL;
	return h.n;
}

struct files {
	int (*fn)(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
		  const struct guard_index_stat *st);
	void *arg;
};

static int file_entry(struct ix *x, uint32_t i, const char *name, size_t nlen, uint32_t mode,
		      const unsigned char *oid)
{
	struct files *f = x->each_arg;
	const unsigned char *s = oid - IDX_STAT;
	struct guard_index_stat st;

	(void)i;
	if (!nlen || (mode != 0100644 && mode != 0100755) || (x->cur_flags & (IDX_STAGE | 0x8000u)) ||
	    (x->cur_xflags & IDX_X_ALLOWED))
		return 0;
	st.ctime_sec = ix_be32(s);
	st.ctime_nsec = ix_be32(s + 4);
	st.mtime_sec = ix_be32(s + 8);
	st.mtime_nsec = ix_be32(s + 12);
	st.dev = ix_be32(s + 16);
	st.ino = ix_be32(s + 20);
	st.mode = ix_be32(s + 24);
	st.uid = ix_be32(s + 28);
	st.gid = ix_be32(s + 32);
	st.size = ix_be32(s + 36);
	return f->fn(f->arg, name, mode, oid, &st) ? -EINVAL : 0;
}

int guard_index_files(const char *buf, size_t len, size_t hashsz,
		      int (*fn)(void *arg, const char *path, uint32_t mode,
				const unsigned char *oid, const struct guard_index_stat *st),
		      void *arg)
{
	struct ix x = {.p = (const unsigned char *)buf, .len = len, .hashsz = hashsz};
	struct files f = {.fn = fn, .arg = arg};

	if (ix_run(&x, NULL))
		return -EINVAL;
	x.each = file_entry;
	x.each_arg = &f;
	x.why = NULL;
	return ix_walk(&x, NULL, NULL) ? -EINVAL : 0;
}

int guard_index_untracked(const char *buf, size_t len, size_t hashsz)
{
	struct ix x = {.p = (const unsigned char *)buf, .len = len, .hashsz = hashsz};

	if (ix_run(&x, NULL))
		return -EINVAL;
	return x.untr;
}

int guard_index_reuc(const char *buf, size_t len, size_t hashsz, guard_index_entry_fn fn, void *arg,
		     const char **why)
{
	struct ix x = {.p = (const unsigned char *)buf,
		       .len = len,
		       .hashsz = hashsz,
		       .reuc_fn = fn,
		       .reuc_arg = arg};

	return ix_run(&x, why);
}
