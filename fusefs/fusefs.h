/* SPDX-License-Identifier: MIT */
/*
 * fusefs: a libfuse3 low-level passthrough that serves each mount with a
 * reader thread of its own and a bounded pool of workers shared by all
 * mounts for its slow requests, never follows a symlink and never re-walks
 * a path string through the source tree.
 *
 * Life of a mount: fs_new() once per process, fs_mount() per root,
 * fs_unmount() to detach it (or the kernel unmounts it and the lost callback
 * fires), fs_mount_free() once fs_unmount() returned or the lost callback
 * fired.
 *
 * Errors: a function that returns int returns 0 (or a count, or an fd) on
 * success and a negative errno on failure; where it takes a struct
 * fs_error, that holds the same errno, positive (as strerror() takes it),
 * and a message naming the path. gitguard's errors (negative errno in
 * guard_err.code) become fs_error in one place, mount.c's guard_error().
 * Opening without following links is gitguard's gg_open_nofollow()
 * (gitguard/ggutil.h), open(2)-like, used by all three parts.
 */
#ifndef AGENTFS_FUSEFS_H
#define AGENTFS_FUSEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fs;
struct fs_mount;
/*
 * A share group (share.c): the mounts given one hold a quarter of the
 * server's open handles, lock waiters and mounts together, not a quarter
 * each. Refcounted: each mount given it holds it.
 */
struct fs_group;
#define FS_GROUPS 2 /* a mount's groups at most */
enum fs_share { FS_SHARE_HANDLES, FS_SHARE_WAITERS, FS_SHARE_MOUNTS, FS_SHARE_N };

/* An error a caller can print: errno plus a message that names the path. */
struct fs_error {
	int code; /* positive errno */
	char msg[512];
};

#define FS_POLL_US_DEFAULT 50

enum fs_log_level { FS_LOG_ERR, FS_LOG_WARN, FS_LOG_INFO, FS_LOG_DEBUG };

/* What happened in a mount, for fs_params.event. */
enum fs_event_kind {
	FS_EV_REFUSED,	/* a write-ish operation was refused (EROFS) */
	FS_EV_CREATED,	/* a name was made: file, folder, node, symlink, hard link */
	FS_EV_MODIFIED, /* content may change: a file opened to write, or truncated */
	FS_EV_DELETED,	/* a name was removed */
	FS_EV_RENAMED,	/* path became path2 */
};

/* One event; every string lives only for the call. */
struct fs_event {
	enum fs_event_kind kind;
	const char *path;  /* from the mount's root, "/a/b" */
	const char *path2; /* FS_EV_RENAMED: the new name */
	bool dir;	   /* path is a folder */
	bool replaced;	   /* FS_EV_RENAMED: something had the new name, and the rename replaced it */
	/* FS_EV_REFUSED only: */
	const char *op;	    /* "write", "create", "rename", ... */
	const char *rule;   /* gitguard's ("G1", ...), "read-only mount" or "read-only path" */
	const char *reason; /* why, in words; may hold a hint */
	pid_t pid;	    /* the calling process, 0 if unknown */
	char comm[16];	    /* its command name (/proc/PID/comm), "" if it is gone */
};

struct fs_params {
	unsigned workers;  /* threads serving every mount; 0 = default (4) */
	unsigned fd_cache; /* O_PATH fds kept open; 0 = half of RLIMIT_NOFILE */
	double timeout;	   /* entry/attr timeout in seconds; < 0 = default (2) */
	int poll_us;	   /* a mount's reader awaits its next request awake this long, in
			    * microseconds; 0 = default (FS_POLL_US_DEFAULT), < 0 = never */
	/* Called from any thread, must be thread-safe; NULL logs to stderr. */
	void (*log)(void *arg, enum fs_log_level level, const char *msg);
	void *log_arg;
	/*
	 * Called from a worker when a mount ends by itself (unmounted from
	 * outside, connection aborted). The owner then calls fs_mount_free()
	 * from its own thread. Not called for fs_unmount().
	 */
	void (*lost)(void *arg, struct fs_mount *m);
	void *lost_arg;
	/*
	 * Called from a worker for every refusal and every change made through
	 * a mount (NULL: none are reported); must be thread-safe and quick.
	 * Refusals also reach .log, at most one line per path every 10 s.
	 */
	void (*event)(void *arg, struct fs_mount *m, const struct fs_event *ev);
	void *event_arg;
	/*
	 * Where descriptors go that must outlive the process, so another
	 * server can take its mounts over (fs_adopt): each mount's /dev/fuse
	 * descriptors, table and source, and files holding locks. keep()
	 * holds a duplicate of fd under name, 0 or -errno; unkeep() lets go
	 * of it. fd is lent (how 0): it stays open at that number until
	 * unkeep(name) has returned, as the store may duplicate it again
	 * (for a keeper that replaces one that ended); FS_KEEP_GIVE: fd is
	 * the store's from now, whatever keep() returns; FS_KEEP_BACK: fd
	 * was handed over under name (fs_handover_add) and is the mount's
	 * for good now: the store has it already, lent from here on;
	 * FS_KEEP_REPLACE: something may be kept under name already, which fd
	 * replaces, in one step where the store can (the keeper; systemd's
	 * store keeps several under one name, so it is let go of first). Called
	 * from any thread, also with the server's lock held: quick, never
	 * waiting long. NULL: nothing outlives the process.
	 */
	int (*keep)(void *arg, const char *name, int fd, int how);
#define FS_KEEP_GIVE 1
#define FS_KEEP_BACK 2
#define FS_KEEP_REPLACE 4
	void (*unkeep)(void *arg, const char *name);
	void *keep_arg;
};

struct fs_mount_params {
	const char *source;	     /* folder to serve; no component may be a symlink */
	const char *mountpoint;	     /* an empty folder that is not a mount point */
	bool readonly;		     /* refuse every write-ish operation */
	const char *const *ro_paths; /* subtrees (relative to source) made read-only */
	size_t n_ro_paths;
	bool allow_new_repos; /* reserved for gitguard: new .git folders allowed */
	/*
	 * The source is the common folder of a linked worktree, given to that
	 * worktree's bot: the name of its admin folder in worktrees/ ("" when
	 * none is known). gitguard then keeps the main worktree's own files
	 * and the other worktrees' admin folders read-only (rule D13). NULL:
	 * an ordinary source.
	 */
	const char *linked_worktree;
	bool empty_mountpoint; /* refuse a non-empty mount point (not the source) */
	/*
	 * Comma-separated -o options: ro, suid/nosuid, dev/nodev, exec/noexec,
	 * noatime, relatime, nodiratime, nonempty, debug, fsname=NAME (default:
	 * the source's absolute path), timeout=SECONDS, poll=USEC,
	 * nopassthrough, noguard; allow_other and default_permissions (always
	 * on) and auto_unmount (the caller's to do) are accepted.
	 */
	const char *options;
	/* Called from a worker once the kernel's INIT has been answered. */
	void (*ready)(void *arg, struct fs_mount *m);
	void *ready_arg;
	void *tag; /* the caller's, for fs_mount_tag() (events name their mount by it) */
	struct fs_group *groups[FS_GROUPS]; /* its share groups, or NULL */
	/* Called while the source is scanned, every few thousand entries, and at its end. */
	void (*progress)(void *arg, unsigned long entries, unsigned long repos);
	void *progress_arg;
};

/* fs.c */
struct fs *fs_new(const struct fs_params *p, struct fs_error *err);
void fs_free(struct fs *fs);
int fs_unmount(struct fs_mount *m);
void fs_mount_free(struct fs_mount *m);
void fs_mount_set_readonly(struct fs_mount *m, bool readonly);
void fs_mount_set_allow_new_repos(struct fs_mount *m, bool allow);
void fs_mount_new_repos(struct fs_mount *m, void (*fn)(void *arg, const char *path), void *arg);
const char *fs_mount_source(const struct fs_mount *m);
void *fs_mount_tag(const struct fs_mount *m);
const char *fs_mount_point(const struct fs_mount *m);
uint64_t fs_mount_id(const struct fs_mount *m);
/* Is the mount on top at path m's own mount (its id alone is reused once it is gone)? */
bool fs_mount_is_at(const struct fs_mount *m, const char *path);
/*
 * What names a mount for good: the id mountinfo shows (reused once the mount
 * is gone), its superblock's device, and its 64-bit id (Linux 6.8+, never
 * reused; 0 where unknown). fs_mount_ident_at: is fd (O_PATH) its root?
 */
struct fs_mount_ident {
	uint64_t id, uid, dev;
};
void fs_mount_ident(const struct fs_mount *m, struct fs_mount_ident *out);
bool fs_mount_ident_at(const struct fs_mount_ident *ident, int fd);
unsigned fs_mount_count(struct fs *fs);

/* share.c: share groups, named as the log says them ("bot lead's family") */
struct fs_group *fs_group_new(const char *name);
struct fs_group *fs_group_hold(struct fs_group *g);
void fs_group_put(struct fs_group *g);
unsigned fs_group_used(const struct fs_group *g, enum fs_share what);

/*
 * keep.c: a restart. Every mount stops being served with no request half
 * done, its open files are kept (fs_params.keep), and the threads stop;
 * nothing is unmounted. The process then exits without fs_free(). The
 * number of mounts handed over, those that could not be were unmounted.
 */
int fs_handover(struct fs *fs);

/*
 * restore.c: taking over the mounts a previous server kept. Every
 * descriptor it kept is given to fs_handover_add() (false: not a mount's,
 * not taken); fs_adopt() then serves the one at p->mountpoint, the same
 * kernel mount, node ids and open files (-ENOENT: none was handed over
 * there; another error: it could not be taken over, with the reason, and it
 * is ended). fs_adopt() may run on several threads at once, each for
 * another mount point; fs_handover_add() and fs_handover_free() run alone,
 * before and after them. fs_handover_free() ends what no one adopted. A mount's
 * restarts counts the servers it outlived. fs_mount_keep_back() (keep.c),
 * once fs_adopt() gave m, tells the store what of it m holds for good now
 * (fs_params.keep, FS_KEEP_BACK).
 */
struct fs_handover;
struct fs_handover *fs_handover_new(void);
bool fs_handover_add(struct fs_handover *h, const char *name, int fd);
bool fs_handover_has(const struct fs_handover *h, uint64_t mnt_id);
int fs_adopt(struct fs *fs, struct fs_handover *h, const struct fs_mount_params *p,
	     struct fs_mount **out, struct fs_error *err);
void fs_handover_free(struct fs *fs, struct fs_handover *h);
void fs_mount_keep_back(struct fs_mount *m);
/*
 * reader.c: a mount taken over is served by the pool alone at first, so no
 * bot waits for threads to start; once the takeover is done this gives each
 * its own reader, as a mount made here has from the start. Never at once
 * with fs_handover().
 */
void fs_readers_start(struct fs *fs);
unsigned fs_mount_restarts(const struct fs_mount *m);
bool fs_mount_adopted(const struct fs_mount *m);

/* ids.c: this thread's filesystem identity, or a whole one for good; 0 or -errno (deny then) */
int fs_set_ids(uid_t uid, gid_t gid, const gid_t *groups, int ngroups);
int fs_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups);
/* ids.c: CAP_FSETID and CAP_SYS_RESOURCE out of this thread's effective set for a write, and back */
struct fs_caps {
	bool dropped;
	uint32_t effective;
};
bool fs_write_caps_drop(struct fs_caps *saved);
void fs_thread_no_fsetid(void);
void fs_fsetid_raise(struct fs_caps *saved);
void fs_write_caps_restore(const struct fs_caps *saved);

/* mount.c */
int fs_mount(struct fs *fs, const struct fs_mount_params *p, struct fs_mount **out,
	     struct fs_error *err);
/* excl.c: a server about to end lets its folders go (one server per folder) */
void fs_folders_release(struct fs *fs);

/*
 * Unmount an agentfs mount; not lazy, return once its server let its source
 * folder go, or set *lingering (its pid, or -1) if it still serves a copy
 * of the mount in another mount namespace five seconds later
 */
int fs_kernel_umount(const char *path, bool lazy, pid_t *lingering, struct fs_error *err);

/* mount-kernel.c */
int fs_mountinfo_each(int (*fn)(void *arg, uint64_t id, const char *mp, const char *fstype),
		      void *arg);

#endif
