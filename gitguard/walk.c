/* SPDX-License-Identifier: MIT */
/*
 * G3's walk: is everything beneath a folder unprotected, so that renaming the
 * folder moves nothing git trusts?  Iterative and bounded (depth, open fds,
 * entries), so no tree a bot builds can exhaust the stack or the fds.
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
	bool links; /* X1: the folder changes parent, so no relative symlink may climb out */
	bool moving; /* G3: the folder moves away from where it is (see walk_protected) */
	bool botrepo; /* a repository of the bot's is beneath */
};

/*
 * A protected entry found beneath the folder. When the folder moves away
 * (G3), the refusal is G3's whatever the entry is: moving the folder is what
 * is refused, and which entry the walk meets first depends on the order
 * readdir gives, so a bot (and the log's reader) must see one rule for one
 * act. When the folder moves into a git folder, the entry is refused by what
 * it would be there, its own rule.
 */
static int walk_protected(struct wstate *w, const struct guard_cls *c)
{
	if (c->kind == GUARD_GITDIR)
		return guard_refuse(w->v, GUARD_RULE_G3);
	if (w->moving)
		return guard_refuse_why(w->v, GUARD_RULE_G3,
					"folder holds a file git trusts (its own rule protects it)");
	return guard_refuse(w->v, c->rule);
}

static int wlevel_add_name(struct wlevel *l, const char *name)
{
	size_t need = strlen(name) + 1;

	if (gg_grow(&l->names, &l->alloc, l->len + need, 1, 256))
		return -ENOMEM;
	memcpy(l->names + l->len, name, need);
	l->len += need;
	return 0;
}

/*
 * X1 for a folder moved to another parent: a relative symlink NAME of level L
 * whose target climbs above the moved folder would point somewhere new, so it
 * is refused (judging it at the new place is for the one symlink moved alone).
 */
static int walk_link(struct wstate *w, struct wlevel *l, const char *name)
{
	char target[PATH_MAX], comp[NAME_MAX + 1];
	long depth = (long)(l - w->lv);
	const char *p = target;
	ssize_t n;
	int c;

	n = readlinkat(l->fd, name, target, sizeof(target) - 1);
	if (n <= 0)
		return guard_refuse_why(w->v, GUARD_RULE_X1,
					"symlink in the folder cannot be read");
	target[n] = '\0';
	if (target[0] == '/')
		return 0;
	while ((c = gg_path_next(&p, comp, sizeof(comp))) != 0) {
		if (c < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1,
						"symlink in the folder cannot be checked");
		if (!strcmp(comp, "..") && --depth < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1,
						"folder holds a symlink leading out of it");
		if (strcmp(comp, ".") && strcmp(comp, ".."))
			depth++;
	}
	return 0;
}

/* Is the entry NAME of level L (not a folder to enter) unprotected? */
static int walk_entry(struct wstate *w, struct wlevel *l, const char *name, const struct stat *st)
{
	struct guard_cls c;

	if (w->links && S_ISLNK(st->st_mode) && l->fd >= 0) {
		int rc = walk_link(w, l, name);

		if (rc)
			return rc;
	}

	if (S_ISLNK(st->st_mode) && guard_in_gitdir(&l->cls))
		return guard_refuse(w->v, GUARD_RULE_D9);
	if (guard_classify(w->g, &l->cls, l->fd, name, st, -1, &c) < 0)
		return guard_refuse_why(w->v, GUARD_RULE_G3, "folder cannot be checked");
	if (c.kind != GUARD_BOTREPO && guard_cls_protected(&c))
		return walk_protected(w, &c);
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
		return guard_refuse_why(w->v, GUARD_RULE_G3, "folder cannot be read to check it");
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return guard_refuse_why(w->v, GUARD_RULE_G3, "folder cannot be read to check it");
	}
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!*w->budget) {
			rc = guard_refuse_why(w->v, GUARD_RULE_G3,
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
		return guard_refuse_why(w->v, GUARD_RULE_G3, "folder cannot be checked");
	}
	if (c.kind == GUARD_BOTREPO) {
		w->botrepo = true;
		close(cfd);
		return 0;
	}
	if (guard_cls_protected(&c)) {
		close(cfd);
		return walk_protected(w, &c);
	}
	if (w->n > GUARD_WALK_DEPTH) {
		close(cfd);
		return guard_refuse_why(w->v, GUARD_RULE_G3,
					"folder too deep to check for git folders");
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
			rc = guard_refuse_why(w->v, GUARD_RULE_G3,
					      "folder moved while it was checked");
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
 * so no chain of folders can exhaust the stack or the fds.  LINKS: the
 * folder moves to another parent (X1, walk_link).
 */
int guard_walk(struct guard *g, int dfd, const struct guard_cls *dcls, unsigned *budget, bool links,
	       bool moving, bool *botrepo, struct guard_verdict *v)
{
	struct wstate w = {
		.g = g, .budget = budget, .v = v, .alloc = 64, .links = links, .moving = moving};
	struct wlevel *top;
	struct stat st;
	int rc;

	w.lv = calloc(w.alloc, sizeof(*w.lv));
	if (!w.lv)
		return -ENOMEM;
	top = &w.lv[w.n++];
	top->fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (top->fd < 0 || fstat(top->fd, &st) < 0) {
		rc = guard_refuse_why(v, GUARD_RULE_G3, "folder cannot be read to check it");
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
	if (botrepo)
		*botrepo = w.botrepo;
	return rc;
}
