/* SPDX-License-Identifier: MIT */
/*
 * The table of one bot's changes read out (changes-int.h): in path order
 * from a cursor (ct_walk, agentfs changes' pages), and as a snapshot taken
 * under the lock and turned into text outside it (ct_snapshot,
 * ct_snap_text: what STATE keeps). ctree.c keeps the table itself.
 */
#include "src/daemon/changes-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* walk: children sorted by name, bytewise (a shorter name first) */
static int cmp_node(const void *x, const void *y)
{
	const struct cnode *a = *(struct cnode *const *)x, *b = *(struct cnode *const *)y;
	int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);

	return c != 0 ? c : (int)a->len - (int)b->len;
}

struct walk {
	const char *after; /* the cursor, "/a/b" */
	bool (*fn)(void *, const struct cnode *);
	void *arg;
	bool stop;
	int error;
};

/*
 * Entries beneath n in order; with cur (the rest of the cursor past n's
 * path, at a component), only those after the cursor.
 */
static void walk_node(struct walk *w, const struct cnode *n, const char *cur)
{
	struct cnode **v, *c;
	size_t k = 0, i, clen = 0;
	const char *rest = NULL;

	for (c = n->child; c != NULL; c = c->next)
		k++;
	if (k == 0)
		return;
	v = malloc(k * sizeof *v);
	if (v == NULL) {
		w->error = -ENOMEM;
		w->stop = true;
		return;
	}
	for (i = 0, c = n->child; c != NULL; c = c->next)
		v[i++] = c;
	qsort(v, k, sizeof *v, cmp_node);
	if (cur != NULL) {
		while (*cur == '/')
			cur++;
		rest = strchr(cur, '/');
		clen = rest != NULL ? (size_t)(rest - cur) : strlen(cur);
		if (clen == 0)
			cur = NULL;
	}
	for (i = 0; i < k && !w->stop; i++) {
		c = v[i];
		if (cur != NULL) {
			int d = memcmp(c->name, cur, c->len < clen ? c->len : clen);

			if (d == 0)
				d = (int)c->len - (int)clen;
			if (d < 0)
				continue;
			if (d == 0) {
				/* c is on the cursor's way, or the cursor itself: it came before */
				walk_node(w, c, rest);
				cur = NULL;
				continue;
			}
			cur = NULL;
		}
		if (c->kind != CT_NONE && !w->fn(w->arg, c)) {
			w->stop = true;
			break;
		}
		walk_node(w, c, NULL);
	}
	free(v);
}

int ct_walk(struct ctree *t, const char *after, bool (*fn)(void *arg, const struct cnode *n),
	    void *arg)
{
	struct walk w = {.after = after, .fn = fn, .arg = arg};

	walk_node(&w, &t->root, after);
	return w.error;
}

/* Preorder without recursion: the node after n, or NULL. */
static struct cnode *next_pre(struct ctree *t, struct cnode *n)
{
	if (n->child != NULL)
		return n->child;
	while (n != &t->root && n->next == NULL)
		n = n->parent;
	return n == &t->root ? NULL : n->next;
}

int ct_snapshot(struct ctree *t, struct ct_snap *s)
{
	struct cnode *n;
	size_t i = 0, off = 0;

	memset(s, 0, sizeof *s);
	s->overflow = t->overflow;
	if (t->nodes == 0)
		return 0;
	s->v = malloc(t->nodes * sizeof *s->v);
	s->names = malloc(t->names);
	if (s->v == NULL || s->names == NULL) {
		ct_snap_free(s);
		return -ENOMEM;
	}
	for (n = t->root.child; n != NULL; n = next_pre(t, n)) {
		struct ct_rec *r = &s->v[i];

		n->idx = (uint32_t)i++;
		r->parent = n->parent == &t->root ? -1 : (int32_t)n->parent->idx;
		r->name = (uint32_t)off;
		r->len = n->len;
		r->kind = n->kind;
		r->flags = (uint8_t)((n->dir ? 1 : 0) | (n->modified ? 2 : 0));
		memcpy(s->names + off, n->name, n->len);
		s->names[off + n->len] = '\0';
		off += n->len + 1u;
	}
	s->n = i;
	for (i = 0, n = t->root.child; n != NULL; n = next_pre(t, n), i++)
		s->v[i].from = n->from != NULL ? (int32_t)n->from->idx : -1;
	return 0;
}

void ct_snap_free(struct ct_snap *s)
{
	free(s->v);
	free(s->names);
	memset(s, 0, sizeof *s);
}

static int reserve(char **buf, size_t *len, size_t *cap, size_t more)
{
	char *nb;
	size_t want;

	if (*len + more + 1 <= *cap)
		return 0;
	want = (*len + more + 1) * 2;
	nb = realloc(*buf, want);
	if (nb == NULL)
		return -ENOMEM;
	*buf = nb;
	*cap = want;
	return 0;
}

/* s escaped as a JSON string's content (cJSON reads it back): quotes, backslashes, controls */
static void put_escaped(char *out, size_t *len, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			out[(*len)++] = '\\';
			out[(*len)++] = (char)c;
		} else if (c < 0x20) {
			*len += (size_t)sprintf(out + *len, "\\u%04x", c);
		} else {
			out[(*len)++] = (char)c;
		}
	}
}

int ct_snap_text(const struct ct_snap *s, char **buf, size_t *len, size_t *cap)
{
	size_t i;

	if (reserve(buf, len, cap, 64) != 0)
		return -ENOMEM;
	*len += (size_t)sprintf(*buf + *len, "{\"overflow\":%llu,\"nodes\":[",
				(unsigned long long)s->overflow);
	for (i = 0; i < s->n; i++) {
		const struct ct_rec *r = &s->v[i];

		if (reserve(buf, len, cap, 64 + 6u * r->len) != 0)
			return -ENOMEM;
		*len += (size_t)sprintf(*buf + *len, "%s\"%d %u %u %d ", i > 0 ? "," : "",
					(int)r->parent, (unsigned)r->kind, (unsigned)r->flags,
					(int)r->from);
		put_escaped(*buf, len, s->names + r->name, r->len);
		(*buf)[(*len)++] = '"';
	}
	if (reserve(buf, len, cap, 4) != 0)
		return -ENOMEM;
	memcpy(*buf + *len, "]}", 3);
	*len += 2;
	return 0;
}
