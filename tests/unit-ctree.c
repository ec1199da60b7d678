/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of src/daemon/ctree.c, the table of a bot's changes: the merge rules
 * (agentfs-protocol(7), CHANGES), a folder's rename carrying what changed
 * inside it while what was deleted stays, paths stored once by parent (a
 * deep chain costs linear memory), the bounds (entries, charged bytes, path
 * length, also reached through renames), pages after a cursor, and a
 * snapshot read back whole. No root, no daemon.
 */
#include "src/daemon/changes-int.h"
#include "tests/guard-tap.h"

#include <stdlib.h>
#include <string.h>

static long long charged, budget = -1;

static bool charge(void *arg, long long bytes)
{
	if (bytes > 0 && budget >= 0 && charged + bytes > budget)
		return false;
	charged += bytes;
	return true;
}

struct acc {
	char text[65536];
};

static bool list_one(void *arg, const struct cnode *n)
{
	struct acc *a = arg;
	char p[CT_PATH_MAX + 1], f[CT_PATH_MAX + 1];
	size_t l = strlen(a->text);

	ct_path(n, p);
	if (n->from != NULL) {
		ct_path(n->from, f);
		snprintf(a->text + l, sizeof a->text - l, "%s %s<-%s%s%s;", ct_kind_name(n->kind),
			 p, f, n->dir ? "/" : "", n->modified ? "+m" : "");
	} else {
		snprintf(a->text + l, sizeof a->text - l, "%s %s%s;", ct_kind_name(n->kind), p,
			 n->dir ? "/" : "");
	}
	return true;
}

/* The table as "kind path[<-from][/][+m];..." in path order */
static const char *listing(struct ctree *t)
{
	static struct acc a;

	a.text[0] = '\0';
	ct_walk(t, NULL, list_one, &a);
	return a.text;
}

static void is(const char *got, const char *want, const char *what)
{
	tap_ok(strcmp(got, want) == 0, "%s", what);
	if (strcmp(got, want) != 0)
		printf("# got:  %s\n# want: %s\n", got, want);
}

static void test_merge(void)
{
	struct ctree t;

	ct_init(&t, 1000, charge, NULL);
	ct_apply(&t, CT_EV_CREATED, "/w/tmp", NULL, false);
	ct_apply(&t, CT_EV_MODIFIED, "/w/tmp", NULL, false);
	ct_apply(&t, CT_EV_DELETED, "/w/tmp", NULL, false);
	is(listing(&t), "", "a file made, written and removed leaves nothing");
	tap_ok(t.nodes == 0 && charged == (long long)(t.nb * sizeof *t.b),
	       "and no node: only the hash's buckets are charged (%zu nodes, %lld)", t.nodes,
	       charged);
	ct_apply(&t, CT_EV_DELETED, "/w/old", NULL, false);
	ct_apply(&t, CT_EV_CREATED, "/w/old", NULL, false);
	is(listing(&t), "modified /w/old;", "removed and made again is modified");
	ct_apply(&t, CT_EV_RENAMED, "/w/a", "/w/b", false);
	ct_apply(&t, CT_EV_MODIFIED, "/w/b", NULL, false);
	is(listing(&t), "renamed /w/b<-/w/a+m;modified /w/old;", "renamed and written");
	ct_apply(&t, CT_EV_RENAMED, "/w/b", "/w/a", false);
	is(listing(&t), "modified /w/a;modified /w/old;", "renamed back, written: modified");
	ct_apply(&t, CT_EV_RENAMED, "/w/x", "/w/y", false);
	ct_apply(&t, CT_EV_DELETED, "/w/y", NULL, false);
	is(listing(&t), "modified /w/a;modified /w/old;deleted /w/x;",
	   "renamed then removed: the original is deleted");
	ct_clear(&t);
	tap_ok(charged == 0, "cleared: every charge given back (%lld)", charged);
}

static void test_folder_rename(void)
{
	struct ctree t;

	ct_init(&t, 1000, charge, NULL);
	ct_apply(&t, CT_EV_MODIFIED, "/w/d/f", NULL, false);
	ct_apply(&t, CT_EV_DELETED, "/w/d/gone", NULL, false);
	ct_apply(&t, CT_EV_CREATED, "/w/d/sub/new", NULL, false);
	ct_apply(&t, CT_EV_RENAMED, "/w/d/r1", "/w/d/r2", false);
	ct_apply(&t, CT_EV_RENAMED, "/w/d", "/w/e", true);
	is(listing(&t),
	   "deleted /w/d/gone;renamed /w/e<-/w/d/;modified /w/e/f;renamed /w/e/r2<-/w/d/r1;"
	   "created /w/e/sub/new;",
	   "a folder's rename carries its changes; the deleted and the renamed-from stay");
	ct_apply(&t, CT_EV_RENAMED, "/w/e", "/w/d", true);
	is(listing(&t),
	   "modified /w/d/f;deleted /w/d/gone;renamed /w/d/r2<-/w/d/r1;"
	   "created /w/d/sub/new;",
	   "and back again");
	ct_apply(&t, CT_EV_RENAMED, "/w/d", "/w/d/sub/in", true);
	is(listing(&t),
	   "modified /w/d/f;deleted /w/d/gone;renamed /w/d/r2<-/w/d/r1;"
	   "created /w/d/sub/new;",
	   "a rename into itself (the kernel refuses it) changes nothing");
	ct_clear(&t);
	tap_ok(charged == 0, "cleared: every charge given back (%lld)", charged);
}

/* 1,062 nested folders of 255-byte names: ~256 bytes each, not whole paths */
static void test_deep(void)
{
	static char path[1100 * 256 + 1];
	struct ctree t;
	size_t len = 0, i, kept;

	ct_init(&t, 100000, charge, NULL);
	for (i = 0; i < 1062; i++) {
		path[len++] = '/';
		memset(path + len, 'a', 255);
		len += 255;
		path[len] = '\0';
		ct_apply(&t, CT_EV_CREATED, path, NULL, true);
	}
	kept = t.n;
	tap_ok(kept == 15, "paths up to %d bytes are kept (15 levels of 256), got %zu", CT_PATH_MAX,
	       kept);
	tap_ok(t.overflow == 1062 - 15, "the deeper ones are counted (%llu)",
	       (unsigned long long)t.overflow);
	tap_ok(charged < 15 * 2000, "memory is linear in the depth: %lld bytes charged", charged);
	ct_clear(&t);
}

/* deep paths reached by renaming a folder deeper: cut where they pass CT_PATH_MAX */
static void test_deep_by_rename(void)
{
	char a[CT_PATH_MAX + 1] = "", b[CT_PATH_MAX + 1];
	struct ctree t;
	size_t i;

	ct_init(&t, 100000, charge, NULL);
	for (i = 0; i < 10; i++) {
		strcat(a, "/");
		memset(a + strlen(a) + 0, 'x', 200);
		a[(i + 1) * 201] = '\0';
		ct_apply(&t, CT_EV_CREATED, a, NULL, true);
	}
	/*
	 * rename its top to a 2,500-byte path: levels 2 to 8 fit (up to 3,907
	 * bytes), 9 and 10 would pass 4,095
	 */
	memset(b, 'y', 2500);
	b[0] = '/';
	b[2500] = '\0';
	memcpy(a, "/", 2);
	memset(a + 1, 'x', 200);
	a[201] = '\0';
	ct_apply(&t, CT_EV_RENAMED, a, b, true);
	tap_ok(t.n == 8, "moved under a long path, the entries that fit are kept (%zu)", t.n);
	tap_ok(t.overflow == 2, "and those that would pass %d bytes are counted (%llu)",
	       CT_PATH_MAX, (unsigned long long)t.overflow);
	ct_clear(&t);
	tap_ok(charged == 0, "cleared: every charge given back (%lld)", charged);
}

static void test_bounds(void)
{
	char p[64];
	struct ctree t;
	int i;

	ct_init(&t, 20, charge, NULL);
	for (i = 0; i < 30; i++) {
		snprintf(p, sizeof p, "/w/f%d", i);
		ct_apply(&t, CT_EV_CREATED, p, NULL, false);
	}
	tap_ok(t.n == 20 && t.overflow == 10, "max 20: 20 kept, 10 counted (%zu, %llu)", t.n,
	       (unsigned long long)t.overflow);
	ct_clear(&t);
	budget = 3000;
	ct_init(&t, 1000, charge, NULL);
	for (i = 0; i < 100; i++) {
		snprintf(p, sizeof p, "/w/f%d", i);
		ct_apply(&t, CT_EV_CREATED, p, NULL, false);
	}
	tap_ok(charged <= 3000 && t.overflow > 0 && t.n > 0,
	       "a refused charge: kept what fits (%zu, %lld bytes), counted the rest (%llu)", t.n,
	       charged, (unsigned long long)t.overflow);
	ct_clear(&t);
	budget = -1;
	tap_ok(charged == 0, "cleared: every charge given back (%lld)", charged);
}

struct pager {
	int left;
	char last[CT_PATH_MAX + 1];
	struct acc a;
};

static bool page_one(void *arg, const struct cnode *n)
{
	struct pager *pg = arg;

	if (pg->left-- == 0)
		return false;
	ct_path(n, pg->last);
	list_one(&pg->a, n);
	return true;
}

static void test_pages(void)
{
	static const char *const paths[] = {"/w/b", "/w/a/z", "/w/a.b", "/w/a", "/w/c/d/e", "/w/c"};
	struct pager pg;
	struct ctree t;
	char all[4096] = "";
	size_t i;
	int pages = 0;

	ct_init(&t, 1000, charge, NULL);
	for (i = 0; i < sizeof paths / sizeof paths[0]; i++)
		ct_apply(&t, CT_EV_CREATED, paths[i], NULL, false);
	is(listing(&t),
	   "created /w/a;created /w/a/z;created /w/a.b;created /w/b;created /w/c;"
	   "created /w/c/d/e;",
	   "in path order, a folder before what it holds");
	pg.last[0] = '\0';
	do {
		pg.left = 2;
		pg.a.text[0] = '\0';
		ct_walk(&t, pages == 0 ? NULL : pg.last, page_one, &pg);
		strcat(all, pg.a.text);
		pages++;
	} while (pg.left < 0 && pages < 10);
	is(all, listing(&t), "pages of two after a cursor give each entry once, in order");
	pg.left = 10;
	pg.a.text[0] = '\0';
	ct_walk(&t, "/w/a.a/zzz", page_one, &pg);
	is(pg.a.text, "created /w/a.b;created /w/b;created /w/c;created /w/c/d/e;",
	   "a cursor that names no entry starts after where it would be");
	ct_clear(&t);
}

static void test_snapshot(void)
{
	struct ctree t, u;
	struct ct_snap s;
	char *text = NULL, want[65536];
	size_t len = 0, cap = 0;
	cJSON *o;

	ct_init(&t, 1000, charge, NULL);
	ct_apply(&t, CT_EV_MODIFIED, "/w/d/f", NULL, false);
	ct_apply(&t, CT_EV_DELETED, "/w/d/gone", NULL, false);
	ct_apply(&t, CT_EV_CREATED, "/w/q\"uote\\back\001ctl", NULL, false);
	ct_apply(&t, CT_EV_RENAMED, "/w/d/r1", "/w/r2", false);
	ct_apply(&t, CT_EV_RENAMED, "/w/d", "/w/e", true);
	ct_apply(&t, CT_EV_MODIFIED, "/w/nope/x", NULL, false);
	ct_apply(&t, CT_EV_DELETED, "/w/nope/x", NULL, false);
	t.overflow = 7;
	snprintf(want, sizeof want, "%s", listing(&t));
	tap_ok(ct_snapshot(&t, &s) == 0 && ct_snap_text(&s, &text, &len, &cap) == 0,
	       "a snapshot as text");
	tap_ok(len < (size_t)charged, "the text (%zu bytes) is within what was charged (%lld)", len,
	       charged);
	o = cJSON_Parse(text);
	ct_init(&u, 1000, charge, NULL);
	ct_load(&u, o);
	is(listing(&u), want, "read back: the same entries");
	tap_ok(u.overflow == 7 && u.n == t.n && u.nodes == t.nodes,
	       "the same counts and nodes (%zu, %zu)", u.nodes, t.nodes);
	cJSON_Delete(o);
	free(text);
	ct_snap_free(&s);
	ct_clear(&u);
	o = cJSON_Parse("{\"overflow\":\"x\",\"nodes\":[\"5 1 0 -1 orphan\",\"-1 9 0 -1 bad\","
			"\"-1 1 0 -1 a/b\",\"-1 4 1 5 ok\",\"3 1 0 7 sub\",\"nonsense\",7,"
			"\"3 3 0 -1 \"]}");
	ct_load(&u, o);
	is(listing(&u), "renamed /ok/;created /ok/sub;",
	   "a hostile file: only what makes sense is read");
	tap_ok(u.overflow == 0, "a count that is not a number is 0");
	cJSON_Delete(o);
	ct_clear(&u);
	o = cJSON_Parse("{\"overflow\":3,\"changes\":[{\"type\":\"renamed\",\"path\":\"/w/b\","
			"\"from\":\"/w/a\",\"dir\":false,\"modified\":true},"
			"{\"type\":\"created\",\"path\":\"/w/c\"}]}");
	ct_load(&u, o);
	is(listing(&u), "renamed /w/b<-/w/a+m;created /w/c;", "a version 1 file is read too");
	cJSON_Delete(o);
	ct_clear(&u);
	ct_clear(&t);
	tap_ok(charged == 0, "cleared: every charge given back (%lld)", charged);
}

int main(void)
{
	test_merge();
	test_folder_rename();
	test_deep();
	test_deep_by_rename();
	test_bounds();
	test_pages();
	test_snapshot();
	return tap_done();
}
