/* SPDX-License-Identifier: MIT */
/*
 * gitguard against real trees: each case builds a root in a temporary folder
 * (git init through the git CLI, plus hand-made hostile layouts), opens a
 * guard on it and asserts classes and decisions rule by rule.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/gitguard.h"
#include "tests/guard-tap.h"

#include "tests/guard-unit.h"

static void git_repo(const char *dir)
{
	sh("git init -q '%s' && cd '%s' && echo hi >a.txt && git add a.txt && "
	   "git -c user.name=t -c user.email=t@t commit -qm init",
	   dir, dir);
}

static void test_plain_and_git(void)
{
	struct guard_cls c;

	new_root("plain", false);
	sh("mkdir -p src/deep && echo x >src/main.c && echo y >src/deep/b.c");
	c = cls_of("src/main.c");
	tap_ok(c.kind == GUARD_PLAIN && !c.flags, "plain file in a plain folder is plain");
	IS(try_write("src/main.c"), "", "write a plain file");
	IS(try_create("src/new.c"), "", "create a plain file");
	IS(try_mkdir("src/newdir"), "", "mkdir a plain folder");
	IS(try_rename("src/deep", "src/deeper"), "", "rename a plain folder");
	IS(try_remove("src/main.c"), "", "unlink a plain file");
	IS(try_symlink("src/l", "deep/b.c"), "", "symlink to a plain file");

	new_root("git", false);
	git_repo("repo");
	sh("cd repo && git branch feature && git -c user.name=t -c user.email=t@t "
	   "commit -q --allow-empty -m two && git pack-refs --all && mkdir -p .git/logs");
	c = cls_of("repo/.git");
	tap_ok(c.kind == GUARD_GITDIR && !(c.flags & GUARD_TREE),
	       ".git is a git folder, not RO-tree");
	c = cls_of("repo");
	tap_ok(c.kind == GUARD_PLAIN, "worktree top stays plain");
	/* writable as usual */
	IS(try_write("repo/.git/index"), "X2", "index not written in place (X2)");
	IS(try_op(GUARD_OP_TOUCH, "repo/.git/index"), "", "index times may be set");
	IS(try_chmod("repo/.git/index"), "", "index chmod allowed");
	IS(try_rename("repo/.git/HEAD", "repo/.git/index"), "",
	   "a regular file renamed onto index "
	   "passes guard_check (the caller checks its content)");
	IS(try_create("repo/.git/sharedindex.0123"), "X2", "sharedindex.* not created in place");
	IS(try_mkdir("repo/.git/index"), "X2", "no folder made at index");
	IS(try_symlink("repo/.git/index", "../x"), "D9", "no symlink made at index (D9 comes first)");
	IS(try_link("repo/.git/HEAD", "repo/.git/index"), "X2", "no hard link made at index");
	IS(try_link("repo/.git/index", "repo/.git/idx2"), "X2", "no second name for index");
	IS(try_create("repo/.git/sharedindex_ab12"), "", "git's sharedindex_XXXXXX temp creatable");
	IS(try_mkdir("repo/.git/rebase-merge"), "", "rebase-merge may be made");
	IS(try_symlink("repo/.git/rebase-merge", "../../plain"), "D9",
	   "rebase-merge may not be a symlink (D9, before X4)");
	IS(try_create("repo/.git/sequencer"), "X4", "sequencer may not be a file (X4)");
	IS(try_write("repo/.git/HEAD"), "", "HEAD writable");
	IS(try_create("repo/.git/index.lock"), "", "index.lock creatable");
	IS(try_create("repo/.git/HEAD.lock"), "", "HEAD.lock creatable");
	IS(try_rename("repo/.git/index", "repo/.git/index2"), "", "rename of index allowed");
	IS(try_write("repo/.git/packed-refs"), "", "packed-refs writable");
	IS(try_create("repo/.git/COMMIT_EDITMSG"), "", "COMMIT_EDITMSG creatable");
	IS(try_create("repo/.git/refs/heads/x"), "R1",
	   "a new branch ref made in place (git renames its lock onto it: R1)");
	IS(try_create("repo/.git/refs/heads/x.lock"), "", "a new branch ref's lock creatable");
	IS(try_mkdir("repo/.git/refs/heads/topic"), "", "new ref folder");
	IS(try_create("repo/.git/logs/HEAD"), "", "logs writable");
	IS(try_mkdir("repo/.git/objects/ab"), "", "new object folder");
	sh("mkdir -p repo/.git/objects/ab && echo o >repo/.git/objects/ab/cdef");
	IS(try_write("repo/.git/objects/ab/cdef"), "", "object file writable");
	IS(try_create("repo/.git/objects/pack/pack-1.pack"), "", "new pack");
	IS(try_mkdir("repo/.git/rebase-merge"), "", "rebase-merge creatable");
	IS(try_create("repo/.git/info/exclude2"), "", "info/ writable");
	IS(try_write("repo/a.txt"), "", "worktree file writable");
	/* D1 */
	c = cls_of("repo/.git/config");
	tap_ok((c.flags & GUARD_RO) && c.rule == GUARD_RULE_D1, "config is RO by D1");
	IS(try_write("repo/.git/config"), "D1", "write config");
	IS(try_chmod("repo/.git/config"), "D1", "chmod config");
	IS(try_remove("repo/.git/config"), "D1", "unlink config");
	IS(try_create("repo/.git/config.lock"), "D1", "config.lock is NC");
	IS(try_rename("repo/.git/index", "repo/.git/config"), "D1", "rename onto config");
	IS(try_link("repo/.git/config", "repo/cfg"), "D1", "hard link of config");
	/* D3 */
	IS(try_create("repo/.git/hooks/pre-commit"), "D3", "new hook");
	IS(try_write("repo/.git/hooks/pre-commit.sample"), "D3", "write a sample hook");
	IS(try_chmod("repo/.git/hooks/pre-commit.sample"), "D3", "chmod +x a sample hook");
	IS(try_rename("repo/.git/hooks/pre-commit.sample", "repo/.git/hooks/pre-commit"), "D3",
	   "arm a sample hook by rename");
	IS(try_remove("repo/.git/hooks"), "D3", "rmdir hooks");
	IS(try_rename("repo/.git/hooks", "repo/hooks-old"), "D3", "rename hooks away");
	sh("rm -rf repo2 && git init -q repo2 && rm -rf repo2/.git/hooks");
	IS(try_mkdir("repo2/.git/hooks"), "D3", "hooks NC when missing");
	IS(try_symlink("repo2/.git/hooks", "/tmp"), "D3", "hooks as a symlink NC");
	/* D2, D4, D7, D8 */
	IS(try_create("repo/.git/config.worktree"), "D2", "config.worktree NC");
	IS(try_create("repo/.git/commondir"), "D4", "commondir NC");
	IS(try_create("repo/.git/commondir.lock"), "D4", "commondir.lock NC");
	IS(try_create("repo/.git/objects/info/alternates"), "D7", "alternates NC");
	IS(try_create("repo/.git/objects/info/http-alternates"), "D7", "http-alternates NC");
	sh("echo /x >repo/.git/objects/info/alternates && mkdir -p repo/.git/remotes "
	   "repo/.git/branches && echo URL: /x >repo/.git/remotes/origin");
	IS(try_write("repo/.git/objects/info/alternates"), "D7", "existing alternates RO");
	IS(try_remove("repo/.git/objects/info/alternates"), "D7", "existing alternates kept");
	IS(try_write("repo/.git/remotes/origin"), "D8", "existing remotes file RO");
	IS(try_create("repo/.git/branches/b"), "D8", "branches/ content NC");
	IS(try_write("repo/.git/objects/info/packs"), "ERR", "(no packs file)");
	IS(try_create("repo/.git/objects/info/packs"), "", "objects/info/packs creatable");
	sh("rm -rf repo/.git/remotes repo/.git/branches repo/.git/objects/info/alternates");
	IS(try_mkdir("repo/.git/remotes"), "D8", "remotes NC");
	IS(try_create("repo/.git/branches"), "D8", "branches NC");
	IS(try_mkdir("repo/.git/modules"), "D6", "modules NC");
	IS(try_mkdir("repo/.git/worktrees"), "D5", "worktrees NC");
	/* G1, G3 */
	IS(try_mkdir("repo/sub/.git"), "ERR", "(parent missing: error, not allowed)");
	sh("mkdir -p repo/sub");
	IS(try_mkdir("repo/sub/.git"), "G1", "nested .git folder");
	IS(try_create("repo/sub/.git"), "G1", "nested .git file");
	IS(try_symlink("repo/sub/.git", "../.git"), "G1", "nested .git symlink");
	IS(try_mkdir(".git"), "G1", ".git in the root");
	IS(try_mkdir("repo/sub/.GIT"), "G1", ".GIT (case folding)");
	IS(try_rename("repo/.git", "repo/dotgit"), "G3", "rename .git");
	IS(try_remove("repo/.git"), "G3", "rmdir .git");
	IS(try_rename("repo", "repo-moved"), "G3", "rename a folder holding a git folder");
	IS(try_rename("repo/sub", "repo/sub2"), "", "rename a plain folder beside .git");
	IS(try_move(GUARD_OP_EXCHANGE, "repo/.git", "repo/sub"), "G3", "exchange .git");
	IS(try_move(GUARD_OP_EXCHANGE, "repo/sub", "repo/.git"), "G3", "exchange onto .git");
	/* moving a folder in: its contents are judged where they land */
	sh("rm -rf repo/.git/objects/info && mkdir -p evil && echo /x >evil/alternates");
	IS(try_rename("evil", "repo/.git/objects/info"), "D7",
	   "rename a folder holding alternates onto objects/info");
	sh("mkdir -p evil2/pre-commit.d && mkdir -p repo/.git/empty repo/.git/lost-found");
	IS(try_rename("evil2", "repo/.git/hooks"), "D3", "rename a folder onto hooks");
	IS(try_rename("evil2", "repo/.git/lost-found"), "",
	   "rename a plain folder into a git folder, as a name git keeps there");
	IS(try_rename("evil2", "repo/.git/empty"), "D12",
	   "rename a plain folder into a git folder as a name git never makes there (D12)");
	sh("mkdir -p nest/deep && git init -q nest/deep/inner");
	IS(try_rename("nest", "nest2"), "G3", "rename a folder with a repository deep inside");
}

static void test_worktrees_modules(void)
{
	struct guard_cls c;

	new_root("wt", false);
	git_repo("main");
	sh("cd main && git worktree add -q ../wt1 -b w1 && git worktree add -q ../wt2 -b w2 && "
	   "git worktree lock wt2");
	c = cls_of("main/.git/worktrees/wt1");
	tap_ok(c.kind == GUARD_GITDIR && (c.flags & GUARD_WT) && !(c.flags & GUARD_TREE),
	       "worktrees/<id> is a git folder");
	IS(try_write("main/.git/worktrees/wt1/commondir"), "D5", "worktree commondir RO");
	IS(try_write("main/.git/worktrees/wt1/gitdir"), "D5", "worktree gitdir RO");
	IS(try_remove("main/.git/worktrees/wt2/locked"), "D5", "worktree locked RO");
	IS(try_write("main/.git/worktrees/wt1/HEAD"), "", "worktree HEAD writable");
	IS(try_write("main/.git/worktrees/wt1/index"), "X2", "worktree index not written in place");
	IS(try_create("main/.git/worktrees/wt1/config.worktree"), "D2",
	   "worktree config.worktree NC");
	IS(try_mkdir("main/.git/worktrees/wt3"), "D5", "new worktree id NC");
	IS(try_rename("main/.git/worktrees/wt1", "main/.git/worktrees/wt9"), "G3",
	   "rename a worktree admin folder");
	IS(try_write("wt1/.git"), "W1", "worktree .git file RO");
	IS(try_remove("wt1/.git"), "W1", "worktree .git file not removable");
	IS(try_rename("wt1/a.txt", "wt1/.git"), "W1", "rename onto a .git file");
	IS(try_rename("wt1/a.txt", "wt1/sub/.git"), "ERR", "(no such folder)");
	sh("mkdir -p wt1/sub");
	IS(try_rename("wt1/a.txt", "wt1/sub/.git"), "G1", "rename onto a new .git name");
	IS(try_write("wt1/a.txt"), "", "linked worktree file writable");
	/* an <id> without commondir is a complete git folder: RO-tree */
	sh("mkdir -p main/.git/worktrees/bad/hooks && echo ref: refs/heads/x "
	   ">main/.git/worktrees/bad/HEAD");
	c = cls_of("main/.git/worktrees/bad");
	tap_ok((c.flags & GUARD_TREE) && c.rule == GUARD_RULE_D5,
	       "worktrees/<id> without commondir is RO-tree");
	IS(try_create("main/.git/worktrees/bad/hooks/post-checkout"), "D5",
	   "hook in an id without commondir");
	IS(try_write("main/.git/worktrees/bad/HEAD"), "D5", "HEAD in an id without commondir");

	/* modules */
	sh("mkdir -p main/.git/modules/lib/a/b && git init -q --bare "
	   "main/.git/modules/lib/a/b/sub");
	/* a submodule's git folder is guarded like any git folder (D1, D3), its data writable */
	IS(try_write("main/.git/modules/lib/a/b/sub/config"), "D1", "submodule config RO");
	IS(try_create("main/.git/modules/lib/a/b/sub/hooks/pre-commit"), "D3", "submodule hook NC");
	IS(try_write("main/.git/modules/lib/a/b/sub/HEAD"), "", "submodule HEAD writable");
	IS(try_create("main/.git/modules/lib/a/b/sub/index.lock"), "",
	   "submodule index.lock creatable");
	IS(try_create("main/.git/modules/lib/a/b/sub/commondir"), "D4", "submodule commondir NC");
	IS(try_create("main/.git/modules/lib/a/b/new"), "D6",
	   "nothing new on the way to a submodule");
	IS(try_create("main/.git/modules/evil"), "D6", "no new module");
	IS(try_mkdir("main/.git/modules/new"), "D6", "new module NC");
	IS(try_remove("main/.git/modules/lib"), "D6", "modules content not removable");
	/* submodule worktree .git file */
	sh("mkdir -p subwt && printf 'gitdir: ../main/.git/modules/lib/a/b/sub\\n' >subwt/.git");
	IS(try_write("subwt/.git"), "W1", "submodule .git file RO");
}

static void test_pointers(void)
{
	struct guard_cls c;
	uint64_t gen;

	new_root("ptr", false);
	/* a gitdir with a plain name and no bare shape: a git folder through its pointer */
	sh("mkdir -p store/sub/hooks wt && echo '[core]' >store/sub/config && "
	   "printf 'gitdir: ../store/sub\\n' >wt/.git");
	c = cls_of("store/sub");
	tap_ok(c.kind == GUARD_PLAIN, "pointed folder not known before its pointer is seen");
	gen = guard_generation(g);
	c = cls_of("wt/.git");
	tap_ok((c.flags & GUARD_RO) && c.rule == GUARD_RULE_W1, ".git file is W1");
	tap_ok(guard_generation(g) != gen, "seeing the pointer moves the generation");
	c = cls_of("store/sub");
	tap_ok(c.kind == GUARD_GITDIR, "pointed folder is a git folder after it");
	IS(try_create("store/sub/hooks/pre-commit"), "D3", "hook in the pointed folder");
	IS(try_write("store/sub/config"), "D1", "config of the pointed folder");
	/* .git file pointing outside the root */
	sh("mkdir -p out && printf 'gitdir: /nonexistent/x\\n' >out/.git");
	IS(try_write("out/.git"), "W1", ".git file pointing outside is RO");
	/* symlinked .git */
	sh("git init -q real && mkdir -p viasym && ln -s ../real/.git viasym/.git");
	IS(try_remove("viasym/.git"), "W1", "a .git symlink is RO");
	IS(try_rename("viasym", "viasym2"), "G3", "rename a folder holding a .git symlink (G3: the move)");
	/* commondir in a hand-made git folder */
	sh("git init -q --bare common.git && mkdir -p hand/objects hand/refs && "
	   "echo ref: refs/heads/main >hand/HEAD && echo ../common.git >hand/commondir");
	c = cls_of("hand");
	tap_ok(c.kind == GUARD_GITDIR, "HEAD + commondir is a git folder");
	IS(try_write("hand/commondir"), "D4", "commondir RO");
	IS(try_create("hand/hooks/x"), "ERR", "(hooks missing: parent error)");
	IS(try_mkdir("hand/hooks"), "D3", "hooks NC in hand-made git folder");
	c = cls_of("common.git");
	tap_ok(c.kind == GUARD_GITDIR, "NAME.git folder is a git folder");
	IS(try_write("common.git/config"), "D1", "bare repository config RO");
	/* commondir pointing outside: config not ours, layout still guarded */
	sh("mkdir -p far/objects far/refs && echo ref: x >far/HEAD && echo /nonexistent/c "
	   ">far/commondir");
	c = cls_of("far");
	tap_ok(c.kind == GUARD_GITDIR, "commondir outside the root: still a git folder");
	IS(try_remove("far/commondir"), "D4", "its commondir RO");
}

static void test_bare_shape(void)
{
	struct guard_cls c;

	new_root("bare", false);
	sh("mkdir -p a/b/x/objects a/b/x/refs && echo ref: refs/heads/m >a/b/x/HEAD && "
	   "printf '[core]\\n\\tbare = true\\n' >a/b/x/config");
	c = cls_of("a/b/x");
	tap_ok(c.kind == GUARD_GITDIR && !(c.flags & GUARD_TREE), "bare-shaped folder at depth");
	IS(try_write("a/b/x/config"), "D1", "its config RO");
	IS(try_rename("a", "a2"), "G3", "folder above a bare-shaped folder not renamable");
	/* G2 */
	sh("mkdir -p g2/objects g2/refs g3 g4/objects g5 && echo x >g3/HEAD && echo x >g4/HEAD && "
	   "echo x >g5/HEAD");
	IS(try_create("g2/HEAD"), "G2", "HEAD completing objects+refs");
	IS(try_mkdir("g4/refs"), "G2", "refs completing HEAD+objects");
	IS(try_mkdir("g3/objects"), "", "objects alone does not complete");
	IS(try_create("g5/commondir"), "G2", "commondir completing HEAD");
	IS(try_mkdir("new.git"), "G2", "new NAME.git folder");
	IS(try_create("file.git"), "", "a file named NAME.git is fine");
	sh("mkdir -p mv/refs");
	IS(try_rename("mv/refs", "g4/refs"), "G2", "rename a folder in to complete the shape");
}

static void test_config_rules(void)
{
	struct guard_cls c;
	struct stat st;

	new_root("cfg", false);
	git_repo("r");
	sh("mkdir -p shared myhooks && echo '[user]' >shared/inc.cfg && echo '[x]' >shared/if.cfg "
	   "&& cd r && git config include.path ../../shared/inc.cfg && "
	   "git config includeIf.onbranch:agent/*.path ../../shared/if.cfg && "
	   "git config --add include.path ../../shared/missing.cfg && "
	   "git config core.hooksPath ../myhooks");
	c = cls_of("r/.git");
	tap_ok(c.kind == GUARD_GITDIR && !(c.flags & GUARD_TREE), "repo with includes");
	IS(try_write("shared/inc.cfg"), "W3", "include target RO");
	IS(try_write("shared/if.cfg"), "W3", "includeIf target RO");
	IS(try_create("shared/missing.cfg"), "W3", "missing include target NC");
	IS(try_rename("shared", "shared2"), "W3", "folder on an include's path pinned");
	IS(try_create("shared/other.cfg"), "", "other files beside the include stay writable");
	IS(try_create("myhooks/pre-commit"), "W2", "hooksPath folder RO-tree");
	IS(try_remove("myhooks"), "W2", "hooksPath folder not removable");
	/* a second repository whose hooksPath is missing */
	git_repo("r2");
	sh("cd r2 && git config core.hooksPath /%s/cfg/h2", top);
	c = cls_of("r2/.git");
	IS(try_mkdir("h2"), "W2", "missing absolute hooksPath NC");
	/* hard link: a hook with another name outside the git folder */
	sh("echo '#!/bin/sh' >r/.git/hooks/post-checkout && ln r/.git/hooks/post-checkout "
	   "innocent");
	c = cls_of("r/.git/hooks");
	(void)c;
	/* the repository is rescanned when its config changes (stamp) */
	sh("cd r && git config core.x y");
	c = cls_of("r/.git");
	c = cls_of("innocent");
	IS(try_write("innocent"), "D3", "hard link of a hook reached by another name");
	if (fstatat(rootfd, "innocent", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		int rc = guard_check_inode(g, &st, &v);

		IS(result(rc), "D3", "guard_check_inode on the hard link");
	}
	if (fstatat(rootfd, "r/a.txt", &st, AT_SYMLINK_NOFOLLOW) == 0)
		IS(result(guard_check_inode(g, &st, &v)), "", "guard_check_inode on a plain file");
}

static void x3_case(const char *name, const char *setup, const char *desc)
{
	struct guard_cls c;
	char rel[PATH_MAX];

	sh("git init -q %s && cd %s && %s", name, name, setup);
	snprintf(rel, sizeof(rel), "%s/.git", name);
	c = cls_of(rel);
	tap_ok(c.kind == GUARD_GITDIR && (c.flags & GUARD_TREE) && c.rule == GUARD_RULE_X3,
	       "X3: %s", desc);
	snprintf(rel, sizeof(rel), "%s/.git/index.lock", name);
	IS(try_create(rel), "X3", "X3 git folder refuses index.lock");
}

static void test_x3(void)
{
	struct guard_cls c;

	new_root("x3", false);
	x3_case("nocfg", "rm .git/config", "config missing");
	x3_case("dircfg", "rm .git/config && mkdir .git/config", "config is a folder");
	x3_case("lnkcfg", "mv .git/config .git/c && ln -s c .git/config", "config is a symlink");
	x3_case("badcfg", "printf '[core\\n' >>.git/config", "unparsable config");
	x3_case("wtcfg", "git config extensions.worktreeConfig true", "worktreeConfig on");
	x3_case("unkext", "git config extensions.fancy yes", "unknown extension");
	x3_case("fifo", "mkfifo ../fifo.cfg && git config include.path ../../fifo.cfg",
		"FIFO as include target");
	x3_case("bigcfg", "head -c 1100000 /dev/zero | tr '\\0' '#' >>.git/config",
		"config over 1 MiB");
	x3_case("tilde", "git config include.path '~nosuchuserzz/x'", "unresolvable include");
	x3_case("deep",
		"git config include.path ../../d1 && echo '[include]' >../d1 && "
		"echo 'path = d1' >>../d1",
		"include loop");
	sh("git init -q ok && cd ok && git config extensions.worktreeConfig false");
	c = cls_of("ok/.git");
	tap_ok(!(c.flags & GUARD_TREE), "worktreeConfig false is fine");
	IS(try_create("ok/.git/index.lock"), "", "and its index.lock creatable");
}

static void test_x1(void)
{
	new_root("x1", false);
	git_repo("repo");
	sh("mkdir -p repo/src");
	IS(try_symlink("repo/src/h", "../.git/hooks"), "X1", "symlink into .git/hooks");
	IS(try_symlink("repo/h", ".git"), "X1", "symlink to .git");
	IS(try_symlink("l", "repo/.git/config"), "X1", "symlink into .git from the root");
	IS(try_symlink("repo/src/x", "/elsewhere/.git/hooks"), "X1",
	   "absolute symlink naming .git");
	IS(try_symlink("repo/src/ok", "../a.txt"), "", "symlink to a worktree file");
	IS(try_symlink("repo/src/ok2", "/usr/bin/env"), "", "symlink outside the root");
	sh("git init -q --bare b.git && mkdir -p plainb/objects plainb/refs && echo x "
	   ">plainb/HEAD");
	IS(try_symlink("s", "plainb/objects"), "X1", "symlink into a bare-shaped folder");
	{
		char abs[PATH_MAX + 32];

		snprintf(abs, sizeof(abs), "%s/plainb/refs", rootp);
		IS(try_symlink("repo/abs", abs), "X1",
		   "absolute symlink into a bare-shaped folder");
		/* "/.." is "/" for the kernel: the target still lands in the root */
		snprintf(abs, sizeof(abs), "/../..%s/plainb/refs", rootp);
		IS(try_symlink("repo/abs2", abs), "X1",
		   "absolute symlink through /.. into a bare-shaped folder");
		/* out of the root by ".." and back in by its name */
		IS(try_symlink("repo/src/out", "../../../x1/plainb/refs"), "X1",
		   "relative symlink leaving the root and coming back into a bare-shaped folder");
		IS(try_symlink("repo/src/out2", "../../../x1b/plainb/refs"), "",
		   "relative symlink leaving the root for a sibling");
	}
	IS(try_symlink("repo/.git/refs/heads/l", "main"), "D9", "symlink made inside a git folder");
}

/* A symlink renamed (or hard-linked) from FROM to TO, its target read as the server does */
static const char *try_move_link(enum guard_op op, const char *from, const char *to)
{
	char dir[PATH_MAX], name[NAME_MAX + 1], target[PATH_MAX];
	struct guard_req r = {.op = op, .fd = -1, .src_parent_fd = -1, .victim_fd = -1};
	struct guard_cls c, p;
	struct stat st;
	const char *res;
	ssize_t n;
	int pfd;

	split(to, dir, name);
	n = readlinkat(rootfd, from, target, sizeof(target) - 1);
	if (n <= 0 || walk_to(from, &c, NULL, &st) || walk_to(dir, &p, &pfd, NULL))
		return "ERR";
	target[n] = '\0';
	r.cls = &c;
	r.mode = st.st_mode;
	r.parent = &p;
	r.parent_fd = pfd;
	r.name = name;
	r.target = target;
	r.parent_path = dir;
	res = result(guard_check(g, &r, &v));
	close(pfd);
	return res;
}

/* X1 resolves a target as the kernel will: symlinks followed, ".." where they led */
static void test_x1_resolve(void)
{
	char abs[PATH_MAX + 64];

	new_root("x1r", false);
	/* a git folder with no .git in its path (a --separate-git-dir target) */
	sh("mkdir -p meta/sub x && git init -q --bare meta/gd && echo a >a.txt && ln -s meta m && "
	   "ln -s meta/sub l && ln -s gd x/e && ln -s a.txt c1");
	IS(try_symlink("evil", "m/gd/hooks/pre-commit"), "X1",
	   "through an existing symlink into a git folder");
	IS(try_symlink("evil", "m/gd"), "X1", "through an existing symlink to a git folder");
	IS(try_symlink("evil", "m/sub/../gd/hooks"), "X1", "\"..\" after a symlink, physically");
	IS(try_symlink("evil", "l/../gd/hooks"), "X1",
	   "\"..\" applied where the symlink led, not lexically");
	IS(try_symlink("evil", "x/e"), "", "a symlink to a dangling symlink");
	IS(try_symlink("x/evil", "../l/../gd"), "X1", "a relative symlink from a subfolder");
	IS(try_symlink("evil", "nothere/../meta/gd"), "X1",
	   "\"..\" after a name that is not there yet");
	IS(try_symlink("evil", "nothere/file"), "", "a dangling symlink");
	IS(try_symlink("evil", "m/sub"), "", "through a symlink to a plain folder");
	IS(try_symlink("evil", "c1"), "", "a symlink to a symlink to a file");
	IS(try_symlink("evil", "l/../sub/../sub"), "", "through a symlink and back, plainly");
	sh("ln -s loop1 loop2 && ln -s loop2 loop1");
	IS(try_symlink("evil", "loop1/x"), "", "a symlink loop resolves nothing (ELOOP): allowed");
	IS(try_symlink("evil", "loop1/.git"), "X1", "but a .git name after it still counts");
	/* outside the root */
	sh("ln -sfn '%s/meta' '%s/hostlink'", rootp, top);
	snprintf(abs, sizeof(abs), "%s/hostlink/gd/hooks", top);
	IS(try_symlink("evil", abs), "X1", "through a host symlink into the root's git folder");
	sh("git init -q --bare '%s/outbare'", top);
	snprintf(abs, sizeof(abs), "%s/outbare/hooks", top);
	IS(try_symlink("evil", abs), "", "into a git folder outside the root: not this root's");
	IS(try_symlink("x/evil", "../../hostlink/gd/hooks"), "X1",
	   "relative, out of the root and back in through a host symlink");
	/* rename or link of a symlink: its target means something else in its new folder */
	IS(try_move_link(GUARD_OP_RENAME, "x/e", "meta/e"), "X1",
	   "a symlink renamed to where its target is a git folder");
	IS(try_move_link(GUARD_OP_LINK, "x/e", "meta/e"), "X1",
	   "a symlink hard-linked to where its target is a git folder");
	IS(try_move_link(GUARD_OP_RENAME, "x/e", "x/e2"), "", "a symlink renamed in its folder");
	IS(try_move_link(GUARD_OP_RENAME, "c1", "meta/sub/c1"), "",
	   "a symlink renamed to where its target is plain");
	/* a folder moved to another parent: no relative symlink in it may lead out */
	sh("mkdir -p mv1/in mv3/a && ln -s ../../gd mv1/in/up && ln -s ../b mv3/a/l");
	IS(try_rename("mv1", "meta/mv1"), "X1",
	   "a folder holding a symlink that leads out of it, moved to another folder");
	IS(try_rename("mv1", "mv2"), "", "the same folder renamed in its folder");
	IS(try_rename("mv3", "meta/mv3"), "", "a folder whose symlinks stay inside it, moved");
	{
		struct guard_req r = {.op = GUARD_OP_RENAME, .fd = -1, .src_parent_fd = -1,
				      .victim_fd = -1};
		struct guard_cls c, p;
		struct stat st;
		int pfd;

		if (walk_to("x/e", &c, NULL, &st) || walk_to("meta", &p, &pfd, NULL)) {
			tap_ok(false, "a symlink renamed with no target is refused");
			return;
		}
		r.cls = &c;
		r.mode = st.st_mode;
		r.parent = &p;
		r.parent_fd = pfd;
		r.name = "e";
		r.parent_path = "meta";
		IS(result(guard_check(g, &r, &v)), "X1", "a symlink renamed with no target is refused");
		/* a stale path (the host renamed a folder): judged from the folder's fd */
		close(pfd);
		if (walk_to("meta/sub", &p, &pfd, NULL)) {
			tap_ok(false, "a stale path is not trusted");
			return;
		}
		r.parent_fd = pfd;
		r.op = GUARD_OP_SYMLINK;
		r.mode = S_IFLNK;
		r.name = "evil";
		r.target = "../gd/hooks";
		r.parent_path = "x";
		IS(result(guard_check(g, &r, &v)), "X1",
		   "a stale path of the folder is not trusted: its fd is where the target starts");
		r.target = "../../a.txt";
		IS(result(guard_check(g, &r, &v)), "", "and a plain target from there is allowed");
		r.op = GUARD_OP_RENAME;
		r.mode = st.st_mode;
		r.name = "e";
		r.target = "../gd";
		r.parent_path = NULL;
		IS(result(guard_check(g, &r, &v)), "X1",
		   "a symlink renamed into a folder whose path is unknown: judged from its fd");
		r.target = "../a";
		IS(result(guard_check(g, &r, &v)), "", "and allowed there when its target is plain");
		r.parent_fd = -1;
		IS(result(guard_check(g, &r, &v)), "X1",
		   "a symlink renamed into a folder with neither path nor fd is refused");
		r.parent_fd = pfd;
		close(pfd);
	}
}

static int nrepos;

static void count_repo(void *arg, uint64_t dev, uint64_t ino, const char *path)
{
	(void)arg;
	(void)dev;
	(void)ino;
	nrepos++;
	printf("# bot repo: %s\n", path ? path : "?");
}

static void notify_new(const char *rel, const struct guard_cls *parent)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	struct guard_event ev = {.op = GUARD_OP_MKDIR};
	struct guard_cls p;
	struct stat st;
	int pfd;

	split(rel, dir, name);
	/* the parent's class as cached before the create: do not classify it again */
	if (parent)
		pfd = openat(rootfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	else if (walk_to(dir, &p, &pfd, NULL))
		return;
	if (pfd < 0 || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	ev.op = S_ISDIR(st.st_mode) ? GUARD_OP_MKDIR : GUARD_OP_CREATE;
	ev.parent = parent ? parent : &p;
	ev.parent_fd = pfd;
	ev.name = name;
	ev.st = &st;
	ev.path = rel;
	guard_notify(g, &ev);
	close(pfd);
}

static void test_allow_new(void)
{
	struct guard_cls c;
	bool changed;

	new_root("allow", true);
	git_repo("trusted");
	sh("mkdir -p work");
	IS(try_mkdir("work/.git"), "", "G1 allowed with allow_new_repos");
	IS(try_mkdir("work/x.git"), "", "G2 allowed with allow_new_repos");
	sh("mkdir work/.git");
	{
		char dir[PATH_MAX], name[NAME_MAX + 1];
		struct guard_event ev = {.op = GUARD_OP_MKDIR};
		struct guard_cls p;
		struct stat st;
		int pfd;

		split("work/.git", dir, name);
		walk_to(dir, &p, &pfd, NULL);
		fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW);
		ev.parent = &p;
		ev.parent_fd = pfd;
		ev.name = name;
		ev.st = &st;
		ev.path = "work/.git";
		changed = guard_notify(g, &ev);
		close(pfd);
	}
	tap_ok(changed, "notify of a new .git says classes changed");
	sh("git init -q work");
	c = cls_of("work/.git");
	tap_ok(c.kind == GUARD_BOTREPO, "the bot's new repository is the bot's");
	IS(try_create("work/.git/hooks/pre-commit"), "", "bot may write its own hooks");
	IS(try_write("work/.git/config"), "", "bot may write its own config");
	sh("mkdir -p bare/objects bare/refs");
	c = cls_of("bare");
	tap_ok(c.kind == GUARD_PLAIN, "objects + refs without HEAD is plain");
	sh("echo x >bare/HEAD");
	notify_new("bare/HEAD", &c);
	c = cls_of("bare");
	tap_ok(c.kind == GUARD_BOTREPO, "a completed bare shape is the bot's");
	nrepos = 0;
	guard_new_repos(g, count_repo, NULL);
	tap_ok(nrepos == 2, "both listed as made by the bot");
	/* the trusted one is unchanged */
	IS(try_write("trusted/.git/config"), "D1", "trusted repository still guarded");
	IS(try_rename("trusted", "work/trusted"), "G3",
	   "moving a trusted repository into the bot's is refused");
	changed = false;
	{
		struct guard_cls p = cls_of("work");
		struct guard_event ev = {
			.op = GUARD_OP_CREATE, .parent = &p, .parent_fd = -1, .name = "plain.txt"};
		struct stat st = {.st_mode = S_IFREG};

		ev.st = &st;
		changed = guard_notify(g, &ev);
	}
	tap_ok(!changed, "notify of an ordinary create changes nothing");
}

/* A root that is a git folder, or lies in one, gets the rules of its place */
static void join_root(const char *a, const char *b)
{
	if (strlen(a) + strlen(b) >= sizeof(rootp))
		die("path too long");
	strcpy(rootp, a);
	strcat(rootp, b);
}

static void test_root_in_git(void)
{
	struct guard_cls c;
	char base[PATH_MAX];

	new_root("rootgit", false);
	git_repo("main");
	sh("cd main && git worktree add -q ../wt -b w");
	strcpy(base, rootp);

	join_root(base, "/main/.git");
	open_root(false);
	guard_classify_root(g, &c, NULL);
	tap_ok(c.kind == GUARD_GITDIR, "root that is a .git folder is a git folder");
	IS(try_write("config"), "D1", "its config RO");
	IS(try_create("hooks/pre-push"), "D3", "its hooks NC");
	IS(try_write("index"), "X2", "its index not written in place");
	IS(try_symlink("refs/l", "HEAD"), "D9", "symlinks inside it refused");

	join_root(base, "/main/.git/worktrees/wt");
	open_root(false);
	guard_classify_root(g, &c, NULL);
	tap_ok(c.kind == GUARD_GITDIR && (c.flags & GUARD_WT) && !(c.flags & GUARD_TREE),
	       "root that is a worktrees/<id> folder");
	IS(try_write("commondir"), "D5", "its commondir RO");
	IS(try_write("gitdir"), "D5", "its gitdir RO");
	IS(try_write("HEAD"), "", "its HEAD writable");

	join_root(base, "/main/.git/hooks");
	open_root(false);
	guard_classify_root(g, &c, NULL);
	tap_ok((c.flags & GUARD_TREE) && c.rule == GUARD_RULE_D3, "root inside hooks/ is RO-tree");
	IS(try_create("post-merge"), "D3", "nothing can be made in it");
}

struct racer {
	int n;
	int bad;
};

static void *race_classify(void *arg)
{
	struct racer *r = arg;
	struct guard_cls c;
	int i;

	for (i = 0; i < 200; i++) {
		c = cls_of("repo/.git/hooks/pre-commit.sample");
		if (!(c.flags & GUARD_TREE))
			r->bad++;
		c = cls_of("repo/.git/config");
		if (!(c.flags & GUARD_RO))
			r->bad++;
		c = cls_of("shared/inc.cfg");
		if (!(c.flags & GUARD_RO))
			r->bad++;
		if (r->n == 0 && i % 20 == 0) {
			/* one thread keeps forcing rescans */
			sh("cd repo && git config core.n%d 1", i);
		}
	}
	return NULL;
}

/* Classification from several threads while the repository is rescanned */
static void test_threads(void)
{
	struct racer r[4];
	pthread_t t[4];
	int i, bad = 0;

	new_root("threads", false);
	git_repo("repo");
	sh("mkdir -p shared && echo '[x]' >shared/inc.cfg && cd repo && "
	   "git config include.path ../../shared/inc.cfg");
	for (i = 0; i < 4; i++) {
		r[i].n = i;
		r[i].bad = 0;
		pthread_create(&t[i], NULL, race_classify, &r[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		bad += r[i].bad;
	}
	tap_ok(bad == 0, "4 threads classifying during rescans always see the rules (%d wrong)",
	       bad);
}

/* A config written (from the host) is rescanned on notify */
static void test_notify_config(void)
{
	struct guard_event ev = {.op = GUARD_OP_WRITE};
	struct guard_cls d, cfg;
	uint64_t gen;
	bool changed;
	int dfd;

	new_root("notify", false);
	git_repo("repo");
	sh("mkdir -p later");
	IS(try_create("later/inc.cfg"), "", "no include yet");
	if (walk_to("repo/.git", &d, &dfd, NULL))
		return;
	cfg = cls_of("repo/.git/config");
	tap_ok(cfg.role == GUARD_R_CONFIG, "config has the config role");
	sh("cd repo && git config include.path ../../later/inc.cfg");
	gen = guard_generation(g);
	ev.parent = &d;
	ev.parent_fd = dfd;
	ev.cls = &cfg;
	changed = guard_notify(g, &ev);
	close(dfd);
	tap_ok(changed && guard_generation(g) != gen, "notify of a config write: classes changed");
	IS(try_create("later/inc.cfg"), "W3", "the new include target is NC at once");
}

/* Include paths through symlinks inside the root: the links are pinned too */
static void test_include_symlink(void)
{
	new_root("incl", false);
	git_repo("repo");
	sh("mkdir -p real && echo '[x]' >real/t.cfg && ln -s real via && "
	   "cd repo && git config include.path ../../via/t.cfg");
	cls_of("repo/.git");
	IS(try_write("real/t.cfg"), "W3", "include target reached through a symlink RO");
	IS(try_remove("via"), "W3", "the symlink on the include's path RO");
	IS(try_rename("real", "real2"), "W3", "the folder behind the symlink pinned");
	{
		char cmd[PATH_MAX * 2 + 16];

		/* an absolute path that leaves the root and comes back */
		snprintf(cmd, sizeof(cmd), "%s/../%s/abs.cfg", rootp, strrchr(rootp, '/') + 1);
		sh("git init -q r2 && cd r2 && git config include.path '%s'", cmd);
	}
	cls_of("r2/.git");
	IS(try_create("abs.cfg"), "W3", "absolute include via /root/../root is found");
}

static void test_oversize_gitfile(void)
{
	new_root("big", false);
	sh("mkdir -p w && { printf 'gitdir: '; head -c 5000 /dev/zero | tr '\\0' a; } >w/.git");
	IS(try_write("w/.git"), "W1", "oversized .git file is still RO");
	sh("mkdir -p f && mkfifo f/.git");
	IS(try_write("f/.git"), "W1", "a FIFO named .git is RO and not read");
}

/* D9, a relative hooksPath at every worktree top, a host change seen by the next decision */
static void test_layout(void)
{
	new_root("layout", false);
	git_repo("m");
	sh("cd m && git config core.hooksPath hk && git worktree add -q ../w && mkdir ../w/hk");
	sh("git init -q --separate-git-dir=\"$PWD/sg\" sep && mkdir sep/hk && "
	   "git -C sep config core.hooksPath hk");
	guard_scan_tree(g, 0, NULL);
	IS(try_create("w/hk/pre-commit"), "W2", "relative hooksPath at a linked worktree's top");
	IS(try_create("sep/hk/pre-commit"), "W2", "relative hooksPath at a --separate-git-dir top");
	IS(try_symlink("m/.git/objects/ab", "/tmp"), "D9", "no symlink in objects/");
	IS(try_symlink("m/.git/refs/heads/x", "main"), "D9", "no symlink in refs/");
	IS(try_symlink("m/.git/HEAD", "refs/heads/main"), "", "HEAD -> refs/heads/main allowed");
	IS(try_symlink("m/.git/HEAD", "refs/../../x"), "D9", "HEAD climbing out of refs/ refused");
	IS(try_symlink("m/.git/ORIG_HEAD", "refs/heads/main"), "D9", "only HEAD may be a symlink");
	sh("cd m && git config core.hooksPath hk2");
	usleep(60 * 1000);
	IS(try_mkdir("w/hk2"), "W2", "a host change to hooksPath is seen by the next decision");
}

int main(void)
{
	if (!unit_begin("unit-guard"))
		return 77;
	test_plain_and_git();
	test_worktrees_modules();
	test_pointers();
	test_bare_shape();
	test_config_rules();
	test_x3();
	test_x1();
	test_x1_resolve();
	test_allow_new();
	test_oversize_gitfile();
	test_root_in_git();
	test_threads();
	test_notify_config();
	test_include_symlink();
	test_layout();
	return unit_end();
}
