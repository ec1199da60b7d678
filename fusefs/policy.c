/* SPDX-License-Identifier: MIT */
/*
 * The policy check every write-ish operation goes through. fusefs decides
 * nothing here: it gathers what only it knows (the classes cached on its
 * inodes, the mount's read-only settings, the seal, which git lock files a
 * mount made, the inode's names) into gitguard's request, and guard_check()
 * takes the decision and names its rule (gitguard.h, struct guard_req, says
 * who gathers what). Only after gitguard's generation moved (a repository's
 * layout or config changed) are stale classes recomputed, parents first.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *op_names[] = {
	[GUARD_OP_WRITE] = "write",	  [GUARD_OP_CHMOD] = "chmod",
	[GUARD_OP_CHOWN] = "chown",	  [GUARD_OP_CREATE] = "create",
	[GUARD_OP_MKDIR] = "mkdir",	  [GUARD_OP_SYMLINK] = "symlink",
	[GUARD_OP_LINK] = "link",	  [GUARD_OP_UNLINK] = "unlink",
	[GUARD_OP_RMDIR] = "rmdir",	  [GUARD_OP_RENAME] = "rename",
	[GUARD_OP_EXCHANGE] = "exchange", [GUARD_OP_TOUCH] = "touch",
};

int ro_link_cmp(const void *a, const void *b)
{
	const struct ro_link *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

unsigned policy_classify(struct fs_mount *m, struct inode *parent, const struct stat *st)
{
	size_t i;

	if (parent != NULL && (parent->cls & CLS_RO_TREE))
		return CLS_RO_TREE;
	for (i = 0; i < m->n_ro; i++)
		if (m->ro_dev[i] == st->st_dev && m->ro_ino[i] == st->st_ino)
			return CLS_RO_TREE;
	/* another name, elsewhere in the source, of a file under a read-only path */
	if (st->st_nlink > 1 && !S_ISDIR(st->st_mode) && m->n_ro_links > 0 &&
	    bsearch(&(struct ro_link){st->st_dev, st->st_ino}, m->ro_links, m->n_ro_links,
		    sizeof *m->ro_links, ro_link_cmp) != NULL)
		return CLS_RO_TREE;
	return 0;
}

/* i's class from its parent p's (already refreshed) class; gen is the guard's generation */
static void refresh_one(struct fs_mount *m, struct inode *i, struct inode *p, const char *name,
			uint64_t gen)
{
	struct guard_cls pc, c;
	struct stat st;
	int pfd, fd, r;

	pthread_mutex_lock(&m->fs->lock);
	pc = p->gcls;
	pthread_mutex_unlock(&m->fs->lock);
	pfd = inode_fd_get(m, p);
	fd = inode_fd_get(m, i);
	r = -1;
	if (pfd >= 0 && fd >= 0 && fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0)
		r = guard_classify(m->guard, &pc, pfd, name, &st, fd, &c);
	if (fd >= 0)
		inode_fd_put(m, i);
	if (pfd >= 0)
		inode_fd_put(m, p);
	pthread_mutex_lock(&m->fs->lock);
	if (r == 0) {
		i->gcls = c;
		i->ggen = gen;
	}
	pthread_mutex_unlock(&m->fs->lock);
}

/*
 * i was renamed: its class is of its old name (a lock file's), so the next
 * decision computes it again from its new parent and name.
 */
void policy_renamed(struct fs_mount *m, struct inode *i)
{
	pthread_mutex_lock(&m->fs->lock);
	i->ggen = 0;
	pthread_mutex_unlock(&m->fs->lock);
}

static bool stale(struct fs_mount *m, struct inode *i, uint64_t gen)
{
	bool r;

	pthread_mutex_lock(&m->fs->lock);
	r = i->ggen != gen;
	pthread_mutex_unlock(&m->fs->lock);
	return r;
}

/* One inode whose class waits for its parent's: the parent is pinned. */
struct refresh_link {
	struct inode *i;
	struct inode *p;
	char *name;
};

/*
 * Bring i's guard class up to date with the guard's generation. Called
 * without fs->lock; takes it only to read and store classes. The stale
 * ancestors are collected first (on the heap: a folder chain may be
 * thousands deep) and refreshed from the top down.
 */
void policy_refresh(struct fs_mount *m, struct inode *i)
{
	struct refresh_link *v = NULL, *nv;
	struct guard_err gerr;
	struct guard_cls c;
	size_t n = 0, alloc = 0;
	uint64_t gen;

	if (m->guard == NULL || i->standin)
		return;
	gen = guard_generation(m->guard);
	while (stale(m, i, gen)) {
		if (i == &m->root) {
			if (guard_classify_root(m->guard, &c, &gerr) == 0) {
				pthread_mutex_lock(&m->fs->lock);
				m->root.gcls = c;
				m->root.ggen = gen;
				pthread_mutex_unlock(&m->fs->lock);
			}
			break;
		}
		if (n == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			nv = realloc(v, alloc * sizeof(*v));
			if (nv == NULL)
				break; /* what is collected is refreshed from a stale parent */
			v = nv;
		}
		v[n].i = i;
		v[n].p = inode_pin_parent(m, i, &v[n].name);
		if (v[n].p == NULL)
			break;
		i = v[n++].p;
	}
	while (n--) {
		refresh_one(m, v[n].i, v[n].p, v[n].name, gen);
		inode_unpin(m, v[n].p);
		free(v[n].name);
	}
	free(v);
}

/* The command name of pid, "" if it is gone or unreadable; never blocks on a hung mount. */
static void caller_comm(pid_t pid, char comm[16])
{
	char path[32];
	ssize_t n, k;
	int fd;

	comm[0] = '\0';
	if (pid <= 0)
		return;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, 15);
	close(fd);
	if (n < 0)
		n = 0;
	comm[n] = '\0';
	for (k = 0; k < n; k++)
		if (comm[k] == '\n')
			comm[k] = '\0';
		else if ((unsigned char)comm[k] < 0x20 || comm[k] == 0x7f)
			comm[k] = '?';
}

/*
 * Refusals reach the log at most once per path every RL_INTERVAL seconds,
 * with how many were not logged; a loop of refused writes would flood it.
 * The event callback hears of every one. A slot is keyed by a hash of the
 * mount and path: a collision only logs one line more.
 */
#define RL_SLOTS 256
#define RL_INTERVAL 10

static struct {
	uint64_t key;
	time_t last;
	unsigned long quiet; /* refusals since the last line */
} rl[RL_SLOTS];
static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t rl_hash(const struct fs_mount *m, const char *path)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)m;

	for (; *path != '\0'; path++)
		h = (h ^ (unsigned char)*path) * 1099511628211ull;
	return h | 1;
}

/* Whether to log this refusal now; *quiet: how many were not logged before it. */
static bool rl_admit(const struct fs_mount *m, const char *path, unsigned long *quiet)
{
	uint64_t key = rl_hash(m, path);
	struct timespec now;
	unsigned slot = (unsigned)(key % RL_SLOTS);
	bool log;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&rl_lock);
	log = rl[slot].key != key || now.tv_sec - rl[slot].last >= RL_INTERVAL;
	*quiet = rl[slot].key == key ? rl[slot].quiet : 0;
	if (log) {
		rl[slot].key = key;
		rl[slot].last = now.tv_sec;
		rl[slot].quiet = 0;
	} else {
		rl[slot].quiet++;
	}
	pthread_mutex_unlock(&rl_lock);
	return log;
}

/*
 * The end of PATH that, escaped as fs_log escapes (a control byte, DEL, a
 * backslash or a byte past ASCII counted as four), takes at most MAX
 * bytes, and "..." to put before it when PATH is longer. fs_log's line is
 * 1 KiB: a path of control bytes escaped whole pushed the target, the
 * reason, or all of the path but its start, out of it.
 */
#define LOG_PATH_MAX 360
static const char *path_end(const char *path, const char **dots)
{
	size_t n = strlen(path), cost = 0;

	*dots = "";
	while (n > 0) {
		unsigned char c = (unsigned char)path[n - 1];

		cost += c < 0x20 || c >= 0x7f || c == '\\' ? 4 : 1;
		if (cost > LOG_PATH_MAX) {
			*dots = "...";
			break;
		}
		n--;
	}
	return path + n;
}

/*
 * Report a refused op on PATH (a rename or exchange: from PATH to PATH2):
 * every one to the event callback, rate-limited to the log (each path by
 * its end, path_end). req NULL: no caller known.
 */
static int refused_at(struct fs_mount *m, fuse_req_t req, const char *op, const char *path,
		      const char *path2, bool dir, const char *rule, const char *why)
{
	struct fs_event ev = {.kind = FS_EV_REFUSED,
			      .path = path,
			      .path2 = path2,
			      .dir = dir,
			      .op = op,
			      .rule = rule,
			      .reason = why};
	const char *d1, *d2 = "", *p1, *p2 = "";
	unsigned long quiet;

	if (m->fs->p.event != NULL) {
		ev.pid = req != NULL ? fuse_req_ctx(req)->pid : 0;
		caller_comm(ev.pid, ev.comm);
		m->fs->p.event(m->fs->p.event_arg, m, &ev);
	}
	if (!rl_admit(m, path, &quiet))
		return -EROFS;
	p1 = path_end(path, &d1);
	if (path2 != NULL)
		p2 = path_end(path2, &d2);
	if (quiet > 0)
		fs_log(m->fs, FS_LOG_INFO,
		       "%s: refused %s of %s%s%s%s%s: %s (and %lu more refusals of it not logged)",
		       m->mountpoint, op, d1, p1, path2 != NULL ? " to " : "", d2, p2, why, quiet);
	else
		fs_log(m->fs, FS_LOG_INFO, "%s: refused %s of %s%s%s%s%s: %s", m->mountpoint, op,
		       d1, p1, path2 != NULL ? " to " : "", d2, p2, why);
	return -EROFS;
}

/* Report a refused op on name in where (name NULL: where itself), as refused_at */
int policy_refused(struct fs_mount *m, fuse_req_t req, const char *op, struct inode *where,
		   const char *name, bool dir, const char *rule, const char *why)
{
	char *path = inode_path(m, where, name, false);

	refused_at(m, req, op, path != NULL ? path : "?", NULL, dir, rule, why);
	free(path);
	return -EROFS;
}

/*
 * A refused request: a rename or exchange is reported from its source to
 * its destination, as a rename that succeeds is; anything else by the name
 * it makes or removes, or the inode it changes.
 */
static int refuse(struct fs_mount *m, const struct preq *r, const char *rule, const char *why)
{
	struct inode *where = r->parent != NULL ? r->parent : r->ino;
	char *from, *to;

	if (r->src_parent == NULL || r->g.src_name == NULL || r->parent == NULL)
		return policy_refused(m, r->req, op_names[r->g.op], where,
				      r->parent != NULL ? r->g.name : NULL, S_ISDIR(r->g.mode), rule,
				      why);
	from = inode_path(m, r->src_parent, r->g.src_name, false);
	to = inode_path(m, r->parent, r->g.name, false);
	refused_at(m, r->req, op_names[r->g.op], from != NULL ? from : "?", to != NULL ? to : "?",
		   S_ISDIR(r->g.mode), rule, why);
	free(from);
	free(to);
	return -EROFS;
}

static void changed(struct fs_mount *m, struct fs_event ev, struct inode *p, const char *name,
		    struct inode *p2, const char *name2);

/* Tell the event callback that a change succeeded: name in p (and name2 in p2 for a rename). */
void policy_changed(struct fs_mount *m, enum fs_event_kind kind, struct inode *p, const char *name,
		    struct inode *p2, const char *name2, bool dir)
{
	changed(m, (struct fs_event){.kind = kind, .dir = dir}, p, name, p2, name2);
}

/*
 * A rename that succeeded, and whether it replaced what had the new name: a
 * file git writes as a lock and renames over the old one (.git/index, a ref)
 * was modified, not created.
 */
void policy_rename_changed(struct fs_mount *m, struct inode *p, const char *name, struct inode *np,
			   const char *newname, bool dir, bool replaced)
{
	changed(m, (struct fs_event){.kind = FS_EV_RENAMED, .dir = dir, .replaced = replaced}, p,
		name, np, newname);
}

static void changed(struct fs_mount *m, struct fs_event ev, struct inode *p, const char *name,
		    struct inode *p2, const char *name2)
{
	char *path, *path2 = NULL;

	if (m->fs->p.event == NULL)
		return;
	path = inode_path(m, p, name, false);
	if (p2 != NULL)
		path2 = inode_path(m, p2, name2, false);
	if (path != NULL && (p2 == NULL || path2 != NULL)) {
		ev.path = path;
		ev.path2 = path2;
		m->fs->p.event(m->fs->p.event_arg, m, &ev);
	}
	free(path);
	free(path2);
}

/*
 * A fact for LK (gitguard decides): I, named NAME (in DIRFD; -1: I by its
 * own descriptor), is a regular file with a git lock file's name that no
 * mount of this server made (gitlock.c keeps which ones they did). Unknown:
 * not made here.
 */
static bool lock_foreign(struct fs_mount *m, struct inode *i, int dirfd, const char *name)
{
	bool ours;
	int fd;

	if (i == NULL || !S_ISREG(i->type) || !guard_lock_name(name))
		return false;
	if (dirfd >= 0)
		return !gitlock_ours(dirfd, name);
	if (i->standin || (fd = inode_fd_get(m, i)) < 0)
		return true;
	ours = gitlock_ours(fd, "");
	inode_fd_put(m, i);
	return !ours;
}

/* The lock file facts of the entries request R writes, links, renames or removes, into G */
static void lock_facts(struct fs_mount *m, const struct preq *r, struct guard_req *g)
{
	char name[NAME_MAX + 1] = "";

	switch (g->op) {
	case GUARD_OP_WRITE:
	case GUARD_OP_LINK:
		/* a lock is a file; an inode's type never changes: no name to copy else */
		if (r->ino == NULL || !S_ISREG(r->ino->type))
			return;
		pthread_mutex_lock(&m->fs->lock);
		if (r->ino->name != NULL)
			snprintf(name, sizeof name, "%s", r->ino->name);
		pthread_mutex_unlock(&m->fs->lock);
		g->lock_foreign = lock_foreign(m, r->ino, -1, name);
		return;
	case GUARD_OP_UNLINK:
		g->lock_foreign = lock_foreign(m, r->ino, g->parent_fd, g->name);
		return;
	case GUARD_OP_RENAME:
	case GUARD_OP_EXCHANGE:
		g->lock_foreign = lock_foreign(m, r->ino, g->src_parent_fd, g->src_name);
		g->victim_lock_foreign = lock_foreign(m, r->victim, g->parent_fd, g->name);
		return;
	default:
		return;
	}
}

/* Under fs->lock */
static bool ro_tree(const struct inode *i)
{
	return i != NULL && (i->cls & CLS_RO_TREE);
}

/*
 * The classes of R's inodes into G, refreshed to the guard's generation
 * (G's gen, read first, is never newer than them) and copied under fs->lock
 * so a concurrent refresh cannot tear them.
 */
static void policy_classes(struct fs_mount *m, const struct preq *r, struct guard_cls c[4],
			   struct guard_req *g)
{
	struct inode *in[4] = {r->ino, r->parent, r->src_parent, r->victim};
	const struct guard_cls **out[4] = {&g->cls, &g->parent, &g->src_parent, &g->victim};
	int k;

	g->gen = m->guard != NULL ? guard_generation(m->guard) : 0;
	for (k = 0; k < 4; k++)
		if (in[k] != NULL)
			policy_refresh(m, in[k]);
	pthread_mutex_lock(&m->fs->lock);
	for (k = 0; k < 4; k++) {
		*out[k] = NULL;
		if (in[k] != NULL) {
			c[k] = in[k]->gcls;
			*out[k] = &c[k];
		}
	}
	pthread_mutex_unlock(&m->fs->lock);
}

/*
 * The facts only the filesystem has (gitguard.h, struct guard_req) into G:
 * the mount's settings, the seal, the inode's names, its lock files. *FD: a
 * folder's descriptor pinned for a CHMOD (gitguard looks for its .git), or
 * a file's with several names written or linked (gitguard tells it from a
 * gone protected file whose number it has).
 */
static void policy_facts(struct fs_mount *m, const struct preq *r, struct guard_req *g, int *fd)
{
	g->ro_mount = atomic_load_explicit(&m->readonly, memory_order_relaxed);
	pthread_mutex_lock(&m->fs->lock);
	g->ro_path = ro_tree(r->ino) || ro_tree(r->parent) || ro_tree(r->src_parent) ||
		     ro_tree(r->victim);
	if (r->ino != NULL) {
		g->sealed = r->ino->sealed;
		g->dev = r->ino->dev;
		g->ino = r->ino->ino;
		g->nlink = r->ino->nlink;
	}
	pthread_mutex_unlock(&m->fs->lock);
	*fd = -1;
	if (m->guard == NULL)
		return; /* no rule table: the mount's settings alone are judged */
	lock_facts(m, r, g);
	if (r->ino == NULL || r->ino->standin)
		return;
	if (S_ISDIR(r->ino->type) ? g->op == GUARD_OP_CHMOD
				  : g->nlink > 1 && (g->op == GUARD_OP_WRITE || g->op == GUARD_OP_CHMOD ||
						     g->op == GUARD_OP_CHOWN || g->op == GUARD_OP_LINK))
		if ((*fd = inode_fd_get(m, r->ino)) >= 0)
			g->fd = *fd;
}

static const char *link_target(struct fs_mount *m, const struct preq *r, char *buf);

/* Paths G's op needs (X1 for a symlink's target, G1 for a .git); free *PPATH */
static void policy_paths(struct fs_mount *m, const struct preq *r, struct guard_req *g,
			 char **ppath, char *target)
{
	*ppath = NULL;
	if (m->guard == NULL)
		return;
	if (g->op == GUARD_OP_SYMLINK || (g->op == GUARD_OP_LINK && S_ISLNK(g->mode)) ||
	    (g->op == GUARD_OP_RENAME && S_ISLNK(g->mode) && r->parent != r->src_parent)) {
		/* X1 judges the target from the folder it is in: NULL refuses (a rename
		 * within one folder keeps the meaning: guard_check does not ask) */
		*ppath = inode_path(m, r->parent, NULL, true);
		g->parent_path = *ppath != NULL ? *ppath + 1 : NULL;
		if (g->op != GUARD_OP_SYMLINK)
			g->target = link_target(m, r, target);
	} else if (r->parent != NULL && g->name != NULL && strcasecmp(g->name, ".git") == 0) {
		/* G1 under allow_new_repos: the repositories around the folder (gitlinks) */
		*ppath = inode_path(m, r->parent, NULL, true);
		g->parent_path = *ppath != NULL ? *ppath + 1 : NULL;
	}
}

/* Tries of a decision whose classes a host change made stale meanwhile; the last takes them */
#define POLICY_TRIES 3

/*
 * Decide r: gather the facts, let gitguard's guard_check() decide (fusefs
 * picks no rule), and log a refusal with the rule gitguard named: 0 or
 * -EROFS.
 */
int policy_check(struct fs_mount *m, const struct preq *r)
{
	struct guard_req g = r->g;
	struct guard_verdict v = {0};
	struct guard_cls c[4];
	char why[320], *ppath, target[PATH_MAX];
	int res, tries, fd;

	policy_facts(m, r, &g, &fd);
	policy_paths(m, r, &g, &ppath, target);
	for (tries = 1;; tries++) {
		policy_classes(m, r, c, &g);
		if (tries == POLICY_TRIES)
			g.gen = 0; /* changed again and again: these classes are as fresh as any */
		res = guard_check(m->guard, &g, &v);
		if (res != -ESTALE)
			break;
	}
	free(ppath);
	if (fd >= 0)
		inode_fd_put(m, r->ino);
	if (res == 0)
		return 0;
	return refuse(m, r, v.rule != NULL ? v.rule : "?",
		      guard_verdict_text(&v, why, sizeof why));
}

/* The target of the symlink R renames or links, in BUF; NULL if unreadable */
static const char *link_target(struct fs_mount *m, const struct preq *r, char *buf)
{
	ssize_t n = -1;
	int fd;

	if (r->g.op == GUARD_OP_RENAME && r->g.src_parent_fd >= 0 && r->g.src_name != NULL) {
		n = readlinkat(r->g.src_parent_fd, r->g.src_name, buf, PATH_MAX - 1);
	} else if (r->g.op == GUARD_OP_LINK && r->ino != NULL) {
		fd = inode_fd_get(m, r->ino);
		if (fd < 0)
			return NULL;
		n = readlinkat(fd, "", buf, PATH_MAX - 1);
		inode_fd_put(m, r->ino);
	}
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

/* Tell gitguard a change succeeded; it may move its generation. */
void policy_notify(struct fs_mount *m, enum guard_op op, struct inode *parent, int parent_fd,
		   const char *name, struct inode *ino)
{
	struct guard_event ev = {.op = op, .parent_fd = parent_fd, .name = name};
	struct guard_cls pc, ic;
	struct stat st;
	char *path = NULL;

	if (m->guard == NULL || parent == NULL)
		return;
	policy_refresh(m, parent);
	pthread_mutex_lock(&m->fs->lock);
	pc = parent->gcls;
	if (ino != NULL)
		ic = ino->gcls;
	pthread_mutex_unlock(&m->fs->lock);
	ev.parent = &pc;
	ev.cls = ino != NULL ? &ic : NULL;
	if (name != NULL && op != GUARD_OP_UNLINK && op != GUARD_OP_RMDIR && parent_fd >= 0 &&
	    fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ev.st = &st;
	if (name != NULL) {
		path = inode_path(m, parent, name, false);
		ev.path = path;
	}
	/*
	 * a change that makes classes stale moves the generation of the view
	 * every mount of the process shares (mount.c): theirs move with it
	 */
	if (guard_notify(m->guard, &ev) && atomic_load(&m->allow_new_repos))
		table_bot_repos(m); /* a repository the bot made is still its own after a restart */
	free(path);
}

/* The content rule (X2, X4, X5, R1: gitguard.h) of name in parent, or 0. */
unsigned policy_content_rule(struct fs_mount *m, struct inode *parent, const char *name)
{
	struct guard_cls pc;

	if (m->guard == NULL)
		return 0;
	policy_refresh(m, parent);
	pthread_mutex_lock(&m->fs->lock);
	pc = parent->gcls;
	pthread_mutex_unlock(&m->fs->lock);
	return pc.kind == GUARD_BOTREPO ? 0 : guard_content_rule(&pc, name);
}
