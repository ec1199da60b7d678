/* SPDX-License-Identifier: MIT */
/*
 * A table of what a bot changed (ctree.c), private to changes.c and its
 * unit test. Each path is stored once, as a node under its parent folder's
 * node: a change deep in a tree costs one node and its name, not the whole
 * path again (1,062 nested 255-byte folders made cost ~256 KiB, not the
 * ~256*D^2 bytes whole paths did). A node carries the merged change of its
 * path, if any, or is only a folder on the way to one, or the path a
 * renamed entry came from.
 *
 * Bounds: a table keeps at most max entries, and charges every node it
 * makes (its size plus its name as JSON escapes it, so what the saver
 * writes is bounded too) through charge(); a change the charge refuses,
 * or whose path would be longer than CT_PATH_MAX bytes, is not kept but
 * counted in overflow. A table has no lock: its owner's (changes.c).
 */
#ifndef AGENTFS_CHANGES_INT_H
#define AGENTFS_CHANGES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

/* The longest path kept, as its host path: longer ones are only counted. */
#define CT_PATH_MAX 4095

enum ct_kind { CT_NONE, CT_CREATED, CT_MODIFIED, CT_DELETED, CT_RENAMED };
/* CT_EV_RENAMED_OVER: a rename that replaced what had the new name */
enum ct_event { CT_EV_CREATED, CT_EV_MODIFIED, CT_EV_DELETED, CT_EV_RENAMED, CT_EV_RENAMED_OVER };

struct cnode {
	struct cnode *parent;
	struct cnode *hnext;	   /* in the table's hash of (parent, name) */
	struct cnode *child;	   /* first child */
	struct cnode *next, *prev; /* siblings */
	struct cnode *from;	   /* CT_RENAMED: the node of the path it had (refs held) */
	uint32_t refs;		   /* renamed entries whose from this is */
	uint16_t len;		   /* strlen(name) */
	uint8_t kind;		   /* enum ct_kind */
	bool dir;		   /* the path is a folder */
	bool modified;		   /* CT_RENAMED: its content changed too */
	uint16_t cost;		   /* what was charged for it */
	uint32_t idx;		   /* its place in the last snapshot */
	char name[];
};

struct ctree {
	struct cnode root; /* "/" */
	struct cnode **b;  /* hash buckets */
	size_t nb;	   /* a power of two */
	size_t nodes;	   /* nodes but the root */
	size_t names;	   /* their names' bytes, with a NUL each */
	uint64_t seed;	   /* the hash's key, random per table */
	size_t n;	   /* entries (nodes with a kind) */
	size_t max;	   /* entries kept at most */
	uint64_t overflow; /* changes not kept */
	/* charge bytes (> 0) or give them back (< 0); false: refused */
	bool (*charge)(void *arg, long long bytes);
	void *charge_arg;
};

void ct_init(struct ctree *t, size_t max, bool (*charge)(void *, long long), void *arg);
void ct_clear(struct ctree *t);
/* Record one change (p2: a rename's new path); paths are absolute host paths. */
void ct_apply(struct ctree *t, enum ct_event ev, const char *p, const char *p2, bool dir);
/* The host path of n into buf (at least CT_PATH_MAX + 1 bytes). */
void ct_path(const struct cnode *n, char *buf);
/*
 * Call fn for each entry in path order (a folder before what it holds,
 * names compared bytewise), starting after the path after (NULL: from the
 * first), until fn answers false. -ENOMEM if a folder could not be sorted.
 */
int ct_walk(struct ctree *t, const char *after, bool (*fn)(void *arg, const struct cnode *n),
	    void *arg);
/* The bytes s takes in a JSON string, at most (controls as \\u00XX). */
size_t ct_json_len(const char *s, size_t len);
/* The name of a kind, "created" ...; NULL for CT_NONE. */
const char *ct_kind_name(unsigned kind);
/*
 * A flat copy of a table, taken under its owner's lock in one pass over
 * its nodes and turned into JSON after the lock is let go, so the saver
 * never holds up the bot's writes for longer than the copy.
 */
struct ct_rec {
	int32_t parent, from; /* indexes into v, -1: "/" (parent) or none (from) */
	uint32_t name;	      /* offset in names */
	uint16_t len;
	uint8_t kind;
	uint8_t flags; /* 1: dir, 2: modified */
};
struct ct_snap {
	struct ct_rec *v;
	size_t n;
	char *names;
	uint64_t overflow;
};
int ct_snapshot(struct ctree *t, struct ct_snap *s);
void ct_snap_free(struct ct_snap *s);
/*
 * Append a snapshot as JSON to buf (grown; *len its length): {"overflow":
 * N, "nodes": ["PARENT KIND FLAGS FROM NAME", ...]}, each node after its
 * parent. One string a node: the saver and the loader hold one small JSON
 * item a node, never a tree of them. -ENOMEM.
 */
int ct_snap_text(const struct ct_snap *s, char **buf, size_t *len, size_t *cap);
/* Read what ct_snap_text wrote (or, version 1, {"changes": [{type, path, from, dir, modified}]}). */
void ct_load(struct ctree *t, const cJSON *o);

#endif
