/* SPDX-License-Identifier: MIT */
/*
 * One view of the repositories shared by several guards (gitguard.h,
 * guard_view_new): two roots in one tree, a linked worktree's top and the
 * main repository, each with its own guard on one view.  What one guard
 * learns is in the other's next decision, both read one generation, and
 * what is per root (the bot's own repositories) stays per root.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

#include "tests/guard-unit.h"

/* One root with its guard: the globals of guard-unit.h, saved while another is current */
struct side {
	struct guard *g;
	int rootfd;
	char rootp[PATH_MAX];
};

static struct side wt, mainr;

/* Opens a guard on TOP/REL with the current view and makes it the saved side S */
static void side_open(struct side *s, const char *rel, bool allow_new)
{
	struct guard_err err;

	g = NULL;
	rootfd = -1;
	snprintf(rootp, sizeof(rootp), "%s/%s", top, rel);
	open_root(allow_new);
	if (guard_scan_tree(g, 0, &err) < 0) {
		fprintf(stderr, "guard_scan_tree: %s\n", err.msg);
		exit(99);
	}
	s->g = g;
	s->rootfd = rootfd;
	snprintf(s->rootp, sizeof(s->rootp), "%s", rootp);
}

/* Makes S the current root of the try_* helpers */
static void use(const struct side *s)
{
	g = s->g;
	rootfd = s->rootfd;
	snprintf(rootp, sizeof(rootp), "%s", s->rootp);
}

static void side_close(struct side *s)
{
	guard_free(s->g);
	close(s->rootfd);
	s->g = NULL;
	s->rootfd = -1;
	g = NULL;
	rootfd = -1;
}

/* Past GUARD_REVAL_MS: the next decision looks at watched files again */
static void reval_wait(void)
{
	struct timespec ts = {0, 120 * 1000 * 1000};

	nanosleep(&ts, NULL);
}

static void git_repo(const char *dir)
{
	sh("git init -q '%s' && cd '%s' && echo hi >a.txt && git add a.txt && "
	   "git -c user.name=t -c user.email=t@t commit -qm init",
	   dir, dir);
}

static void test_two_roots(void)
{
	struct guard_view *view;
	uint64_t gen;

	snprintf(rootp, sizeof(rootp), "%s", top);
	git_repo("main");
	sh("cd main && git worktree add -q ../wt -b w && git config core.hooksPath hooks-dir");
	sh("mkdir wt/hooks-dir2");
	if (guard_view_new(&view))
		die("guard_view_new");
	guard_unit_view = view;

	/* the worktree's guard first: alone it cannot reach the common config */
	side_open(&wt, "wt", false);
	/* then the main repository's: its root joins, what was scanned is scanned again */
	side_open(&mainr, "main", false);
	guard_view_put(view); /* the guards hold it now */
	guard_unit_view = NULL;

	use(&wt);
	IS(try_mkdir("hooks-dir"), "W2",
	   "worktree root: the relative hooksPath of a config only the other root reaches");
	sh("git -C '%s/main' config core.hooksPath hooks-dir2", top);
	reval_wait();
	guard_revalidate(g); /* as fusefs does before it reads the classes of a decision */
	IS(try_create("hooks-dir2/pre-commit"), "W2",
	   "worktree root: a host change to the common config, seen at its next decision");
	IS(try_write("a.txt"), "", "worktree root: its files writable");
	use(&mainr);
	IS(try_mkdir("hooks-dir2"), "W2", "main root: the same hooksPath at its own top");
	IS(try_write("a.txt"), "", "main root: its files writable");
	tap_ok(guard_generation(wt.g) == guard_generation(mainr.g),
	       "the two guards read one generation");

	/* a person changes the config on the host: a decision through main rescans it */
	gen = guard_generation(wt.g);
	use(&mainr);
	sh("git config core.hooksPath hooks2");
	reval_wait();
	guard_revalidate(g);
	IS(try_write("a.txt"), "", "main root: a decision (it looks at the config again)");
	tap_ok(guard_generation(wt.g) != gen, "the worktree guard's generation moved with it");
	use(&wt);
	IS(try_mkdir("hooks2"), "W2", "worktree root: the new hooksPath, learnt through main");

	/* a repository found through one root is guarded in the other's decisions */
	use(&mainr);
	sh("git init -q --bare sub.git");
	IS(try_write("sub.git/config"), "D1", "main root: a new bare repository found");

	side_close(&wt);
	use(&mainr);
	IS(try_mkdir("hooks2/x"), "ERR", "(hooks2 does not exist in main)");
	IS(try_mkdir("hooks2"), "W2", "main root: still guarded after the other guard left");
	side_close(&mainr);
}

/*
 * A relative core.hooksPath taken at a linked worktree's top can climb into
 * the main repository's root: a guard on the main root alone never sees that
 * top (it is outside), the view's union of roots does, in either order of
 * joining.
 */
static void test_path_across_roots(bool wt_first)
{
	struct guard_view *view;
	struct side a, b;

	snprintf(rootp, sizeof(rootp), "%s", top);
	sh("rm -rf m2 d && mkdir -p d/e/f/g");
	git_repo("m2");
	/*
	 * from d/e/f/g/w2, ../../../../../m2/h is m2/h; from every top the main
	 * root's guard knows alone (m2, m2/.git, its worktrees/w2 and the
	 * folders above those) it is outside
	 */
	sh("cd m2 && git worktree add -q ../d/e/f/g/w2 -b w2 && "
	   "git config core.hooksPath ../../../../../m2/h");
	if (guard_view_new(&view))
		die("guard_view_new");
	guard_unit_view = view;
	if (wt_first) {
		side_open(&a, "d/e/f/g/w2", false);
		side_open(&b, "m2", false);
	} else {
		side_open(&b, "m2", false);
		side_open(&a, "d/e/f/g/w2", false);
	}
	guard_view_put(view);
	guard_unit_view = NULL;
	use(&b);
	IS(try_mkdir("h"), "W2",
	   wt_first ? "main root joined second: the worktree's hooksPath lands in it"
		    : "worktree root joined second: the main root's scan is redone with it");
	IS(try_mkdir("h2"), "", "main root: other folders may be made");
	/* the worktree's guard leaves; a host change makes the main repository be rescanned */
	side_close(&a);
	use(&b);
	sh("git config core.touched %d", wt_first);
	reval_wait();
	guard_revalidate(g);
	IS(try_mkdir("h"), "W2",
	   "main root: still guarded after the worktree root left and a rescan");
	side_close(&b);
}

/* The bot's own repository (allow_new_repos) is its root's: the other root guards it */
static void test_bot_repo_per_root(void)
{
	struct guard_event ev = {.op = GUARD_OP_MKDIR};
	struct guard_view *view;
	struct guard_cls p;
	struct stat st;
	struct side a, b;
	int pfd;

	snprintf(rootp, sizeof(rootp), "%s", top);
	sh("mkdir -p shared");
	if (guard_view_new(&view))
		die("guard_view_new");
	guard_unit_view = view;
	side_open(&a, "shared", true);
	side_open(&b, "shared", false);
	guard_view_put(view);
	guard_unit_view = NULL;

	use(&a);
	sh("mkdir mine");
	/* the folder's class as cached before the bot's git init made .git in it */
	if (walk_to("mine", &p, &pfd, NULL))
		die("mine");
	sh("git init -q mine");
	if (fstatat(pfd, ".git", &st, AT_SYMLINK_NOFOLLOW))
		die("mine/.git");
	ev.parent = &p;
	ev.parent_fd = pfd;
	ev.name = ".git";
	ev.st = &st;
	ev.path = "mine/.git";
	guard_notify(g, &ev);
	close(pfd);
	IS(try_create("mine/.git/hooks/pre-commit"), "", "bot A's own repository: no rules for A");
	use(&b);
	IS(try_create("mine/.git/hooks/pre-commit"), "D3",
	   "bot A's repository, through bot B's root (same folder): guarded");
	side_close(&a);
	side_close(&b);
}

/* Several threads deciding through two guards of one view while one rescans */
struct racer {
	struct guard *g;
	int rootfd;
	int bad;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct guard_cls root, c;
	struct stat st;
	int i, fd;

	for (i = 0; i < 300; i++) {
		if (guard_classify_root(r->g, &root, NULL))
			continue;
		fd = openat(r->rootfd, ".git", O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			r->bad++;
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (guard_classify(r->g, &root, r->rootfd, ".git", &st, fd, &c) ||
		    c.kind != GUARD_GITDIR)
			r->bad++;
		close(fd);
		guard_revalidate(r->g);
	}
	return NULL;
}

static void test_threads(void)
{
	struct guard_view *view;
	struct racer r[4];
	pthread_t t[4];
	struct side a, b;
	int i, bad = 0;

	snprintf(rootp, sizeof(rootp), "%s", top);
	git_repo("threads");
	if (guard_view_new(&view))
		die("guard_view_new");
	guard_unit_view = view;
	side_open(&a, "threads", false);
	side_open(&b, "threads", false);
	guard_view_put(view);
	guard_unit_view = NULL;
	for (i = 0; i < 4; i++) {
		r[i].g = i % 2 ? b.g : a.g;
		r[i].rootfd = a.rootfd;
		r[i].bad = 0;
		pthread_create(&t[i], NULL, race, &r[i]);
	}
	for (i = 0; i < 20; i++) {
		use(&a);
		sh("git config core.n%d 1", i);
		reval_wait();
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		bad += r[i].bad;
	}
	tap_ok(bad == 0, "4 threads on two guards of one view during rescans (%d wrong)", bad);
	side_close(&a);
	side_close(&b);
}

int main(void)
{
	if (!unit_begin("unit-guard-view"))
		return 77;
	test_two_roots();
	test_path_across_roots(true);
	test_path_across_roots(false);
	test_bot_repo_per_root();
	test_threads();
	return unit_end();
}
