/* SPDX-License-Identifier: MIT */
/* The two lexical path normalisers of gitguard/ggutil.h (path.c). */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "gitguard/ggutil.h"
#include "tests/guard-tap.h"

/* gg_path_abs(in) into a buffer of sz bytes is want ("" for an error, then rc) */
static void abs_is(const char *in, size_t sz, const char *want, int rc)
{
	char out[PATH_MAX * 2];
	int r;

	memset(out, 'x', sizeof(out));
	r = gg_path_abs(in, out, sz);
	if (rc)
		tap_ok(r == rc, "abs \"%s\" in %zu bytes: error %d (got %d)", in ? in : "(null)",
		       sz, rc, r);
	else
		tap_ok(r == 0 && !strcmp(out, want), "abs \"%s\" -> \"%s\" (got %d \"%s\")", in,
		       want, r, r ? "" : out);
}

/* gg_path_rel(in) is want, or refused when want is NULL */
static void rel_is(const char *in, const char *want)
{
	char buf[PATH_MAX];
	bool ok;

	snprintf(buf, sizeof(buf), "%s", in);
	ok = gg_path_rel(buf);
	if (!want)
		tap_ok(!ok, "rel \"%s\" climbs out: refused", in);
	else
		tap_ok(ok && !strcmp(buf, want), "rel \"%s\" -> \"%s\" (got %s \"%s\")", in, want,
		       ok ? "ok" : "refused", ok ? buf : "");
}

static void test_abs(void)
{
	static char longp[PATH_MAX + 8];
	char big[64];

	abs_is("/", 64, "/", 0);
	abs_is("/a/b", 64, "/a/b", 0);
	abs_is("/a/./b/.", 64, "/a/b", 0);
	abs_is("//a///b//", 64, "/a/b", 0);
	abs_is("/a/b/", 64, "/a/b", 0);
	abs_is("/a/../b", 64, "/b", 0);
	abs_is("/a/../..", 64, "/", 0);
	abs_is("/..", 64, "/", 0);
	abs_is("/../../etc/x", 64, "/etc/x", 0);
	abs_is("/a/b/../../../c/..", 64, "/", 0);
	abs_is("/...", 64, "/...", 0);
	abs_is("/..a/.b/a..", 64, "/..a/.b/a..", 0);
	abs_is("/.git/../x", 64, "/x", 0);
	abs_is("", 64, "", -EINVAL);
	abs_is("a/b", 64, "", -EINVAL);
	abs_is("./a", 64, "", -EINVAL);
	abs_is(NULL, 64, "", -EINVAL);
	abs_is("/abc", 4, "", -ENAMETOOLONG);
	abs_is("/abc", 5, "/abc", 0);
	abs_is("/", 1, "", -ENAMETOOLONG);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	abs_is(longp, PATH_MAX, "", -ENAMETOOLONG);
	snprintf(big, sizeof(big), "/%s/../b", "zzzz");
	abs_is(big, 5, "/b", -ENAMETOOLONG); /* a step that does not fit is refused */
}

static void test_rel(void)
{
	rel_is("", "");
	rel_is(".", "");
	rel_is("a/b", "a/b");
	rel_is("./a/./b/.", "a/b");
	rel_is("a//b/", "a/b");
	rel_is("/a/b", "a/b");
	rel_is("//a", "a");
	rel_is("a/../b", "b");
	rel_is("a/..", "");
	rel_is("a/../..", NULL);
	rel_is("..", NULL);
	rel_is("../a", NULL);
	rel_is("/..", NULL);
	rel_is("a/b/../../c/../..", NULL);
	rel_is("a/b/c/../../d", "a/d");
	rel_is("...", "...");
	rel_is("a/..b/.c", "a/..b/.c");
}

/* gg_path_next over IN, components of at most 3 bytes: "a,b,..." or "a,!,c" for a long one */
static void next_is(const char *in, const char *want)
{
	char comp[4], got[256] = "";
	const char *p = in;
	int n, guard = 0;

	while ((n = gg_path_next(&p, comp, sizeof(comp))) != 0 && guard++ < 32) {
		if (got[0])
			strcat(got, ",");
		strcat(got, n < 0 ? (n == -ENAMETOOLONG ? "!" : "?") : comp);
	}
	tap_ok(!strcmp(got, want) && !*p, "next \"%s\": %s (got %s)", in, want, got);
}

static void test_next(void)
{
	next_is("", "");
	next_is("/", "");
	next_is("a", "a");
	next_is("//a//b/", "a,b");
	next_is("./../c", ".,..,c");
	next_is("a/long/c", "a,!,c");
	next_is("abc/abcd", "abc,!");
}

int main(void)
{
	test_abs();
	test_rel();
	test_next();
	return tap_done();
}
