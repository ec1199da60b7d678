/* SPDX-License-Identifier: MIT */
/*
 * X2 for a split index: which shared entries it replaces, and with what.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/index-int.h"

/*
 * Split index (git's split-index.c).  An index with a `link` extension
 * names a shared index (sharedindex.<base> beside it) and two EWAH
 * bitmaps, deleted and replaced positions of the shared entries.  Its
 * first entries have empty names: the k-th stands in for the shared entry
 * at the k-th replaced position, which keeps its name and takes the
 * replacement's mode and object.  So what such an entry writes is known
 * only with the shared index at hand.
 */

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)ix_be32(p) << 32 | ix_be32(p + 4);
}

/* The serialized size of the EWAH bitmap at P (ewah_io.c), or 0 if malformed */
static size_t ewah_size(const unsigned char *p, size_t len)
{
	uint32_t words;

	if (len < 12)
		return 0;
	words = ix_be32(p + 4);
	if (words > (len - 12) / 8)
		return 0;
	return 12 + (size_t)words * 8;
}

/*
 * The set bits of the EWAH bitmap at P, ascending as ewah_each_bit visits
 * them, into OUT: their count, or -1 if there are more than MAX or one is
 * LIMIT or more (git dies on both).
 */
static long ewah_bits(const unsigned char *p, uint32_t *out, size_t max, uint64_t limit)
{
	uint32_t words = ix_be32(p + 4);
	const unsigned char *w = p + 8;
	uint64_t pos = 0, word, run, lit, k;
	size_t ptr = 0, n = 0;
	int c;

	while (ptr < words) {
		word = be64(w + 8 * ptr++);
		run = (word >> 1) & 0xffffffffu;
		lit = word >> 33;
		if (word & 1) {
			for (k = 0; k < run * 64; k++, pos++) {
				if (n >= max || pos >= limit)
					return -1;
				out[n++] = (uint32_t)pos;
			}
		} else {
			pos += run * 64;
		}
		for (k = 0; k < lit; k++) {
			if (ptr >= words)
				return -1; /* literal words past the end */
			word = be64(w + 8 * ptr++);
			for (c = 0; c < 64; c++, pos++) {
				if (!(word >> c & 1))
					continue;
				if (n >= max || pos >= limit)
					return -1;
				out[n++] = (uint32_t)pos;
			}
		}
	}
	return (long)n;
}

/* The payload of extension SIG of a checked index X, or NULL */
static const unsigned char *find_ext(const struct ix *x, const char *sig, uint32_t *szp)
{
	size_t off = x->end, limit = x->len - x->hashsz;

	while (off + 8 <= limit) {
		uint32_t sz = ix_be32(x->p + off + 4);

		if (sz > limit - off - 8)
			return NULL;
		if (!memcmp(x->p + off, sig, 4)) {
			*szp = sz;
			return x->p + off + 8;
		}
		off += 8 + (size_t)sz;
	}
	return NULL;
}

/* The replacements of a split index, in order: mode and object of each */
struct repl {
	uint32_t *mode;
	const unsigned char **oid;
	uint32_t n;
	bool named;    /* a named entry was seen: no replacement may follow */
	uint32_t *pos; /* the replaced positions, ascending */
	long npos;
	uint32_t *del; /* kept: the deleted positions, ascending */
	long ndel;
	bool kept; /* FN also for each shared entry neither replaced nor deleted */
	guard_index_entry_fn fn;
	void *arg;
};

/* Where I is in the ascending positions POS[0..N), or -1 */
static long pos_find(const uint32_t *pos, long n, uint32_t i)
{
	long lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pos[mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && pos[lo] == i ? lo : -1;
}

static int repl_collect(struct ix *x, uint32_t i, const char *name, size_t nlen, uint32_t mode,
			const unsigned char *oid)
{
	struct repl *r = x->each_arg;

	(void)name;
	if (nlen) {
		r->named = true;
		return 0;
	}
	if (r->named)
		return ix_fail(x, "split index with an empty-named entry after a named one");
	if (i < r->n)
		return 0; /* a later pass over the same entries */
	r->mode[r->n] = mode;
	r->oid[r->n++] = oid;
	return 0;
}

/* For each shared entry: is it replaced, and is what replaces it one git would write there? */
static int repl_match(struct ix *x, uint32_t i, const char *name, size_t nlen, uint32_t mode,
		      const unsigned char *oid)
{
	struct repl *r = x->each_arg;
	long lo;

	if (!nlen)
		return ix_fail(x, "shared index with an empty-named entry");
	lo = pos_find(r->pos, r->npos, i);
	if (lo < 0) {
		/* kept as the shared index has it, unless deleted */
		if (r->kept && r->fn && pos_find(r->del, r->ndel, i) < 0 &&
		    r->fn(r->arg, name, mode, oid, &x->why))
			return -EINVAL;
		return 0;
	}
	if (!ix_mode_ok(r->mode[lo], x->sdir) || !guard_index_path_ok(name, r->mode[lo]))
		return ix_fail(x, "split index makes a shared entry one git would refuse "
				  "(.git, .., a symlink .gitmodules)");
	if (r->fn && r->fn(r->arg, name, r->mode[lo], r->oid[lo], &x->why))
		return -EINVAL;
	return 0;
}

int guard_index_base(const char *buf, size_t len, size_t hashsz, char *hex, const char **why)
{
	static const char digits[] = "0123456789abcdef";
	struct ix x = {.p = (const unsigned char *)buf, .len = len, .hashsz = hashsz};
	const unsigned char *link;
	uint32_t sz;
	size_t i;
	bool null = true;

	hex[0] = '\0';
	if (ix_run(&x, why))
		return -EINVAL;
	if (!x.link || !(link = find_ext(&x, "link", &sz)))
		return 0;
	for (i = 0; i < hashsz; i++) {
		hex[2 * i] = digits[link[i] >> 4];
		hex[2 * i + 1] = digits[link[i] & 15];
		null = null && !link[i];
	}
	hex[2 * hashsz] = '\0';
	if (null)
		hex[0] =
			'\0'; /* no shared index: empty names are refused by guard_index_replaced */
	return hex[0] ? 1 : 0;
}

/*
 * guard_index_replaced, and with KEPT guard_index_from_shared: FN for each
 * replaced shared entry, with KEPT also for each one neither replaced nor
 * deleted.
 */
static int split_walk(const char *buf, size_t len, const char *shared, size_t slen, size_t hashsz,
		      guard_index_entry_fn fn, void *arg, bool kept, const char **why)
{
	struct ix x = {.p = (const unsigned char *)buf, .len = len, .hashsz = hashsz};
	struct ix sx = {.p = (const unsigned char *)shared, .len = slen, .hashsz = hashsz};
	struct repl r = {.fn = fn, .arg = arg, .kept = kept};
	const unsigned char *link, *bm;
	uint32_t sz;
	size_t dsz, rsz;
	int rc = -EINVAL;

	if (ix_run(&x, why))
		return -EINVAL;
	if (!x.link)
		return 0;
	r.mode = calloc(x.nr + 1, sizeof(*r.mode));
	r.oid = calloc(x.nr + 1, sizeof(*r.oid));
	r.pos = calloc(x.nr + 1, sizeof(*r.pos));
	if (!r.mode || !r.oid || !r.pos) {
		x.why = "out of memory";
		goto out;
	}
	x.each = repl_collect;
	x.each_arg = &r;
	x.why = NULL;
	if (ix_walk(&x, NULL, NULL))
		goto out;
	link = find_ext(&x, "link", &sz);
	if (!link) {
		x.why = "bad split index extension";
		goto out;
	}
	if (!r.n && !kept) {
		rc = 0; /* nothing replaced: every entry has its own name, checked already */
		goto out;
	}
	if (!shared) {
		/* nothing replaced: git, not finding the shared index, dies */
		rc = r.n ? rc : 0;
		x.why = "a split index whose shared index cannot be read";
		goto out;
	}
	bm = link + hashsz;
	dsz = ewah_size(bm, sz - hashsz);
	rsz = dsz ? ewah_size(bm + dsz, sz - hashsz - dsz) : 0;
	if (!rsz || dsz + rsz != sz - hashsz) {
		x.why = "bad split index bitmaps";
		goto out;
	}
	sx.each = NULL;
	if (ix_run(&sx, why))
		goto bad_shared;
	if (sx.link) {
		x.why = "a shared index that is itself split";
		goto out;
	}
	r.npos = ewah_bits(bm + dsz, r.pos, r.n, sx.nr);
	if (r.npos != (long)r.n) {
		x.why = "split index replacements do not match its shared index";
		goto out;
	}
	if (kept) {
		/* git's merge_base_index dies on a deleted position past the shared index */
		r.del = calloc((size_t)sx.nr + 1, sizeof(*r.del));
		if (!r.del) {
			x.why = "out of memory";
			goto out;
		}
		r.ndel = ewah_bits(bm, r.del, sx.nr, sx.nr);
		if (r.ndel < 0) {
			x.why = "split index deletions do not match its shared index";
			goto out;
		}
	}
	sx.each = repl_match;
	sx.each_arg = &r;
	sx.why = NULL;
	if (ix_walk(&sx, NULL, NULL)) {
		x.why = sx.why;
		goto out;
	}
	rc = 0;
out:
	free(r.mode);
	free(r.oid);
	free(r.pos);
	free(r.del);
	if (rc && why)
		*why = x.why ? x.why : "malformed split index";
	return rc;
bad_shared:
	x.why = "its shared index is not one git would read";
	goto out;
}

int guard_index_replaced(const char *buf, size_t len, const char *shared, size_t slen,
			 size_t hashsz, guard_index_entry_fn fn, void *arg, const char **why)
{
	return split_walk(buf, len, shared, slen, hashsz, fn, arg, false, why);
}

int guard_index_from_shared(const char *buf, size_t len, const char *shared, size_t slen,
			    size_t hashsz, guard_index_entry_fn fn, void *arg, const char **why)
{
	return split_walk(buf, len, shared, slen, hashsz, fn, arg, true, why);
}

bool ix_link_base(const struct ix *x)
{
	const unsigned char *link;
	uint32_t sz;
	size_t i;

	link = find_ext(x, "link", &sz);
	if (!link || sz < x->hashsz)
		return false;
	for (i = 0; i < x->hashsz; i++)
		if (link[i])
			return true;
	return false;
}

static int tent_cmp(const void *a, const void *b)
{
	const struct tent *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	if (x->stage != y->stage)
		return x->stage < y->stage ? -1 : 1;
	return (int)x->added - (int)y->added; /* the split index's own last */
}

/* Positions set in a bitmap at BM (within LEN): a 0/1 array of N, or NULL on error */
static unsigned char *bits_of(const unsigned char *bm, size_t len, size_t n, bool *ok)
{
	unsigned char *set = calloc(n + 1, 1);
	uint32_t *pos = calloc(n + 1, sizeof(*pos));
	long k, got;

	*ok = false;
	if (!set || !pos || !ewah_size(bm, len)) {
		free(set);
		free(pos);
		return NULL;
	}
	got = ewah_bits(bm, pos, n, n);
	if (got >= 0) {
		for (k = 0; k < got; k++)
			set[pos[k]] = 1;
		*ok = true;
	}
	free(pos);
	return set;
}

int guard_index_split_tree(const char *buf, size_t len, const char *shared, size_t slen,
			   size_t hashsz, const char **why)
{
	struct ix x = {.p = (const unsigned char *)buf, .len = len, .hashsz = hashsz};
	struct ix sx = {.p = (const unsigned char *)shared, .len = slen, .hashsz = hashsz};
	struct tent *own = NULL, *sh = NULL, *all = NULL;
	size_t nown = 0, nsh = 0, nall = 0, k, r = 0, dsz;
	unsigned char *del = NULL, *rep = NULL;
	const unsigned char *tree, *link;
	uint32_t tsz, lsz;
	bool ok;
	int rc = -EINVAL;

	if (ix_run(&x, why))
		return -EINVAL;
	if (!x.link || !ix_link_base(&x) || !(tree = find_ext(&x, "TREE", &tsz)) || !tsz)
		return 0;
	if (!shared || ix_run(&sx, why) || sx.link) {
		/* no merged view to check a valid cache-tree against */
		rc = ix_tree_entries(&x, tree, tsz, NULL, TREE_UNSEEN);
		goto out;
	}
	link = find_ext(&x, "link", &lsz);
	if (ix_collect(&x, &own, &nown) || ix_collect(&sx, &sh, &nsh))
		goto out;
	dsz = ewah_size(link + hashsz, lsz - hashsz);
	del = dsz ? bits_of(link + hashsz, lsz - hashsz, nsh, &ok) : NULL;
	if (!del || !ok)
		goto bad;
	rep = bits_of(link + hashsz + dsz, lsz - hashsz - dsz, nsh, &ok);
	if (!rep || !ok)
		goto bad;
	all = calloc(nsh + nown + 1, sizeof(*all));
	if (!all)
		goto bad;
	/* git's merge_base_index: the shared entries, replaced or deleted, then the new ones */
	for (k = 0; k < nsh; k++) {
		if (del[k])
			continue;
		all[nall] = sh[k];
		if (rep[k]) {
			if (r >= nown || own[r].len)
				goto bad;
			all[nall].mode = own[r].mode;
			all[nall].oid = own[r].oid;
			all[nall].ita = own[r].ita;
			all[nall].stage = own[r].stage;
			r++;
		}
		nall++;
	}
	for (k = r; k < nown; k++) {
		if (!own[k].len)
			goto bad;
		all[nall] = own[k];
		all[nall++].added = true;
	}
	qsort(all, nall, sizeof(*all), tent_cmp);
	/* a new entry over a shared one of the same name and stage takes its place */
	for (k = r = 0; k < nall; k++) {
		if (k + 1 < nall && !strcmp(all[k].path, all[k + 1].path) &&
		    all[k].stage == all[k + 1].stage)
			continue;
		all[r++] = all[k];
	}
	rc = ix_tree_entries(&x, tree, tsz, all, r);
	goto out;
bad:
	x.why = "split index replacements do not match its shared index";
out:
	free(all); /* its paths are own's and sh's */
	ix_tents_free(own, nown);
	ix_tents_free(sh, nsh);
	free(del);
	free(rep);
	if (rc && why && x.why)
		*why = x.why;
	return rc ? -EINVAL : 0;
}
