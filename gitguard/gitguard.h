/* SPDX-License-Identifier: MIT */
/*
 * gitguard: which entries of a writable root git would trust, and whether a
 * write-ish operation on them is allowed (the rule table: agentfs(1), WHAT
 * IS PROTECTED; gitguard/README says how the pieces fit).
 *
 * gitguard knows nothing of FUSE: the caller (fusefs) keeps one struct
 * guard_cls per inode, computed by guard_classify() from the parent's class
 * when the inode is looked up, and asks guard_check() before every write-ish
 * operation.  Classes are plain data (no pointers) and may be copied freely.
 *
 * The layout files (.git files, commondir, worktrees/<id>/gitdir) and the
 * config sections that matter (include, includeIf, core.hooksPath,
 * core.worktree, core.repositoryformatversion, extensions.*) are read
 * through descriptors, size-capped and parsed here (parse.c), so nothing
 * follows a bot's symlink or an include by path and nothing blocks on a
 * FIFO: libgit2 reads by path, follows every link and opens FIFOs, so it
 * cannot be the first reader of an agent-controlled tree.  It is a second
 * one (lg2.c): once gitguard's own reading found a git folder safe to read,
 * libgit2 opens it through /proc/self/fd/N, and its worktree, common folder
 * and hooksPath values are applied too; where the two disagree, the
 * stricter answer wins.
 *
 * Thread safety: every function may be called from several threads at once
 * on the same struct guard, or on guards sharing one view, except
 * guard_free() of that guard.
 *
 * Errors, for every function here and in ggutil.h: a function that can fail
 * returns int (or long, for a count) that is 0 or more on success and a
 * negative errno on failure; results go through out-parameters.  A rule's
 * refusal is -EROFS with a struct guard_verdict (guard_check) or a static
 * *why string (the content and format checks, whose malformed input is
 * -EINVAL with *why).  Where a message naming the path helps, a struct
 * guard_err is filled too, and its code is the value returned.  errno is
 * never a result: do not read it after a call (gg_open_nofollow, a drop-in
 * for openat(2), alone returns -1 and sets it).  Functions returning bool,
 * size_t or a pointer say what their "none" is.
 *
 * Which file owns what: the comments over each group below name the file;
 * guard-int.h does the same for the internals, and README the whole map.
 */
#ifndef GITGUARD_H
#define GITGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "gitguard/ggutil.h" /* the shared helpers, guard_read_fd among them */

struct guard;
struct guard_view;

/* What an entry is, relative to git. */
enum guard_kind {
	GUARD_PLAIN = 0, /* not in any git folder */
	GUARD_GITDIR,	 /* a git folder D itself */
	GUARD_INGIT,	 /* beneath a git folder */
	GUARD_BOTREPO,	 /* in a repository the bot made (allow_new_repos): no rules */
};

/* Where an entry sits inside a git folder (decides its children's names). */
enum guard_role {
	GUARD_R_NONE = 0,
	GUARD_R_OBJECTS,   /* D/objects */
	GUARD_R_OBJINFO,   /* D/objects/info */
	GUARD_R_WORKTREES, /* D/worktrees */
	GUARD_R_CONFIG,	   /* D/config: a write to it is worth a guard_notify() */
	GUARD_R_MODULES,   /* D/modules and the folders in it down to each submodule's git folder */
	GUARD_R_SEQ,	   /* D/rebase-merge, D/rebase-apply, D/sequencer: X4, X5, R1 files inside */
	GUARD_R_REFS,	   /* D/refs and every folder beneath it: its files are refs (R1) */
	GUARD_R_LOGS,	   /* D/logs and D/logs/refs of a common folder a linked worktree's bot
			      reaches (D13: HEAD's log and per-worktree refs' logs are not its) */
	GUARD_R_HOMECFG,   /* a home's .config folder: its git/ is H1's */
	GUARD_R_OBJPACK,   /* D/objects/pack: its multi-pack-index is D7's */
	GUARD_R_MIDXD,	   /* D/objects/pack/multi-pack-index.d: its *.midx layers are D7's
			      (the last role: tests/fuzz/fuzz-decide.c checks against it) */
};

/* Rules, as agentfs(1) WHAT IS PROTECTED names them; guard_rule_name() gives the text. */
enum guard_rule {
	GUARD_RULE_NONE = 0,
	GUARD_RULE_G1,
	GUARD_RULE_G2,
	GUARD_RULE_G3,
	GUARD_RULE_D1,
	GUARD_RULE_D2,
	GUARD_RULE_D3,
	GUARD_RULE_D4,
	GUARD_RULE_D5,
	GUARD_RULE_D6,
	GUARD_RULE_D7,
	GUARD_RULE_D8,
	GUARD_RULE_D9,	/* a symbolic link in a git folder */
	GUARD_RULE_D10, /* rr-cache: resolutions git applies to the next conflict */
	GUARD_RULE_D11, /* MERGE_AUTOSTASH, a rebase state folder's autostash: a stash git applies */
	GUARD_RULE_W1,
	GUARD_RULE_W2,
	GUARD_RULE_W3,
	GUARD_RULE_X1,
	GUARD_RULE_X2,
	GUARD_RULE_X3,
	GUARD_RULE_X4,
	GUARD_RULE_HL, /* another name of a protected file (hard link) */
	GUARD_RULE_H1, /* a person's git configuration: ~/.gitconfig, ~/.config/git */
	GUARD_RULE_R1,	/* a file git reads as a ref or a list of refs: what it names */
	GUARD_RULE_D12, /* a name git does not keep in a git folder */
	GUARD_RULE_D13, /* another worktree's own files, in a common folder a linked worktree's
			   bot reaches */
	GUARD_RULE_X5,	/* a file git hands to another command as its options */
	GUARD_RULE_LK,	/* a git lock file no mount of this server made: another git holds it */
	GUARD_RULE_X6,	/* an exec line in a rebase's todo: git runs it on --continue */
	GUARD_RULE_X7,	/* a rebase's step count that is no number: git's prompt runs it */
	GUARD_RULE_X8,	/* a symlink named as a file git's tools write or move there (mergetool) */
	/*
	 * The mount's own settings, no rule of the table: the log names them by
	 * their words ("read-only mount", "read-only path"), as guard_rule_name()
	 */
	GUARD_RULE_RO_MOUNT,
	GUARD_RULE_RO_PATH,
	GUARD_RULE_MAX
};

/* Protection bits of a class. */
#define GUARD_RO 0x01	/* no write, truncate, chmod, chown, rename, unlink, link, exchange */
#define GUARD_TREE 0x02 /* RO and NC for the entry and everything beneath */
#define GUARD_PIN 0x04	/* no rename, rmdir, unlink or exchange (G3, paths to W2/W3 targets) */
#define GUARD_WT 0x08	/* a git folder that is a worktrees/<id> admin folder */
#define GUARD_CHK 0x10	/* content-checked (X2, X4, X5, R1): see guard_content_check */
/*
 * The common folder of a linked worktree, as the bot of that worktree reaches
 * it (guard_opts.linked_worktree), and its refs/, logs/ and logs/refs/: names
 * git keeps per worktree there are the main worktree's or another one's (D13)
 */
#define GUARD_SHARED 0x20

/* The class of one inode: cache it, copy it, compare it; no pointers inside. */
struct guard_cls {
	uint64_t dev;
	uint64_t ino;
	uint8_t kind;  /* enum guard_kind */
	uint8_t role;  /* enum guard_role */
	uint8_t flags; /* GUARD_RO | GUARD_TREE | GUARD_PIN | GUARD_WT | GUARD_CHK | GUARD_SHARED */
	uint8_t rule;  /* enum guard_rule behind flags */
};

/*
 * A refusal: rule "D3", reason "hooks"; static strings, never freed.  CODE is
 * the same rule as a value (enum guard_rule), for callers that act on which
 * rule refused: the text is for people and logs, never compared.
 */
struct guard_verdict {
	const char *rule;
	const char *reason;
	unsigned code;
};

/* An error with a message naming the path. */
struct guard_err {
	int code; /* negative errno */
	char msg[256];
};

/* Write-ish operations, one per FUSE request type (see guard_check()). */
enum guard_op {
	GUARD_OP_WRITE,	  /* open for writing, O_TRUNC, write, setattr size/times, fallocate,
			      copy_file_range destination, setxattr, removexattr */
	GUARD_OP_CHMOD,	  /* setattr mode */
	GUARD_OP_CHOWN,	  /* setattr uid/gid */
	GUARD_OP_CREATE,  /* create, mknod (any type but folder and symlink) */
	GUARD_OP_MKDIR,	  /* mkdir */
	GUARD_OP_SYMLINK, /* symlink */
	GUARD_OP_LINK,	  /* link: a new name for cls */
	GUARD_OP_UNLINK,  /* unlink of cls from parent */
	GUARD_OP_RMDIR,	  /* rmdir of cls from parent */
	GUARD_OP_RENAME,  /* rename of cls (src_parent/src_name) onto parent/name */
	GUARD_OP_EXCHANGE, /* RENAME_EXCHANGE of cls (src_parent/src_name) and victim (parent/name) */
	GUARD_OP_TOUCH,	   /* setattr of times only (git freshens sharedindex.* so) */
};

/*
 * One operation to judge.  Fields a given op does not use are ignored; an
 * unused fd is -1 (never 0: that is a descriptor).
 *   WRITE, CHOWN, TOUCH: cls.
 *   CHMOD: cls, mode (the entry's type and its new permission bits), and fd
 *	(cls's O_PATH fd) for a folder.
 *   CREATE, MKDIR: parent, parent_fd, name, mode (S_IFREG, S_IFDIR, S_IFIFO...).
 *   SYMLINK: parent, parent_fd, name, target, parent_path.
 *   LINK: cls (the existing inode), mode, parent, parent_fd, name.
 *   UNLINK, RMDIR: cls, parent, name.
 *   RENAME: cls, mode, fd (cls's O_PATH fd when it is a folder), src_parent,
 *	src_name, parent, parent_fd, name, and victim (the entry replaced at
 *	name, or NULL).
 *   EXCHANGE: as RENAME, plus victim, victim_mode and victim_fd (when the
 *	victim is a folder).
 *   LINK or RENAME of a symlink (mode S_IFLNK) also: target and parent_path,
 *	as for SYMLINK (X1 judges the target at its new place; NULL refuses).
 *   A .git made by CREATE, MKDIR, SYMLINK, LINK or RENAME under
 *	allow_new_repos also: parent_path (G1 looks for a gitlink naming the
 *	folder in the repositories around it; NULL refuses).
 *
 * Who gathers what, and why.  guard_check() takes every allow and refuse;
 * the caller chooses no rule.  What only the caller can know it puts in the
 * request as facts, and guard_check() turns them into the verdict:
 *   - the classes (cls, parent, src_parent, victim), cached on its inodes,
 *     and gen, the generation they were computed at: guard_check() looks for
 *     host changes first (guard_revalidate, once per decision, nobody else
 *     on the way), and when that moved the generation past gen it answers
 *     -ESTALE: refresh the classes and ask again.  gen 0: decide on these
 *     classes whatever moved (classes computed just now, or a caller that
 *     asked again already);
 *   - ro_mount and ro_path: the mount's settings (a read-only mount, an
 *     entry under a read-only path), kept by the mount, judged first and
 *     with no guard too (g NULL: a mount without the rule table);
 *   - sealed: cls was renamed onto a content-checked name after its check
 *     (its mount's record, across its mounts): never written or linked again,
 *     refused by the rule it was checked by (guard_seal_rule);
 *   - lock_foreign, victim_lock_foreign: cls (victim) is a regular file with
 *     a git lock file's name (guard_lock_name) that no mount of this server
 *     made: which locks a mount made is the mount's record (inode and birth
 *     time).  In a git folder, LK: another git holds it and will rename it by
 *     path onto what it locks;
 *   - default_acl: a CHMOD that is a folder's default ACL (mode: the bits
 *     it gives everything made in the folder later, umask overridden);
 *   - dev, ino, nlink: cls's inode as the filesystem last saw it; more than
 *     one name asks whether it is another name of a protected file (HL).
 *     For WRITE, CHMOD, CHOWN and LINK of such a file, fd may be its O_PATH
 *     descriptor: its birth time tells it from a protected file that is gone
 *     and whose number it was given (without it, the number alone decides).
 * What gitguard can learn through a descriptor the request carries anyway
 * it learns itself: whether a folder opened to others' writes holds .git (a
 * work tree's top, G3) is an fstatat of the CHMOD's fd.
 */
struct guard_req {
	enum guard_op op;
	const struct guard_cls *cls;
	mode_t mode;
	int fd;
	const struct guard_cls *parent;
	int parent_fd;
	const char *name;
	const struct guard_cls *src_parent;
	int src_parent_fd;
	const char *src_name;
	const struct guard_cls *victim;
	mode_t victim_mode;
	int victim_fd;
	const char *target;	 /* SYMLINK (and a symlink's LINK, RENAME): the link's text */
	const char *parent_path; /* the same, and for a .git made: parent's path from the root,
				    "" or "." for the root; NULL (unknown) refuses */
	/* the facts the caller gathers (above) */
	uint64_t gen;
	bool ro_mount, ro_path, sealed, lock_foreign, victim_lock_foreign;
	uint64_t dev, ino;
	nlink_t nlink;
	bool default_acl; /* CHMOD: mode is what a folder's default ACL gives what is made in it */
};

/* A change that succeeded, for guard_notify(). */
struct guard_event {
	enum guard_op op;
	const struct guard_cls *parent; /* folder holding the new or removed name */
	int parent_fd;
	const char *name;
	const struct stat *st;	     /* the new entry (CREATE..LINK, RENAME), else NULL */
	const struct guard_cls *cls; /* WRITE: the inode written (on release) */
	const char *path;	     /* optional: the new entry's path from the root */
};

typedef void (*guard_log_fn)(void *arg, const char *msg);

struct guard_opts {
	/* Host path of the root, free of symlinks: absolute paths in git files
	   are judged against it, and the root is classified from its ancestors. */
	const char *root_path;
	bool allow_new_repos; /* G1/G2 allowed; new repositories are the bot's */
	guard_log_fn log;     /* NULL: no logs */
	void *log_arg;
	/* NULL-terminated host paths guarded as home folders too (tests); the
	   homes getpwent(3) lists and /root always are */
	const char *const *extra_homes;
	/* The view of the repositories to share (guard_view_new, guard_view_process):
	   the guard takes a reference of its own.  NULL: a view of its own */
	struct guard_view *view;
	/*
	 * The root is the common folder of a linked worktree, given to that
	 * worktree's bot so its git can commit: the name of its admin folder in
	 * worktrees/ ("" when none is known).  Then the root holds only what git
	 * writes for every worktree (objects, shared refs, packed-refs...): the
	 * main worktree's own files and the other worktrees' admin folders are
	 * read-only (D13).  NULL: an ordinary root.
	 */
	const char *linked_worktree;
};

/*
 * guard.c: a view's and a guard's life, the generation, rule names.
 *
 * A view holds what gitguard knows of the repositories of a tree (their
 * scans, the records table, worktree tops); a guard holds what is per root
 * (the root, its class, allow_new_repos, the log, the bot's own
 * repositories, H1's records).  Every guard opened on one view decides
 * against the same knowledge: what one root's guard learns (a repository
 * found, a config read again, a record added) holds at every other root's
 * next decision, and they read one generation.  Paths a scan resolves are
 * inside when they are beneath any root of the view.  guard_view_new()
 * gives a view with one reference; guard_view_process() the process's one
 * (fusefs: every mount of a process), with a reference; guard_view_put()
 * drops one.  The view lives as long as a reference or a guard on it.
 */
int guard_view_new(struct guard_view **vp);
int guard_view_process(struct guard_view **vp);
void guard_view_put(struct guard_view *v);
int guard_open(int root_fd, const struct guard_opts *opts, struct guard **gp,
	       struct guard_err *err);
void guard_free(struct guard *g);
void guard_set_allow_new_repos(struct guard *g, bool allow);
int guard_classify_root(struct guard *g, struct guard_cls *out, struct guard_err *err);
/* Classes computed before may be wrong: move the view's generation (every guard on it) */
void guard_bump(struct guard *g);
uint64_t guard_generation(struct guard *g);
/* "D3", "hooks"; "?" for no rule */
const char *guard_rule_name(unsigned rule);
const char *guard_rule_reason(unsigned rule);
void guard_new_repos(struct guard *g,
		     void (*fn)(void *arg, uint64_t dev, uint64_t ino, const char *path),
		     void *arg);

/* scan.c: the mount-time scan of every repository in and above the root */
int guard_scan_tree(struct guard *g, unsigned long budget, struct guard_err *err);
/* Told every few thousand entries of a scan, and at its end: entries seen, repositories known. */
typedef void (*guard_progress_fn)(void *arg, unsigned long entries, unsigned long repos);
int guard_scan_tree_progress(struct guard *g, unsigned long budget, guard_progress_fn fn, void *arg,
			     struct guard_err *err);

/* classify.c */
int guard_classify(struct guard *g, const struct guard_cls *parent, int parent_fd, const char *name,
		   const struct stat *st, int fd, struct guard_cls *out);
bool guard_cls_protected(const struct guard_cls *cls);

/*
 * check.c: the decisions (0, -EROFS and V, -ESTALE: ask again with fresh
 * classes, or another -errno: refuse then).  G NULL: a mount without the
 * rule table; only the mount's settings are judged.
 */
int guard_check(struct guard *g, const struct guard_req *req, struct guard_verdict *v);
int guard_check_inode(struct guard *g, const struct stat *st, struct guard_verdict *v);
/* The rule a sealed file was checked by: its class's content rule, X2 if it has none now */
unsigned guard_seal_rule(const struct guard_cls *cls);
/* NAME is a git lock file's (NAME.lock, sharedindex_XXXXXX); NULL is not */
bool guard_lock_name(const char *name);
/*
 * A refusal's words for people and logs, in BUF: "rule D3 (hooks)" (with
 * what to do for G1 and G2), or the words alone for the mount's settings
 * ("read-only mount").  Returns BUF.
 */
const char *guard_verdict_text(const struct guard_verdict *v, char *buf, size_t sz);
bool guard_notify(struct guard *g, const struct guard_event *ev);
/*
 * A repository the bot made (allow_new_repos), as guard_notify() records
 * one; also for a server taking a mount over, with the list
 * guard_new_repos() gave the last one, before it scans.
 */
int guard_add_bot_repo(struct guard *g, uint64_t dev, uint64_t ino, const char *path);

/* repo.c: see a host change to a watched config file (guard_check calls it too) */
void guard_revalidate(struct guard *g);

/*
 * Content-checked files (flag GUARD_CHK): a git folder's `index` and
 * `sharedindex.*` (X2); rebase-merge/ and rebase-apply/ `strategy`,
 * `strategy_opts` and sequencer/`opts` (X4); `apply-opt` and `gpg_sign_opt`
 * there (X5); `git-rebase-todo` there (X6); `msgnum`, `end`, `next`, `last`
 * there (X7); the refs at a git folder's
 * top, every file under refs/ but a lock, `packed-refs`, and a rebase's
 * `head-name`, `update-refs` and `refs-to-delete` (R1); `MERGE_RR` at a git
 * folder's top (D10); objects/pack/`multi-pack-index` and every `*.midx` in
 * objects/pack/multi-pack-index.d (D7).  guard_check() refuses to make them by mknod,
 * mkdir, symlink or link (names.c says which names they are), and X2, D10 and
 * D7 files and R1 files but those git writes in place (guard_ref_in_place) cannot be
 * made by a create (git renames a lock file onto them); X2, D10 and D7 files
 * (guard_rule_renamed_only) cannot be written in place at all.
 * What guard_check() cannot see is the content: the caller must
 *   - on a rename (or exchange) of a regular file onto such a name, call
 *     guard_content_check() on the source, read through an fd it holds, and
 *     make sure no handle that may write the source stays open across the
 *     check and the rename;
 *   - for the others written in place, check the content each write would
 *     leave (guard_content_check on that buffer, at most guard_content_cap
 *     bytes) before applying it.
 * guard_content_rule() says whether a name in a folder is one, and which.
 * names.c and content.c: 0, or -EROFS with *WHY (guard_hash_size: 20 or 32,
 * 20 when unknown).
 */
#define GUARD_INDEX_MAX (256u << 20) /* an index git writes for ~2M files */
#define GUARD_SEQ_MAX (64u << 10)    /* strategy files and sequencer/opts */
#define GUARD_TODO_MAX (16u << 20)   /* a rebase's todo list: ~250,000 commits */
unsigned guard_content_rule(const struct guard_cls *parent, const char *name);
size_t guard_content_cap(unsigned rule);
int guard_content_check(unsigned rule, const char *name, const char *buf, size_t len, size_t hashsz,
			const char **why);
int guard_content_fd(struct guard *g, int dirfd, unsigned rule, const char *name, int fd,
		     size_t hashsz, const char **why);
size_t guard_hash_size(struct guard *g, int gitdir_fd);
/* rerere.c: D10's MERGE_RR, empty only: 0, -EINVAL for a record git would not write (*WHY
   says how), -EROFS for one it would */
int guard_merge_rr_check(const char *buf, size_t len, size_t hashsz, const char **why);
/* midx.c: D7's objects/pack/multi-pack-index names packs of its folder only (0, or -EINVAL) */
int guard_midx_check(const char *buf, size_t len, const char **why);
/* midx.c: the same for a layer of multi-pack-index.d (git >= 2.47), version 1 or 2 */
int guard_midx_layer_check(const char *buf, size_t len, const char **why);
/* names.c: is NAME in a git folder one git reads as an index (X2: index,
   sharedindex.*, git stash's index.stash.<pid>)? */
bool guard_index_name(const char *name);
/* names.c: is NAME in multi-pack-index.d a layer (NAME.midx, any case)? */
bool guard_midx_layer_name(const char *name);
/* names.c: a rule whose files git only renames onto (X2, D10's MERGE_RR, D7's
   multi-pack-index): never written in place */
bool guard_rule_renamed_only(unsigned rule);
int guard_index_folder(struct guard *g, int gitdir_fd, const char *name, const char *buf,
		       size_t len, size_t hashsz, const char **why);
int guard_index_worktree(struct guard *g, int gitdir_fd, const char *buf, size_t len, size_t hashsz,
			 const char *split, size_t splitlen, const char *shared, size_t sharedlen,
			 bool replacing, const char **why);

/* sha1.c: git's blob object name (SHA-1) of a buffer */
void guard_blob_sha1(const char *buf, size_t len, unsigned char out[20]);
void guard_object_sha1(const char *type, const char *buf, size_t len, unsigned char out[20]);

/* index.c: pure, for fuzzers; 0 or -EINVAL with *why */
int guard_index_check(const char *buf, size_t len, const char **why);
int guard_index_check_hash(const char *buf, size_t len, size_t hashsz, const char **why);
typedef int (*guard_index_entry_fn)(void *arg, const char *path, uint32_t mode,
				    const unsigned char *oid, const char **why);
int guard_index_entries(const char *buf, size_t len, size_t hashsz, guard_index_entry_fn fn,
			void *arg, const char **why);
bool guard_index_path_ok(const char *path, unsigned mode);
/*
 * Split index: 1 with HEX (2*hashsz+1 bytes) the object name of the shared
 * index BUF takes entries from (sharedindex.HEX beside it), 0 if it takes
 * none; guard_index_replaced() then checks each replaced entry (the shared
 * entry's name with the replacement's mode and object) as git's verify_path
 * would and calls FN with it.  SHARED NULL: the shared index cannot be read
 * (refused when there are replacements).
 */
int guard_index_base(const char *buf, size_t len, size_t hashsz, char *hex, const char **why);
/*
 * The entries of BUF that git status and git diff skip: assume-unchanged
 * (CE_VALID) or skip-worktree, FN(ARG, path, which) for each; their count,
 * or -EINVAL.  A change to such a file is hidden from the person's review.
 */
long guard_index_hidden(const char *buf, size_t len, size_t hashsz,
			void (*fn)(void *arg, const char *path, const char *what), void *arg);
/*
 * 1 if BUF has an untracked cache (UNTR), 0 if not, or -EINVAL.  git status
 * (not -uall, not git add -A) lists the untracked files the cache records
 * for a folder whose stat data match rather than read it, so one the cache
 * leaves out is hidden from the person's review (index.c's check_extensions).
 */
int guard_index_untracked(const char *buf, size_t len, size_t hashsz);
/*
 * The stat data an index entry records, which git status and git diff
 * compare with the file's lstat before they ever read it (read-cache.c
 * ie_match_stat): a match is taken for "unchanged".
 */
struct guard_index_stat {
	uint32_t ctime_sec, ctime_nsec, mtime_sec, mtime_nsec;
	uint32_t dev, ino, mode, uid, gid, size;
};
/*
 * FN(ARG, path, mode, object, stat) for each entry of BUF that git compares
 * with the work tree by its stat data: stage 0, a regular file, neither
 * assume-unchanged, skip-worktree nor intent-to-add. 0, or -EINVAL.
 */
int guard_index_files(const char *buf, size_t len, size_t hashsz,
		      int (*fn)(void *arg, const char *path, uint32_t mode,
				const unsigned char *oid, const struct guard_index_stat *st),
		      void *arg);
int guard_index_replaced(const char *buf, size_t len, const char *shared, size_t slen,
			 size_t hashsz, guard_index_entry_fn fn, void *arg, const char **why);
/*
 * guard_index_replaced, and FN also for each entry of SHARED that BUF takes
 * as it is (neither replaced nor deleted): with BUF's own named entries,
 * every entry git sees.  Nothing when BUF is no split index, or when SHARED
 * is NULL and BUF replaces nothing (git, finding no shared index, dies).
 */
int guard_index_from_shared(const char *buf, size_t len, const char *shared, size_t slen,
			    size_t hashsz, guard_index_entry_fn fn, void *arg, const char **why);
/* FN for each stage of each resolve-undo record (REUC): path, mode, object */
int guard_index_reuc(const char *buf, size_t len, size_t hashsz, guard_index_entry_fn fn, void *arg,
		     const char **why);
/* A split index's cache-tree, checked against the entries merged with SHARED's */
int guard_index_split_tree(const char *buf, size_t len, const char *shared, size_t slen,
			   size_t hashsz, const char **why);

/* seq.c: pure, for fuzzers; 0 or -EINVAL with *why */
bool guard_strategy_name_ok(const char *s);
int guard_seq_opts_check(const char *buf, size_t len, const char **why);
int guard_seq_file_check(const char *name, const char *buf, size_t len, const char **why);
/* X5: apply-opt and gpg_sign_opt */
int guard_optfile_check(const char *name, const char *buf, size_t len, const char **why);
/*
 * X6: a rebase's git-rebase-todo without an exec line.  guard_todo_exec:
 * the command of the todo line [P, END) if it is an exec line (as git's
 * sequencer reads one), else NULL; audit lists what the check refuses.
 */
int guard_todo_check(const char *buf, size_t len, const char **why);
const char *guard_todo_exec(const char *p, const char *end);
/* X7: msgnum, end (rebase-merge/), next, last (rebase-apply/): a number */
int guard_count_check(const char *buf, size_t len, const char **why);

/*
 * refs.c, R1: pure, for fuzzers.  guard_ref_check: 0 if BUF may be the file
 * NAME git reads as a ref (a loose ref, HEAD, ORIG_HEAD...) or a list of refs
 * (packed-refs, update-refs, refs-to-delete, head-name), else -EINVAL with
 * *WHY.  guard_refname_ok: NAME (LEN bytes) is a ref under refs/ git's
 * check_refname_format accepts.
 */
int guard_ref_check(const char *name, const char *buf, size_t len, const char **why);
bool guard_refname_ok(const char *name, size_t len);
/* A ref git writes in place (FETCH_HEAD, MERGE_HEAD, AUTO_MERGE, head-name, refs-to-delete): made there
   and emptied first; every other is made only by a rename onto it */
bool guard_ref_in_place(const char *name);

/* audit.c: agentfs audit; kind is hook, exec, strategy, index or shape.  The number of
   findings, or the first error's -errno with ERR (findings are still reported) */
typedef void (*guard_audit_fn)(void *arg, const char *path, const char *kind, const char *why);
long guard_audit(int rootfd, const char *path, guard_audit_fn fn, void *arg, struct guard_err *err);

/* parse.c: pure functions on a buffer, for fuzzers; malformed input is -EINVAL */
enum guard_cfg_key {
	GUARD_CFG_INCLUDE,	/* include.path, includeIf.<cond>.path */
	GUARD_CFG_HOOKSPATH,	/* core.hooksPath */
	GUARD_CFG_TEMPLATEDIR,	/* init.templateDir: copied into the next git init or clone */
	GUARD_CFG_WORKTREE,	/* core.worktree */
	GUARD_CFG_STRATEGY,	/* options.strategy (with .seq only) */
	GUARD_CFG_STRATEGY_OPT, /* options.strategy-option (with .seq only) */
};

struct guard_cfg {
	/* called for each value of a key above; a non-zero return stops the scan */
	int (*fn)(void *arg, enum guard_cfg_key key, const char *value);
	void *arg;
	bool seq; /* a sequencer/opts file: report the options.strategy* keys too */
	/* if set, called first for every key ("section.sub.name", the name lowercased) */
	int (*any)(void *arg, const char *var, const char *value);
	void *any_arg;
	/* filled by guard_config_scan */
	long format;	      /* core.repositoryformatversion, -1 if unset */
	bool bad_format;      /* repositoryformatversion not an integer */
	bool worktree_config; /* extensions.worktreeConfig is true */
	bool unknown_ext;     /* an extension git 2.39 does not know */
	bool sha256;	      /* extensions.objectFormat is sha256 */
	unsigned line;	      /* line of the first syntax error */
};

int guard_config_scan(const char *buf, size_t len, struct guard_cfg *cfg);
int guard_parse_bool(const char *s); /* 1, 0, or -EINVAL */
int guard_parse_gitfile(const char *buf, size_t len, char *out, size_t outsz);
int guard_parse_commondir(const char *buf, size_t len, char *out, size_t outsz);

/*
 * layout.c: where a tree root's git folders are, for a caller that mounts
 * them beside the root (agentfsd). Through descriptors, no link followed,
 * capped; the paths as written (relative to the folder, or absolute), for
 * the caller to join and normalise. 0, or -errno: -ENOENT (none), -EINVAL
 * (not a regular file or not git's format), -EFBIG, -ENAMETOOLONG.
 */
/* What the `.git` of the folder dirfd points to: a symlink's target or a gitdir: file's path. */
int guard_layout_gitdir(int dirfd, char *out, size_t outsz);
/* The common folder the git folder gitfd names in its commondir file. */
int guard_layout_commondir(int gitfd, char *out, size_t outsz);

#endif
