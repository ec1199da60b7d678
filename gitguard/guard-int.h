/* SPDX-License-Identifier: MIT */
/*
 * Internals of gitguard shared by its files; not installed, not for fusefs.
 * Grouped by the file that owns them (README has the whole map); the helpers
 * fusefs and src use too are in ggutil.h (path.c, fdio.c, grow.c).
 */
#ifndef GITGUARD_INT_H
#define GITGUARD_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "gitguard/gitguard.h"

#define GUARD_GITFILE_MAX 4096	   /* .git files, commondir, gitdir */
#define GUARD_CONFIG_MAX (1 << 20) /* config and include targets */
#define GUARD_INCLUDE_DEPTH 10	   /* git's MAX_INCLUDE_DEPTH */
#define GUARD_WALK_BUDGET 100000   /* entries a folder rename may look at */
#define GUARD_WALK_DEPTH 4096	   /* folder levels it may go down */
#define GUARD_WALK_FDS 64	   /* folders it holds open at once */
#define GUARD_LINK_MAX 40	   /* symlinks followed in one resolution */

/* Extra record flags, beside GUARD_RO/TREE/PIN */
#define REC_GITDIR 0x10 /* a folder a .git file or commondir names: a git folder */
#define REC_BOT 0x20	/* a .git file or symlink the bot made (allow_new_repos) */
/*
 * With GUARD_RO: only while the inode has other names (HL for a protected
 * file that had one name when it was read; its own name is protected by
 * the rules). A number reused by a new file of the bot's, with one name,
 * is then no one's business. Set on a merged record only if every record
 * of the inode has it.
 */
#define REC_LINKS 0x40

/*
 * One protected inode, or a missing name (NC) in a folder when name != NULL.
 * BORN, when known (not 0), is the file's birth time in nanoseconds: a file
 * born at another time that has its number now is another file, which the
 * record does not cover (the recorded one is gone, its number given out
 * again before the repository was read again).
 */
struct guard_rec {
	uint64_t dev;
	uint64_t ino;
	int64_t born;
	char *name;
	uint8_t flags;
	uint8_t rule;
};

struct guard_recs {
	struct guard_rec *v;
	size_t n;
	size_t alloc;
};

#define GUARD_TOPS_MAX 1024 /* worktree tops learnt from .git files and symlinks */
#define GUARD_SCAN_TOPS 64  /* worktree tops one repository scan applies hooksPath at */

/*
 * A worktree top learnt from a pointer: the folder holding a .git file or
 * symlink that names the git folder (dev, ino).  A relative core.hooksPath
 * is taken from there, where git runs hooks; fd keeps the folder at hand.
 */
struct guard_top {
	uint64_t dev;
	uint64_t ino;
	uint64_t tdev;
	uint64_t tino;
	int fd; /* O_PATH of the top */
};

#define GUARD_REVAL_MS 50    /* a host change to a config file is seen by decisions this late */
#define GUARD_WATCH_FILES 1024 /* config files, includes, hooks folders watched per repository */

/* A config file a repository scan read, or found missing, with its stamp */
struct guard_wfile {
	int dirfd; /* O_PATH of its folder, the git folder's gfd, or AT_FDCWD (name is a path) */
	char *name;
	bool missing;
	bool racy; /* stamped within a timestamp tick of its last change: look again */
	struct stat st;
};

/*
 * What guard_revalidate() looks at for one scanned repository: the files its
 * scan read, and the git folder to rescan when one of them changed.  Owned by
 * its struct guard_repo, freed with it.
 */
struct guard_watch {
	int gfd; /* O_PATH of the git folder */
	size_t n, alloc;
	struct guard_wfile *f; /* up to GUARD_WATCH_FILES */
};

/* What gitguard learnt from one git folder's config and layout. */
struct guard_repo {
	uint64_t dev;
	uint64_t ino;
	bool bot;	    /* guard_repo_get's answer only: made by the asking guard's bot */
	uint64_t roots_gen; /* the view's roots_gen when the scan began */
	uint8_t rule;	    /* GUARD_RULE_X3 when the whole folder is RO-tree */
	const char *why;    /* why X3 */
	bool stamped;	    /* config is D/config and stamp below is valid */
	struct stat stamp;
	struct guard_recs recs;	   /* W2/W3 targets, pins, pointed folders, hard-link guards */
	struct guard_watch *watch; /* NULL for the bot's repositories */
	char **hooks_rel;	   /* every relative core.hooksPath its configs give (X2) */
	size_t nhooks_rel;
	char **hooks_abs; /* and every absolute one (X2 of a work tree it leads into) */
	size_t nhooks_abs;
};

/* A home folder of the host (home.c) */
struct guard_home {
	uint64_t dev;
	uint64_t ino;
};

#define GUARD_VIEW_ROOTS 4096 /* roots a view remembers; past it, ones no guard holds make room */

/* A root that joined a view: what the view's path resolution takes as inside */
struct guard_root {
	uint64_t dev;
	uint64_t ino;
	uid_t uid;     /* its owner: whose global git config a repository scan reads */
	unsigned live; /* guards on it now; 0: it left, and still counts as inside */
};

/*
 * One view of the repositories of a tree, shared by every guard (one per
 * writable root) that joins it: a repository found, a config re-read or a
 * record added through one root is seen by every other root's next
 * decision, and a change that makes classes stale moves the one generation
 * they all read.
 *
 * Life: guard_view_new() makes it with one reference (the caller's);
 * guard_open() with opts->view takes one more for its guard (without one it
 * makes a private view); guard_free() and guard_view_put() each drop one;
 * the last drop frees it.  guard_view_process() hands out one process-wide
 * view, for fusefs: every mount of a process shares it.
 *
 * What is in it is root-independent: the repositories (scan results keyed
 * by the git folder's (dev, ino)), the records table, worktree tops learnt
 * from pointers, and misc records.  A scan resolves paths against the union
 * of the roots that joined (resolve.c: "inside" is beneath any of them), so
 * what one root's scan recorded holds for every root; records about inodes
 * beyond a root never match inside it (stricter is fine).  When a new root
 * joins, roots_gen moves: a repository scanned before is scanned again
 * (guard_repo_get, guard_view_refresh) so its records cover the new root
 * too.  A root that leaves stays one of the view's roots for resolution
 * (up to GUARD_VIEW_ROOTS of them), so its records stay, rescans included;
 * the repositories, and the descriptors their watches and the tops hold,
 * stay until the view is freed (no record says which roots still need one).
 *
 * Locking:
 *   lock (rwlock) protects repos/nrepos, misc, tops/ntops, tab/ntab,
 *   roots/nroots and botmade.  Readers (classification, decisions) take it shared for
 *   table and repository lookups only, never across a syscall but the
 *   fstatat()s of guard_revalidate's watched files; a repository scan reads
 *   files with no lock held and takes it exclusive only to publish.
 *   refs, gen, ntab_hint, reval_ms, roots_gen and nbotmade are atomics read
 *   without it.
 * Lock order: fusefs's decision holds (decide_all, decide_stripe) are
 * taken before the gitguard calls of a decision, so gitguard's locks come
 * after them; gitguard takes none of fusefs's locks, and fusefs holds
 * neither ns_lock nor fs->lock across a gitguard call.  A view's lock and
 * a guard's own lock are never held together (each is taken, used and
 * released; code that needs both takes them one after the other), so
 * between them there is no order to keep.  Nothing is called back with
 * either held but the log function (guard_logf) and guard_new_repos's FN
 * (g->lock shared), which must not call gitguard.
 */
struct guard_view {
	_Atomic unsigned refs;
	_Atomic uint64_t gen;
	_Atomic size_t ntab_hint; /* ntab, for a lock-free "nothing recorded" test */
	_Atomic int64_t reval_ms; /* when guard_revalidate() last looked (CLOCK_MONOTONIC_COARSE) */
	_Atomic uint64_t roots_gen; /* moves when a root not seen before joins */

	pthread_rwlock_t lock;
	struct guard_repo **repos; /* never the bot's own (those are per guard) */
	size_t nrepos;
	size_t arepos;
	struct guard_recs misc; /* records owned by no repository (.git file targets) */
	struct guard_top *tops; /* worktree tops learnt from pointers */
	size_t ntops;
	size_t atops;
	struct guard_rec *tab; /* every record, sorted by (dev, ino); names borrowed */
	size_t ntab;
	struct guard_root *roots; /* every root that joined, once each */
	size_t nroots;
	size_t aroots;
	struct guard_recs botmade; /* every .git and bare-shaped folder a bot made (gitlink.c) */
	_Atomic size_t nbotmade;   /* botmade.n, for a lock-free "none" */
	struct home_reuse *homes;  /* the last home scan, for the next guard_open (home.c) */
	pthread_mutex_t homes_scan; /* held through a home scan, for others to wait on (home.c) */
	int fan_fd; /* fanotify of the roots' filesystems (-1: none); read in guard_revalidate */
	int fan_mnt; /* a folder of the first root's filesystem, for open_by_handle_at (-1) */
};

/* A repository the bot made under allow_new_repos: no rules, for its own root only */
struct guard_bot {
	uint64_t dev;
	uint64_t ino;
	int64_t born; /* its birth time (guard_born_at), 0: not known */
	char *path;   /* where it was made, if fusefs said */
};

/*
 * A guard: what is per root, over the view it shares.  guard_open() makes
 * it, its caller (a fusefs mount) holds it, guard_free() frees it and drops
 * its view reference.
 *
 * Locking:
 *   view: set by guard_open, pinned by the guard's reference; its contents
 *   under view->lock (above).
 *   lock (rwlock) protects what is this root's own: bots, botrecs,
 *   homerecs, the own table (own/nown) built from them, root_cls with
 *   root_known and root_gen, and hwatch/nhwatch (guard_homes_revalidate
 *   fstatat()s them under the shared lock).  nown_hint, has_bots and
 *   home_reval_ms are atomics read without the lock.
 *   root_fd, root_dev, root_ino, root_path and log are set by guard_open and
 *   read-only afterwards, as are homes and home_dirs (H1's records are
 *   resolved against the roots, so they are per guard); allow_new is an
 *   atomic (a bot's configure).
 *   Lock order: see struct guard_view.
 */
struct guard {
	struct guard_view *view;
	int root_fd;
	uint64_t root_dev;
	uint64_t root_ino;
	char *root_path;       /* normalised, no trailing slash; NULL if unknown */
	atomic_bool allow_new; /* guard_set_allow_new_repos() may change it at any time */
	char *linked_wt;       /* guard_opts.linked_worktree (D13), or NULL */
	guard_log_fn log;
	void *log_arg;

	_Atomic size_t nown_hint; /* nown, for a lock-free "nothing recorded" test */
	atomic_bool has_bots;	  /* nbots > 0, for the same */

	pthread_rwlock_t lock;
	struct guard_bot *bots; /* repositories this root's bot made */
	size_t nbots;
	size_t abots;
	struct guard_recs botrecs; /* .git files and symlinks the bot made (REC_BOT) */
	struct guard_rec *own;	   /* botrecs and homerecs, sorted by (dev, ino); names borrowed */
	size_t nown;
	bool root_known; /* root_cls is set, for generation root_gen */
	uint64_t root_gen;
	struct guard_cls root_cls;
	struct guard_home *homes; /* sorted; set by guard_open, read-only afterwards */
	size_t nhomes;
	char **home_dirs; /* their paths, for rescans; read-only after guard_open */
	size_t nhome_dirs;
	size_t ahome_dirs;
	struct guard_recs homerecs; /* H1 records, replaced whole by a rescan */
	struct guard_wfile
		*hwatch; /* files the home scan read or missed: dirfd -1, name absolute */
	size_t nhwatch;
	_Atomic int64_t home_reval_ms; /* the view's reval_ms guard_homes_revalidate() last saw */
	_Atomic int64_t root_reval_ms; /* the same for guard_root_revalidate() */
	atomic_int root_repo;	       /* the root held a .git or had a git folder's shape: 1, 0, -1 */
};

/* guard.c */
void guard_logf(struct guard *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ERR (if not NULL) gets CODE and the message; returns CODE */
int guard_err_set(struct guard_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool recs_has(const struct guard_recs *r, uint64_t dev, uint64_t ino, uint8_t flags);
int64_t guard_born_at(int dirfd, const char *name, uint64_t dev, uint64_t ino);
int recs_add_file(struct guard_recs *r, int dirfd, const char *name, const struct stat *st,
		  uint8_t flags, uint8_t rule);
int recs_add(struct guard_recs *r, uint64_t dev, uint64_t ino, const char *name, uint8_t flags,
	     uint8_t rule);
void recs_clear(struct guard_recs *r);
/* the view's table (its lock held exclusive), and the guard's own (g->lock exclusive) */
int guard_tab_rebuild(struct guard *g);
int guard_own_rebuild(struct guard *g);
/* Flags recorded for an inode, or a missing NAME in the folder (dev, ino), in the view
   and the guard's own table; takes the locks itself (none may be held) */
uint8_t guard_view_inode(struct guard_view *v, uint64_t dev, uint64_t ino, uint8_t *rule);
uint8_t guard_rec_inode(struct guard *g, uint64_t dev, uint64_t ino, uint8_t *rule);
uint8_t guard_rec_file(struct guard *g, const struct stat *st, int fd, int dirfd, const char *name,
		       uint8_t *rule);
uint8_t guard_rec_missing(struct guard *g, uint64_t dev, uint64_t ino, const char *name,
			  uint8_t *rule);
/* Is anything recorded at all?  Lock-free */
bool guard_rec_any(struct guard *g);
/* Is (dev, ino) the root of a guard of the view?  Takes the view's lock */
bool guard_is_root(struct guard *g, uint64_t dev, uint64_t ino);
size_t guard_root_count(struct guard *g);
/* The owners of the view's roots, at most MAX of them, no duplicates; the count */
size_t guard_root_owners(struct guard *g, uid_t *out, size_t max);
/* Is (dev, ino) a repository this guard's bot made?  Takes g->lock */
bool guard_bot_repo(struct guard *g, uint64_t dev, uint64_t ino, int fd);
bool name_is(const char *name, const char *want);
bool name_is_dotgit(const char *name);
bool name_is_bare(const char *name);
bool guard_head_target_ok(const char *target);
void guard_repo_free(struct guard_repo *r);
int guard_devino_cmp(uint64_t adev, uint64_t aino, uint64_t bdev, uint64_t bino);

/* resolve.c */
enum { RES_INSIDE, RES_MISSING, RES_OUTSIDE, RES_LINK, RES_ERROR };

struct resolved {
	int where;
	int fd;		/* INSIDE, LINK: O_PATH fd of the last component */
	struct stat st; /* INSIDE, LINK */
	int dirfd;	/* INSIDE, MISSING, LINK: the folder holding it */
	char name[NAME_MAX + 1];
	int err; /* ERROR: negative errno */
};

/* Called for each folder passed through and each symlink followed inside the root */
typedef int (*resolve_pin_fn)(void *arg, const struct stat *st, bool is_link);

int guard_resolve(struct guard *g, int startfd, const char *path, bool follow, resolve_pin_fn pin,
		  void *arg, struct resolved *r);

/*
 * The folders this thread's walks asked "is it a root?" about, while a home
 * scan notes them (home.c): a root that is none of them would not have
 * changed the scan. lost: one could not be noted.
 */
struct gg_trail {
	struct guard_home *v;
	size_t n;
	size_t alloc;
	bool lost;
};
void guard_resolve_trail(struct gg_trail *t);
void resolved_close(struct resolved *r);

/* repo.c: the table of repositories */
int guard_repo_get(struct guard *g, int dfd, const struct stat *dst, struct guard_repo *out);
bool guard_repo_rescan(struct guard *g, uint64_t dev, uint64_t ino, int dfd);
int guard_note_pointer(struct guard *g, int startfd, const char *path);
bool guard_repo_known(struct guard *g, uint64_t dev, uint64_t ino, int fd, bool *bot);
/* FN for each core.hooksPath the scan of (dev, ino) read: relative ones, then absolute ones */
void guard_repo_hooks(struct guard *g, uint64_t dev, uint64_t ino,
		      void (*fn)(void *arg, const char *rel), void *arg);
void guard_view_refresh(struct guard *g);

/* reposcan.c: the one scan of a git folder; NULL on ENOMEM */
struct guard_repo *guard_repo_scan(struct guard *g, int dfd, const struct stat *dst);

/* cfgscan.c: config files read as git reads them, for reposcan.c and home.c */
/* A list of strings a config scan collects */
struct strs {
	char **v;
	size_t n;
	size_t alloc;
};

/* One scan in progress: the repository R it fills, and where it reads from */
struct cfgscan {
	struct guard *g;
	struct guard_repo *r;
	int dfd;	     /* the git folder */
	int basefd;	     /* folder of the config file being read */
	uid_t owner;	     /* owner of that file, for "~/" */
	unsigned depth;	     /* include depth */
	uint8_t pin_rule;    /* rule for pins of the current resolution */
	struct strs rel;     /* relative core.hooksPath values: taken at every worktree top */
	struct strs abs;     /* absolute core.hooksPath values, as expanded (X2) */
	struct strs wt;	     /* core.worktree values */
	bool unread;	     /* an include was not read (outside the root): libgit2 is not asked */
	const char *by_path; /* the next config read is the person's, outside: watch this path */
	unsigned hl_used;    /* entries of protected trees walked (scan_hl_tree), all of them */
};

int strs_add(struct strs *l, const char *str);
void strs_free(struct strs *l);
void scan_x3(struct cfgscan *s, const char *why);
int scan_pin(void *arg, const struct stat *st, bool is_link);
int scan_watch(struct cfgscan *s, int dirfd, const char *name, const struct stat *st);
int scan_config(struct cfgscan *s, int dirfd, const char *name);
struct cfgscan;
int scan_hl_tree(struct guard_repo *r, struct cfgscan *s, int dfd, const char *name, uint8_t rule,
		 unsigned *budget, unsigned depth);
int scan_hook_links(struct cfgscan *s, int fromfd, const char *sub, uint8_t linked_rule);
int scan_hookspath(struct cfgscan *s, const char *value);
int scan_protect(struct cfgscan *s, int fromfd, const char *path, uint8_t rule,
		 const char *unresolved);
int scan_global(struct cfgscan *s);
enum { WF_SAME, WF_RACY, WF_CHANGED };
int guard_watch_state(const struct guard_watch *w);
bool guard_stat_same(const struct stat *a, const struct stat *b);
bool guard_stamp_racy(const struct stat *st);
int guard_wfile_state(const struct guard_wfile *f, const struct stat *st);
int guard_scan_config_file(struct guard *g, struct guard_repo *r, int dirfd, const char *name,
			   uid_t owner);

/* home.c: H1, a person's own git configuration */
#define GUARD_HOMES_MAX 4096  /* home folders looked at; more are logged */
#define GUARD_HOME_WATCH 1024 /* files of the persons' git configuration watched */
int guard_homes_load(struct guard *g, const char *const *extra);
void guard_homes_revalidate(struct guard *g);
void guard_root_revalidate(struct guard *g);
int guard_note_top(struct guard *g, int fd);
bool guard_plain_now_gitdir(struct guard *g, const struct guard_cls *parent, int parent_fd,
			    const char *name, struct guard_cls *as);
void guard_homes_free(struct guard *g);
void guard_homes_forget(struct guard_view *v);
unsigned long guard_homes_taken(struct guard_view *v);
bool guard_is_home(struct guard *g, uint64_t dev, uint64_t ino);
bool guard_home_stage(struct guard *g, const struct guard_cls *parent, const char *name,
		      mode_t mode, struct guard_cls *out);

/* Could NAME in PARENT be one of H1's?  The inline test that spares most names the call */
static inline bool guard_home_maybe(const struct guard_cls *parent, const char *name)
{
	return parent->kind == GUARD_PLAIN && (name[0] == '.' || parent->role == GUARD_R_HOMECFG);
}

/* lg2.c: libgit2's answers for a git folder, a cross-check of repo.c's */
struct guard_lg2 {
	char *workdir; /* NULL for a bare repository */
	char *commondir;
	char *hooks[8]; /* core.hooksPath values */
	size_t nhooks;
};

int guard_lg2_view(int dfd, struct guard_lg2 *v);
void guard_lg2_free(struct guard_lg2 *v);

/* check.c: the decisions (guard_add_bot_repo: gitguard.h) */
/* -EROFS, with V (if not NULL) naming RULE and its usual reason, or REASON */
int guard_refuse(struct guard_verdict *v, unsigned rule);
int guard_refuse_why(struct guard_verdict *v, unsigned rule, const char *reason);

static inline bool guard_in_gitdir(const struct guard_cls *c)
{
	return c->kind == GUARD_GITDIR || c->kind == GUARD_INGIT;
}

/* x1.c: X1, a symlink in PARENT_FD (PARENT_PATH from the root) whose TARGET,
 * resolved as the kernel will, enters a git folder (0, or -EROFS and V) */
int guard_check_x1(struct guard *g, const char *parent_path, int parent_fd,
		   const struct guard_cls *pc, const char *target,
		   struct guard_verdict *v);

/*
 * walk.c: nothing protected beneath the folder DFD of class DCLS (0, or
 * -EROFS and V). MOVING: the folder leaves where it is, and whatever is
 * found is refused as G3; else it enters a git folder, and an entry is
 * refused by its own rule there. *BOTREPO (if not NULL) is set when a
 * repository of the bot's is beneath.
 */
int guard_walk(struct guard *g, int dfd, const struct guard_cls *dcls, unsigned *budget, bool links,
	       bool moving, bool *botrepo, struct guard_verdict *v);

/* gitlink.c: gitlinks to a bot's repository (X2, and G1 under allow_new_repos) */
void guard_botmade_add(struct guard *g, uint64_t dev, uint64_t ino);
bool guard_botmade(struct guard *g, uint64_t dev, uint64_t ino);
int guard_gitlink_check(struct guard *g, int topfd, const char *buf, size_t len, const char *split,
			size_t splitlen, const char *shared, size_t sharedlen, size_t hashsz,
			const char **why);
int guard_gitlink_claimed(struct guard *g, int parent_fd, const char *parent_path,
			  struct guard_verdict *v);
int guard_botrepo_moved_in(struct guard *g, int parent_fd, struct guard_verdict *v);
/* check.c: X8's names, where git mergetool and git apply --reject write or move a file */
bool guard_tool_name(const char *name);
/* The git folder of the work tree top TOPFD: its .git folder, or where its .git file leads
   inside the view's roots; an O_PATH fd, or -1 */
int guard_top_gitdir(struct guard *g, int topfd);

/* names.c: D12 (may NAME be made there) and D13 (a linked worktree's view of its common folder) */
bool guard_git_name_ok(const struct guard_cls *parent, const char *name, mode_t mode);
bool guard_shared_stage(struct guard *g, const struct guard_cls *parent, const char *name,
			mode_t mode, struct guard_cls *out);

/* classify.c */
bool guard_shape(int fd, int *has);
int guard_note_dotgit(struct guard *g, int parent_fd, const char *name, const struct stat *st);
int guard_name_stage(struct guard *g, const struct guard_cls *parent, const char *name, mode_t mode,
		     struct guard_cls *out);

#endif
