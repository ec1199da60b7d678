/* SPDX-License-Identifier: MIT */
/*
 * gitguard's pure checks of rules R1 (what a ref file may name), X5 (option
 * files git hands to another command), X6 (a rebase's todo list), D10 (MERGE_RR, empty
 * only) and D12 (the names git makes in a git folder), and which names carry a content rule.
 */
#include <errno.h>
#include <string.h>

#include "gitguard/guard-int.h"
#include "tests/guard-tap.h"

#define OID "0123456789abcdef0123456789abcdef01234567"
#define OID256 OID "012345678901234567890123"

static int ref(const char *name, const char *text)
{
	const char *why = NULL;

	return guard_ref_check(name, text, strlen(text), &why);
}

static int opt(const char *name, const char *text)
{
	const char *why = NULL;

	return guard_optfile_check(name, text, strlen(text), &why);
}

static int todo(const char *text, size_t len)
{
	const char *why = NULL;

	return guard_todo_check(text, len, &why);
}
#define TODO(s) todo(s, sizeof(s) - 1)

static void todos(void)
{
	tap_ok(TODO("") == 0 && TODO("pick " OID " a\nreword " OID " b\nbreak\n") == 0 &&
		       TODO("# exec make\n\n") == 0 && TODO("pick " OID " exec x\n") == 0 &&
		       TODO("execute\nxx y\nfixup -C " OID "\nlabel x\nreset x\n") == 0 &&
		       TODO("update-ref refs/heads/x\nmerge -C " OID " x # exec y\n") == 0,
	       "X6: a todo list of every command but exec passes");
	tap_ok(TODO("exec make\n") == -EINVAL && TODO("pick " OID "\nx make") == -EINVAL &&
		       TODO("  \t exec make\n") == -EINVAL && TODO("x\tmake\r\n") == -EINVAL &&
		       TODO("exec\n") == -EINVAL && TODO("x") == -EINVAL &&
		       TODO("x\r\n") == -EINVAL && TODO("exec\0make\n") == -EINVAL &&
		       TODO("pick " OID "\0\nexec make\n") == -EINVAL,
	       "X6: exec or x, after blanks, before a blank, CR, NUL or the end, refused");
	tap_ok(!strcmp(guard_todo_exec("exec  make x", "exec  make x" + 12), "make x") &&
		       !strcmp(guard_todo_exec("\tx\tmake", "\tx\tmake" + 7), "make") &&
		       guard_todo_exec("xx make", "xx make" + 7) == NULL &&
		       guard_todo_exec("exec", "exec" + 4) != NULL,
	       "X6: the command of an exec line, as audit lists it");
	tap_ok(todo("pick\n", GUARD_TODO_MAX + 1) == -EINVAL,
	       "X6: a todo list longer than gitguard reads refused");
}

static void refs(void)
{
	tap_ok(ref("ORIG_HEAD", OID "\n") == 0 && ref("ORIG_HEAD", OID256 "\n") == 0 &&
		       ref("HEAD", "ref: refs/heads/main\n") == 0 &&
		       ref("HEAD", "ref:refs/heads/x") == 0 &&
		       ref("origin-HEAD", "ref: refs/remotes/origin/main\n") == 0 &&
		       ref("ORIG_HEAD", "ref: HEAD\n") == 0 && ref("FETCH_HEAD", "") == 0 &&
		       ref("MERGE_HEAD", "\n") == 0 && ref("head-name", "") == 0,
	       "R1: an object name, a symbolic ref to refs/ or HEAD; empty, what git writes in "
	       "place");
	tap_ok(ref("ORIG_HEAD", "") == -EINVAL && ref("main", "\n") == -EINVAL &&
		       ref("HEAD", "") == -EINVAL,
	       "R1: an empty ref git renames in refused (a refused write leaves no broken ref)");
	tap_ok(ref("FETCH_HEAD", OID "\t\tbranch 'main' of /x\n" OID "\tnot-for-merge\tb\n") == 0 &&
		       ref("MERGE_HEAD", OID "\n" OID "\n") == 0,
	       "R1: FETCH_HEAD and MERGE_HEAD, more after the first object name");
	tap_ok(ref("ORIG_HEAD", "ref: commondir\n") == -EINVAL &&
		       ref("ORIG_HEAD", "ref: objects/info/alternates") == -EINVAL &&
		       ref("ORIG_HEAD", "ref: worktrees/x/commondir") == -EINVAL &&
		       ref("ORIG_HEAD", "ref: modules/s/commondir") == -EINVAL &&
		       ref("ORIG_HEAD", "ref: config") == -EINVAL &&
		       ref("ORIG_HEAD", "ref: ORIG_HEAD") == -EINVAL &&
		       ref("ORIG_HEAD", "ref: main-worktree/HEAD") == -EINVAL,
	       "R1: a symbolic ref to a one-level name or a file outside refs/ refused");
	tap_ok(ref("x", "ref: refs/../config") == -EINVAL &&
		       ref("x", "ref: refs/heads/.x") == -EINVAL &&
		       ref("x", "ref: refs/heads/a.lock") == -EINVAL &&
		       ref("x", "ref: refs/heads/a..b") == -EINVAL &&
		       ref("x", "ref: refs/heads/a b") == -EINVAL &&
		       ref("x", "ref: refs/heads/x\nmore") == -EINVAL &&
		       ref("x", "ref: refs//x") == -EINVAL && ref("x", "ref: refs/x.") == -EINVAL &&
		       ref("x", "ref: refs/a@{1}") == -EINVAL &&
		       ref("x", "ref: refs/") == -EINVAL && ref("x", "ref: refs/a*") == -EINVAL,
	       "R1: targets check_refname_format refuses are refused");
	tap_ok(ref("x", "hello") == -EINVAL && ref("x", OID "0") == -EINVAL &&
		       ref("x", "0123") == -EINVAL && ref("x", " ref: refs/heads/x") == -EINVAL,
	       "R1: neither an object name nor a symbolic ref refused");
	tap_ok(ref("packed-refs", "# pack-refs with: peeled fully-peeled sorted \n" OID
				  " refs/heads/main\n^" OID "\n") == 0 &&
		       ref("packed-refs", "") == 0,
	       "R1: packed-refs as git writes it");
	tap_ok(ref("packed-refs", OID " commondir\n") == -EINVAL &&
		       ref("packed-refs", OID " refs/heads/../../config\n") == -EINVAL &&
		       ref("packed-refs", "# a comment\n") == -EINVAL &&
		       ref("packed-refs", OID "\n") == -EINVAL,
	       "R1: packed-refs naming a non-ref refused");
	tap_ok(ref("update-refs", "refs/heads/a\n" OID "\n" OID "\n") == 0 &&
		       ref("update-refs", "commondir\n" OID "\n" OID "\n") == -EINVAL &&
		       ref("update-refs", "refs/heads/a\n" OID "\n") == -EINVAL,
	       "R1: update-refs: triples of a ref under refs/ and two object names");
	tap_ok(ref("head-name", "refs/heads/main\n") == 0 &&
		       ref("head-name", "detached HEAD\n") == 0 &&
		       ref("head-name", "commondir\n") == -EINVAL,
	       "R1: a rebase's head-name");
	tap_ok(ref("refs-to-delete", "refs/rewritten/a\nrefs/rewritten/b\n") == 0 &&
		       ref("refs-to-delete", "config\n") == -EINVAL,
	       "R1: refs-to-delete");
	tap_ok(guard_head_target_ok("refs/heads/x") && !guard_head_target_ok("refs/../x") &&
		       !guard_head_target_ok("commondir"),
	       "a HEAD symlink's target: a ref under refs/");
}

#define OPTS_OK "[options]\n\tgpg-sign = DEADBEEF\n"
#define OPTS_KEY "[options]\n\tgpg-sign = ./key\n"

static void options(void)
{
	const char *why = NULL;

	tap_ok(opt("apply-opt", "") == 0 && opt("apply-opt", "'--whitespace=fix' '-C1'\n") == 0 &&
		       opt("apply-opt", "'-p2' '--reject' '--ignore-whitespace'") == 0 &&
		       opt("apply-opt", "'--directory=sub dir' '--exclude=*.o'") == 0 &&
		       opt("apply-opt", "'--include=it'\\''s'") == 0,
	       "X5: apply-opt with git am's pass-through options");
	tap_ok(opt("apply-opt", "'--build-fake-ancestor=.git/commondir'") == -EINVAL &&
		       opt("apply-opt", "'--build=x'") == -EINVAL &&
		       opt("apply-opt", "'--unsafe-paths'") == -EINVAL &&
		       opt("apply-opt", "'--whitespace=fix' '--build-fake-ancestor' 'x'") ==
			       -EINVAL &&
		       opt("apply-opt", "'-Cx'") == -EINVAL &&
		       opt("apply-opt", "--reject") == -EINVAL &&
		       opt("apply-opt", "'--reject'x") == -EINVAL &&
		       opt("apply-opt", "'--reject") == -EINVAL,
	       "X5: apply-opt naming a path, abbreviated, or not git's quoting refused");
	tap_ok(opt("gpg_sign_opt", "") == 0 && opt("gpg_sign_opt", "-S\n") == 0 &&
		       opt("gpg_sign_opt", "-SDEADBEEF\n") == 0 &&
		       opt("gpg_sign_opt", "-Skey::ssh-ed25519 AAAA/x+y=") == 0,
	       "X5: gpg_sign_opt with a key id or a literal key");
	tap_ok(opt("gpg_sign_opt", "-S/tmp/key") == -EINVAL &&
		       opt("gpg_sign_opt", "-S~/key") == -EINVAL &&
		       opt("gpg_sign_opt", "--exec=x") == -EINVAL &&
		       opt("gpg_sign_opt", "-Sa\n-Sb") == -EINVAL,
	       "X5: gpg_sign_opt naming a key file or another option refused");
	tap_ok(guard_seq_opts_check(OPTS_OK, strlen(OPTS_OK), &why) == 0 &&
		       guard_seq_opts_check(OPTS_KEY, strlen(OPTS_KEY), &why) == -EINVAL,
	       "sequencer/opts: options.gpg-sign may not name a key file");
}

static int merge_rr(const char *text, size_t len)
{
	const char *why = NULL;

	return guard_merge_rr_check(text, len, 20, &why);
}

#define RR(s) merge_rr(s, sizeof(s) - 1)

static void rerere(void)
{
	tap_ok(RR("") == 0, "D10: an empty MERGE_RR passes");
	tap_ok(RR(OID "\tf\0") == -EROFS && RR(OID ".3\tsrc/f.c\0") == -EROFS &&
		       RR(OID "\tf\0" OID "\tg\0") == -EROFS,
	       "D10: a record as git writes it is refused (-EROFS)");
	tap_ok(RR(OID "\t/root/.ssh/id_ed25519\0") == -EINVAL &&
		       RR(OID "\t../secret\0") == -EINVAL && RR(OID "\t.git/config\0") == -EINVAL &&
		       RR(OID "\ta/./b\0") == -EINVAL && RR(OID "\tf") == -EINVAL &&
		       RR(OID ".-1\tf\0") == -EINVAL && RR(OID ".1234567\tf\0") == -EINVAL &&
		       RR("0123\tf\0") == -EINVAL && RR(OID "x\tf\0") == -EINVAL &&
		       RR(OID "\t\0") == -EINVAL,
	       "D10: a record git would not write is malformed (-EINVAL)");
}

static void names(void)
{
	const struct guard_cls gitdir = {.kind = GUARD_GITDIR};
	const struct guard_cls refsdir = {.kind = GUARD_INGIT, .role = GUARD_R_REFS};
	const struct guard_cls seq = {.kind = GUARD_INGIT, .role = GUARD_R_SEQ};
	const struct guard_cls objects = {.kind = GUARD_INGIT, .role = GUARD_R_OBJECTS};
	const struct guard_cls objinfo = {.kind = GUARD_INGIT, .role = GUARD_R_OBJINFO};
	const struct guard_cls objpack = {.kind = GUARD_INGIT, .role = GUARD_R_OBJPACK};
	const struct guard_cls midxd = {.kind = GUARD_INGIT, .role = GUARD_R_MIDXD};
	const struct guard_cls plain = {.kind = GUARD_PLAIN};
	const char *why = NULL;

	tap_ok(guard_content_rule(&gitdir, "HEAD") == GUARD_RULE_R1 &&
		       guard_content_rule(&gitdir, "ORIG_HEAD") == GUARD_RULE_R1 &&
		       guard_content_rule(&gitdir, "CHERRY_PICK_HEAD") == GUARD_RULE_R1 &&
		       guard_content_rule(&gitdir, "AUTO_MERGE") == GUARD_RULE_R1 &&
		       guard_content_rule(&gitdir, "packed-refs") == GUARD_RULE_R1 &&
		       guard_content_rule(&gitdir, "index") == GUARD_RULE_X2 &&
		       guard_content_rule(&gitdir, "ORIG_HEAD.lock") == 0 &&
		       guard_content_rule(&gitdir, "MERGE_MSG") == 0 &&
		       guard_content_rule(&gitdir, "MERGE_RR") == GUARD_RULE_D10 &&
		       guard_content_rule(&gitdir, "MERGE_RR.lock") == 0 &&
		       guard_rule_renamed_only(GUARD_RULE_D10) &&
		       guard_rule_renamed_only(GUARD_RULE_X2) &&
		       !guard_rule_renamed_only(GUARD_RULE_R1),
	       "content rules at a git folder's top: refs R1, index X2, MERGE_RR D10, locks none");
	tap_ok(guard_content_rule(&gitdir, "sharedindex.0123") == GUARD_RULE_X2 &&
		       guard_content_rule(&gitdir, "index.stash.4242") == GUARD_RULE_X2 &&
		       guard_content_rule(&gitdir, "INDEX.Stash.4242") == GUARD_RULE_X2 &&
		       guard_content_rule(&gitdir, "index.stash.4242.lock") == 0 &&
		       guard_content_rule(&gitdir, "index.lock") == 0 &&
		       guard_content_rule(&gitdir, "tmp-index") == 0 &&
		       guard_content_rule(&gitdir, "next-index-4242.lock") == 0,
	       "X2 at a git folder's top: index, sharedindex.*, git stash's index.stash.* (not locks)");
	tap_ok(guard_content_rule(&refsdir, "main") == GUARD_RULE_R1 &&
		       guard_content_rule(&refsdir, "main.lock") == 0 &&
		       guard_content_rule(&seq, "update-refs") == GUARD_RULE_R1 &&
		       guard_content_rule(&seq, "head-name") == GUARD_RULE_R1 &&
		       guard_content_rule(&seq, "apply-opt") == GUARD_RULE_X5 &&
		       guard_content_rule(&seq, "gpg_sign_opt") == GUARD_RULE_X5 &&
		       guard_content_rule(&seq, "strategy") == GUARD_RULE_X4 &&
		       guard_content_rule(&seq, "git-rebase-todo") == GUARD_RULE_X6 &&
		       guard_content_rule(&seq, "msgnum") == GUARD_RULE_X7 &&
		       guard_content_rule(&seq, "last") == GUARD_RULE_X7 &&
		       guard_count_check("", 0, &why) == 0 &&
		       guard_count_check("12\n", 3, &why) == 0 &&
		       guard_count_check("$(x)\n", 5, &why) == -EINVAL &&
		       guard_count_check("1\n2", 3, &why) == -EINVAL &&
		       guard_count_check("1 ", 2, &why) == -EINVAL &&
		       guard_content_rule(&seq, "done") == 0 &&
		       guard_content_rule(&plain, "HEAD") == 0 &&
		       guard_content_rule(&objpack, "multi-pack-index") == GUARD_RULE_D7 &&
		       guard_content_rule(&objpack, "multi-pack-index.lock") == 0 &&
		       guard_content_rule(&objpack, "pack-1.idx") == 0 &&
		       guard_content_rule(&objects, "multi-pack-index") == 0 &&
		       guard_content_rule(&midxd, "multi-pack-index-01ab.midx") == GUARD_RULE_D7 &&
		       guard_content_rule(&midxd, "x.MIDX") == GUARD_RULE_D7 &&
		       guard_content_rule(&midxd, "multi-pack-index-chain") == 0 &&
		       guard_content_rule(&midxd, "multi-pack-index-01ab.bitmap") == 0 &&
		       guard_content_rule(&midxd, ".midx") == 0 &&
		       guard_rule_renamed_only(GUARD_RULE_D7),
	       "content rules under refs/, in state folders, objects/pack and multi-pack-index.d");
	tap_ok(guard_midx_check("MIDX", 4, &why) == -EINVAL &&
		       guard_midx_check("DIRC\1\1\0\0\0\0\0\0", 12, &why) == -EINVAL &&
		       guard_midx_check("MIDX\1\1\0\0\0\0\0\0"
					"\0\0\0\0"
					"\0\0\0\0\0\0\0\30",
					24, &why) == 0 &&
		       guard_midx_check("MIDX\1\1\0\0\0\0\0\1"
					"\0\0\0\0"
					"\0\0\0\0\0\0\0\30",
					24, &why) == -EINVAL,
	       "D7: a multi-pack-index git 2.39 reads, and one naming packs without their names");
	tap_ok(guard_midx_check("MIDX\2\1\0\0\0\0\0\0"
				"\0\0\0\0"
				"\0\0\0\0\0\0\0\30",
				24, &why) == -EINVAL &&
		       guard_midx_layer_check("MIDX\2\1\0\0\0\0\0\0"
					      "\0\0\0\0"
					      "\0\0\0\0\0\0\0\30",
					      24, &why) == 0 &&
		       guard_midx_layer_check("MIDX\3\1\0\0\0\0\0\0"
					      "\0\0\0\0"
					      "\0\0\0\0\0\0\0\30",
					      24, &why) == -EINVAL &&
		       guard_content_check(GUARD_RULE_D7, "multi-pack-index-01ab.midx",
					   "MIDX\2\1\0\0\0\0\0\0"
					   "\0\0\0\0"
					   "\0\0\0\0\0\0\0\30",
					   24, 20, &why) == 0,
	       "D7: a layer of multi-pack-index.d, version 1 or 2 (git >= 2.47)");
	tap_ok(guard_git_name_ok(&gitdir, "refs", S_IFDIR) &&
		       guard_git_name_ok(&gitdir, "ORIG_HEAD.lock", S_IFREG) &&
		       guard_git_name_ok(&gitdir, "sharedindex_Ab12Cd", S_IFREG) &&
		       guard_git_name_ok(&gitdir, "index.stash.123", S_IFREG) &&
		       guard_git_name_ok(&gitdir, "next-index-42.lock", S_IFREG) &&
		       guard_git_name_ok(&gitdir, "tmp-index", S_IFREG) &&
		       guard_git_name_ok(&gitdir, "packed-refs.new", S_IFREG) &&
		       guard_git_name_ok(&gitdir, "rebased-patches", S_IFREG),
	       "D12: names git makes at a git folder's top");
	tap_ok(!guard_git_name_ok(&gitdir, "evil", S_IFDIR) &&
		       !guard_git_name_ok(&gitdir, OID, S_IFDIR) &&
		       !guard_git_name_ok(&gitdir, "index-dir", S_IFDIR) &&
		       !guard_git_name_ok(&gitdir, ".git", S_IFDIR) &&
		       !guard_git_name_ok(&gitdir, "Refs", S_IFDIR) &&
		       !guard_git_name_ok(&gitdir, "notes.txt", S_IFREG),
	       "D12: other names at a git folder's top refused");
	tap_ok(guard_git_name_ok(&objects, "ab", S_IFDIR) &&
		       guard_git_name_ok(&objects, "pack", S_IFDIR) &&
		       guard_git_name_ok(&objects, "tmp_objdir-incoming-Xy12ab", S_IFDIR) &&
		       guard_git_name_ok(&objects, "maintenance.lock", S_IFREG) &&
		       !guard_git_name_ok(&objects, "evil", S_IFDIR) &&
		       !guard_git_name_ok(&objects, "AB", S_IFDIR) &&
		       guard_git_name_ok(&objinfo, "commit-graph.lock", S_IFREG) &&
		       guard_git_name_ok(&objinfo, "packs_abc123", S_IFREG) &&
		       !guard_git_name_ok(&objinfo, "evil", S_IFDIR) &&
		       guard_git_name_ok(&refsdir, "anything", S_IFDIR),
	       "D12: objects/ and objects/info/ as git makes them; refs/ free");
}

int main(void)
{
	refs();
	todos();
	options();
	rerere();
	names();
	return tap_done();
}
