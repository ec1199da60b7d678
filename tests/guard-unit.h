/* SPDX-License-Identifier: MIT */
/*
 * What the gitguard unit tests (unit-guard.c, unit-guard-home.c) share: a
 * root under a temporary folder with a guard on it (new_root, open_root), a
 * shell in it (sh), and try_* helpers that classify a path component by
 * component as fusefs would and return the rule that refuses an operation
 * on it ("" if allowed). Include it once, after tests/guard-tap.h.
 */
#ifndef GUARD_UNIT_H
#define GUARD_UNIT_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

static char top[PATH_MAX - 64]; /* the temporary folder */
static char rootp[PATH_MAX];	/* the current root */
static int rootfd = -1;
static struct guard *g;
static const char **guard_unit_homes; /* guard_opts.extra_homes of open_root() */
static struct guard_view *guard_unit_view; /* guard_opts.view of open_root() */

static __attribute__((unused)) void die(const char *what)
{
	perror(what);
	exit(99);
}

static __attribute__((unused)) void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs a shell command in the current root */
static __attribute__((unused)) void sh(const char *fmt, ...)
{
	char cmd[8192];
	int n;
	va_list ap;

	n = snprintf(cmd, sizeof(cmd), "cd '%s' && (", rootp);
	va_start(ap, fmt);
	n += vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, ") >/dev/null 2>&1");
	if (system(cmd) != 0) {
		fprintf(stderr, "# command failed: %s\n", cmd);
		exit(99);
	}
}

static __attribute__((unused)) void logcb(void *arg, const char *msg)
{
	(void)arg;
	printf("# log: %s\n", msg);
}

static __attribute__((unused)) void open_root(bool allow_new);

/* A fresh root NAME under the temporary folder, and a guard for it */
static __attribute__((unused)) void new_root(const char *name, bool allow_new)
{
	snprintf(rootp, sizeof(rootp), "%s/%s", top, name);
	if (mkdir(rootp, 0755) < 0)
		die(rootp);
	open_root(allow_new);
}

/* A guard for the existing folder rootp */
static __attribute__((unused)) void open_root(bool allow_new)
{
	struct guard_opts o = {.root_path = NULL, .allow_new_repos = allow_new, .log = logcb,
				.extra_homes = guard_unit_homes, .view = guard_unit_view};
	struct guard_err err;

	if (g)
		guard_free(g);
	if (rootfd >= 0)
		close(rootfd);
	rootfd = open(rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		die(rootp);
	o.root_path = rootp;
	if (guard_open(rootfd, &o, &g, &err) < 0) {
		fprintf(stderr, "guard_open: %s\n", err.msg);
		exit(99);
	}
}

/* Opens REL (relative to the root) and classifies every component down to it */
static __attribute__((unused)) int walk_to(const char *rel, struct guard_cls *out, int *fdp, struct stat *stp)
{
	char buf[PATH_MAX], *save = NULL, *comp;
	struct guard_cls cls, c;
	struct stat st;
	int cur, nfd, rc;

	rc = guard_classify_root(g, &cls, NULL);
	if (rc)
		return rc;
	cur = dup(rootfd);
	fstat(cur, &st);
	snprintf(buf, sizeof(buf), "%s", rel);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (!strcmp(comp, "."))
			continue;
		nfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			rc = -errno;
			close(cur);
			return rc;
		}
		fstat(nfd, &st);
		rc = guard_classify(g, &cls, cur, comp, &st, S_ISDIR(st.st_mode) ? nfd : -1, &c);
		close(cur);
		cur = nfd;
		if (rc) {
			close(cur);
			return rc;
		}
		cls = c;
	}
	*out = cls;
	if (stp)
		*stp = st;
	if (fdp)
		*fdp = cur;
	else
		close(cur);
	return 0;
}

static __attribute__((unused)) struct guard_cls cls_of(const char *rel)
{
	struct guard_cls c = {0};

	if (walk_to(rel, &c, NULL, NULL)) {
		printf("# cannot classify %s\n", rel);
		c.kind = 255;
	}
	return c;
}

static struct guard_verdict v;

/* "" when allowed, the rule's name when refused, "ERR" on any other error */
static __attribute__((unused)) const char *result(int rc)
{
	if (!rc)
		return "";
	if (rc == -EROFS)
		return v.rule ? v.rule : "?";
	return "ERR";
}

static __attribute__((unused)) void split(const char *rel, char *dir, char *name)
{
	const char *slash = strrchr(rel, '/');

	if (slash) {
		snprintf(dir, PATH_MAX, "%.*s", (int)(slash - rel), rel);
		snprintf(name, NAME_MAX + 1, "%s", slash + 1);
	} else {
		strcpy(dir, ".");
		snprintf(name, NAME_MAX + 1, "%s", rel);
	}
}

/* OP on REL itself; a CHMOD carries its descriptor, as fusefs's does (G3 looks for a .git) */
static __attribute__((unused)) const char *try_op(enum guard_op op, const char *rel)
{
	struct guard_req r = {
		.op = op, .fd = -1, .parent_fd = -1, .src_parent_fd = -1, .victim_fd = -1};
	struct guard_cls c;
	const char *res;
	struct stat st;
	int fd;

	if (walk_to(rel, &c, &fd, &st))
		return "ERR";
	r.cls = &c;
	if (op == GUARD_OP_CHMOD)
		r.fd = fd;
	res = result(guard_check(g, &r, &v));
	close(fd);
	return res;
}

static __attribute__((unused)) const char *try_write(const char *rel)
{
	return try_op(GUARD_OP_WRITE, rel);
}

static __attribute__((unused)) const char *try_chmod(const char *rel)
{
	return try_op(GUARD_OP_CHMOD, rel);
}

static __attribute__((unused)) const char *try_remove(const char *rel)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	struct guard_req r = {.fd = -1, .parent_fd = -1, .src_parent_fd = -1, .victim_fd = -1};
	struct guard_cls c, p;
	struct stat st;

	split(rel, dir, name);
	if (walk_to(dir, &p, NULL, NULL) || walk_to(rel, &c, NULL, &st))
		return "ERR";
	r.op = S_ISDIR(st.st_mode) ? GUARD_OP_RMDIR : GUARD_OP_UNLINK;
	r.cls = &c;
	r.parent = &p;
	r.name = name;
	return result(guard_check(g, &r, &v));
}

/* create (mode S_IFREG, S_IFDIR, S_IFIFO) or symlink (TARGET) at REL */
static __attribute__((unused)) const char *try_new(const char *rel, mode_t mode, const char *target)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	struct guard_req r = {.fd = -1, .src_parent_fd = -1, .victim_fd = -1};
	struct guard_cls p;
	const char *res;
	int pfd;

	split(rel, dir, name);
	if (walk_to(dir, &p, &pfd, NULL))
		return "ERR";
	r.op = target ? GUARD_OP_SYMLINK : S_ISDIR(mode) ? GUARD_OP_MKDIR : GUARD_OP_CREATE;
	r.mode = mode;
	r.parent = &p;
	r.parent_fd = pfd;
	r.name = name;
	r.target = target;
	r.parent_path = dir;
	res = result(guard_check(g, &r, &v));
	close(pfd);
	return res;
}

static __attribute__((unused)) const char *try_create(const char *rel)
{
	return try_new(rel, S_IFREG, NULL);
}

static __attribute__((unused)) const char *try_mkdir(const char *rel)
{
	return try_new(rel, S_IFDIR, NULL);
}

static __attribute__((unused)) const char *try_symlink(const char *rel, const char *target)
{
	return try_new(rel, S_IFLNK, target);
}

static __attribute__((unused)) const char *try_link(const char *from, const char *to)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	struct guard_req r = {.op = GUARD_OP_LINK, .fd = -1, .src_parent_fd = -1, .victim_fd = -1};
	struct guard_cls c, p;
	struct stat st;
	const char *res;
	int pfd;

	split(to, dir, name);
	if (walk_to(from, &c, NULL, &st) || walk_to(dir, &p, &pfd, NULL))
		return "ERR";
	r.cls = &c;
	r.mode = st.st_mode;
	r.parent = &p;
	r.parent_fd = pfd;
	r.name = name;
	res = result(guard_check(g, &r, &v));
	close(pfd);
	return res;
}

static __attribute__((unused)) const char *try_move(enum guard_op op, const char *from, const char *to)
{
	char sdir[PATH_MAX], sname[NAME_MAX + 1], dir[PATH_MAX], name[NAME_MAX + 1];
	struct guard_req r = {.op = op, .fd = -1, .victim_fd = -1};
	struct guard_cls c, sp, p, vc;
	struct stat st, vst;
	const char *res;
	int fd, spfd, pfd, vfd = -1;

	split(from, sdir, sname);
	split(to, dir, name);
	if (walk_to(from, &c, &fd, &st) || walk_to(sdir, &sp, &spfd, NULL) ||
	    walk_to(dir, &p, &pfd, NULL))
		return "ERR";
	r.cls = &c;
	r.mode = st.st_mode;
	r.fd = fd;
	r.src_parent = &sp;
	r.src_parent_fd = spfd;
	r.src_name = sname;
	r.parent = &p;
	r.parent_fd = pfd;
	r.name = name;
	if (!walk_to(to, &vc, &vfd, &vst)) {
		r.victim = &vc;
		r.victim_mode = vst.st_mode;
		r.victim_fd = vfd;
	}
	res = result(guard_check(g, &r, &v));
	close(fd);
	close(spfd);
	close(pfd);
	if (vfd >= 0)
		close(vfd);
	return res;
}

static __attribute__((unused)) const char *try_rename(const char *from, const char *to)
{
	return try_move(GUARD_OP_RENAME, from, to);
}

/*
 * The test NAME's temporary folder as top, with the host's git settings kept
 * out; false (the plan printed, a skip) when git is not installed.
 */
static __attribute__((unused)) bool unit_begin(const char *name)
{
	char tmpl[PATH_MAX];

	snprintf(tmpl, sizeof(tmpl), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(tmpl))
		die("mkdtemp");
	if (!realpath(tmpl, top))
		die("realpath");
	setenv("HOME", top, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	if (system("git --version >/dev/null 2>&1") != 0) {
		printf("1..0 # SKIP git not installed\n");
		rmdir(top);
		return false;
	}
	return true;
}

/* The guard and top gone; the plan printed: main's exit status */
static __attribute__((unused)) int unit_end(void)
{
	char cmd[PATH_MAX + 16];

	if (g)
		guard_free(g);
	g = NULL;
	if (rootfd >= 0)
		close(rootfd);
	rootfd = -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", top);
	return tap_done();
}

#define IS(expr, want, desc)                                                                       \
	do {                                                                                       \
		const char *got_ = (expr);                                                         \
		tap_ok(!strcmp(got_, want), "%s (want \"%s\", got \"%s\")", desc, want, got_);     \
	} while (0)

#endif
