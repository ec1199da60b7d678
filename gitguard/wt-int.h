/* SPDX-License-Identifier: MIT */
/*
 * X2's work-tree side, shared by content.c (the check of an index's entries)
 * and wt.c (which paths of a work tree git runs or reads as config, and
 * where a linked worktree's top and common folder are).
 */
#ifndef GITGUARD_WT_INT_H
#define GITGUARD_WT_INT_H

#include <limits.h>

#include "gitguard/guard-int.h"

/* A path a work tree's index is checked at */
struct wt_path {
	char *path;
	bool dir; /* a hooks folder: everything beneath */
	bool top; /* raw: relative to the top, else to the git folder */
};

/* Paths inside a work tree that git runs or reads as config, from its top */
struct wt_check {
	int topfd;
	bool linked; /* a linked worktree: includes are the main work tree's */
	bool full;   /* out of memory, or past the walk's bounds: incomplete, refuse */
	size_t hashsz;
	struct wt_path *p;
	size_t n, alloc;
	/* values not plainly inside the top (absolute, or climbing out and back) */
	struct wt_path *raw;
	size_t nraw, araw;
	unsigned walked; /* entries of hooks folders read for links (WT_HOOK_WALK_MAX) */
	/* wt_hook_links' buffers: one set, not one per level of its recursion */
	char here[PATH_MAX], target[PATH_MAX];
	/* wt_links' buffers: the path left to walk, a link's text and real place */
	char rest[PATH_MAX], text[PATH_MAX], place[PATH_MAX];
	/* the replaced index's entries at those paths: kept as they are, they pass */
	struct wt_old *old;
	size_t nold, aold;
};

struct wt_old {
	char *path;
	uint32_t mode;
	unsigned char oid[32];
};

/* wt.c */
int wt_key(void *arg, enum guard_cfg_key key, const char *value);
void wt_repo_hooks(void *arg, const char *rel);
void wt_real_dirs(struct guard *g, struct wt_check *w, int gitfd);
int wt_linked(struct guard *g, int dfd, int *topfd, int *cfgfd);
int wt_outside(struct guard *g, int dfd, int *topfd, int *cfgfd);

#endif
