/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of src/daemon/authority.c, the daemon's pure authority functions:
 * who sees which bot across families, what a bot may read and write (by
 * whole path components, hostile paths refused), the ceiling a bot's maker
 * sets, and each family's share of max_bots. No root, no daemon.
 */
#include "src/daemon/bots-int.h"
#include "tests/guard-tap.h"

#include <string.h>

static struct bots all = TAILQ_HEAD_INITIALIZER(all);

static void add_paths(struct paths *ps, const char *const *v)
{
	for (; v != NULL && *v != NULL; v++)
		if (paths_add(ps, *v) != 0)
			abort();
}

static struct bot *mk(const char *name, const char *creator, enum sandbox sb, const char *folder,
		      const char *const *w, const char *const *r, uid_t owner)
{
	struct bot *b = calloc(1, sizeof *b);

	if (b == NULL)
		abort();
	b->name = strdup(name);
	b->creator = creator != NULL ? strdup(creator) : NULL;
	b->sandbox = sb;
	b->folder = strdup(folder);
	add_paths(&b->writable, w);
	add_paths(&b->readable, r);
	b->owner_uid = owner;
	TAILQ_INSERT_TAIL(&all, b, entry);
	return b;
}

/* A child of c, unlisted, for the ceiling checks. */
static struct bot child(const char *creator, enum sandbox sb, const char *folder)
{
	struct bot k = {0};

	k.name = (char *)"k";
	k.creator = (char *)creator;
	k.sandbox = sb;
	k.folder = (char *)folder;
	return k;
}

static void test_visibility(void)
{
	struct bot *a = mk("A", NULL, SANDBOX_WORKSPACE_WRITE, "/a", NULL, NULL, 1000);
	struct bot *a1 = mk("A1", "A", SANDBOX_WORKSPACE_WRITE, "/a/1", NULL, NULL, 1000);
	struct bot *a11 = mk("A11", "A1", SANDBOX_WORKSPACE_WRITE, "/a/1/1", NULL, NULL, 1000);
	struct bot *b = mk("B", NULL, SANDBOX_WORKSPACE_WRITE, "/b", NULL, NULL, 0);
	struct bot *c = mk("C", NULL, SANDBOX_WORKSPACE_WRITE, "/c", NULL, NULL, 1001);
	struct bot *x = mk("X", "Y", SANDBOX_READ_ONLY, "/x", NULL, NULL, 0);
	struct bot *y = mk("Y", "X", SANDBOX_READ_ONLY, "/y", NULL, NULL, 0);
	struct bot *o = mk("O", "gone", SANDBOX_READ_ONLY, "/o", NULL, NULL, 0);

	tap_ok(auth_find(&all, "A1") == a1 && auth_find(&all, "a1") == NULL,
	       "find: by exact name only");
	tap_ok(auth_visible(&all, a, 0, a) && auth_visible(&all, a, 0, a1) &&
		       auth_visible(&all, a, 0, a11),
	       "a bot sees itself, its bots and theirs");
	tap_ok(!auth_visible(&all, a, 0, b) && !auth_visible(&all, a, 0, c),
	       "a bot sees no other family");
	tap_ok(!auth_visible(&all, a1, 0, a) && auth_visible(&all, a1, 0, a11),
	       "a bot does not see its maker, sees its own bot");
	tap_ok(!auth_visible(&all, a11, 0, a1) && !auth_visible(&all, a11, 0, a),
	       "nor any bot above it");
	tap_ok(auth_visible(&all, NULL, 0, a11) && auth_visible(&all, NULL, 0, c),
	       "root sees every bot");
	tap_ok(auth_visible(&all, NULL, 1000, a) && auth_visible(&all, NULL, 1000, a11) &&
		       !auth_visible(&all, NULL, 1000, b) && !auth_visible(&all, NULL, 1000, c),
	       "an operator sees the bots it made and theirs only");
	tap_ok(auth_visible(&all, NULL, 1001, c) && !auth_visible(&all, NULL, 1001, a),
	       "another operator sees only its own");
	tap_ok(!auth_descends(&all, x, b) && !auth_descends(&all, y, a),
	       "a cycle of makers ends, and relates to no one else");
	tap_ok(!auth_descends(&all, o, a) && !auth_visible(&all, a, 0, o),
	       "a maker that is gone relates to no one");
	tap_ok(auth_family_top(&all, a11) == a && auth_family_top(&all, b) == b,
	       "a family's top is the operator's bot");
}

static void test_paths(void)
{
	static const char *const w[] = {"/w", NULL}, *const r[] = {"/r", NULL};
	struct bot *b = mk("P1", NULL, SANDBOX_WORKSPACE_WRITE, "/a/b", w, r, 0);
	struct bot *ro = mk("P2", NULL, SANDBOX_READ_ONLY, "/a/b", w, r, 0);
	struct bot *top = mk("P3", NULL, SANDBOX_WORKSPACE_WRITE, "/", NULL, NULL, 0);
	static const char *const bad[] = {
		"/a/b/../c", "/a/b/..", "/a/b/./c", "/a/b/.",  "/a/b/",
		"/a/b//c",   "a/b",	"",	    "/w/../a", "//a/b",
	};
	size_t i;

	tap_ok(auth_may_write(b, "/a/b") && auth_may_write(b, "/a/b/c/d"),
	       "write: the folder and beneath it");
	tap_ok(!auth_may_write(b, "/a/bc") && !auth_may_read(b, "/a/bc"),
	       "/a/bc is not inside /a/b (a prefix, not a child)");
	tap_ok(!auth_may_write(b, "/a") && !auth_may_write(b, "/"), "nor is its parent");
	tap_ok(auth_may_write(b, "/w/x") && !auth_may_write(b, "/wx"), "write: writable roots");
	tap_ok(!auth_may_write(b, "/r") && auth_may_read(b, "/r/x") && !auth_may_read(b, "/rx"),
	       "readable roots are read, not written");
	tap_ok(!auth_may_write(ro, "/a/b") && !auth_may_write(ro, "/w") &&
		       auth_may_read(ro, "/a/b") && auth_may_read(ro, "/w/x"),
	       "read-only: nothing is written, everything of it read");
	tap_ok(auth_may_write(top, "/etc") && !auth_may_write(top, "/etc/../x"),
	       "a bot over / writes any normal path");
	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		tap_ok(!auth_may_write(b, bad[i]) && !auth_may_read(b, bad[i]) &&
			       !auth_may_read(top, bad[i]),
		       "a path that is not normal is refused: \"%s\"", bad[i]);
	tap_ok(auth_path_ok("/") && auth_path_ok("/a/.b/..c/...") && !auth_path_ok(NULL),
	       "dot names that are not . or .. are names");
}

static void test_ceiling(void)
{
	static const char *const w[] = {"/pw", NULL}, *const r[] = {"/pr", NULL};
	struct bot *p = mk("Q", NULL, SANDBOX_WORKSPACE_WRITE, "/p", w, r, 0);
	struct bot *pro = mk("QR", NULL, SANDBOX_READ_ONLY, "/p", w, r, 0);
	struct bot k;
	struct paths kw = {0}, kr = {0};
	char why[256];

	k = child("Q", SANDBOX_WORKSPACE_WRITE, "/p/c");
	tap_ok(auth_within_ceiling(&k, p, why, sizeof why), "a child inside its maker's folder");
	k = child("Q", SANDBOX_DANGER_FULL_ACCESS, "/p/c");
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why) && strstr(why, "sandbox") != NULL,
	       "a weaker sandbox is refused, saying so (%s)", why);
	k = child("Q", SANDBOX_WORKSPACE_WRITE, "/pc");
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why) && strstr(why, "not writable") != NULL,
	       "a folder that only shares a prefix is refused (%s)", why);
	k = child("Q", SANDBOX_WORKSPACE_WRITE, "/p/../etc");
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why),
	       "a folder climbing out with .. is refused");
	k = child("Q", SANDBOX_READ_ONLY, "/pr/x");
	tap_ok(auth_within_ceiling(&k, p, why, sizeof why), "a read-only child on a readable root");
	k = child("Q", SANDBOX_WORKSPACE_WRITE, "/pr/x");
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why), "but not a writing one");
	k = child("Q", SANDBOX_WORKSPACE_WRITE, "/p/c");
	paths_add(&kw, "/pw/x");
	k.writable = kw;
	tap_ok(auth_within_ceiling(&k, p, why, sizeof why), "a writable root inside the maker's");
	paths_add(&kw, "/pw/../etc");
	k.writable = kw;
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why) && strstr(why, "writable") != NULL,
	       "a writable root climbing out is refused (%s)", why);
	paths_free(&kw);
	memset(&k.writable, 0, sizeof k.writable);
	paths_add(&kr, "/p/../pr2");
	k.readable = kr;
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why) && strstr(why, "readable") != NULL,
	       "a readable root climbing out is refused (%s)", why);
	paths_free(&kr);
	memset(&k.readable, 0, sizeof k.readable);
	k.network = true;
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why) && strstr(why, "network") != NULL,
	       "network beyond the maker's is refused");
	k.network = false;
	k.allow_new_repos = true;
	tap_ok(!auth_within_ceiling(&k, p, why, sizeof why) && strstr(why, "allow_new_repos"),
	       "allow_new_repos beyond the maker's is refused");
	k = child("QR", SANDBOX_WORKSPACE_WRITE, "/p/c");
	tap_ok(!auth_within_ceiling(&k, pro, why, sizeof why), "a read-only maker makes no writer");
	k = child("QR", SANDBOX_READ_ONLY, "/p/c");
	tap_ok(auth_within_ceiling(&k, pro, why, sizeof why), "but makes a reader of its folder");
}

static void test_family(void)
{
	struct bots fam = TAILQ_HEAD_INITIALIZER(fam);
	struct bot v[6] = {{0}};
	const char *names[6] = {"L", "L1", "L2", "L3", "M", "N"};
	const char *makers[6] = {NULL, "L", "L1", "L", NULL, NULL};
	char why[256];
	int i;

	for (i = 0; i < 6; i++) {
		v[i].name = (char *)names[i];
		v[i].creator = (char *)makers[i];
		TAILQ_INSERT_TAIL(&fam, &v[i], entry);
	}
	/* max 16: a family's share is 4; L's family holds 4 */
	tap_ok(!auth_family_room(&fam, 6, 16, &v[2], why, sizeof why) &&
		       strstr(why, "share") != NULL,
	       "a family at its share makes no more, from any member (%s)", why);
	tap_ok(auth_family_room(&fam, 6, 16, &v[4], why, sizeof why), "another family still may");
	tap_ok(!auth_family_room(&fam, 12, 16, &v[4], why, sizeof why) &&
		       strstr(why, "operator") != NULL,
	       "the last quarter is kept for the operator (%s)", why);
	tap_ok(auth_family_room(&fam, 6, 40, &v[1], why, sizeof why),
	       "with max_bots 40 the share is 10");
	TAILQ_REMOVE(&fam, &v[3], entry);
	tap_ok(auth_family_room(&fam, 5, 16, &v[1], why, sizeof why),
	       "a family below its share may");
}

/* an operator in the group: a quarter of max_bots (at least 4), its bots' bots included */
static void test_operator(void)
{
	struct bots ops = TAILQ_HEAD_INITIALIZER(ops);
	struct bot v[6] = {{0}};
	uid_t owners[6] = {1000, 1000, 1000, 1000, 1001, 0};
	char why[256];
	int i;

	for (i = 0; i < 6; i++) {
		v[i].name = (char *)"x";
		v[i].owner_uid = owners[i];
		TAILQ_INSERT_TAIL(&ops, &v[i], entry);
	}
	tap_ok(!auth_operator_room(&ops, 16, 1000, why, sizeof why) &&
		       strstr(why, "uid 1000 and its bots number 4") != NULL,
	       "an operator with 4 of max_bots 16 makes no more (%s)", why);
	tap_ok(auth_operator_room(&ops, 16, 1001, why, sizeof why), "another operator still may");
	tap_ok(auth_operator_room(&ops, 16, 0, why, sizeof why), "root has no share: max_bots bounds it");
	tap_ok(auth_operator_room(&ops, 40, 1000, why, sizeof why), "with max_bots 40 the share is 10");
	tap_ok(auth_operator_room(&ops, 2, 1001, why, sizeof why),
	       "with max_bots 2 the share is 2: one bot held, one more may");
	tap_ok(!auth_operator_room(&ops, 3, 1000, why, sizeof why),
	       "never more than max_bots (3 < 4 held)");
}

int main(void)
{
	test_visibility();
	test_paths();
	test_ceiling();
	test_family();
	test_operator();
	return tap_done();
}
