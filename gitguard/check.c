/* SPDX-License-Identifier: MIT */
/*
 * Decisions: one call per write-ish operation, from cached classes only,
 * except where the rule needs to look (a folder moved with its contents, a
 * name that would complete a bare-shaped folder, a symlink's target).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gitguard/ggutil.h"
#include "gitguard/guard-int.h"

/* A refusal by RULE, with its usual reason */
int guard_refuse(struct guard_verdict *v, unsigned rule)
{
	if (v) {
		v->rule = guard_rule_name(rule);
		v->reason = guard_rule_reason(rule);
	}
	return -EROFS;
}

int guard_refuse_why(struct guard_verdict *v, unsigned rule, const char *reason)
{
	if (v) {
		v->rule = guard_rule_name(rule);
		v->reason = reason;
	}
	return -EROFS;
}

/* write, truncate, chmod, chown of an existing entry */
static int check_write(const struct guard_cls *c, struct guard_verdict *v)
{
	if (c->kind == GUARD_BOTREPO)
		return 0;
	if (c->flags & (GUARD_RO | GUARD_TREE))
		return guard_refuse(v, c->rule);
	return 0;
}

/* unlink, rmdir, or the source of a rename or exchange */
static int check_remove(const struct guard_cls *c, struct guard_verdict *v)
{
	if (c->kind == GUARD_BOTREPO)
		return 0;
	if (c->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN))
		return guard_refuse(v, c->rule ? c->rule : GUARD_RULE_G3);
	if (c->kind == GUARD_GITDIR)
		return guard_refuse(v, GUARD_RULE_G3);
	return 0;
}

/* Bit of NAME among the names that make a folder bare-shaped, or 0 */
static int shape_bit(const char *name)
{
	if (name_is(name, "HEAD"))
		return 1;
	if (name_is(name, "objects"))
		return 2;
	if (name_is(name, "refs"))
		return 4;
	if (name_is(name, "commondir"))
		return 8;
	return 0;
}

static bool shape_complete(int has)
{
	return (has & 1) && ((has & 6) == 6 || (has & 8));
}

/* NC: may NAME of type MODE be made in PARENT (MOVE: by a rename)? */
static int check_new(struct guard *g, const struct guard_cls *parent, int parent_fd,
		     const char *name, mode_t mode, bool move, struct guard_verdict *v)
{
	struct guard_cls c;
	int bit, has;

	if (parent->kind == GUARD_BOTREPO)
		return 0;
	if (parent->flags & GUARD_TREE)
		return guard_refuse(v, parent->rule);
	/* nothing new in modules/ but inside a submodule's git folder (D6) */
	if (parent->role == GUARD_R_MODULES && parent->kind != GUARD_GITDIR)
		return guard_refuse(v, GUARD_RULE_D6);
	if (name_is_dotgit(name)) {
		if (!g->allow_new)
			return guard_refuse(v, GUARD_RULE_G1);
		return S_ISLNK(mode) && guard_in_gitdir(parent) ? guard_refuse(v, GUARD_RULE_D9)
								: 0;
	}
	guard_name_stage(g, parent, name, mode, &c);
	if (c.flags & (GUARD_RO | GUARD_TREE))
		return guard_refuse(v, c.rule);
	/* D9: git makes no symlink in a git folder; one there sends git's reads and writes anywhere */
	if (S_ISLNK(mode) && guard_in_gitdir(parent))
		return guard_refuse(v, GUARD_RULE_D9);
	/* H1: a folder moved in as a home's .config or .ssh would bring its own config */
	if (move && (c.role == GUARD_R_HOMECFG || c.role == GUARD_R_HOMESSH))
		return guard_refuse_why(v, GUARD_RULE_H1,
					"a folder moved in as a home's .config or .ssh");
	/*
	 * X2/X4: a regular file, renamed in (the caller checks its content) or,
	 * for X4 only, made empty and then written with each write checked.
	 */
	if ((c.flags & GUARD_CHK) && !S_ISREG(mode))
		return guard_refuse_why(v, c.rule, "only a regular file may be put there");
	if ((c.flags & GUARD_CHK) && !move && c.rule == GUARD_RULE_X2)
		return guard_refuse_why(v, c.rule, "made only by renaming a checked file onto it");
	/* X4: a symlink there would let git read strategy files from anywhere */
	if (c.role == GUARD_R_SEQ && !S_ISDIR(mode))
		return guard_refuse_why(v, GUARD_RULE_X4, "rebase and sequencer state is a folder");
	if (c.kind == GUARD_GITDIR) {
		if (c.flags & GUARD_WT)
			return guard_refuse_why(v, GUARD_RULE_D5, "new worktree");
		if (!g->allow_new)
			return guard_refuse(v, GUARD_RULE_G2);
	}
	bit = shape_bit(name);
	if (bit && parent->kind != GUARD_GITDIR && parent_fd >= 0) {
		guard_shape(parent_fd, &has);
		if (!shape_complete(has) && shape_complete(has | bit) && !g->allow_new)
			return guard_refuse(v, GUARD_RULE_G2);
	}
	if (atomic_load(&g->ntab_hint)) {
		uint8_t rule = 0, f;

		pthread_rwlock_rdlock(&g->lock);
		f = guard_tab_missing(g, parent->dev, parent->ino, name, &rule);
		pthread_rwlock_unlock(&g->lock);
		if (f & (GUARD_RO | GUARD_TREE))
			return guard_refuse(v, rule);
	}
	return 0;
}

/*
 * A rename or exchange moves CLS (type MODE, fd FD when a folder) from where
 * it is to NAME in PARENT, replacing VICTIM if any.
 */
static int check_move(struct guard *g, const struct guard_cls *cls, mode_t mode, int fd,
		      const struct guard_cls *parent, int parent_fd, const char *name,
		      const struct guard_cls *victim, bool moves, struct guard_verdict *v)
{
	unsigned budget = GUARD_WALK_BUDGET;
	struct guard_cls dc;
	struct stat st;
	int rc;

	rc = check_remove(cls, v);
	if (!rc && victim)
		rc = check_remove(victim, v);
	if (!rc)
		rc = check_new(g, parent, parent_fd, name, mode, true, v);
	if (rc || !S_ISDIR(mode) || cls->kind == GUARD_BOTREPO)
		return rc;
	if (fd < 0)
		return guard_refuse_why(v, GUARD_RULE_G3, "folder rename without its fd");
	/* G3: no git folder beneath, nor anything else protected */
	rc = guard_walk(g, fd, cls, &budget, moves, v);
	if (rc || parent->kind == GUARD_PLAIN || parent->kind == GUARD_BOTREPO)
		return rc;
	/* into a git folder: what would each entry be there? */
	if (fstat(fd, &st) < 0)
		return guard_refuse_why(v, GUARD_RULE_G3, "folder cannot be checked");
	/*
	 * Judged by name and shape only: a full classification would scan the
	 * folder as the repository it would become and record it, so a refused
	 * probe would leave its folder guarded where it is (fuzz-decide).
	 */
	dc.dev = st.st_dev;
	dc.ino = st.st_ino;
	guard_name_stage(g, parent, name, mode, &dc);
	if (dc.kind != GUARD_GITDIR && guard_shape(fd, NULL))
		dc.kind = GUARD_GITDIR;
	if (guard_cls_protected(&dc))
		return guard_refuse(v, dc.kind == GUARD_GITDIR ? GUARD_RULE_G3 : dc.rule);
	budget = GUARD_WALK_BUDGET;
	return guard_walk(g, fd, &dc, &budget, false, v);
}

/* Lexically, does PATH name a git folder (a .git or NAME.git component)? */
static bool names_gitdir(const char *path)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	int n;

	while ((n = gg_path_next(&p, comp, sizeof(comp))) != 0)
		if (n > 0 && (name_is_dotgit(comp) || name_is_bare(comp)))
			return true;
	return false;
}

/*
 * X1's walk: the target of a new symlink resolved the way the kernel will
 * (physical "..", symlinks followed, at most X1_LINKS of them), one component
 * at a time from the root's fd.  In the root each folder is classified from
 * its parent's class (LV holds the classes from the root down); outside it,
 * only coming back into the root matters (and a folder named like a git one).
 */
#define X1_LINKS 40 /* the kernel's MAXSYMLINKS */
#define X1_BUF (PATH_MAX * 4)
#define X1_TRIES 4 /* the symlink's folder is looked for again if the host moved it meanwhile */

struct x1lv {
	uint64_t dev;
	uint64_t ino;
	struct guard_cls cls;
};

struct x1walk {
	struct guard *g;
	struct guard_verdict *v;
	int fd;	     /* where the walk is (O_PATH) */
	size_t n;    /* levels in the root (0: outside it) */
	size_t alloc;
	struct x1lv *lv;
	char *rest;  /* what is left to resolve */
	unsigned links;
	bool missing; /* a component was not there: the rest is judged by name */
	bool away;    /* outside the root, on another filesystem: the rest is judged by name */
	bool parent;  /* walking to the symlink's own folder: a symlink there is a race */
};

/*
 * Outside the root, another filesystem (this server's own mounts among them)
 * is not entered: asking a FUSE mount from one of its own workers can wait
 * for a worker forever.  The stat of its top is taken from the kernel's cache
 * (AT_STATX_DONT_SYNC) for that reason.  Is NFD (stat ST) such a folder?
 */
static bool x1_other_fs(struct x1walk *w, int nfd, struct stat *st)
{
	struct statx sx;
	struct stat here;

	if (statx(nfd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_INO, &sx) < 0)
		return true;
	memset(st, 0, sizeof(*st));
	st->st_mode = sx.stx_mode;
	st->st_ino = sx.stx_ino;
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	if (!S_ISDIR(st->st_mode) || (uint64_t)st->st_dev == w->g->root_dev)
		return false;
	return fstat(w->fd, &here) < 0 || here.st_dev != st->st_dev;
}

/* The walk moves to NFD */
static void x1_move(struct x1walk *w, int nfd)
{
	close(w->fd);
	w->fd = nfd;
}

/* The walk reached the folder NFD outside the root: is it the root? */
static int x1_outside(struct x1walk *w, int nfd, const char *name, const struct stat *st)
{
	x1_move(w, nfd);
	if ((uint64_t)st->st_dev == w->g->root_dev && (uint64_t)st->st_ino == w->g->root_ino) {
		if (guard_classify_root(w->g, &w->lv[0].cls, NULL) < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1, "root cannot be classified");
		w->lv[0].dev = w->g->root_dev;
		w->lv[0].ino = w->g->root_ino;
		w->n = 1;
		return guard_in_gitdir(&w->lv[0].cls) ? guard_refuse(w->v, GUARD_RULE_X1) : 0;
	}
	/*
	 * A git folder outside the root is not this root's to protect (a write
	 * through the link does not come through this mount): only its name is
	 * judged, as for the target's own text.
	 */
	if (name && (name_is_dotgit(name) || name_is_bare(name)))
		return guard_refuse(w->v, GUARD_RULE_X1);
	return 0;
}

/* ".." of the folder actually reached, not of the name that led there */
static int x1_up(struct x1walk *w)
{
	struct stat st;
	int nfd;

	nfd = openat(w->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (nfd < 0 || fstat(nfd, &st) < 0) {
		if (nfd >= 0)
			close(nfd);
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target cannot be checked");
	}
	if (w->n == 1) { /* out of the root */
		w->n = 0;
		return x1_outside(w, nfd, NULL, &st);
	}
	if (w->n == 0) {
		x1_move(w, nfd);
		return 0;
	}
	w->n--;
	x1_move(w, nfd);
	if ((uint64_t)st.st_dev != w->lv[w->n - 1].dev || (uint64_t)st.st_ino != w->lv[w->n - 1].ino)
		return guard_refuse_why(w->v, GUARD_RULE_X1, "folder moved while it was checked");
	return 0;
}

/* The symlink NAME in the walk's folder: its target goes in front of the rest */
static int x1_link(struct x1walk *w, const char *name)
{
	char *buf;
	ssize_t len;
	size_t rl = strlen(w->rest);
	int nfd;

	if (++w->links > X1_LINKS) {
		w->away = true; /* a loop: the kernel resolves nothing (ELOOP); names still count */
		return 0;
	}
	buf = malloc(X1_BUF);
	if (!buf)
		return -ENOMEM;
	len = readlinkat(w->fd, name, buf, PATH_MAX);
	if (len <= 0 || (size_t)len + 1 + rl + 1 > X1_BUF) {
		free(buf);
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target cannot be checked");
	}
	buf[len] = '/';
	memcpy(buf + len + 1, w->rest, rl + 1);
	free(w->rest);
	w->rest = buf;
	if (buf[0] != '/')
		return 0;
	nfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (nfd < 0)
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target cannot be checked");
	x1_move(w, nfd);
	w->n = 0;
	return 0;
}

/* One component COMP of the target */
static int x1_step(struct x1walk *w, const char *comp)
{
	struct guard_cls c;
	struct stat st;
	int nfd;

	if (!strcmp(comp, "."))
		return 0;
	if (!strcmp(comp, ".."))
		return x1_up(w);
	nfd = openat(w->fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (nfd < 0) {
		/* not there (yet): G1/G2 keep it from becoming a git folder */
		w->missing = true;
		return 0;
	}
	if (!w->n && x1_other_fs(w, nfd, &st)) {
		close(nfd);
		w->away = true;
		return 0;
	}
	if (w->n && fstat(nfd, &st) < 0) {
		close(nfd);
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target cannot be checked");
	}
	if (w->n) {
		if (guard_classify(w->g, &w->lv[w->n - 1].cls, w->fd, comp, &st, nfd, &c) < 0) {
			close(nfd);
			return guard_refuse_why(w->v, GUARD_RULE_X1,
						"symlink target cannot be checked");
		}
		if (guard_in_gitdir(&c)) {
			close(nfd);
			return guard_refuse(w->v, GUARD_RULE_X1);
		}
	}
	if (S_ISLNK(st.st_mode)) {
		close(nfd);
		return w->parent ? -EAGAIN : x1_link(w, comp);
	}
	if (!S_ISDIR(st.st_mode)) {
		close(nfd);
		w->missing = true; /* a file: nothing is beneath it */
		return 0;
	}
	if (!w->n)
		return x1_outside(w, nfd, comp, &st);
	if (w->n >= GUARD_WALK_DEPTH * 16 ||
	    gg_grow(&w->lv, &w->alloc, w->n + 1, sizeof(*w->lv), 64)) {
		close(nfd);
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target too deep to check");
	}
	w->lv[w->n].dev = st.st_dev;
	w->lv[w->n].ino = st.st_ino;
	w->lv[w->n].cls = c;
	w->n++;
	x1_move(w, nfd);
	return 0;
}

/*
 * Resolves what is left of W's target.  Past a component that is not there,
 * nothing resolves today, but that name may become a symlink tomorrow: a ".."
 * after it would then climb from wherever that symlink leads, so it is refused.
 */
static int x1_resolve(struct x1walk *w)
{
	char comp[NAME_MAX + 1];
	const char *p;
	char *next;
	int n, rc = 0;

	while (!rc) {
		if (w->away)
			return names_gitdir(w->rest) ? guard_refuse(w->v, GUARD_RULE_X1) : 0;
		p = w->rest;
		n = gg_path_next(&p, comp, sizeof(comp));
		if (n == 0)
			break;
		if (n < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target cannot be checked");
		if (w->missing) {
			if (!strcmp(comp, ".."))
				return guard_refuse_why(w->v, GUARD_RULE_X1,
							"symlink target climbs out of a folder "
							"that does not exist");
			memmove(w->rest, p, strlen(p) + 1);
			continue;
		}
		next = strdup(p);
		if (!next)
			return -ENOMEM;
		free(w->rest);
		w->rest = next;
		rc = x1_step(w, comp);
	}
	return rc;
}

/*
 * The folder of the new symlink: PARENT_PATH from the root, and it must be
 * PARENT_FD; -EAGAIN if the path leads elsewhere now (the host moved a folder).
 */
static int x1_parent(struct x1walk *w, const char *parent_path, int parent_fd)
{
	char comp[NAME_MAX + 1];
	const char *p = parent_path;
	struct stat st;
	int n;

	while ((n = gg_path_next(&p, comp, sizeof(comp))) != 0) {
		if (n < 0 || !strcmp(comp, ".."))
			return guard_refuse_why(w->v, GUARD_RULE_X1,
						"symlink's folder cannot be located");
		if (!strcmp(comp, "."))
			continue;
		if (x1_step(w, comp) || w->missing || !w->n)
			return -EAGAIN;
	}
	if (parent_fd < 0)
		return 0;
	if (fstat(parent_fd, &st) < 0 || (uint64_t)st.st_dev != w->lv[w->n - 1].dev ||
	    (uint64_t)st.st_ino != w->lv[w->n - 1].ino)
		return -EAGAIN;
	return 0;
}

/* The name in the folder DFD of the entry with inode INO, in NAME; -ENOENT if none */
static int x1_name_of(int dfd, uint64_t ino, char *name, size_t namesz)
{
	struct dirent *de;
	int fd, rc = -ENOENT;
	DIR *d;

	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d)))
		if ((uint64_t)de->d_ino == ino && strcmp(de->d_name, ".") &&
		    strcmp(de->d_name, "..") && strlen(de->d_name) < namesz) {
			strcpy(name, de->d_name);
			rc = 0;
			break;
		}
	closedir(d);
	return rc;
}

/*
 * The symlink's folder found from PARENT_FD itself when its path no longer
 * leads there (the host renamed a folder above it): up by ".." to the root,
 * then down by the names those folders have now, classified on the way.
 */
static int x1_parent_up(struct x1walk *w, int parent_fd)
{
	char name[NAME_MAX + 1];
	uint64_t *chain = NULL;
	size_t n = 0, alloc = 0;
	struct stat st;
	int cur, up, rc = 0;

	cur = fcntl(parent_fd, F_DUPFD_CLOEXEC, 3);
	while (!rc) {
		if (cur < 0 || fstat(cur, &st) < 0) {
			rc = -EAGAIN;
			break;
		}
		if ((uint64_t)st.st_dev == w->g->root_dev && (uint64_t)st.st_ino == w->g->root_ino)
			break;
		if (n >= GUARD_WALK_DEPTH * 16 || gg_grow(&chain, &alloc, n + 1, sizeof(*chain), 64)) {
			rc = -EAGAIN;
			break;
		}
		chain[n++] = st.st_ino;
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	while (!rc && n > 0) {
		n--;
		if (x1_name_of(w->fd, chain[n], name, sizeof(name)) < 0)
			rc = -EAGAIN;
		else if (x1_step(w, name) || w->missing || !w->n ||
			 w->lv[w->n - 1].ino != chain[n])
			rc = -EAGAIN;
	}
	free(chain);
	return rc;
}

/*
 * The walk at the root, then at the symlink's folder: by its path, tried again
 * if the host moved a folder meanwhile, and at last from its fd upwards.
 */
static int x1_start(struct x1walk *w, const char *parent_path, int parent_fd)
{
	int rc = -EAGAIN, k;

	for (k = 0; k < X1_TRIES && rc == -EAGAIN; k++) {
		if (w->fd >= 0)
			close(w->fd);
		w->fd = fcntl(w->g->root_fd, F_DUPFD_CLOEXEC, 3);
		if (w->fd < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1, "root cannot be opened");
		w->lv[0].dev = w->g->root_dev;
		w->lv[0].ino = w->g->root_ino;
		w->n = 1;
		w->links = 0;
		w->missing = w->away = false;
		if (guard_classify_root(w->g, &w->lv[0].cls, NULL) < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1, "root cannot be classified");
		if (guard_in_gitdir(&w->lv[0].cls))
			return guard_refuse(w->v, GUARD_RULE_X1);
		w->parent = true;
		if (parent_path && (k < X1_TRIES - 1 || parent_fd < 0))
			rc = x1_parent(w, parent_path, parent_fd);
		else
			rc = x1_parent_up(w, parent_fd);
		w->parent = false;
	}
	if (rc == -EAGAIN)
		return guard_refuse_why(w->v, GUARD_RULE_X1,
					"symlink's folder cannot be located (moved meanwhile)");
	return rc;
}

/*
 * X1: a new symlink in the folder PARENT_FD (PARENT_PATH from the root) whose
 * target, resolved as the kernel will, enters a git folder.
 */
static int check_x1(struct guard *g, const char *parent_path, int parent_fd, const char *target,
		    struct guard_verdict *v)
{
	struct x1walk w = {.g = g, .v = v, .fd = -1};
	size_t tl;
	int rc;

	if (!target || !*target)
		return 0;
	if (names_gitdir(target))
		return guard_refuse(v, GUARD_RULE_X1);
	if (!parent_path && parent_fd < 0)
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink's folder cannot be located");
	tl = strlen(target);
	w.alloc = 64;
	w.lv = calloc(w.alloc, sizeof(*w.lv));
	w.rest = malloc(tl + 1);
	if (!w.lv || !w.rest) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(w.rest, target, tl + 1);
	rc = x1_start(&w, parent_path, parent_fd);
	if (!rc && target[0] == '/') {
		x1_move(&w, open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
		w.n = 0;
		if (w.fd < 0)
			rc = guard_refuse_why(v, GUARD_RULE_X1, "symlink target cannot be checked");
	}
	if (!rc)
		rc = x1_resolve(&w);
out:
	if (w.fd >= 0)
		close(w.fd);
	free(w.lv);
	free(w.rest);
	return rc;
}

/* Does REQ's rename stay in one folder?  (Unknown: no) */
static bool same_folder(const struct guard_req *req)
{
	struct stat a, b;

	if (req->parent_fd < 0 || req->src_parent_fd < 0 || fstat(req->parent_fd, &a) < 0 ||
	    fstat(req->src_parent_fd, &b) < 0)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* X1 again for a symlink renamed or linked into REQ's parent: its target, read from there */
static int check_moved_link(struct guard *g, const struct guard_req *req, struct guard_verdict *v)
{
	if (!S_ISLNK(req->mode) || (req->cls && req->cls->kind == GUARD_BOTREPO))
		return 0;
	if (!req->target)
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink moved without its target");
	return check_x1(g, req->parent_path, req->parent_fd, req->target, v);
}

/* X1 for what NAME in DFD is, a symlink moving to the folder TO_FD (TO_PATH or NULL) */
static int check_link_at(struct guard *g, int dfd, const char *name, const char *to_path,
			 int to_fd, struct guard_verdict *v)
{
	char target[PATH_MAX];
	ssize_t n;

	n = dfd >= 0 && name ? readlinkat(dfd, name, target, sizeof(target) - 1) : -1;
	if (n <= 0)
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink moved without its target");
	target[n] = '\0';
	return check_x1(g, to_path, to_fd, target, v);
}

/* X1 for an exchange across folders: each symlink judged from the other's folder */
static int check_exchanged_links(struct guard *g, const struct guard_req *req,
				 struct guard_verdict *v)
{
	int rc = 0;

	if (S_ISLNK(req->mode))
		rc = check_link_at(g, req->src_parent_fd, req->src_name, req->parent_path,
				   req->parent_fd, v);
	if (!rc && S_ISLNK(req->victim_mode))
		rc = check_link_at(g, req->parent_fd, req->name, NULL, req->src_parent_fd, v);
	return rc;
}

/*
 * The one symlink git makes in a git folder: HEAD as "refs/...", with
 * core.preferSymlinkRefs (refs/files-backend.c create_ref_symlink).
 */
static bool head_symlink(const struct guard_req *req)
{
	return req->parent->kind == GUARD_GITDIR && !strcmp(req->name, "HEAD") &&
	       guard_head_target_ok(req->target);
}

/*
 * The one decision: 0 if REQ may go ahead, -EROFS with V's rule and reason
 * filled if not, or another -errno if the check itself failed (refuse then).
 */
int guard_check(struct guard *g, const struct guard_req *req, struct guard_verdict *v)
{
	mode_t mode;
	int rc;

	if (v)
		v->rule = v->reason = NULL;
	guard_revalidate(g);
	guard_homes_revalidate(g);
	switch (req->op) {
	case GUARD_OP_WRITE:
		rc = check_write(req->cls, v);
		/* X2: git writes an index by renaming a lock file onto it, never in place */
		if (!rc && req->cls->kind != GUARD_BOTREPO && (req->cls->flags & GUARD_CHK) &&
		    req->cls->rule == GUARD_RULE_X2)
			rc = guard_refuse_why(v, GUARD_RULE_X2,
					      "index written in place, not renamed in");
		return rc;
	case GUARD_OP_CHMOD:
		/* H1: a pinned home, ~/.config or a folder above opened to others' writes */
		if (req->cls->kind != GUARD_BOTREPO && (req->cls->flags & GUARD_PIN) &&
		    req->cls->rule == GUARD_RULE_H1 && (req->mode & (S_IWGRP | S_IWOTH)))
			return guard_refuse_why(v, GUARD_RULE_H1,
						"a home's folder opened to other accounts' writes");
		return check_write(req->cls, v);
	case GUARD_OP_CHOWN:
	case GUARD_OP_TOUCH:
		return check_write(req->cls, v);
	case GUARD_OP_CREATE:
	case GUARD_OP_MKDIR:
		return check_new(g, req->parent, req->parent_fd, req->name,
				 req->op == GUARD_OP_MKDIR ? S_IFDIR : (req->mode & S_IFMT), false,
				 v);
	case GUARD_OP_SYMLINK:
		/* HEAD under core.preferSymlinkRefs: judged as the file git writes otherwise */
		mode = head_symlink(req) ? S_IFREG : S_IFLNK;
		rc = check_new(g, req->parent, req->parent_fd, req->name, mode, false, v);
		if (!rc && S_ISLNK(mode))
			rc = check_x1(g, req->parent_path, req->parent_fd, req->target, v);
		return rc;
	case GUARD_OP_LINK:
		if (req->cls->kind != GUARD_BOTREPO &&
		    (req->cls->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN | GUARD_CHK)))
			return guard_refuse(v, req->cls->rule);
		/* a new name for content nobody checked, still writable by its other name */
		if (req->parent->kind != GUARD_BOTREPO &&
		    (rc = (int)guard_content_rule(req->parent, req->name)))
			return guard_refuse_why(v, (unsigned)rc,
						"hard link onto a content-checked name");
		rc = check_new(g, req->parent, req->parent_fd, req->name, req->mode & S_IFMT,
			       false, v);
		return rc ? rc : check_moved_link(g, req, v);
	case GUARD_OP_UNLINK:
	case GUARD_OP_RMDIR:
		return check_remove(req->cls, v);
	case GUARD_OP_RENAME:
		rc = check_move(g, req->cls, req->mode, req->fd, req->parent, req->parent_fd,
				req->name, req->victim, !same_folder(req), v);
		return rc ? rc : check_moved_link(g, req, v);
	case GUARD_OP_EXCHANGE:
		if (!req->victim)
			return -EINVAL;
		rc = check_remove(req->cls, v);
		if (!rc)
			rc = check_remove(req->victim, v);
		/* X2/X4: an exchange would put unchecked content in place */
		if (!rc && (req->cls->flags & GUARD_CHK) && req->cls->kind != GUARD_BOTREPO)
			rc = guard_refuse(v, req->cls->rule);
		if (!rc && (req->victim->flags & GUARD_CHK) && req->victim->kind != GUARD_BOTREPO)
			rc = guard_refuse(v, req->victim->rule);
		/* X1: a symlink's target means something else in the other folder */
		if (!rc && !same_folder(req))
			rc = check_exchanged_links(g, req, v);
		if (!rc)
			rc = check_move(g, req->cls, req->mode, req->fd, req->parent,
					req->parent_fd, req->name, NULL, !same_folder(req), v);
		if (!rc)
			rc = check_move(g, req->victim, req->victim_mode, req->victim_fd,
					req->src_parent, req->src_parent_fd, req->src_name, NULL,
					!same_folder(req), v);
		return rc;
	}
	return -EINVAL;
}

/*
 * A write-open of an inode with several names: is it a protected file reached
 * through an ordinary name?  Cheap: nothing but a test when nothing is recorded.
 */
int guard_check_inode(struct guard *g, const struct stat *st, struct guard_verdict *v)
{
	uint8_t rule = 0, f;

	if (S_ISDIR(st->st_mode) || st->st_nlink < 2 || !atomic_load(&g->ntab_hint))
		return 0;
	pthread_rwlock_rdlock(&g->lock);
	f = guard_tab_inode(g, st->st_dev, st->st_ino, &rule);
	pthread_rwlock_unlock(&g->lock);
	if (f & (GUARD_RO | GUARD_TREE))
		return guard_refuse(v, rule ? rule : GUARD_RULE_HL);
	return 0;
}

/* Records a repository the bot made (allow_new_repos). */
int guard_add_bot_repo(struct guard *g, uint64_t dev, uint64_t ino, const char *path)
{
	struct guard_repo *r;
	size_t i;
	int rc = 0;

	pthread_rwlock_wrlock(&g->lock);
	for (i = 0; i < g->nrepos; i++)
		if (g->repos[i]->dev == dev && g->repos[i]->ino == ino)
			break;
	if (i < g->nrepos) {
		/* known before as someone else's: it stays guarded */
		goto out;
	}
	r = calloc(1, sizeof(*r));
	if (!r || (path && !(r->path = strdup(path)))) {
		free(r);
		rc = -ENOMEM;
		goto out;
	}
	r->dev = dev;
	r->ino = ino;
	r->bot = true;
	if (gg_grow(&g->repos, &g->arepos, g->nrepos + 1, sizeof(*g->repos), 8)) {
		guard_repo_free(r);
		rc = -ENOMEM;
		goto out;
	}
	g->repos[g->nrepos++] = r;
out:
	pthread_rwlock_unlock(&g->lock);
	if (!rc)
		guard_logf(g, "gitguard: new repository made by the bot: %s",
			   path ? path : "(path unknown)");
	return rc;
}

/* The path of the folder holding PATH, in BUF */
static const char *dirname_of(const char *path, char *buf, size_t sz)
{
	const char *slash;

	if (!path)
		return NULL;
	slash = strrchr(path, '/');
	if (!slash)
		return ".";
	snprintf(buf, sz, "%.*s", (int)(slash - path), path);
	return buf;
}

/*
 * After a change succeeded: returns true when classes computed before may be
 * wrong now (then the generation has moved too).  Cheap for ordinary changes.
 */
bool guard_notify(struct guard *g, const struct guard_event *ev)
{
	const struct guard_cls *p = ev->parent;
	char buf[PATH_MAX];
	struct guard_cls c;
	bool changed = false;
	int has;

	if (ev->op == GUARD_OP_WRITE) {
		if (ev->cls && ev->cls->role == GUARD_R_CONFIG && p && p->kind == GUARD_GITDIR &&
		    ev->parent_fd >= 0)
			return guard_repo_rescan(g, p->dev, p->ino, ev->parent_fd);
		return false;
	}
	if (!p || !ev->name || p->kind == GUARD_BOTREPO)
		return false;
	if (ev->st && g->allow_new) {
		bool isdir = S_ISDIR(ev->st->st_mode);

		if (name_is_dotgit(ev->name) && isdir) {
			changed = !guard_add_bot_repo(g, ev->st->st_dev, ev->st->st_ino, ev->path);
		} else if (name_is_dotgit(ev->name)) {
			pthread_rwlock_wrlock(&g->lock);
			if (!recs_add(&g->misc, ev->st->st_dev, ev->st->st_ino, NULL, REC_BOT,
				      GUARD_RULE_W1))
				guard_tab_rebuild(g);
			pthread_rwlock_unlock(&g->lock);
			changed = true;
		} else if (isdir && name_is_bare(ev->name) && p->kind != GUARD_GITDIR) {
			changed = !guard_add_bot_repo(g, ev->st->st_dev, ev->st->st_ino, ev->path);
		} else if (shape_bit(ev->name) && p->kind != GUARD_GITDIR && ev->parent_fd >= 0 &&
			   guard_shape(ev->parent_fd, &has)) {
			changed = !guard_add_bot_repo(g, p->dev, p->ino,
						      dirname_of(ev->path, buf, sizeof(buf)));
		}
	}
	if (p->kind == GUARD_GITDIR && ev->parent_fd >= 0) {
		guard_name_stage(g, p, ev->name, ev->st ? ev->st->st_mode : 0, &c);
		/* an index renamed in (every git add) changes no repository layout */
		if ((c.flags & ~GUARD_CHK) || c.role == GUARD_R_WORKTREES)
			changed |= guard_repo_rescan(g, p->dev, p->ino, ev->parent_fd);
	}
	/* a folder moved: what lies beneath it now hangs from another class */
	if (ev->op == GUARD_OP_RENAME && ev->st && S_ISDIR(ev->st->st_mode))
		changed = true;
	if (changed)
		guard_bump(g);
	return changed;
}
