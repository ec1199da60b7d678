/* SPDX-License-Identifier: MIT */
/*
 * What git keeps in a git folder, by name: the names git 2.39 makes there
 * (D12), those it keeps per worktree (D13), and the files whose content it
 * reads as refs or as options (the content rules X2, X4, X5, R1), with the
 * check of a content against its rule.
 *
 * D12: a git folder holds only what git writes.  A folder of any other name
 * inside one (`.git/<anything>/config`, `hooks/`, `objects/info/alternates`)
 * is a complete git folder the moment a commondir or a worktree's pointer
 * names it, and a new git may read a name an old one ignores; so a name made
 * at the top of a git folder, in objects/ or in objects/info/ must be one git
 * itself writes there.  The lists come from git 2.39's source (every
 * git_path(), odb_mkstemp() and tempfile it names) and from running its
 * workflows under strace (tests/guard-names.sh does both through a mount).
 * Inside refs/, logs/, info/, the state folders and packs, git names files
 * after refs, objects and patches: any name may be made there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gitguard/guard-int.h"

static bool in_list(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

static bool has_prefix(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* NAME is BASE.lock for a BASE in LIST */
static bool lock_of(const char *name, const char *const *list)
{
	size_t n = strlen(name);
	char base[NAME_MAX + 1];

	if (n <= 5 || n > NAME_MAX || strcmp(name + n - 5, ".lock"))
		return false;
	memcpy(base, name, n - 5);
	base[n - 5] = '\0';
	return in_list(base, list);
}

/* The top of a git folder (any: a .git, a bare one, worktrees/<id>, modules/<name>) */
static const char *const top_names[] = {
	/* folders */
	"refs", "objects", "logs", "info", "hooks", "branches", "remotes", "rr-cache",
	"rebase-merge", "rebase-apply", "sequencer", "worktrees", "modules", "lost-found", "svn",
	"NOTES_MERGE_WORKTREE",
	"lfs", /* git-lfs's objects: not git's, but it is the only place git-lfs uses */
	/* refs git reads (R1) */
	"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
	"REBASE_HEAD", "BISECT_HEAD", "BISECT_EXPECTED_REV", "AUTO_MERGE", "NOTES_MERGE_REF",
	"NOTES_MERGE_PARTIAL", "packed-refs",
	/* state and messages */
	"MERGE_AUTOSTASH", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "SQUASH_MSG", "COMMIT_EDITMSG",
	"TAG_EDITMSG", "NOTES_EDITMSG", "EDIT_DESCRIPTION", "REPLACE_EDITOBJ", "ADD_EDIT.patch",
	"addp-hunk-edit.diff", "BISECT_START", "BISECT_LOG", "BISECT_NAMES", "BISECT_TERMS",
	"BISECT_ANCESTORS_OK", "BISECT_RUN", "BISECT_FIRST_PARENT", "rebased-patches",
	"description", "config", "config.worktree", "commondir", "gitdir", "locked", "index",
	"packed-refs.new", "shallow", "gc.pid", "gc.log",
	/* git's own tools: gitk, git gui */
	"gitk.cache", "GITGUI_MSG", "GITGUI_BCK", NULL};

/* Temporary files git makes at the top with a random or numbered tail */
static const char *const top_prefixes[] = {"sharedindex.", "sharedindex_", "shallow_",
					   "fast_import_crash_", NULL};

static const char *const objects_names[] = {"pack", "info", "bundles", "maintenance.lock", NULL};
static const char *const objects_prefixes[] = {"tmp_objdir-", "bitmap-ref-tips_", "bulk_fsync_",
					       NULL};
static const char *const objinfo_names[] = {"alternates",   "http-alternates", "packs",
					    "commit-graph", "commit-graphs",   NULL};
static const char *const objinfo_prefixes[] = {"packs_", NULL};

static bool any_prefix(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (has_prefix(name, *list))
			return true;
	return false;
}

static bool hex2(const char *name)
{
	return strlen(name) == 2 && strspn(name, "0123456789abcdef") == 2;
}

/*
 * D12: may NAME of type MODE be made in PARENT, a git folder or its objects/
 * or objects/info/?  True for every other parent.
 */
bool guard_git_name_ok(const struct guard_cls *parent, const char *name, mode_t mode)
{
	if (parent->kind == GUARD_GITDIR) {
		if (in_list(name, top_names) || lock_of(name, top_names) ||
		    any_prefix(name, top_prefixes))
			return true;
		/* a temporary index (GIT_INDEX_FILE=.git/tmp-index, index.stash.<pid>,
		   next-index-<pid>.lock): git reads it only when told to, or (git
		   stash's) as X2 checks it: guard_index_name */
		return !S_ISDIR(mode) && strstr(name, "index");
	}
	if (parent->kind != GUARD_INGIT)
		return true;
	if (parent->role == GUARD_R_OBJECTS)
		return hex2(name) || in_list(name, objects_names) ||
		       any_prefix(name, objects_prefixes);
	if (parent->role == GUARD_R_OBJINFO)
		return in_list(name, objinfo_names) || lock_of(name, objinfo_names) ||
		       any_prefix(name, objinfo_prefixes);
	return true;
}

/*
 * D13: what a common folder holds for every worktree (path.c common_list):
 * a linked worktree's git writes there, and nothing else of it.
 */
static const char *const shared_names[] = {"branches", "common",	  "hooks",	 "info",
					   "logs",     "lost-found",	  "objects",	 "refs",
					   "remotes",  "worktrees",	  "rr-cache",	 "svn",
					   "config",   "gc.pid",	  "packed-refs", "shallow",
					   "lfs",      "packed-refs.new", NULL};

/* Per-worktree names in refs/ and logs/refs/ (refs.c is_per_worktree_ref), and logs/HEAD */
static const char *const wt_refs[] = {"bisect", "rewritten", "worktree", NULL};

/*
 * The name stage's part for a child of a GUARD_SHARED folder (the common
 * folder a linked worktree's bot reaches, its refs/, logs/ and logs/refs/):
 * true when it decided OUT's flags (D13), else false with OUT's flags and
 * role set for the usual stage to go on (the flag carried where it matters).
 */
bool guard_shared_stage(struct guard *g, const struct guard_cls *parent, const char *name,
			mode_t mode, struct guard_cls *out)
{
	if (parent->kind == GUARD_GITDIR) {
		if (in_list(name, shared_names) || lock_of(name, shared_names) ||
		    has_prefix(name, "shallow_"))
			return false;
		out->flags |= GUARD_RO | (S_ISDIR(mode) ? GUARD_TREE : 0);
		out->rule = GUARD_RULE_D13;
		return true;
	}
	if (parent->role == GUARD_R_WORKTREES) {
		/* another worktree's admin folder, or one this bot's is not */
		if (!S_ISDIR(mode) || (g->linked_wt && !strcmp(name, g->linked_wt)))
			return false;
		out->flags |= GUARD_RO | GUARD_TREE;
		out->rule = GUARD_RULE_D13;
		return true;
	}
	if (in_list(name, wt_refs) || (parent->role == GUARD_R_LOGS &&
				       (!strcmp(name, "HEAD") || !strcmp(name, "HEAD.lock")))) {
		out->flags |= GUARD_RO | (S_ISDIR(mode) ? GUARD_TREE : 0);
		out->rule = GUARD_RULE_D13;
		return true;
	}
	return false;
}

/* A ref git reads at the top of a git folder: HEAD, ORIG_HEAD and the like (R1) */
static bool top_ref(const char *name)
{
	static const char *const refs[] = {"BISECT_EXPECTED_REV", "AUTO_MERGE",	 "NOTES_MERGE_REF",
					   "NOTES_MERGE_PARTIAL", "packed-refs", NULL};
	size_t n = strlen(name), i;

	for (i = 0; refs[i]; i++)
		if (name_is(name, refs[i]))
			return true;
	/* HEAD and NAME_HEAD in git's pseudoref syntax, [A-Z_-]+ */
	if (n < 4 || strcasecmp(name + n - 4, "HEAD") || (n > 4 && name[n - 5] != '_'))
		return false;
	for (i = 0; i < n; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') ||
		      name[i] == '_' || name[i] == '-'))
			return false;
	return true;
}

/*
 * X2's names in a git folder: the index, the shared indexes a split one
 * names, and git stash's temporary index.  `git stash -u` (2.39
 * builtin/stash.c save_untracked_files) runs update-index with
 * GIT_INDEX_FILE=<index>.stash.<pid> without removing what is there first,
 * and its untracked tree takes what that file holds: the person's `git
 * stash pop` writes it.  Its lock files are no index: git makes them with
 * O_EXCL and never reads one it did not make (next-index-<pid>.lock of a
 * partial commit likewise).
 */
bool guard_index_name(const char *name)
{
	size_t n = strlen(name);

	if (name_is(name, "index") || !strncasecmp(name, "sharedindex.", 12))
		return true;
	return !strncasecmp(name, "index.stash.", 12) &&
	       !(n > 5 && !strcasecmp(name + n - 5, ".lock"));
}

/*
 * Content-checked names (gitguard.h): X2 for a git folder's `index`,
 * `sharedindex.*` and `index.stash.*` (guard_index_name); R1 for the refs at its top, every file under refs/ but
 * lock files, and a rebase's head-name, update-refs and refs-to-delete; D10
 * for MERGE_RR, rerere's records (rerere.c); D7 for objects/pack/multi-pack-index
 * and every *.midx in objects/pack/multi-pack-index.d, the layers of the
 * incremental chain git >= 2.47 reads (midx.c); X4
 * for the strategy files in rebase-merge/, rebase-apply/ and sequencer/;
 * X5 for apply-opt and gpg_sign_opt there; X7 for msgnum, end, next and last
 * there (step counts); X6 for git-rebase-todo there
 * (git reads it in rebase-merge/ only; elsewhere the check costs nothing);
 * else 0.
 */
unsigned guard_content_rule(const struct guard_cls *parent, const char *name)
{
	size_t n;

	if (parent->kind == GUARD_GITDIR) {
		if (guard_index_name(name))
			return GUARD_RULE_X2;
		if (name_is(name, "MERGE_RR"))
			return GUARD_RULE_D10;
		return top_ref(name) ? GUARD_RULE_R1 : 0;
	}
	if (parent->kind != GUARD_INGIT)
		return 0;
	if (parent->role == GUARD_R_OBJPACK)
		return name_is(name, "multi-pack-index") ? GUARD_RULE_D7 : 0;
	if (parent->role == GUARD_R_MIDXD)
		return guard_midx_layer_name(name) ? GUARD_RULE_D7 : 0;
	if (parent->role == GUARD_R_REFS) {
		n = strlen(name);
		return n > 5 && !strcasecmp(name + n - 5, ".lock") ? 0 : GUARD_RULE_R1;
	}
	if (parent->role != GUARD_R_SEQ)
		return 0;
	if (name_is(name, "strategy") || name_is(name, "strategy_opts") || name_is(name, "opts"))
		return GUARD_RULE_X4;
	if (name_is(name, "apply-opt") || name_is(name, "gpg_sign_opt"))
		return GUARD_RULE_X5;
	if (name_is(name, "git-rebase-todo"))
		return GUARD_RULE_X6;
	if (name_is(name, "msgnum") || name_is(name, "end") || name_is(name, "next") ||
	    name_is(name, "last"))
		return GUARD_RULE_X7;
	if (name_is(name, "head-name") || name_is(name, "update-refs") ||
	    name_is(name, "refs-to-delete"))
		return GUARD_RULE_R1;
	return 0;
}

/*
 * A layer of multi-pack-index.d: git opens multi-pack-index-HASH.midx there;
 * any NAME.midx (any case: a case-folding file system) is taken for one.
 */
bool guard_midx_layer_name(const char *name)
{
	size_t n = strlen(name);

	return n > 5 && !strcasecmp(name + n - 5, ".midx");
}

/* How much of a file of RULE gitguard reads to check it */
size_t guard_content_cap(unsigned rule)
{
	if (rule == GUARD_RULE_X2 || rule == GUARD_RULE_R1 || rule == GUARD_RULE_D7)
		return GUARD_INDEX_MAX;
	return rule == GUARD_RULE_X6 ? GUARD_TODO_MAX : GUARD_SEQ_MAX;
}

bool guard_rule_renamed_only(unsigned rule)
{
	return rule == GUARD_RULE_X2 || rule == GUARD_RULE_D10 || rule == GUARD_RULE_D7;
}

/* 0 if BUF may become the file NAME of rule RULE, else -EROFS with *WHY */
int guard_content_check(unsigned rule, const char *name, const char *buf, size_t len, size_t hashsz,
			const char **why)
{
	int rc = -EINVAL;

	*why = "unknown content rule";
	if (rule == GUARD_RULE_X2)
		rc = guard_index_check_hash(buf, len, hashsz, why);
	else if (rule == GUARD_RULE_X4)
		rc = guard_seq_file_check(name, buf, len, why);
	else if (rule == GUARD_RULE_X5)
		rc = guard_optfile_check(name, buf, len, why);
	else if (rule == GUARD_RULE_R1)
		rc = guard_ref_check(name, buf, len, why);
	else if (rule == GUARD_RULE_X6)
		rc = guard_todo_check(buf, len, why);
	else if (rule == GUARD_RULE_X7)
		rc = guard_count_check(buf, len, why);
	else if (rule == GUARD_RULE_D10)
		rc = guard_merge_rr_check(buf, len, hashsz, why);
	else if (rule == GUARD_RULE_D7 && guard_midx_layer_name(name))
		rc = guard_midx_layer_check(buf, len, why);
	else if (rule == GUARD_RULE_D7)
		rc = guard_midx_check(buf, len, why);
	return rc ? -EROFS : 0;
}

/*
 * As guard_content_check, reading FD (open for reading): a regular file with
 * one name, no larger than the rule's cap.  For X2 with G, DIRFD is the git
 * folder it goes into: guard_index_folder() too.
 */
int guard_content_fd(struct guard *g, int dirfd, unsigned rule, const char *name, int fd,
		     size_t hashsz, const char **why)
{
	struct stat st;
	size_t len;
	char *buf;
	int rc;

	rc = guard_read_fd(fd, guard_content_cap(rule), &buf, &len, &st);
	if (rc) {
		*why = rc == -EFBIG    ? "larger than gitguard reads"
		       : rc == -EINVAL ? "not a regular file"
				       : "unreadable";
		return -EROFS;
	}
	if (st.st_nlink != 1) {
		free(buf);
		*why = "a file with more than one name";
		return -EROFS;
	}
	rc = guard_content_check(rule, name, buf, len, hashsz, why);
	if (!rc && rule == GUARD_RULE_X2 && dirfd >= 0)
		rc = guard_index_folder(g, dirfd, name, buf, len, hashsz, why);
	free(buf);
	return rc;
}
