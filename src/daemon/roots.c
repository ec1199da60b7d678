/* SPDX-License-Identifier: MIT */
/*
 * A bot's roots: which folders it needs mounted (planned on the loop),
 * and checking and mounting each one (on the job thread), with progress
 * lines for a client that asked while a root is scanned.
 */
#include "src/daemon/bots-int.h"
#include "fusefs/fusefs.h"
#include "gitguard/gitguard.h"
#include "gitguard/ggutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include <event2/event.h>

/* Lay out a bot's roots: folder, writable, readable, then the configured extras. */
int bot_plan_roots(struct bot *b)
{
	struct paths all = {0};
	bool *w = NULL;
	size_t i, j, n = 0;

	/* A root inside another root of the same or stronger access needs no mount. */
#define ADD(path, wr)                                                                              \
	do {                                                                                       \
		bool covered = false;                                                              \
		for (i = 0; i < n; i++)                                                            \
			if (path_within(path, all.v[i]) && (w[i] || !(wr)))                        \
				covered = true;                                                    \
		if (!covered) {                                                                    \
			bool *nw = realloc(w, (n + 1) * sizeof *w);                                \
			if (nw == NULL || paths_add(&all, path) != 0)                              \
				goto nomem;                                                        \
			w = nw;                                                                    \
			w[n++] = (wr);                                                             \
		}                                                                                  \
	} while (0)
	ADD(b->folder, b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < b->writable.n; j++)
		ADD(b->writable.v[j], b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < bots_state.cfg->extra_writable.n; j++)
		ADD(bots_state.cfg->extra_writable.v[j], b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < b->git_roots.n; j++)
		ADD(b->git_roots.v[j], b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < b->readable.n; j++)
		ADD(b->readable.v[j], false);
#undef ADD
	b->roots = calloc(n, sizeof *b->roots);
	if (b->roots == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		b->roots[i].path = all.v[i];
		all.v[i] = NULL;
		b->roots[i].writable = w[i];
		if (asprintf(&b->roots[i].mountpoint, "%s/%s/%u", bots_state.cfg->mount_dir,
			     b->name, b->mount_seq++) < 0)
			goto nomem;
	}
	b->nroots = n;
	paths_free(&all);
	free(w);
	return 0;
nomem:
	if (b->roots != NULL) {
		for (i = 0; i < n; i++) {
			free(b->roots[i].path);
			free(b->roots[i].mountpoint);
		}
		free(b->roots);
		b->roots = NULL;
	}
	paths_free(&all);
	free(w);
	return -ENOMEM;
}

/*
 * May uid write (or read, per mode) the folder at path, which fd holds?
 * Checked on this thread with uid's own credentials (fs_set_ids): the path
 * is walked again as uid, so every folder on the way must let uid search it
 * (a 0777 folder inside a 0700 one is not uid's), and must still lead to
 * fd's folder. 0 yes, -EACCES no, another -errno if uid's identity could
 * not be taken or its user database entry not read, which also answers no.
 */
static int uid_may(uid_t uid, const char *path, int fd, int mode)
{
	struct passwd pw, *pwp = NULL;
	struct stat held, seen;
	char buf[16384];
	gid_t groups[256], gid = (gid_t)uid;
	int n = 256, r, ufd;

	if (uid == 0)
		return 0;
	r = getpwuid_r(uid, &pw, buf, sizeof buf, &pwp);
	if (r != 0)
		return -r; /* the user database could not be read: not decided, so no */
	if (pwp != NULL) {
		gid = pw.pw_gid;
		if (getgrouplist(pw.pw_name, gid, groups, &n) < 0)
			return -E2BIG; /* more groups than we can set: not decided, so no */
	} else {
		n = 0;
	}
	r = fs_set_ids(uid, gid, groups, n);
	if (r == 0) {
		ufd = gg_open_nofollow(AT_FDCWD, path, O_PATH | O_DIRECTORY, false);
		if (ufd < 0 || fstat(ufd, &seen) != 0 || fstat(fd, &held) != 0 ||
		    seen.st_dev != held.st_dev || seen.st_ino != held.st_ino ||
		    faccessat(ufd, "", mode, AT_EMPTY_PATH | AT_EACCESS) != 0)
			r = -EACCES;
		if (ufd >= 0)
			close(ufd);
	}
	/* A job thread that cannot go back to root is not trusted with more work. */
	if (fs_set_ids(0, 0, NULL, 0) != 0) {
		log_msg(LOG_CRIT, "cannot switch the job thread back to root: stopping");
		abort();
	}
	return r;
}

/* Why roots_open_folder failed, in words for the client. */
const char *roots_folder_error(int e)
{
	return e == ELOOP     ? "a component is a symbolic link, which agentfs never follows "
				"(give the real path)"
	       : e == ENOTDIR ? "not a folder"
	       : e == ENOENT  ? "no such folder"
			      : strerror(e);
}

int roots_open_folder(const char *path)
{
	return gg_open_nofollow(AT_FDCWD, path, O_PATH | O_DIRECTORY, false);
}

/*
 * Is the folder on an agentfs mount? Serving a mount from another of our
 * mounts would make workers wait on themselves: refused.
 */
static bool on_agentfs(int fd)
{
	char type[64];

	mounts_fstype(fd, type, sizeof type);
	return strcmp(type, "fuse.agentfs") == 0;
}

/*
 * File systems that are kernel interfaces, not files: a bot given one as a
 * root (/proc, /sys, a cgroup tree, ...) could never work in it, and what it
 * could change there as its user (a cgroup's files, tracing, a sysfs knob)
 * is not a workspace's. Decided by the opened root's statfs f_type, which a
 * path cannot fake. devtmpfs reports tmpfs's magic: it is told by its mount's
 * type instead (mounts_fstype).
 */
static const struct {
	unsigned long magic;
	const char *name;
} pseudo_fs[] = {
	{PROC_SUPER_MAGIC, "proc"},	  {SYSFS_MAGIC, "sysfs"},
	{CGROUP_SUPER_MAGIC, "cgroup"},	  {CGROUP2_SUPER_MAGIC, "cgroup2"},
	{DEBUGFS_MAGIC, "debugfs"},	  {TRACEFS_MAGIC, "tracefs"},
	{SECURITYFS_MAGIC, "securityfs"}, {BPF_FS_MAGIC, "bpf"},
	{0x62656570, "configfs"}, /* fs/configfs/configfs_internal.h */
	{PSTOREFS_MAGIC, "pstore"},	  {EFIVARFS_MAGIC, "efivarfs"},
	{DEVPTS_SUPER_MAGIC, "devpts"},	  {0x19800202, "mqueue"},  /* ipc/mqueue.c */
	{HUGETLBFS_MAGIC, "hugetlbfs"},	  {0x65735543, "fusectl"}, /* fs/fuse/control.c */
	{BINFMTFS_MAGIC, "binfmt_misc"},  {SELINUX_MAGIC, "selinuxfs"},
	{SMACK_MAGIC, "smackfs"},	  {NSFS_MAGIC, "nsfs"},
	{AUTOFS_SUPER_MAGIC, "autofs"},
};

/* The pseudo file system the folder fd holds is on, or NULL for an ordinary one. */
static const char *pseudo_fs_of(int fd)
{
	struct statfs sf;
	char type[32];
	size_t i;

	if (fstatfs(fd, &sf) == 0)
		for (i = 0; i < sizeof pseudo_fs / sizeof pseudo_fs[0]; i++)
			if ((unsigned long)sf.f_type == pseudo_fs[i].magic)
				return pseudo_fs[i].name;
	mounts_fstype(fd, type, sizeof type);
	return strcmp(type, "devtmpfs") == 0 ? "devtmpfs" : NULL;
}

/*
 * agentfsd's own folders, by device and inode (roots_init): the state folder
 * (bots, changes, every mount point) and the bots' socket folder, which no
 * root may be or lie in; and the folder of the control socket, which no root
 * may be. A bot with one of them as a root would be handed the daemon's own
 * files, or mounts inside its own view.
 */
static struct {
	dev_t dev;
	ino_t ino;
	bool set;
	bool below; /* a root beneath it is refused too */
	const char *what;
} own[3];

static void own_note(int k, const char *path, bool below, const char *what)
{
	struct stat st;
	int fd = roots_open_folder(path);

	own[k].set = fd >= 0 && fstat(fd, &st) == 0;
	if (own[k].set) {
		own[k].dev = st.st_dev;
		own[k].ino = st.st_ino;
	}
	own[k].below = below;
	own[k].what = what;
	if (fd >= 0)
		close(fd);
}

/*
 * Which of agentfsd's own folders (own[]) the folder fd holds is, or lies
 * in, or -1: the walk goes up by "..", through descriptors, never by the
 * path's string.
 */
static int own_folder_of(int fd)
{
	struct stat st, up;
	int cur = fd, next, depth, k, hit = -1;

	for (depth = 0; depth < PATH_MAX / 2 && hit < 0; depth++) {
		if (fstat(cur, &st) != 0)
			break;
		for (k = 0; k < 3; k++)
			if (own[k].set && own[k].dev == st.st_dev && own[k].ino == st.st_ino &&
			    (depth == 0 || own[k].below))
				hit = k;
		next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0)
			break;
		if (fstat(next, &up) != 0 || (up.st_dev == st.st_dev && up.st_ino == st.st_ino)) {
			close(next); /* "/" */
			break;
		}
		if (cur != fd)
			close(cur);
		cur = next;
	}
	if (cur != fd)
		close(cur);
	return hit;
}

/*
 * May the folder at path, which fd holds, be a bot's root? 0, or -errno
 * with why in words (for a bad_path error).
 */
int roots_allowed(int fd, const char *path, char *why, size_t len)
{
	const char *what;
	int k;

	if (on_agentfs(fd)) {
		snprintf(why, len,
			 "%s is inside an agentfs mount (a bot's view); give the real folder",
			 path);
		return -EINVAL;
	}
	if ((what = pseudo_fs_of(fd)) != NULL) {
		snprintf(why, len,
			 "%s is on a %s file system, a kernel interface, not files: a bot's root "
			 "must be an ordinary folder",
			 path, what);
		return -EINVAL;
	}
	if ((k = own_folder_of(fd)) >= 0) {
		snprintf(why, len, "%s is%s agentfsd's own %s: give a folder of your own", path,
			 own[k].below ? ", or lies in," : "", own[k].what);
		return -EINVAL;
	}
	return 0;
}

/* Job thread, while a root is scanned: note how far, for progress_send on the loop. */
static void job_progress(void *arg, unsigned long entries, unsigned long repos)
{
	struct job *j = arg;

	/* a report the loop has not sent yet is replaced: a slow client gets the latest */
	pthread_mutex_lock(&bots_state.lock);
	bots_state.prog[j->slot].job = j;
	snprintf(bots_state.prog[j->slot].root, sizeof bots_state.prog[j->slot].root, "%s",
		 j->scanning);
	bots_state.prog[j->slot].entries = entries;
	bots_state.prog[j->slot].repos = repos;
	bots_state.prog[j->slot].pending = true;
	event_active(bots_state.prog_ev, EV_READ, 0);
	pthread_mutex_unlock(&bots_state.lock);
}

/* Loop: one progress line to each client whose root is being scanned. */
static void progress_send(evutil_socket_t fd, short what, void *arg)
{
	struct peer *peer;
	cJSON *line, *o;
	size_t i;

	for (i = 0; i < JOB_THREADS; i++) {
		peer = NULL;
		pthread_mutex_lock(&bots_state.lock);
		if (bots_state.prog[i].job != NULL && bots_state.prog[i].pending) {
			bots_state.prog[i].pending = false;
			peer = bots_state.prog[i].job->req.peer;
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "root", bots_state.prog[i].root);
			cJSON_AddNumberToObject(o, "entries", (double)bots_state.prog[i].entries);
			cJSON_AddNumberToObject(o, "repos", (double)bots_state.prog[i].repos);
		}
		pthread_mutex_unlock(&bots_state.lock);
		if (peer == NULL)
			continue;
		line = cJSON_CreateObject();
		cJSON_AddItemToObject(line, "progress", o);
		server_reply(peer, line);
	}
}

/*
 * Job thread: may path be a root of j's bot (writable or read)? It must be
 * a folder reached without links, allowed (roots_allowed) and, for an
 * operator other than root, one it may write or read. 0, or the job's error.
 */
static int root_check(struct job *j, const char *path, bool writable)
{
	char why[PATH_MAX + 256];
	int fd, r;

	fd = roots_open_folder(path);
	if (fd < 0) {
		r = errno;
		/* a long path keeps its end: the message (1 KiB) must still say why */
		job_seterr(j, r, "bad_path", "%s%s: %s", strlen(path) > 512 ? "..." : "",
			   path + (strlen(path) > 512 ? strlen(path) - 509 : 0),
			   roots_folder_error(r));
		return -r;
	}
	if ((r = roots_allowed(fd, path, why, sizeof why)) != 0) {
		close(fd);
		job_seterr(j, -r, "bad_path", "%s", why);
		return r;
	}
	if (j->uid != 0 && (r = uid_may(j->uid, path, fd, writable ? W_OK : R_OK)) != 0) {
		close(fd);
		if (r == -EACCES)
			job_seterr(j, EACCES, "forbidden", "%s: uid %u may not reach or %s it",
				   path, (unsigned)j->uid, writable ? "write" : "read");
		else
			job_seterr(j, EACCES, "forbidden",
				   "%s: refused: cannot check uid %u's right to %s it (%s%s)", path,
				   (unsigned)j->uid, writable ? "write" : "read",
				   r == -E2BIG ? "it is in more groups than agentfsd can set"
					       : "taking its identity failed: ",
				   r == -E2BIG ? "" : strerror(-r));
		return -EACCES;
	}
	close(fd);
	return 0;
}

/*
 * Job thread: the paths b was given that no mount of its own serves (a
 * root inside another root needs no mount) are checked as if they had one:
 * a path never checked to exist and be allowed would otherwise be kept in
 * the state file for good, and 64 + 64 bytes of a bot's choosing each.
 */
static void check_covered(struct job *j, const struct bot *b)
{
	const struct paths *lists[2] = {&b->writable, &b->readable};
	size_t i, k, l;
	bool mounted;

	for (l = 0; l < 2 && j->error == 0; l++) {
		for (i = 0; i < lists[l]->n && j->error == 0; i++) {
			for (k = 0, mounted = false; k < b->nroots && !mounted; k++)
				mounted = strcmp(b->roots[k].path, lists[l]->v[i]) == 0;
			if (!mounted)
				root_check(j, lists[l]->v[i],
					   l == 0 && b->sandbox != SANDBOX_READ_ONLY);
		}
	}
}

static bool linked_worktree_of(const struct bot *b, const struct root *rt, char *id, size_t len);

/* What a root's mount is, made or taken over alike; wt holds its linked worktree's id */
static void root_params(struct bot *b, const struct root *rt, struct fs_mount_params *mp, char *wt,
			size_t wtlen)
{
	mp->source = rt->path;
	mp->mountpoint = rt->mountpoint;
	mp->readonly = !rt->writable;
	mp->allow_new_repos = b->allow_new_repos;
	if (linked_worktree_of(b, rt, wt, wtlen))
		mp->linked_worktree = wt;
	mp->tag = b;
	/* agentfsd.json's "uring" and "passthrough" */
	if (bots_state.cfg->uring)
		mp->options = bots_state.cfg->nopassthrough ? "uring,nopassthrough" : "uring";
	else
		mp->options = bots_state.cfg->nopassthrough ? "nopassthrough" : NULL;
	/* its family's and operator's share of open files, lock waiters and mounts */
	mp->groups[0] = acct_fs_group(b->fam);
	mp->groups[1] = acct_fs_group(b->op);
}

/*
 * Job thread, at start: the root's mount as the last agentfsd kept it
 * (fs_adopt), the same mount with its open files: true. False: none was
 * kept, or it could not be taken over (ended then, with the reason logged),
 * and the root is mounted afresh.
 */
static bool root_adopt(struct bot *b, struct root *rt)
{
	struct fs_mount_params mp = {0};
	struct fs_error err = {0};
	char wt[NAME_MAX + 1];
	int r;

	if (bots_state.handover == NULL)
		return false;
	root_params(b, rt, &mp, wt, sizeof wt);
	r = fs_adopt(bots_state.fs, bots_state.handover, &mp, &rt->m, &err);
	if (r == 0) {
		fs_mount_keep_back(rt->m); /* a next keeper may be given it (fdstore.c) */
		return true;
	}
	if (r != -ENOENT)
		log_msg(LOG_WARNING, "bot %s: %s; mounting it afresh", b->name, err.msg);
	return false;
}

/* Job thread: check one root and mount it. */
void root_mount(struct job *j, struct bot *b, struct root *rt)
{
	struct fs_mount_params mp = {0};
	struct fs_error err = {0};
	char dir[PATH_MAX], wt[NAME_MAX + 1];

	free(rt->error);
	rt->error = NULL;
	if (root_check(j, rt->path, rt->writable) != 0) {
		rt->error = strdup(j->msg);
		return;
	}
	snprintf(dir, sizeof dir, "%s/%s", bots_state.cfg->mount_dir, b->name);
	if (mkdir_p(dir, 0755) != 0 || (mkdir(rt->mountpoint, 0755) != 0 && errno != EEXIST)) {
		job_seterr(j, errno, "mount_failed", "cannot make %s: %s", rt->mountpoint,
			   strerror(errno));
		rt->error = strdup(j->msg);
		return;
	}
	root_params(b, rt, &mp, wt, sizeof wt);
	if (j->req.progress && j->req.peer != NULL) {
		j->scanning = rt->path;
		mp.progress = job_progress;
		mp.progress_arg = j;
	}
	if (fs_mount(bots_state.fs, &mp, &rt->m, &err) != 0) {
		job_seterr(j, err.code, err.code == EMFILE ? "limit" : "mount_failed", "%s",
			   err.msg);
		rt->error = strdup(err.msg);
		rmdir(rt->mountpoint);
	}
}

static void root_unmount(struct root *rt)
{
	if (rt->m != NULL) {
		fs_unmount(rt->m);
		fs_mount_free(rt->m);
		rt->m = NULL;
	}
	if (rt->mountpoint != NULL)
		rmdir(rt->mountpoint);
}

void bot_unmount_all(struct bot *b)
{
	char dir[PATH_MAX];
	size_t i;

	for (i = 0; i < b->nroots; i++)
		root_unmount(&b->roots[i]);
	snprintf(dir, sizeof dir, "%s/%s", bots_state.cfg->mount_dir, b->name);
	rmdir(dir);
}

/* dir + "/" + rel, or rel if absolute, normalised; NULL if it does not fit. */
static char *join_norm(const char *dir, const char *rel)
{
	char *joined = NULL, *out = NULL;

	if (rel[0] == '/')
		joined = strdup(rel);
	else if (asprintf(&joined, "%s/%s", dir, rel) < 0)
		joined = NULL;
	if (joined != NULL && path_normalise(joined, &out) != 0)
		out = NULL;
	free(joined);
	return out;
}

/*
 * The git folder b's folder points to with a .git file or symlink, and the
 * common folder that one names (gitguard answers; joined and normalised
 * here). Either may come back NULL.
 */
static void find_git_folders(const struct bot *b, char **gd, char **common)
{
	char rel[PATH_MAX];
	int fd;

	*gd = *common = NULL;
	fd = roots_open_folder(b->folder);
	if (fd < 0)
		return;
	if (guard_layout_gitdir(fd, rel, sizeof rel) == 0)
		*gd = join_norm(b->folder, rel);
	close(fd);
	if (*gd == NULL || (fd = roots_open_folder(*gd)) < 0)
		return;
	if (guard_layout_commondir(fd, rel, sizeof rel) == 0)
		*common = join_norm(*gd, rel);
	close(fd);
}

/*
 * Rule D13: is rt a common folder b was given for its linked worktree (a
 * git root other than the worktree's own git folder)? Then its git may
 * write there only what git writes for every worktree; *id (LEN bytes) is
 * the name of b's admin folder in its worktrees/, or "" when b's .git no
 * longer leads there (then none of them is b's).
 */
static bool linked_worktree_of(const struct bot *b, const struct root *rt, char *id, size_t len)
{
	char *gd, *common, prefix[PATH_MAX];
	const char *rest;
	bool git_root = false;
	size_t k;

	for (k = 0; k < b->git_roots.n; k++)
		if (strcmp(b->git_roots.v[k], rt->path) == 0)
			git_root = true;
	if (!git_root)
		return false;
	find_git_folders(b, &gd, &common);
	if (gd != NULL && strcmp(gd, rt->path) == 0) {
		free(gd);
		free(common);
		return false;
	}
	id[0] = '\0';
	snprintf(prefix, sizeof prefix, "%s/worktrees/", rt->path);
	if (gd != NULL && common != NULL && strcmp(common, rt->path) == 0 &&
	    strncmp(gd, prefix, strlen(prefix)) == 0) {
		rest = gd + strlen(prefix);
		if (rest[0] != '\0' && strchr(rest, '/') == NULL)
			snprintf(id, len, "%s", rest);
	}
	free(gd);
	free(common);
	return true;
}

/*
 * Is gd the admin folder of a linked worktree of common whose gitdir file
 * names b's folder's .git back? That record, which git writes beside the
 * common folder, is the one sign that the folder is that worktree: the
 * .git at its top may be a bot's (one with allow_new_repos writes it), and
 * would otherwise hand the next bot made over the folder any git folder.
 */
static bool git_folder_confirms(const struct bot *b, const char *gd, const char *common)
{
	char prefix[PATH_MAX], *buf = NULL, *back = NULL, *want = NULL;
	size_t len, n;
	bool yes = false;
	int fd;

	if (common == NULL || snprintf(prefix, sizeof prefix, "%s/worktrees/", common) >= PATH_MAX)
		return false;
	n = strlen(prefix);
	if (strncmp(gd, prefix, n) != 0 || gd[n] == '\0' || strchr(gd + n, '/') != NULL ||
	    (fd = roots_open_folder(gd)) < 0)
		return false;
	if (guard_read_file(fd, "gitdir", PATH_MAX, &buf, &len, NULL) == 0 && len > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		back = join_norm(gd, buf); /* relative since git 2.48's worktree.useRelativePaths */
		yes = back != NULL && asprintf(&want, "%s/.git", b->folder) > 0 &&
		      strcmp(back, want) == 0;
	}
	close(fd);
	free(buf);
	free(back);
	free(want);
	return yes;
}

/*
 * Add pick as a root of b unless a root covers it or it lies beyond the
 * ceiling j holds; for the operator's bot, a pick the git folder did not
 * confirm (git_folder_confirms) fails the request instead. Out of memory,
 * it is not added: b gets less, not more.
 */
static void add_git_root(struct job *j, struct bot *b, const char *pick, bool confirmed)
{
	bool covered = false, allowed = !j->ceiling_set;
	struct root *nr, *rt;
	size_t k;

	for (k = 0; k < b->nroots; k++)
		if (path_within(pick, b->roots[k].path) &&
		    (b->roots[k].writable || b->sandbox == SANDBOX_READ_ONLY))
			covered = true;
	for (k = 0; k < j->ceiling.n; k++)
		if (path_within(pick, j->ceiling.v[k]))
			allowed = true;
	if (covered || !allowed)
		return;
	if (!j->ceiling_set && !confirmed && b->sandbox != SANDBOX_DANGER_FULL_ACCESS) {
		job_seterr(j, EPERM, "forbidden",
			   "%s: its .git leads to %s, outside it, and no linked worktree's record "
			   "there names it back: a .git a bot may have written is not followed; "
			   "give that folder as a writable root if it is yours",
			   b->folder, pick);
		return;
	}
	nr = realloc(b->roots, (b->nroots + 1) * sizeof *nr);
	if (nr == NULL)
		return;
	b->roots = nr;
	rt = &b->roots[b->nroots];
	memset(rt, 0, sizeof *rt);
	rt->path = strdup(pick);
	rt->writable = b->sandbox != SANDBOX_READ_ONLY;
	if (rt->path == NULL || asprintf(&rt->mountpoint, "%s/%s/%u", bots_state.cfg->mount_dir,
					 b->name, b->mount_seq) < 0) {
		free(rt->path);
		rt->path = NULL;
		return;
	}
	/* Found once, when the bot is made, and kept: a bot may not point
	 * its .git elsewhere later and be handed that folder on restart. */
	if (paths_add(&b->git_roots, pick) != 0) {
		free(rt->path);
		free(rt->mountpoint);
		rt->path = rt->mountpoint = NULL;
		return;
	}
	b->mount_seq++;
	b->nroots++;
}

/*
 * A folder that is a linked worktree, or whose .git is a file or symlink
 * pointing elsewhere, needs that git folder (and its common folder) as a
 * root too, guarded as always, or `git commit` cannot work in it. Found
 * here, on the job thread.
 */
static void add_git_roots(struct job *j, struct bot *b)
{
	char *gd, *common;
	bool confirmed;

	find_git_folders(b, &gd, &common);
	if (gd == NULL)
		return;
	confirmed = git_folder_confirms(b, gd, common);
	/* The common folder (objects, refs, config) and, if it lies elsewhere, the worktree's own. */
	if (common != NULL)
		add_git_root(j, b, common, confirmed);
	if (j->error == 0 && (common == NULL || !path_within(gd, common)))
		add_git_root(j, b, gd, confirmed);
	free(gd);
	free(common);
}

/* Job thread: a bot with no user named runs as its folder's owner. */
static void root_user(struct job *j, struct bot *b)
{
	struct stat st;
	int fd;

	if (b->uid_set)
		return;
	fd = roots_open_folder(b->folder);
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;

		job_seterr(j, e, "bad_path", "%s: %s", b->folder, roots_folder_error(e));
	} else {
		b->uid = st.st_uid;
		b->uid_set = true;
	}
	if (fd >= 0)
		close(fd);
}

/*
 * Job thread: mount every root; on failure leave nothing mounted. A
 * confined bot that would run as its folder's owner, root, is refused
 * first: exec would never run it (a named or inherited root is refused on
 * the loop, bot_new).
 */
void roots_mount_bot(struct job *j)
{
	struct bot *b = j->bot;
	size_t i;

	root_user(j, b);
	if (j->error == 0 && b->uid == 0 && b->sandbox != SANDBOX_DANGER_FULL_ACCESS) {
		char owner[PATH_MAX + 16];

		snprintf(owner, sizeof owner, "the owner of %s", b->folder);
		job_seterr(j, EPERM, "forbidden", ROOT_BOT_REFUSED, b->name, owner);
		return;
	}
	check_covered(j, b);
	add_git_roots(j, j->bot);
	for (i = 0; i < j->bot->nroots && j->error == 0; i++)
		root_mount(j, j->bot, &j->bot->roots[i]);
	if (j->error != 0 && j->req.peer != NULL)
		bot_unmount_all(j->bot);
}

/*
 * Restoring after a restart takes over the mounts the last agentfsd kept,
 * mounts the others again, keeps what mounts and reports the rest. A root
 * mounted again is checked with its operator's right, as when the bot was
 * made (j->uid): one the operator may no longer use is shown lost, with why.
 */
void roots_restore_bot(struct job *j)
{
	struct root *rt;
	size_t i;

	root_user(j, j->bot);
	for (i = 0; i < j->bot->nroots; i++) {
		rt = &j->bot->roots[i];
		if (root_adopt(j->bot, rt))
			continue;
		j->error = 0;
		root_mount(j, j->bot, rt);
		if (j->error != 0)
			log_msg(LOG_WARNING, "bot %s: %s", j->bot->name, j->msg);
		if (j->error == EACCES)
			rt->lost = true; /* no longer the operator's to give: show says why */
	}
	j->error = 0;
}

int roots_init(char *err, size_t errlen)
{
	char *dir = strdup(bots_state.cfg->socket_path), *sd = NULL;

	if (dir == NULL || strrchr(dir, '/') == NULL ||
	    asprintf(&sd, "%s.d", bots_state.cfg->socket_path) < 0) {
		free(dir);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*strrchr(dir, '/') = '\0';
	own_note(0, bots_state.cfg->state_dir, true, "state folder");
	own_note(1, sd, true, "folder of the bots' sockets");
	own_note(2, dir[0] != '\0' ? dir : "/", false, "folder of the control socket");
	free(dir);
	free(sd);
	bots_state.prog_ev = event_new(bots_state.base, -1, 0, progress_send, NULL);
	if (bots_state.prog_ev == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void roots_stop(void)
{
	if (bots_state.prog_ev != NULL)
		event_free(bots_state.prog_ev);
	bots_state.prog_ev = NULL;
}
