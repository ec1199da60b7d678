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
#include <unistd.h>

#include "gitguard/ggutil.h"
#include "gitguard/guard-int.h"

static int refuse(struct guard_verdict *v, unsigned rule)
{
	if (v) {
		v->rule = guard_rule_name(rule);
		v->reason = guard_rule_reason(rule);
	}
	return -EROFS;
}

static int refuse_why(struct guard_verdict *v, unsigned rule, const char *reason)
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
		return refuse(v, c->rule);
	return 0;
}

/* unlink, rmdir, or the source of a rename or exchange */
static int check_remove(const struct guard_cls *c, struct guard_verdict *v)
{
	if (c->kind == GUARD_BOTREPO)
		return 0;
	if (c->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN))
		return refuse(v, c->rule ? c->rule : GUARD_RULE_G3);
	if (c->kind == GUARD_GITDIR)
		return refuse(v, GUARD_RULE_G3);
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

static bool in_gitdir(const struct guard_cls *c)
{
	return c->kind == GUARD_GITDIR || c->kind == GUARD_INGIT;
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
		return refuse(v, parent->rule);
	/* nothing new in modules/ but inside a submodule's git folder (D6) */
	if (parent->role == GUARD_R_MODULES && parent->kind != GUARD_GITDIR)
		return refuse(v, GUARD_RULE_D6);
	if (name_is_dotgit(name)) {
		if (!g->allow_new)
			return refuse(v, GUARD_RULE_G1);
		return S_ISLNK(mode) && in_gitdir(parent) ? refuse(v, GUARD_RULE_D9) : 0;
	}
	guard_name_stage(g, parent, name, mode, &c);
	if (c.flags & (GUARD_RO | GUARD_TREE))
		return refuse(v, c.rule);
	/* D9: git makes no symlink in a git folder; one there sends git's reads and writes anywhere */
	if (S_ISLNK(mode) && in_gitdir(parent))
		return refuse(v, GUARD_RULE_D9);
	/* H1: a folder moved in as a home's .config or .ssh would bring its own config */
	if (move && (c.role == GUARD_R_HOMECFG || c.role == GUARD_R_HOMESSH))
		return refuse_why(v, GUARD_RULE_H1, "a folder moved in as a home's .config or .ssh");
	/*
	 * X2/X4: a regular file, renamed in (the caller checks its content) or,
	 * for X4 only, made empty and then written with each write checked.
	 */
	if ((c.flags & GUARD_CHK) && !S_ISREG(mode))
		return refuse_why(v, c.rule, "only a regular file may be put there");
	if ((c.flags & GUARD_CHK) && !move && c.rule == GUARD_RULE_X2)
		return refuse_why(v, c.rule, "made only by renaming a checked file onto it");
	/* X4: a symlink there would let git read strategy files from anywhere */
	if (c.role == GUARD_R_SEQ && !S_ISDIR(mode))
		return refuse_why(v, GUARD_RULE_X4, "rebase and sequencer state is a folder");
	if (c.kind == GUARD_GITDIR) {
		if (c.flags & GUARD_WT)
			return refuse_why(v, GUARD_RULE_D5, "new worktree");
		if (!g->allow_new)
			return refuse(v, GUARD_RULE_G2);
	}
	bit = shape_bit(name);
	if (bit && parent->kind != GUARD_GITDIR && parent_fd >= 0) {
		guard_shape(parent_fd, &has);
		if (!shape_complete(has) && shape_complete(has | bit) && !g->allow_new)
			return refuse(v, GUARD_RULE_G2);
	}
	if (atomic_load(&g->ntab_hint)) {
		uint8_t rule = 0, f;

		pthread_rwlock_rdlock(&g->lock);
		f = guard_tab_missing(g, parent->dev, parent->ino, name, &rule);
		pthread_rwlock_unlock(&g->lock);
		if (f & (GUARD_RO | GUARD_TREE))
			return refuse(v, rule);
	}
	return 0;
}

/*
 * One folder of the walk: its class, the names of the folders in it still to
 * visit, and an O_PATH fd (-1 once it left the window of open folders).
 */
struct wlevel {
	uint64_t dev;
	uint64_t ino;
	int fd;
	struct guard_cls cls;
	char *names; /* NUL-separated */
	size_t len;
	size_t alloc;
	size_t off;
};

struct wstate {
	struct guard *g;
	struct wlevel *lv;
	size_t n;
	size_t alloc;
	unsigned *budget;
	struct guard_verdict *v;
};

static int wlevel_add_name(struct wlevel *l, const char *name)
{
	size_t need = strlen(name) + 1;

	if (gg_grow(&l->names, &l->alloc, l->len + need, 1, 256))
		return -ENOMEM;
	memcpy(l->names + l->len, name, need);
	l->len += need;
	return 0;
}

/* Is the entry NAME of level L (not a folder to enter) unprotected? */
static int walk_entry(struct wstate *w, struct wlevel *l, const char *name, const struct stat *st)
{
	struct guard_cls c;

	if (S_ISLNK(st->st_mode) && in_gitdir(&l->cls))
		return refuse(w->v, GUARD_RULE_D9);
	if (guard_classify(w->g, &l->cls, l->fd, name, st, -1, &c) < 0)
		return refuse_why(w->v, GUARD_RULE_G3, "folder cannot be checked");
	if (c.kind != GUARD_BOTREPO && guard_cls_protected(&c))
		return refuse(w->v, c.kind == GUARD_GITDIR ? GUARD_RULE_G3 : c.rule);
	return 0;
}

/* Reads level L: checks what is not a folder now, keeps folder names for later */
static int walk_read(struct wstate *w, struct wlevel *l)
{
	struct dirent *de;
	struct stat st;
	int fd, rc = 0;
	DIR *d;

	fd = openat(l->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return refuse_why(w->v, GUARD_RULE_G3, "folder cannot be read to check it");
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return refuse_why(w->v, GUARD_RULE_G3, "folder cannot be read to check it");
	}
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!*w->budget) {
			rc = refuse_why(w->v, GUARD_RULE_G3,
					"folder too large to check for git folders");
			break;
		}
		(*w->budget)--;
		if (fstatat(l->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			rc = wlevel_add_name(l, de->d_name) ? -ENOMEM : 0;
		else
			rc = walk_entry(w, l, de->d_name, &st);
	}
	closedir(d);
	return rc;
}

/* Enters the folder NAME of the top level: class it, then read it */
static int walk_push(struct wstate *w, const char *name)
{
	struct wlevel *top = &w->lv[w->n - 1], *l;
	struct guard_cls c;
	struct stat st;
	int cfd;

	cfd = openat(top->fd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0) {
		/* raced: no longer a folder, or gone */
		if (fstatat(top->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
			return 0;
		return walk_entry(w, top, name, &st);
	}
	if (fstat(cfd, &st) < 0 || guard_classify(w->g, &top->cls, top->fd, name, &st, cfd, &c)) {
		close(cfd);
		return refuse_why(w->v, GUARD_RULE_G3, "folder cannot be checked");
	}
	if (c.kind == GUARD_BOTREPO) {
		close(cfd);
		return 0;
	}
	if (guard_cls_protected(&c)) {
		close(cfd);
		return refuse(w->v, c.kind == GUARD_GITDIR ? GUARD_RULE_G3 : c.rule);
	}
	if (w->n > GUARD_WALK_DEPTH) {
		close(cfd);
		return refuse_why(w->v, GUARD_RULE_G3, "folder too deep to check for git folders");
	}
	if (gg_grow(&w->lv, &w->alloc, w->n + 1, sizeof(*w->lv), 16)) {
		close(cfd);
		return -ENOMEM;
	}
	/* keep at most GUARD_WALK_FDS folders open: the older ones are found again by ".." */
	if (w->n >= GUARD_WALK_FDS && w->lv[w->n - GUARD_WALK_FDS].fd >= 0) {
		close(w->lv[w->n - GUARD_WALK_FDS].fd);
		w->lv[w->n - GUARD_WALK_FDS].fd = -1;
	}
	l = &w->lv[w->n++];
	memset(l, 0, sizeof(*l));
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	l->fd = cfd;
	l->cls = c;
	return walk_read(w, l);
}

/* Leaves the top level; the one above gets its fd back if it had lost it */
static int walk_pop(struct wstate *w)
{
	struct wlevel *l = &w->lv[w->n - 1], *up;
	struct stat st;
	int rc = 0;

	if (w->n > 1 && (up = &w->lv[w->n - 2])->fd < 0) {
		up->fd = openat(l->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up->fd < 0 || fstat(up->fd, &st) < 0 || (uint64_t)st.st_dev != up->dev ||
		    (uint64_t)st.st_ino != up->ino)
			rc = refuse_why(w->v, GUARD_RULE_G3, "folder moved while it was checked");
	}
	if (l->fd >= 0)
		close(l->fd);
	free(l->names);
	w->n--;
	return rc;
}

/*
 * Everything beneath the folder DFD (class DCLS) must be unprotected: a
 * rename moves it all.  DCLS is the class the folder has where it is (G3), or
 * would have at its new place (NC).  Iterative, depth-first: at most
 * GUARD_WALK_DEPTH levels, GUARD_WALK_FDS folders open and BUDGET entries,
 * so no chain of folders can exhaust the stack or the fds.
 */
static int walk(struct guard *g, int dfd, const struct guard_cls *dcls, unsigned *budget,
		struct guard_verdict *v)
{
	struct wstate w = {.g = g, .budget = budget, .v = v, .alloc = 64};
	struct wlevel *top;
	struct stat st;
	int rc;

	w.lv = calloc(w.alloc, sizeof(*w.lv));
	if (!w.lv)
		return -ENOMEM;
	top = &w.lv[w.n++];
	top->fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (top->fd < 0 || fstat(top->fd, &st) < 0) {
		rc = refuse_why(v, GUARD_RULE_G3, "folder cannot be read to check it");
		goto out;
	}
	top->dev = st.st_dev;
	top->ino = st.st_ino;
	top->cls = *dcls;
	rc = walk_read(&w, top);
	while (!rc && w.n) {
		top = &w.lv[w.n - 1];
		if (top->off < top->len) {
			const char *name = top->names + top->off;

			top->off += strlen(name) + 1;
			rc = walk_push(&w, name);
		} else {
			rc = walk_pop(&w);
		}
	}
out:
	while (w.n) {
		top = &w.lv[--w.n];
		if (top->fd >= 0)
			close(top->fd);
		free(top->names);
	}
	free(w.lv);
	return rc;
}

/*
 * A rename or exchange moves CLS (type MODE, fd FD when a folder) from where
 * it is to NAME in PARENT, replacing VICTIM if any.
 */
static int check_move(struct guard *g, const struct guard_cls *cls, mode_t mode, int fd,
		      const struct guard_cls *parent, int parent_fd, const char *name,
		      const struct guard_cls *victim, struct guard_verdict *v)
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
		return refuse_why(v, GUARD_RULE_G3, "folder rename without its fd");
	/* G3: no git folder beneath, nor anything else protected */
	rc = walk(g, fd, cls, &budget, v);
	if (rc || parent->kind == GUARD_PLAIN || parent->kind == GUARD_BOTREPO)
		return rc;
	/* into a git folder: what would each entry be there? */
	if (fstat(fd, &st) < 0)
		return refuse_why(v, GUARD_RULE_G3, "folder cannot be checked");
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
		return refuse(v, dc.kind == GUARD_GITDIR ? GUARD_RULE_G3 : dc.rule);
	budget = GUARD_WALK_BUDGET;
	return walk(g, fd, &dc, &budget, v);
}

/* Lexically, does PATH name a git folder (a .git or NAME.git component)? */
static bool names_gitdir(const char *path)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *e;
	size_t n;

	while (*p) {
		while (*p == '/')
			p++;
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n && n < sizeof(comp)) {
			memcpy(comp, p, n);
			comp[n] = '\0';
			if (name_is_dotgit(comp) || name_is_bare(comp))
				return true;
		}
		p += n;
	}
	return false;
}

/* X1: a new symlink whose target, taken lexically, enters a git folder */
static int check_x1(struct guard *g, const char *parent_path, const char *target,
		    struct guard_verdict *v)
{
	char path[PATH_MAX * 2], abs[PATH_MAX * 3];
	struct guard_cls cls, c;
	const char *rel, *p, *e;
	char comp[NAME_MAX + 1];
	struct stat st;
	int cur, nfd, rc = 0;
	size_t n, rl;

	if (!target || !*target)
		return 0;
	if (names_gitdir(target))
		return refuse(v, GUARD_RULE_X1);
	n = (size_t)snprintf(path, sizeof(path), "%s/%s", parent_path ? parent_path : "", target);
	if (n >= sizeof(path))
		return refuse_why(v, GUARD_RULE_X1, "symlink target too long to check");
	rel = path;
	if (target[0] == '/' || !gg_path_rel(path)) {
		/* absolute, or climbing out: "/.." is "/", and "../root" may come back in */
		if (!g->root_path)
			return 0;
		if (target[0] == '/')
			n = (size_t)snprintf(abs, sizeof(abs), "%s", target);
		else
			n = (size_t)snprintf(abs, sizeof(abs), "%s/%s/%s", g->root_path,
					     parent_path ? parent_path : "", target);
		if (n >= sizeof(abs) || gg_path_abs(abs, path, sizeof(path)))
			return refuse_why(v, GUARD_RULE_X1, "symlink target too long to check");
		rl = strlen(g->root_path);
		if (strncmp(path, g->root_path, rl) || (path[rl] && path[rl] != '/'))
			return 0; /* outside the root, and no .git in its name */
		rel = path + rl;
	}
	if (guard_classify_root(g, &cls, NULL) < 0)
		return refuse_why(v, GUARD_RULE_X1, "root cannot be classified");
	if (cls.kind == GUARD_GITDIR || cls.kind == GUARD_INGIT)
		return refuse(v, GUARD_RULE_X1);
	cur = fcntl(g->root_fd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return refuse_why(v, GUARD_RULE_X1, "root cannot be opened");
	for (p = rel; *p && !rc; p += n) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n >= sizeof(comp))
			break;
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0)
			break; /* not there (yet): G1/G2 keep it from becoming a git folder */
		if (fstat(nfd, &st) < 0 || guard_classify(g, &cls, cur, comp, &st, nfd, &c) < 0) {
			close(nfd);
			rc = refuse_why(v, GUARD_RULE_X1, "symlink target cannot be checked");
			break;
		}
		if (c.kind == GUARD_GITDIR || c.kind == GUARD_INGIT) {
			close(nfd);
			rc = refuse(v, GUARD_RULE_X1);
			break;
		}
		close(cur);
		cur = nfd;
		cls = c;
		if (!S_ISDIR(st.st_mode))
			break; /* a symlink or a file: the lexical walk ends here */
	}
	close(cur);
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
			rc = refuse_why(v, GUARD_RULE_X2, "index written in place, not renamed in");
		return rc;
	case GUARD_OP_CHMOD:
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
			rc = check_x1(g, req->parent_path, req->target, v);
		return rc;
	case GUARD_OP_LINK:
		if (req->cls->kind != GUARD_BOTREPO &&
		    (req->cls->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN | GUARD_CHK)))
			return refuse(v, req->cls->rule);
		/* a new name for content nobody checked, still writable by its other name */
		if (req->parent->kind != GUARD_BOTREPO &&
		    (rc = (int)guard_content_rule(req->parent, req->name)))
			return refuse_why(v, (unsigned)rc, "hard link onto a content-checked name");
		return check_new(g, req->parent, req->parent_fd, req->name, req->mode & S_IFMT,
				 false, v);
	case GUARD_OP_UNLINK:
	case GUARD_OP_RMDIR:
		return check_remove(req->cls, v);
	case GUARD_OP_RENAME:
		return check_move(g, req->cls, req->mode, req->fd, req->parent, req->parent_fd,
				  req->name, req->victim, v);
	case GUARD_OP_EXCHANGE:
		if (!req->victim)
			return -EINVAL;
		rc = check_remove(req->cls, v);
		if (!rc)
			rc = check_remove(req->victim, v);
		/* X2/X4: an exchange would put unchecked content in place */
		if (!rc && (req->cls->flags & GUARD_CHK) && req->cls->kind != GUARD_BOTREPO)
			rc = refuse(v, req->cls->rule);
		if (!rc && (req->victim->flags & GUARD_CHK) && req->victim->kind != GUARD_BOTREPO)
			rc = refuse(v, req->victim->rule);
		if (!rc)
			rc = check_move(g, req->cls, req->mode, req->fd, req->parent,
					req->parent_fd, req->name, NULL, v);
		if (!rc)
			rc = check_move(g, req->victim, req->victim_mode, req->victim_fd,
					req->src_parent, req->src_parent_fd, req->src_name, NULL,
					v);
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
		return refuse(v, rule ? rule : GUARD_RULE_HL);
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

/*
 * Content-checked names (gitguard.h): GUARD_RULE_X2 for a git folder's
 * `index` and `sharedindex.*`, GUARD_RULE_X4 for the strategy files in
 * rebase-merge/, rebase-apply/ and sequencer/, else 0.
 */
unsigned guard_content_rule(const struct guard_cls *parent, const char *name)
{
	if (parent->kind == GUARD_GITDIR)
		return name_is(name, "index") || !strncasecmp(name, "sharedindex.", 12)
			       ? GUARD_RULE_X2
			       : 0;
	if (parent->kind == GUARD_INGIT && parent->role == GUARD_R_SEQ &&
	    (name_is(name, "strategy") || name_is(name, "strategy_opts") || name_is(name, "opts")))
		return GUARD_RULE_X4;
	return 0;
}

/* 0 if BUF may become the file NAME of rule RULE, else -EROFS with *WHY */
int guard_content_check(unsigned rule, const char *name, const char *buf, size_t len, size_t hashsz,
			const char **why)
{
	int rc = -1;

	*why = "unknown content rule";
	if (rule == GUARD_RULE_X2)
		rc = guard_index_check_hash(buf, len, hashsz, why);
	else if (rule == GUARD_RULE_X4)
		rc = guard_seq_file_check(name, buf, len, why);
	return rc ? -EROFS : 0;
}

/*
 * As guard_content_check, reading FD (open for reading): a regular file with
 * one name, no larger than the rule's cap.  For X2 with G, DIRFD is the git
 * folder it goes into: guard_index_worktree() too.
 */
int guard_content_fd(struct guard *g, int dirfd, unsigned rule, const char *name, int fd,
		     size_t hashsz, const char **why)
{
	size_t cap = rule == GUARD_RULE_X2 ? GUARD_INDEX_MAX : GUARD_SEQ_MAX, len;
	struct stat st;
	char *buf;
	int rc;

	rc = guard_read_fd(fd, cap, &buf, &len, &st);
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
	if (!rc && rule == GUARD_RULE_X2 && g && dirfd >= 0)
		rc = guard_index_worktree(g, dirfd, buf, len, hashsz, why);
	free(buf);
	return rc;
}

/*
 * The hash size of the repository whose git folder is DFD: 32 with
 * extensions.objectFormat=sha256, else 20.  Read from the common folder's
 * config without includes, as git's read_repository_format does; when that
 * cannot be read, 20 (a SHA-256 index then fails the check: refused).
 */
size_t guard_hash_size(struct guard *g, int dfd)
{
	struct resolved res = {.fd = -1, .dirfd = -1};
	char path[GUARD_GITFILE_MAX], *buf;
	struct guard_cfg cfg = {0};
	size_t len, hs = 20;
	int cfgdir = dfd, rc;

	if (!guard_read_file(dfd, "commondir", GUARD_GITFILE_MAX, &buf, &len, NULL)) {
		rc = guard_parse_commondir(buf, len, path, sizeof(path));
		free(buf);
		if (rc || guard_resolve(g, dfd, path, true, NULL, NULL, &res) != RES_INSIDE ||
		    !S_ISDIR(res.st.st_mode)) {
			resolved_close(&res);
			return hs;
		}
		cfgdir = res.fd;
	}
	if (!guard_read_file(cfgdir, "config", GUARD_CONFIG_MAX, &buf, &len, NULL)) {
		if (!guard_config_scan(buf, len, &cfg) && cfg.sha256)
			hs = 32;
		free(buf);
	}
	resolved_close(&res);
	return hs;
}

#define WT_PROTECTED_MAX 16

/* Paths inside a work tree that git runs or reads as config, from its top */
struct wt_check {
	int topfd;
	bool linked; /* a linked worktree: includes are the main work tree's */
	size_t hashsz;
	char *paths[WT_PROTECTED_MAX];
	bool dir[WT_PROTECTED_MAX]; /* a hooks folder: everything beneath */
	size_t n;
};

/* Note a relative core.hooksPath (from the top) or include (from the git folder). */
static int wt_key(void *arg, enum guard_cfg_key key, const char *value)
{
	struct wt_check *w = arg;
	char buf[PATH_MAX];

	if (w->n >= WT_PROTECTED_MAX || value[0] == '/' || value[0] == '~' || !value[0])
		return 0;
	if (key == GUARD_CFG_HOOKSPATH) {
		snprintf(buf, sizeof(buf), "%s", value);
	} else if (key == GUARD_CFG_INCLUDE && !w->linked) {
		/* relative to the config's folder, .git: only ../ leads into the work tree */
		if (strncmp(value, "../", 3))
			return 0;
		snprintf(buf, sizeof(buf), "%s", value + 3);
	} else {
		return 0;
	}
	if (!gg_path_rel(buf) || !buf[0])
		return 0;
	w->paths[w->n] = strdup(buf);
	if (w->paths[w->n])
		w->dir[w->n++] = key == GUARD_CFG_HOOKSPATH;
	return 0;
}

/* The work-tree entry PATH (from topfd) has the content of blob OID? */
static bool wt_same(struct wt_check *w, const char *path, uint32_t mode, const unsigned char *oid)
{
	char comp[NAME_MAX + 1], lnk[PATH_MAX], *buf = NULL;
	const char *p = path, *e;
	unsigned char sum[20];
	struct stat st;
	int fd, nfd;
	size_t n, len;
	bool same = false;

	if (w->hashsz != 20 || (mode != 0100644 && mode != 0100755 && mode != 0120000))
		return false;
	fd = fcntl(w->topfd, F_DUPFD_CLOEXEC, 3);
	while (fd >= 0 && (e = strchr(p, '/'))) {
		n = (size_t)(e - p);
		if (n >= sizeof(comp))
			break;
		memcpy(comp, p, n);
		comp[n] = '\0';
		nfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = nfd;
		p = e + 1;
	}
	if (fd < 0 || strchr(p, '/') || fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (mode == 0120000 && S_ISLNK(st.st_mode)) {
		ssize_t l = readlinkat(fd, p, lnk, sizeof(lnk));

		if (l >= 0 && (size_t)l < sizeof(lnk)) {
			guard_blob_sha1(lnk, (size_t)l, sum);
			same = !memcmp(sum, oid, 20);
		}
	} else if (mode != 0120000 && S_ISREG(st.st_mode) &&
		   !guard_read_file(fd, p, GUARD_CONFIG_MAX * 16, &buf, &len, NULL)) {
		guard_blob_sha1(buf, len, sum);
		same = !memcmp(sum, oid, 20);
		free(buf);
	}
	close(fd);
	return same;
}

static int wt_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
		    const char **why)
{
	struct wt_check *w = arg;
	size_t i, l;

	for (i = 0; i < w->n; i++) {
		l = strlen(path);
		/* an entry standing for a folder on the way to it: never the same */
		if (!strncmp(w->paths[i], path, l) && w->paths[i][l] == '/') {
			*why = "an entry over a folder that holds a hook or config file";
			return 1;
		}
		l = strlen(w->paths[i]);
		if (strncmp(path, w->paths[i], l) || (path[l] && !(w->dir[i] && path[l] == '/')))
			continue;
		if (wt_same(w, path, mode, oid))
			return 0;
		*why = w->dir[i]
			       ? "an entry under core.hooksPath with content the hook does not have"
			       : "an entry for a config include target with other content";
		return 1;
	}
	return 0;
}

/* The path in the one-line file NAME of DFD, resolved inside the root */
static int wt_resolve(struct guard *g, int dfd, const char *name, bool follow, struct resolved *res)
{
	char path[GUARD_GITFILE_MAX], *buf;
	size_t len;
	int rc;

	res->fd = res->dirfd = -1;
	if (guard_read_file(dfd, name, GUARD_GITFILE_MAX, &buf, &len, NULL))
		return -1;
	rc = guard_parse_commondir(buf, len, path, sizeof(path));
	free(buf);
	if (rc || guard_resolve(g, dfd, path, follow, NULL, NULL, res) != RES_INSIDE) {
		resolved_close(res);
		return -1;
	}
	return 0;
}

/*
 * A linked worktree's admin folder DFD: its work tree's top (the folder
 * holding the .git file its gitdir names) and the common folder (config).
 */
static int wt_linked(struct guard *g, int dfd, int *topfd, int *cfgfd)
{
	struct resolved top, common;

	if (wt_resolve(g, dfd, "gitdir", false, &top))
		return -1;
	if (!S_ISREG(top.st.st_mode) || wt_resolve(g, dfd, "commondir", true, &common)) {
		resolved_close(&top);
		return -1;
	}
	if (!S_ISDIR(common.st.st_mode)) {
		resolved_close(&top);
		resolved_close(&common);
		return -1;
	}
	*topfd = fcntl(top.dirfd, F_DUPFD_CLOEXEC, 3);
	*cfgfd = fcntl(common.fd, F_DUPFD_CLOEXEC, 3);
	resolved_close(&top);
	resolved_close(&common);
	if (*topfd < 0 || *cfgfd < 0) {
		if (*topfd >= 0)
			close(*topfd);
		if (*cfgfd >= 0)
			close(*cfgfd);
		return -1;
	}
	return 0;
}

/*
 * X2 beyond paths: the index of a work tree whose git folder is DFD (a .git
 * folder: its top is its parent; a linked worktree's admin folder: the top
 * its gitdir names, with G) may not name a file the person's config
 * runs or reads (under a relative core.hooksPath, a relative include target
 * in the work tree) with content other than the file's: `git restore .`
 * would write it.  0, or -EROFS with *WHY.
 */
int guard_index_worktree(struct guard *g, int dfd, const char *buf, size_t len, size_t hashsz,
			 const char **why)
{
	struct wt_check w = {.topfd = -1, .hashsz = hashsz};
	struct guard_cfg cfg = {.fn = wt_key, .arg = &w};
	struct stat gst, st;
	int rc = 0, cfgfd;
	char *cbuf;
	size_t clen, i;

	w.topfd = openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w.topfd >= 0 && !fstat(dfd, &gst) &&
	    !fstatat(w.topfd, ".git", &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == gst.st_dev &&
	    st.st_ino == gst.st_ino) {
		cfgfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3); /* a .git folder at its work tree's top */
	} else {
		if (w.topfd >= 0)
			close(w.topfd);
		w.topfd = -1;
		w.linked = true;
		if (!g || wt_linked(g, dfd, &w.topfd, &cfgfd))
			goto out; /* a bare or submodule git folder: no work tree known here */
	}
	rc = guard_read_file(cfgfd, "config", GUARD_CONFIG_MAX, &cbuf, &clen, NULL);
	close(cfgfd);
	if (rc) {
		rc = 0;
		goto out;
	}
	guard_config_scan(cbuf, clen, &cfg);
	free(cbuf);
	if (w.n && guard_index_entries(buf, len, hashsz, wt_entry, &w, why) < 0)
		rc = -EROFS;
out:
	for (i = 0; i < w.n; i++)
		free(w.paths[i]);
	if (w.topfd >= 0)
		close(w.topfd);
	return rc;
}
