/* SPDX-License-Identifier: MIT */
/*
 * The table of one bot's changes (changes-int.h): paths stored once, by
 * parent, and the merge rules of agentfs-protocol(7), CHANGES: a name made
 * and removed leaves nothing, made then written stays created, removed then
 * made again is modified, a folder renamed carries what changed inside it,
 * and renamed back is no rename.
 *
 * Nodes are freed as soon as nothing needs them (prune): no change of
 * their own, no child, no reference. A reference (refs) is a renamed
 * entry's from, or a pin: a node a function is still working on holds one,
 * so freeing what a change made unneeded never frees a node in use.
 * Reading the table out (pages, snapshots) is ctree-read.c's.
 */
#include "src/daemon/changes-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#define NB_MIN 64

static const char *const kind_names[] = {NULL, "created", "modified", "deleted", "renamed"};

const char *ct_kind_name(unsigned kind)
{
	return kind < sizeof kind_names / sizeof kind_names[0] ? kind_names[kind] : NULL;
}

/* The bytes a name takes in a JSON string, as ct_snap_text (and cJSON) write it, at most. */
size_t ct_json_len(const char *s, size_t len)
{
	size_t n = 0, i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		n += c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : 1;
	}
	return n;
}

/*
 * What a node is charged: its memory (with the allocator's share) and,
 * which is more, what the saver writes for it: a node's line holds up to
 * four numbers of 11 characters and its name escaped.
 */
static size_t node_cost(const char *name, size_t len)
{
	return sizeof(struct cnode) + 56 + ct_json_len(name, len);
}

void ct_init(struct ctree *t, size_t max, bool (*charge)(void *, long long), void *arg)
{
	memset(t, 0, sizeof *t);
	t->max = max;
	t->charge = charge;
	t->charge_arg = arg;
	/* keyed at random: a bot choosing names cannot pick ones that collide */
	if (getrandom(&t->seed, sizeof t->seed, GRND_NONBLOCK) != sizeof t->seed)
		t->seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)t;
}

static bool charge(struct ctree *t, long long bytes)
{
	return t->charge == NULL || t->charge(t->charge_arg, bytes);
}

static uint64_t hash(const struct ctree *t, const struct cnode *parent, const char *name,
		     size_t len)
{
	uint64_t h = (t->seed ^ (uint64_t)(uintptr_t)parent) * 0x9E3779B97F4A7C15ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	return h ^ (h >> 29);
}

static struct cnode *find(const struct ctree *t, const struct cnode *parent, const char *name,
			  size_t len)
{
	struct cnode *n;

	if (t->b == NULL)
		return NULL;
	for (n = t->b[hash(t, parent, name, len) & (t->nb - 1)]; n != NULL; n = n->hnext)
		if (n->parent == parent && n->len == len && memcmp(n->name, name, len) == 0)
			return n;
	return NULL;
}

/* Twice the buckets; false if that could not be had (the chains grow instead). */
static bool grow(struct ctree *t)
{
	size_t nb = t->nb != 0 ? t->nb * 2 : NB_MIN, i;
	struct cnode **b, *n, *next;

	if (!charge(t, (long long)(nb - t->nb) * (long long)sizeof *b))
		return false;
	b = calloc(nb, sizeof *b);
	if (b == NULL) {
		charge(t, -(long long)(nb - t->nb) * (long long)sizeof *b);
		return false;
	}
	for (i = 0; i < t->nb; i++) {
		for (n = t->b[i]; n != NULL; n = next) {
			size_t k = hash(t, n->parent, n->name, n->len) & (nb - 1);

			next = n->hnext;
			n->hnext = b[k];
			b[k] = n;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return true;
}

/* parent's child named name, made if missing; NULL if it cannot be (charge refused, memory) */
static struct cnode *make(struct ctree *t, struct cnode *parent, const char *name, size_t len)
{
	struct cnode *n = find(t, parent, name, len);
	size_t cost, k;

	if (n != NULL)
		return n;
	if (len == 0 || len > UINT16_MAX)
		return NULL;
	if (t->nodes >= t->nb && !grow(t) && t->b == NULL)
		return NULL;
	cost = node_cost(name, len);
	if (cost > UINT16_MAX || !charge(t, (long long)cost))
		return NULL;
	n = calloc(1, sizeof *n + len + 1);
	if (n == NULL) {
		charge(t, -(long long)cost);
		return NULL;
	}
	memcpy(n->name, name, len);
	n->len = (uint16_t)len;
	n->cost = (uint16_t)cost;
	n->parent = parent;
	k = hash(t, parent, name, len) & (t->nb - 1);
	n->hnext = t->b[k];
	t->b[k] = n;
	n->next = parent->child;
	if (parent->child != NULL)
		parent->child->prev = n;
	parent->child = n;
	t->nodes++;
	t->names += len + 1;
	return n;
}

static void node_free(struct ctree *t, struct cnode *n)
{
	struct cnode **pp = &t->b[hash(t, n->parent, n->name, n->len) & (t->nb - 1)];

	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
	if (n->prev != NULL)
		n->prev->next = n->next;
	else
		n->parent->child = n->next;
	if (n->next != NULL)
		n->next->prev = n->prev;
	t->nodes--;
	t->names -= n->len + 1u;
	charge(t, -(long long)n->cost);
	free(n);
}

/* Free n, and the folders above it, while nothing needs them. */
static void prune(struct ctree *t, struct cnode *n)
{
	struct cnode *p;

	while (n != &t->root && n->kind == CT_NONE && n->refs == 0 && n->child == NULL) {
		p = n->parent;
		node_free(t, n);
		n = p;
	}
}

static void unpin(struct ctree *t, struct cnode *n)
{
	if (n != NULL) {
		n->refs--;
		prune(t, n);
	}
}

/* The node of path, made if mk (pinned: unpin it), or NULL. */
static struct cnode *lookup(struct ctree *t, const char *path, bool mk)
{
	struct cnode *n = &t->root, *m;
	const char *c = path, *e;

	for (;;) {
		while (*c == '/')
			c++;
		if (*c == '\0')
			break;
		e = strchr(c, '/');
		if (e == NULL)
			e = c + strlen(c);
		m = find(t, n, c, (size_t)(e - c));
		if (m == NULL && mk)
			m = make(t, n, c, (size_t)(e - c));
		if (m == NULL) {
			prune(t, n); /* folders made on the way, if any */
			return NULL;
		}
		n = m;
		c = e;
	}
	n->refs++;
	return n;
}

/* n takes a change of kind; false (counted) past the table's bound */
static bool put(struct ctree *t, struct cnode *n, enum ct_kind kind, bool dir)
{
	if (n == &t->root)
		return false;
	if (n->kind == CT_NONE) {
		if (t->n >= t->max) {
			t->overflow++;
			return false;
		}
		t->n++;
	}
	n->kind = (uint8_t)kind;
	n->dir = dir;
	return true;
}

/* n's change goes (the node stays while something needs it) */
static void drop(struct ctree *t, struct cnode *n)
{
	struct cnode *f = n->from;

	if (n->kind != CT_NONE)
		t->n--;
	n->kind = CT_NONE;
	n->modified = false;
	n->from = NULL;
	if (f != NULL)
		unpin(t, f);
}

/* An original path (one the bot found) is gone: deleted, unless it was made again. */
static void original_gone(struct ctree *t, struct cnode *n, bool dir)
{
	if (n->kind == CT_NONE)
		put(t, n, CT_DELETED, dir);
	else if (n->kind == CT_CREATED)
		n->kind = CT_MODIFIED; /* replaced by a new one at the same path */
}

static void on_created(struct ctree *t, struct cnode *n, bool dir)
{
	if (n->kind == CT_NONE)
		put(t, n, CT_CREATED, dir);
	else if (n->kind == CT_DELETED)
		n->kind = CT_MODIFIED; /* removed and made again */
}

static void on_modified(struct ctree *t, struct cnode *n, bool dir)
{
	if (n->kind == CT_NONE)
		put(t, n, CT_MODIFIED, dir);
	else if (n->kind == CT_RENAMED)
		n->modified = true;
	else if (n->kind == CT_DELETED)
		n->kind = CT_MODIFIED;
}

static void on_deleted(struct ctree *t, struct cnode *n, bool dir)
{
	struct cnode *from;

	switch (n->kind) {
	case CT_NONE:
		put(t, n, CT_DELETED, dir);
		break;
	case CT_CREATED:
		drop(t, n); /* made and removed: nothing happened */
		break;
	case CT_MODIFIED:
		n->kind = CT_DELETED;
		break;
	case CT_RENAMED:
		from = n->from; /* its reference is ours now */
		n->from = NULL;
		drop(t, n);
		if (from != NULL) {
			original_gone(t, from, dir);
			unpin(t, from);
		}
		break;
	}
}

/* n's change moves to d, replacing d's (a rename replaces what was there) */
static void transfer(struct ctree *t, struct cnode *n, struct cnode *d)
{
	if (d->kind != CT_NONE)
		drop(t, d);
	d->kind = n->kind;
	d->dir = n->dir;
	d->modified = n->modified;
	d->from = n->from;
	n->kind = CT_NONE;
	n->modified = false;
	n->from = NULL;
}

static bool live(const struct cnode *n)
{
	return n->kind == CT_CREATED || n->kind == CT_MODIFIED || n->kind == CT_RENAMED;
}

/*
 * The changes beneath folder src move beneath dst (src renamed to dst,
 * whose path is dlen bytes long); what was deleted stays where it was, as
 * do the paths renamed entries came from. Both are pinned by the caller.
 * A change that cannot move (too long a path, no memory; or dst NULL: its
 * folder could not move) is dropped and counted, and so is all beneath it.
 */
static void move_live(struct ctree *t, struct cnode *src, struct cnode *dst, size_t dlen)
{
	struct cnode *c = src->child, *next, *d;
	size_t l;

	if (c != NULL)
		c->refs++;
	while (c != NULL) {
		next = c->next;
		if (next != NULL)
			next->refs++;
		l = dlen + 1 + c->len;
		d = NULL;
		if (dst != NULL && (live(c) || c->child != NULL) && l <= CT_PATH_MAX &&
		    (d = make(t, dst, c->name, c->len)) != NULL)
			d->refs++;
		if (live(c) && d != NULL) {
			transfer(t, c, d);
		} else if (live(c)) {
			t->overflow++;
			drop(t, c);
		}
		if (c->child != NULL)
			move_live(t, c, d, l);
		unpin(t, d);
		unpin(t, c);
		c = next;
	}
}

static size_t path_len(const struct cnode *n)
{
	size_t l = 0;

	for (; n->parent != NULL; n = n->parent)
		l += 1u + n->len;
	return l;
}

static bool is_beneath(const struct cnode *n, const struct cnode *anc)
{
	for (n = n->parent; n != NULL; n = n->parent)
		if (n == anc)
			return true;
	return false;
}

/*
 * a renamed to b. REPLACED: something had the name b and the rename
 * replaced it; if that was a file the bot found there (or one that stood at
 * b when it was made), b was modified, not created: git writes .git/index
 * and refs as a lock file renamed over the old one.
 */
static void on_renamed(struct ctree *t, struct cnode *a, struct cnode *b, bool dir, bool replaced)
{
	struct cnode *from = NULL;
	enum ct_kind kind = CT_RENAMED;
	bool modified = false;
	bool original_at_b = (b->kind == CT_NONE && replaced) || b->kind == CT_MODIFIED ||
			     b->kind == CT_DELETED;

	if (a == b || is_beneath(b, a))
		return; /* no such rename: the kernel refuses it */
	/* what b was is replaced */
	if (b->kind == CT_RENAMED && b->from != NULL) {
		from = b->from;
		b->from = NULL;
		drop(t, b);
		original_gone(t, from, dir);
		unpin(t, from);
		from = NULL;
	} else if (b->kind != CT_NONE && b->kind != CT_DELETED) {
		drop(t, b);
	}
	if (a->kind == CT_NONE || a->kind == CT_DELETED) {
		from = a;
		a->refs++;
	} else if (a->kind == CT_CREATED) {
		kind = CT_CREATED;
	} else if (a->kind == CT_MODIFIED) {
		from = a;
		a->refs++;
		modified = true;
	} else {
		from = a->from; /* its reference moves with it */
		a->from = NULL;
		modified = a->modified;
	}
	if (a->kind != CT_NONE && a->kind != CT_DELETED)
		drop(t, a);
	if (dir)
		move_live(t, a, b, path_len(b));
	if (from == b) {
		/* back where it was */
		unpin(t, from);
		if (modified)
			on_modified(t, b, dir);
		else if (b->kind == CT_DELETED)
			drop(t, b);
		return;
	}
	if (b->kind == CT_DELETED)
		drop(t, b); /* an original there was replaced: the rename says so */
	if (kind == CT_CREATED && original_at_b)
		kind = CT_MODIFIED; /* a new file took an original's place */
	if (put(t, b, kind, dir)) {
		b->from = from;
		b->modified = modified;
	} else if (from != NULL) {
		unpin(t, from);
	}
}

void ct_apply(struct ctree *t, enum ct_event ev, const char *p, const char *p2, bool dir)
{
	bool p_ok = strlen(p) <= CT_PATH_MAX, p2_ok = p2 != NULL && strlen(p2) <= CT_PATH_MAX;
	bool over = ev == CT_EV_RENAMED_OVER;
	struct cnode *a, *b;

	if (over)
		ev = CT_EV_RENAMED;
	if (ev == CT_EV_RENAMED && p_ok != p2_ok) {
		/* one end is too long to keep: what can be said of the other */
		t->overflow++;
		if (p_ok)
			ev = CT_EV_DELETED;
		else
			p = p2, ev = over ? CT_EV_MODIFIED : CT_EV_CREATED;
	} else if (!p_ok || (ev == CT_EV_RENAMED && !p2_ok)) {
		t->overflow++;
		return;
	}
	if ((a = lookup(t, p, true)) == NULL) {
		t->overflow++;
		return;
	}
	switch (ev) {
	case CT_EV_CREATED:
		on_created(t, a, dir);
		break;
	case CT_EV_MODIFIED:
		on_modified(t, a, dir);
		break;
	case CT_EV_DELETED:
		on_deleted(t, a, dir);
		break;
	case CT_EV_RENAMED:
		if ((b = lookup(t, p2, true)) == NULL) {
			t->overflow++;
			on_deleted(t, a, dir);
			break;
		}
		on_renamed(t, a, b, dir, over);
		unpin(t, b);
		break;
	case CT_EV_RENAMED_OVER:
		break; /* made CT_EV_RENAMED above */
	}
	unpin(t, a);
}

void ct_path(const struct cnode *n, char *buf)
{
	size_t off = path_len(n);

	if (off == 0 || off > CT_PATH_MAX) {
		strcpy(buf, off == 0 ? "/" : "?");
		return;
	}
	buf[off] = '\0';
	for (; n->parent != NULL; n = n->parent) {
		off -= n->len;
		memcpy(buf + off, n->name, n->len);
		buf[--off] = '/';
	}
}

void ct_clear(struct ctree *t)
{
	struct cnode *n, *next;
	size_t i;

	/* through the hash, not the tree: a chain of 2,000 folders is no reason to recurse */
	for (i = 0; i < t->nb; i++) {
		for (n = t->b[i]; n != NULL; n = next) {
			next = n->hnext;
			charge(t, -(long long)n->cost);
			free(n);
		}
	}
	charge(t, -(long long)t->nb * (long long)sizeof *t->b);
	free(t->b);
	t->b = NULL;
	t->nb = 0;
	t->root.child = NULL;
	t->nodes = t->n = t->names = 0;
	t->overflow = 0;
}

/* Version 1: whole paths. */
static void load_paths(struct ctree *t, const cJSON *arr)
{
	const cJSON *v, *f;
	struct cnode *n, *fn;
	unsigned k;

	cJSON_ArrayForEach(v, arr) {
		const char *type =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "type"));
		const char *path =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "path"));

		if (type == NULL || path == NULL || strlen(path) > CT_PATH_MAX)
			continue;
		for (k = 1; k < 5 && strcmp(kind_names[k], type) != 0; k++)
			;
		if (k == 5 || (n = lookup(t, path, true)) == NULL)
			continue;
		if (n->kind == CT_NONE &&
		    put(t, n, (enum ct_kind)k,
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "dir")))) {
			n->modified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "modified"));
			f = cJSON_GetObjectItemCaseSensitive(v, "from");
			if (k == CT_RENAMED && cJSON_IsString(f) &&
			    strlen(f->valuestring) <= CT_PATH_MAX &&
			    (fn = lookup(t, f->valuestring, true)) != NULL) {
				if (fn != n)
					n->from = fn; /* its pin is the reference */
				else
					unpin(t, fn);
			}
		}
		unpin(t, n);
	}
}

void ct_load(struct ctree *t, const cJSON *o)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(o, "nodes"), *v;
	const cJSON *ov = cJSON_GetObjectItemCaseSensitive(o, "overflow");
	struct cnode **made;
	int parent, from, used;
	unsigned kind, flags;
	size_t n = 0, i;
	double d;

	/* a number that does not fit (NaN, negative, huge) is tested before its cast */
	d = cJSON_IsNumber(ov) ? ov->valuedouble : 0;
	t->overflow = d >= 0 && d <= 1e15 ? (uint64_t)d : 0;
	if (!cJSON_IsArray(nodes)) {
		load_paths(t, cJSON_GetObjectItemCaseSensitive(o, "changes"));
		return;
	}
	made = calloc((size_t)cJSON_GetArraySize(nodes) + 1, sizeof *made);
	if (made == NULL)
		return;
	/* each node after its parent; one that cannot be made takes its subtree with it */
	cJSON_ArrayForEach(v, nodes) {
		struct cnode *p, *m = NULL;
		const char *s = cJSON_GetStringValue(v), *name;

		if (s != NULL &&
		    sscanf(s, "%d %u %u %d %n", &parent, &kind, &flags, &from, &used) == 4 &&
		    parent >= -1 && (size_t)(parent + 1) <= n && kind < 5) {
			p = parent < 0 ? &t->root : made[parent];
			name = s + used;
			if (p != NULL && strchr(name, '/') == NULL &&
			    path_len(p) + 1 + strlen(name) <= CT_PATH_MAX &&
			    (m = make(t, p, name, strlen(name))) != NULL && kind != CT_NONE) {
				if (m->kind == CT_NONE && put(t, m, (enum ct_kind)kind, flags & 1))
					m->modified = (flags & 2) != 0;
			}
		}
		made[n++] = m;
	}
	/* then where renamed entries came from; what is left unneeded goes */
	i = 0;
	cJSON_ArrayForEach(v, nodes) {
		const char *s = cJSON_GetStringValue(v);
		struct cnode *m = made[i++];

		if (m != NULL && m->kind == CT_RENAMED && m->from == NULL && s != NULL &&
		    sscanf(s, "%d %u %u %d", &parent, &kind, &flags, &from) == 4 && from >= 0 &&
		    (size_t)from < n && made[from] != NULL && made[from] != m) {
			m->from = made[from];
			m->from->refs++;
		}
	}
	for (i = 0; i < n; i++)
		if (made[i] != NULL && made[i]->child == NULL)
			prune(t, made[i]);
	free(made);
}
