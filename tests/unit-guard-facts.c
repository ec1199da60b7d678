/* SPDX-License-Identifier: MIT */
/*
 * The facts a caller gathers for guard_check() (gitguard.h, struct
 * guard_req): a read-only mount or path, a sealed file, a git lock file no
 * mount made, another name of a protected file (nlink, dev, ino), and the
 * work tree's top that gitguard finds itself through a CHMOD's descriptor.
 * Each is turned into its verdict here, by its rule code (verdict.code),
 * and each is allowed without the fact: fusefs only gathers them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

#include "tests/guard-unit.h"

/*
 * The coarse monotonic clock gitguard paces its looks for host changes by
 * (guard_revalidate), held still while clock_frozen: a host change is then
 * not seen by the next decisions, as it is not for GUARD_REVAL_MS in a
 * mount. Defined here, it is the clock libgitguard.a's code calls.
 */
static bool clock_frozen;
static struct timespec clock_at;

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clock_frozen && clk == CLOCK_MONOTONIC_COARSE) {
		*ts = clock_at;
		return 0;
	}
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void freeze_clock(bool on)
{
	if (on)
		syscall(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, &clock_at);
	clock_frozen = on;
}

static void git_repo(const char *dir)
{
	sh("git init -q '%s' && cd '%s' && echo hi >a.txt && git add a.txt && "
	   "git -c user.name=t -c user.email=t@t commit -qm init",
	   dir, dir);
}

/* guard_check's answer to R on guard G: its rule code, -1 if allowed, -2 on another error */
static int code_of(struct guard *gd, const struct guard_req *r)
{
	int rc;

	v.code = 12345;
	rc = guard_check(gd, r, &v);
	if (rc == 0)
		return v.code == GUARD_RULE_NONE ? -1 : -3;
	return rc == -EROFS ? (int)v.code : -2;
}

#define CODE(r, want, desc)                                                                        \
	do {                                                                                       \
		int got_ = code_of(g, (r));                                                        \
		tap_ok(got_ == (int)(want), "%s (want %s, got %d: %s)", desc,                      \
		       (int)(want) < 0 ? "allowed" : guard_rule_name((unsigned)(want)), got_,      \
		       got_ >= 0 ? guard_rule_name((unsigned)got_) : "-");                         \
	} while (0)

#define ALLOWED (-1)

static struct guard_req req_of(enum guard_op op, const struct guard_cls *c, mode_t mode)
{
	return (struct guard_req){.op = op, .cls = c, .mode = mode, .fd = -1, .parent_fd = -1,
				  .src_parent_fd = -1, .victim_fd = -1};
}

static void test_mount_settings(void)
{
	struct guard_req r;
	struct guard_cls c;
	char buf[128];

	new_root("ro", false);
	sh("echo x >f");
	c = cls_of("f");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	CODE(&r, ALLOWED, "a plain file is written");
	r.ro_mount = true;
	CODE(&r, GUARD_RULE_RO_MOUNT, "on a read-only mount it is not");
	tap_ok(!strcmp(guard_verdict_text(&v, buf, sizeof buf), "read-only mount"),
	       "logged as \"read-only mount\" (got \"%s\")", buf);
	tap_ok(guard_check(NULL, &r, &v) == -EROFS && v.code == GUARD_RULE_RO_MOUNT,
	       "a mount without the rule table refuses it too");
	r.ro_mount = false;
	r.ro_path = true;
	CODE(&r, GUARD_RULE_RO_PATH, "under a read-only path it is not");
	tap_ok(!strcmp(guard_verdict_text(&v, buf, sizeof buf), "read-only path"),
	       "logged as \"read-only path\" (got \"%s\")", buf);
	tap_ok(guard_check(NULL, &r, &v) == -EROFS && v.code == GUARD_RULE_RO_PATH,
	       "a mount without the rule table refuses it too");
	r.ro_path = false;
	tap_ok(guard_check(NULL, &r, &v) == 0, "which allows anything else");
}

static void test_seal(void)
{
	struct guard_req r;
	struct guard_cls c;

	new_root("seal", false);
	git_repo("r");
	sh("cd r && git rev-parse HEAD >.git/refs/heads/other");
	c = cls_of("r/.git/refs/heads/other");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	CODE(&r, ALLOWED, "a ref is written in place (its content checked by the caller)");
	r.sealed = true;
	CODE(&r, GUARD_RULE_R1, "sealed: refused by the rule it was checked by (R1)");
	tap_ok(v.reason && strstr(v.reason, "renamed in"), "saying it was checked when renamed in");
	r.op = GUARD_OP_LINK;
	CODE(&r, GUARD_RULE_R1, "nor linked");
	r = req_of(GUARD_OP_CHMOD, &c, S_IFREG | 0644);
	r.sealed = true;
	CODE(&r, ALLOWED, "its mode may change");
	sh("echo x >plain");
	c = cls_of("plain");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	r.sealed = true;
	CODE(&r, GUARD_RULE_X2, "sealed with a class that is no longer content-checked: X2");
}

static void test_lock(void)
{
	struct guard_req r;
	struct guard_cls c, vc, p;

	new_root("lock", false);
	git_repo("r");
	sh("echo x >r/.git/index.lock && echo y >r/Cargo.lock && echo z >r/.git/HEAD.new");
	c = cls_of("r/.git/index.lock");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	CODE(&r, ALLOWED, "a lock file a mount made is written");
	r.lock_foreign = true;
	CODE(&r, GUARD_RULE_LK, "one no mount made is not (LK)");
	r.op = GUARD_OP_UNLINK;
	p = cls_of("r/.git");
	r.parent = &p;
	r.name = "index.lock";
	CODE(&r, GUARD_RULE_LK, "nor removed");
	vc = cls_of("r/.git/HEAD.new");
	r = req_of(GUARD_OP_RENAME, &vc, S_IFREG);
	r.victim = &c;
	r.victim_mode = S_IFREG;
	r.victim_lock_foreign = true;
	r.parent = r.src_parent = &p;
	r.name = "index.lock";
	r.src_name = "HEAD.new";
	CODE(&r, GUARD_RULE_LK, "nor renamed onto");
	c = cls_of("r/Cargo.lock");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	r.lock_foreign = true;
	CODE(&r, ALLOWED, "a .lock file outside a git folder is anyone's");
}

static void test_worktree_top(void)
{
	struct guard_req r;
	struct guard_cls c;
	int fd;

	new_root("top", false);
	git_repo("wt");
	sh("mkdir plain");
	c = cls_of("wt");
	fd = openat(rootfd, "wt", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die("wt");
	r = req_of(GUARD_OP_CHMOD, &c, S_IFDIR | 0777);
	r.fd = fd;
	CODE(&r, GUARD_RULE_G3, "a work tree's top opened to every account: G3, found by its fd");
	r.mode = S_IFDIR | 0775;
	CODE(&r, ALLOWED, "opened to its group: allowed");
	r.mode = S_IFDIR | 0777;
	r.fd = -1;
	CODE(&r, GUARD_RULE_G3, "without its descriptor: refused, it cannot be looked at");
	close(fd);
	c = cls_of("plain");
	fd = openat(rootfd, "plain", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die("plain");
	r = req_of(GUARD_OP_CHMOD, &c, S_IFDIR | 0777);
	r.fd = fd;
	CODE(&r, ALLOWED, "a folder with no .git opened to every account: allowed");
	close(fd);
}

static void test_other_name(void)
{
	struct guard_req r;
	struct guard_cls c;
	struct stat st;

	new_root("hl", false);
	git_repo("r");
	sh("echo '#!/bin/sh' >r/.git/hooks/post-checkout && ln r/.git/hooks/post-checkout "
	   "innocent && echo x >plain");
	(void)cls_of("r/.git/hooks");
	sh("cd r && git config core.x y"); /* read again: the hook's other name is recorded */
	(void)cls_of("r/.git");
	/* a class cached before the other name was known: a plain file's */
	c = cls_of("plain");
	if (fstatat(rootfd, "innocent", &st, AT_SYMLINK_NOFOLLOW) < 0)
		die("innocent");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	r.dev = st.st_dev;
	r.ino = st.st_ino;
	r.nlink = 1;
	CODE(&r, ALLOWED, "one name: nothing more is asked");
	r.nlink = st.st_nlink;
	CODE(&r, GUARD_RULE_D3, "two names: the hook's other name is a hook (D3, by dev and ino)");
	r.op = GUARD_OP_CHOWN;
	CODE(&r, GUARD_RULE_D3, "and is not chowned");
	r.op = GUARD_OP_TOUCH;
	CODE(&r, ALLOWED, "its times may change");
}

/*
 * A write of REL under the class C (cached before), with the facts fusefs
 * gathers for a file with several names: its numbers and its O_PATH
 * descriptor, left in *FDP to close.
 */
static struct guard_req write_req(const struct guard_cls *c, const char *rel, int *fdp)
{
	struct guard_req r = req_of(GUARD_OP_WRITE, c, S_IFREG);
	struct stat st;

	*fdp = openat(rootfd, rel, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (*fdp < 0 || fstat(*fdp, &st) < 0)
		die(rel);
	r.dev = st.st_dev;
	r.ino = st.st_ino;
	r.nlink = st.st_nlink;
	r.fd = *fdp;
	return r;
}

/*
 * A protected file's record outlives the file until the repository is read
 * again; its number may be given to a new file meanwhile (ext4 gives the
 * lowest free one). git's temporary object has two names between its link()
 * and unlink(): the record of a hook that had one name (kept for the names
 * the person may give it later) must not make that object the hook. The
 * record's birth time tells them apart; the hook still here keeps it.
 */
static void test_reused_number(void)
{
	struct guard_req r;
	struct guard_cls c;
	struct stat st, ost;
	char obj[32];
	bool reused = false;
	int k, fd, ofd, wfd;

	new_root("reuse", false);
	git_repo("r");
	sh("printf '#!/bin/sh\\nexit 0\\n' >r/.git/hooks/pre-push && "
	   "printf '#!/bin/sh\\nexit 0\\n' >r/.git/hooks/post-merge && mkdir r/w");
	IS(try_write("r/.git/hooks/pre-push"), "D3", "a hook with one name (the repository is read)");
	freeze_clock(true);
	IS(try_write("r/a.txt"), "", "a decision (the last look at the host before the changes)");
	if (fstatat(rootfd, "r/.git/hooks/pre-push", &st, AT_SYMLINK_NOFOLLOW) < 0)
		die("pre-push");
	/* the person removes the hook; a new file of the bot's gets its number */
	sh("rm r/.git/hooks/pre-push");
	sync();
	wfd = openat(rootfd, "r/w", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		die("r/w");
	for (k = 0; k < 20000 && !reused; k++) {
		snprintf(obj, sizeof(obj), "fill-%d", k);
		fd = openat(wfd, obj, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			die(obj);
		if (fstat(fd, &ost) == 0 && ost.st_ino == st.st_ino && ost.st_dev == st.st_dev)
			reused = true;
		close(fd);
	}
	close(wfd);
	sh("cd r/w && for f in fill-*; do [ \"$f\" = fill-%d ] || rm -f \"$f\"; done", k - 1);
	if (!reused) {
		printf("ok %d # SKIP this file system gave the hook's number to no new file\n", ++tap_n);
		printf("ok %d # SKIP (the same)\n", ++tap_n);
		printf("ok %d # SKIP (the same)\n", ++tap_n);
	} else {
		sh("cd r/w && mv fill-%d tmp_obj && ln tmp_obj obj", k - 1);
		IS(try_remove("r/w/tmp_obj"), "",
		   "its second name removed, before the repository is read again (not D3)");
		c = cls_of("r/a.txt");
		r = write_req(&c, "r/w/obj", &ofd);
		CODE(&r, ALLOWED, "written through either name, with its descriptor given (HL)");
		r.fd = -1;
		CODE(&r, GUARD_RULE_D3, "... without one the number alone decides (the careful side)");
		close(ofd);
	}
	/* the hook that is still here, given a second name by the person, stays a hook */
	sh("ln r/.git/hooks/post-merge r/w/backup");
	IS(try_write("r/w/backup"), "D3", "another name of a hook that is here: refused (D3)");
	c = cls_of("r/a.txt"); /* a class cached before the other name was made */
	r = write_req(&c, "r/w/backup", &ofd);
	CODE(&r, GUARD_RULE_D3, "... with its descriptor given too (HL)");
	close(ofd);
	freeze_clock(false);
}

/* gen: classes older than what the decision's look for host changes found are sent back */
static void test_generation(void)
{
	struct guard_req r;
	struct guard_cls c;

	new_root("gen", false);
	sh("echo x >f");
	c = cls_of("f");
	r = req_of(GUARD_OP_WRITE, &c, S_IFREG);
	/* a first decision's look may find what the new guard has not seen yet; the next
	   look waits GUARD_REVAL_MS */
	tap_ok(guard_check(g, &r, &v) == 0, "gen 0: judged whatever the look found");
	r.gen = guard_generation(g);
	tap_ok(guard_check(g, &r, &v) == 0, "classes of the current generation are judged");
	guard_bump(g);
	tap_ok(guard_check(g, &r, &v) == -ESTALE, "older ones: -ESTALE, ask again");
	r.gen = 0;
	tap_ok(guard_check(g, &r, &v) == 0, "gen 0: judged as they are again");
}

int main(void)
{
	if (!unit_begin("unit-guard-facts"))
		return 77;
	test_mount_settings();
	test_seal();
	test_lock();
	test_worktree_top();
	test_other_name();
	test_reused_number();
	test_generation();
	return unit_end();
}
