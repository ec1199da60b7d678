/* SPDX-License-Identifier: MIT */
/*
 * The index parser's internals, shared by index.c (one index: X2's paths,
 * modes and layout) and index-split.c (a split index with its shared one).
 */
#ifndef GITGUARD_INDEX_INT_H
#define GITGUARD_INDEX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gitguard/gitguard.h"

#define IDX_HDR 12
#define IDX_STAT 40 /* ctime, mtime, dev, ino, mode, uid, gid, size */
#define IDX_NAMEMASK 0x0fffu
#define IDX_EXTENDED 0x4000u
#define IDX_STAGE 0x3000u
#define IDX_X_ALLOWED 0x6000u /* flags2: skip-worktree, intent-to-add */
#define IDX_X_SKIP 0x4000u    /* flags2: skip-worktree */
#define IDX_PATH_MAX 4096     /* longer names are refused, git writes none on Linux */

struct ix {
	const unsigned char *p;
	size_t len;
	size_t hashsz;
	unsigned version;
	uint32_t nr;
	bool link;   /* split index: empty names stand for shared entries */
	bool sdir;   /* sparse index: folder entries are allowed */
	bool strict; /* check names, modes and order, not only the layout */
	bool untr;   /* an untracked cache extension (UNTR) was seen */
	size_t end;  /* offset just past the last entry */
	const char *why;
	guard_index_entry_fn fn; /* each named entry of a strict pass, or NULL */
	void *arg;
	/* each entry of a strict pass, also empty-named ones, with its position */
	int (*each)(struct ix *x, uint32_t i, const char *name, size_t nlen, uint32_t mode,
		    const unsigned char *oid);
	void *each_arg;
	unsigned cur_flags, cur_xflags; /* the flags of the entry each() is called for */
	guard_index_entry_fn reuc_fn;	/* each resolve-undo stage, or NULL */
	void *reuc_arg;
};

uint32_t ix_be32(const unsigned char *p);
/* Sets x->why (the first reason wins) and returns -EINVAL */
int ix_fail(struct ix *x, const char *why);
/* A mode git writes (a folder only in a sparse index) */
bool ix_mode_ok(uint32_t mode, bool sdir);
/* One pass over the entries; x->end is past the last one after a good pass */
int ix_walk(struct ix *x, size_t *starts, bool *fresh);
/* index-tree.c: the TREE extension's valid nodes against the entries */
struct tent {
	char *path;
	size_t len;
	uint32_t mode;
	const unsigned char *oid;
	bool ita; /* intent-to-add: in the range, not in the tree */
	unsigned stage;
	bool added; /* index-split.c: a split index's own entry, over a shared one */
};
int ix_check_tree(struct ix *x, const unsigned char *p, size_t sz);
/* the valid nodes of the cache-tree P against entries E (sorted as git sorts them);
   NE TREE_UNSEEN: the entries are not known (any valid node is refused) */
#define TREE_UNSEEN ((size_t)-1)
int ix_tree_entries(struct ix *x, const unsigned char *p, size_t sz, struct tent *e, size_t ne);
/* X's entries (a strict pass), empty-named ones too */
int ix_collect(struct ix *x, struct tent **e, size_t *n);
void ix_tents_free(struct tent *e, size_t n);
/* index-split.c: a split index X names a shared index (a link with a non-null base) */
bool ix_link_base(const struct ix *x);
/* The whole check of the index X was set up with (p, len, hashsz); 0, or -EINVAL with *WHY */
int ix_run(struct ix *x, const char **why);

#endif
