/* SPDX-License-Identifier: MIT */
/*
 * X2 for the cache-tree (the index's TREE extension).  A node marked valid
 * says which tree object its folder's entries make, and git trusts it: the
 * next `git commit` or `git stash` takes a valid subtree by its recorded
 * name instead of hashing the entries again.  A forged node would put a
 * tree of the bot's choosing (a hook, any backdoor) into the person's next
 * commit while the entries, the work tree and `git status` all show the
 * person's files.  So every valid node's tree is computed from the entries
 * it covers (git's tree format) and must be the one it names.
 *
 * SHA-1 repositories only: gitguard has no SHA-256 (a SHA-256 index with a
 * valid node is refused, see ix_check_tree).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/index-int.h"

#define TREE_DEPTH 512 /* folder levels of cache-tree nodes */

struct tnode {
	char *path; /* from the top, "" for the root */
	long count; /* entries covered, -1: not valid */
	const unsigned char *oid;
	size_t first, n; /* its children: nodes[first .. first + n) once placed */
	size_t *kids;
};

struct tctx {
	struct ix *x;
	struct tent *e; /* sorted as in the index */
	size_t ne, ae;
	struct tnode *nodes;
	size_t nn, an;
	const unsigned char *p, *end;
	char *buf; /* a tree object's body */
	size_t blen, bcap;
};

static int collect(struct ix *x, uint32_t i, const char *name, size_t nlen, uint32_t mode,
		   const unsigned char *oid)
{
	struct tctx *c = x->each_arg;
	struct tent *t;

	if (i < c->ne)
		return 0; /* a later pass over the same entries */
	if (gg_grow(&c->e, &c->ae, c->ne + 1, sizeof(*c->e), 64))
		return ix_fail(x, "out of memory");
	t = &c->e[c->ne];
	t->path = strndup(name, nlen);
	if (!t->path)
		return ix_fail(x, "out of memory");
	c->ne++;
	t->len = nlen;
	t->mode = mode;
	t->oid = oid;
	t->ita = (x->cur_xflags & 0x2000u) != 0;
	t->stage = (x->cur_flags & 0x3000u) >> 12;
	return 0;
}

/* One node at c->p, its subtree after it (pre-order); its index in c->nodes */
static long parse_node(struct tctx *c, const char *parent, unsigned depth)
{
	const unsigned char *nul, *sp, *lf;
	long count, nsub, k, kid;
	size_t idx, plen, nlen;
	char *end;
	struct tnode *n;

	if (depth > TREE_DEPTH)
		return ix_fail(c->x, "cache-tree deeper than gitguard reads");
	nul = memchr(c->p, '\0', (size_t)(c->end - c->p));
	if (!nul)
		return ix_fail(c->x, "bad cache-tree extension");
	nlen = (size_t)(nul - c->p);
	if (gg_grow(&c->nodes, &c->an, c->nn + 1, sizeof(*c->nodes), 16))
		return ix_fail(c->x, "out of memory");
	idx = c->nn++;
	n = &c->nodes[idx];
	memset(n, 0, sizeof(*n));
	plen = strlen(parent);
	n->path = malloc(plen + nlen + 2);
	if (!n->path)
		return ix_fail(c->x, "out of memory");
	snprintf(n->path, plen + nlen + 2, "%s%s%.*s", parent, plen && nlen ? "/" : "", (int)nlen,
		 (const char *)c->p);
	if ((depth == 0) != (nlen == 0) || memchr(c->p, '/', nlen))
		return ix_fail(c->x, "bad cache-tree extension");
	c->p = nul + 1;
	lf = memchr(c->p, '\n', (size_t)(c->end - c->p));
	sp = lf ? memchr(c->p, ' ', (size_t)(lf - c->p)) : NULL;
	if (!sp)
		return ix_fail(c->x, "bad cache-tree extension");
	errno = 0;
	count = strtol((const char *)c->p, &end, 10);
	if (errno || end != (const char *)sp || count < -1)
		return ix_fail(c->x, "bad cache-tree extension");
	nsub = strtol((const char *)sp + 1, &end, 10);
	/* each subtree takes 5 bytes at least ("\0-1 0\n" less its name) */
	if (errno || end != (const char *)lf || nsub < 0 || nsub > (c->end - lf) / 5)
		return ix_fail(c->x, "bad cache-tree extension");
	c->p = lf + 1;
	n->count = count;
	if (count >= 0) {
		if ((size_t)(c->end - c->p) < c->x->hashsz)
			return ix_fail(c->x, "bad cache-tree extension");
		n->oid = c->p;
		c->p += c->x->hashsz;
	}
	if (nsub) {
		size_t *kids = calloc((size_t)nsub, sizeof(*kids));

		if (!kids)
			return ix_fail(c->x, "out of memory");
		c->nodes[idx].kids = kids;
	}
	for (k = 0; k < nsub; k++) {
		char *path = c->nodes[idx].path; /* nodes may move: re-read */

		kid = parse_node(c, path, depth + 1);
		if (kid < 0)
			return -EINVAL;
		c->nodes[idx].kids[c->nodes[idx].n++] = (size_t)kid;
	}
	return (long)idx;
}

static int put(struct tctx *c, const void *p, size_t n)
{
	if (gg_grow(&c->buf, &c->bcap, c->blen + n, 1, 4096))
		return ix_fail(c->x, "out of memory");
	memcpy(c->buf + c->blen, p, n);
	c->blen += n;
	return 0;
}

/* The first entry whose path is PREFIX/... (or the first, for the root) */
static size_t first_under(const struct tctx *c, const char *prefix, size_t plen)
{
	size_t lo = 0, hi = c->ne, mid;

	if (!plen)
		return 0;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strncmp(c->e[mid].path, prefix, plen) < 0 ||
		    (!strncmp(c->e[mid].path, prefix, plen) && c->e[mid].path[plen] < '/'))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool under(const struct tent *t, const char *prefix, size_t plen)
{
	return !plen || (t->len > plen && !strncmp(t->path, prefix, plen) && t->path[plen] == '/');
}

/* A valid node N: the tree its entries make must be the one it names */
static int verify(struct tctx *c, const struct tnode *n)
{
	size_t plen = strlen(n->path), i, end, k, dl;
	const struct tnode *kid;
	unsigned char sum[20];
	char mode[16];
	const char *rel, *slash;
	int len;

	i = first_under(c, n->path, plen);
	end = i + (size_t)n->count;
	if (end > c->ne || (end > i && !under(&c->e[end - 1], n->path, plen)) ||
	    (end < c->ne && under(&c->e[end], n->path, plen)))
		return ix_fail(c->x, "cache-tree entry count does not match the entries");
	c->blen = 0;
	while (i < end) {
		const struct tent *t = &c->e[i];

		rel = t->path + (plen ? plen + 1 : 0);
		slash = strchr(rel, '/');
		if (slash && slash[1]) {
			dl = (size_t)(slash - rel);
			for (k = 0, kid = NULL; k < n->n && !kid; k++) {
				const struct tnode *cand = &c->nodes[n->kids[k]];
				const char *nm = cand->path + (plen ? plen + 1 : 0);

				if (strlen(nm) == dl && !strncmp(nm, rel, dl))
					kid = cand;
			}
			if (!kid || kid->count < 0)
				return ix_fail(c->x,
					       "a valid cache-tree node over one that is not");
			if (put(c, "40000 ", 6) || put(c, rel, dl) || put(c, "", 1) ||
			    put(c, kid->oid, 20))
				return -EINVAL;
			/* the folder's entries, all of them and no others */
			k = strlen(kid->path);
			if (kid->count < 1 || i + (size_t)kid->count > end ||
			    !under(&c->e[i + (size_t)kid->count - 1], kid->path, k) ||
			    (i + (size_t)kid->count < end &&
			     under(&c->e[i + (size_t)kid->count], kid->path, k)))
				return ix_fail(c->x,
					       "cache-tree entry count does not match the entries");
			i += (size_t)kid->count;
			continue;
		}
		if (t->stage)
			return ix_fail(c->x, "a valid cache-tree node over a conflict");
		if (!t->ita) {
			/* a sparse folder entry "dir/" is the tree dir */
			dl = slash ? (size_t)(slash - rel) : strlen(rel);
			len = snprintf(mode, sizeof(mode), "%o ",
				       t->mode == 0040000 ? 040000u : (unsigned)t->mode);
			if (put(c, mode, (size_t)len) || put(c, rel, dl) || put(c, "", 1) ||
			    put(c, t->oid, 20))
				return -EINVAL;
		}
		i++;
	}
	guard_object_sha1("tree", c->buf, c->blen, sum);
	if (memcmp(sum, n->oid, 20))
		return ix_fail(c->x, "a cache-tree node names a tree its entries do not make "
				     "(git commit would take it)");
	return 0;
}

/* Frees C's nodes and buffer (not its entries) */
static void tctx_free(struct tctx *c)
{
	size_t k;

	for (k = 0; k < c->nn; k++) {
		free(c->nodes[k].path);
		free(c->nodes[k].kids);
	}
	free(c->nodes);
	free(c->buf);
}

int ix_tree_entries(struct ix *x, const unsigned char *p, size_t sz, struct tent *e, size_t ne)
{
	struct tctx c = {.x = x, .p = p, .end = p + sz, .e = e, .ne = ne == TREE_UNSEEN ? 0 : ne};
	size_t k;
	int rc = 0;

	if (parse_node(&c, "", 0) < 0 || c.p != c.end) {
		rc = ix_fail(x, "bad cache-tree extension");
		goto out;
	}
	for (k = 0; k < c.nn && c.nodes[k].count < 0; k++)
		;
	if (k == c.nn)
		goto out; /* nothing valid: git hashes every tree again */
	if (x->hashsz != 20) {
		/* no SHA-256 here: left to git (agentfs(1), LIMITS) */
		goto out;
	}
	if (ne == TREE_UNSEEN) {
		rc = ix_fail(x, "a valid cache-tree over entries gitguard cannot see");
		goto out;
	}
	for (k = 0; !rc && k < c.nn; k++)
		if (c.nodes[k].count >= 0)
			rc = verify(&c, &c.nodes[k]);
out:
	tctx_free(&c);
	return rc ? -EINVAL : 0;
}

void ix_tents_free(struct tent *e, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		free(e[k].path);
	free(e);
}

int ix_collect(struct ix *x, struct tent **e, size_t *n)
{
	struct tctx c = {.x = x};
	int rc;

	x->each = collect;
	x->each_arg = &c;
	x->why = NULL;
	rc = ix_walk(x, NULL, NULL);
	x->each = NULL;
	if (rc) {
		ix_tents_free(c.e, c.ne);
		return -EINVAL;
	}
	*e = c.e;
	*n = c.ne;
	return 0;
}

int ix_check_tree(struct ix *x, const unsigned char *p, size_t sz)
{
	struct tent *e = NULL;
	size_t n = 0;
	int rc;

	if (!sz)
		return 0;
	/* a split index's entries are the shared index's too: index-split.c */
	if (x->link && ix_link_base(x))
		return 0;
	if (ix_collect(x, &e, &n))
		return -EINVAL;
	rc = ix_tree_entries(x, p, sz, e, n);
	ix_tents_free(e, n);
	return rc;
}
