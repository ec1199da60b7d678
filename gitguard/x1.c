/* SPDX-License-Identifier: MIT */
/*
 * X1: a new, renamed or linked symlink whose target, resolved as the kernel
 * will (physical "..", symlinks followed), enters a git folder.  check.c
 * calls guard_check_x1() for symlink, rename, link and exchange.
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

/* Lexically, does PATH name a git folder (a .git or NAME.git component)? */
static bool names_gitdir(const char *path)
{
	char comp[PATH_MAX]; /* a target's component may be longer than NAME_MAX */
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
	int fd;	  /* where the walk is (O_PATH) */
	size_t n; /* levels in the root (0: outside it) */
	size_t alloc;
	struct x1lv *lv;
	char *rest; /* what is left to resolve */
	unsigned links;
	bool missing; /* a component was not there: the rest is judged by name */
	bool away;    /* outside the root, on another filesystem: the rest is judged by name */
	bool parent;  /* walking to the symlink's own folder: a symlink there is a race */
	bool local;   /* lv[0] is the symlink's folder, not the root: ".." above it restarts */
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
		w->local = false;
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

/* Is FD the host's "/"? */
static bool at_slash(int fd)
{
	struct stat a, b;

	return !fstat(fd, &a) && !stat("/", &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* ".." of the folder actually reached, not of the name that led there */
static int x1_up(struct x1walk *w)
{
	struct stat st, cur;
	int nfd;

	if (w->local && w->n == 1)
		return -EAGAIN; /* above the symlink's folder: only a walk from the root knows */
	nfd = openat(w->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (nfd < 0 || fstat(nfd, &st) < 0 || fstat(w->fd, &cur) < 0) {
		if (nfd >= 0)
			close(nfd);
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink target cannot be checked");
	}
	/*
	 * ".." of "/": nothing on the host, but a link that climbs above "/"
	 * leads elsewhere where the host's tree is not the top: in bwrap's
	 * setup of an `agentfs exec` sandbox, out of the new root into its view
	 * of the host (/oldroot), where a root bound through the link would
	 * lie over what bwrap reads next (its device nodes).
	 */
	if (st.st_dev == cur.st_dev && st.st_ino == cur.st_ino) {
		close(nfd);
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink climbing above /");
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
	if ((uint64_t)st.st_dev != w->lv[w->n - 1].dev ||
	    (uint64_t)st.st_ino != w->lv[w->n - 1].ino)
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
	w->local = false;
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
	if (nfd < 0 && !w->n && (!strcmp(comp, "oldroot") || !strcmp(comp, "newroot")) &&
	    at_slash(w->fd))
		return guard_refuse_why(w->v, GUARD_RULE_X1, "symlink into bwrap's /oldroot or /newroot");
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
	/*
	 * A target is a string, and its components may be longer than NAME_MAX
	 * (the kernel refuses only the link's own name): such a component is
	 * looked up like any other, and where its filesystem cannot hold it the
	 * lookup fails and it is "not there".  No component of a link's text is
	 * PATH_MAX long, so none is refused here for its length.
	 */
	char comp[PATH_MAX];
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
			return guard_refuse_why(w->v, GUARD_RULE_X1,
						"symlink target cannot be checked");
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
		if (n >= GUARD_WALK_DEPTH * 16 ||
		    gg_grow(&chain, &alloc, n + 1, sizeof(*chain), 64)) {
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
		else if (x1_step(w, name) || w->missing || !w->n || w->lv[w->n - 1].ino != chain[n])
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
		/* a try given up (-EAGAIN) may have filled the verdict on its way */
		if (k > 0 && w->v) {
			w->v->rule = w->v->reason = NULL;
			w->v->code = GUARD_RULE_NONE;
		}
		if (w->fd >= 0)
			close(w->fd);
		w->fd = fcntl(w->g->root_fd, F_DUPFD_CLOEXEC, 3);
		if (w->fd < 0)
			return guard_refuse_why(w->v, GUARD_RULE_X1, "root cannot be opened");
		w->lv[0].dev = w->g->root_dev;
		w->lv[0].ino = w->g->root_ino;
		w->n = 1;
		w->links = 0;
		w->missing = w->away = w->local = false;
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
 * A relative target starts in the symlink's own folder, whose class the
 * caller has (PC): no walk from the root, which a host renaming a folder
 * above it can send elsewhere meanwhile. Only a ".." above that folder
 * needs the root's walk (x1_up says -EAGAIN).
 */
static int x1_from_parent(struct x1walk *w, const struct guard_cls *pc, int parent_fd)
{
	struct stat st;

	if (guard_in_gitdir(pc))
		return guard_refuse(w->v, GUARD_RULE_X1);
	w->fd = fcntl(parent_fd, F_DUPFD_CLOEXEC, 3);
	if (w->fd < 0 || fstat(w->fd, &st) < 0)
		return -EAGAIN;
	w->lv[0].dev = st.st_dev;
	w->lv[0].ino = st.st_ino;
	w->lv[0].cls = *pc;
	w->n = 1;
	w->local = true;
	return x1_resolve(w);
}

/*
 * X1: a new symlink in the folder PARENT_FD (PARENT_PATH from the root, PC
 * its class, either may be NULL) whose target, resolved as the kernel will,
 * enters a git folder.
 */
int guard_check_x1(struct guard *g, const char *parent_path, int parent_fd,
		   const struct guard_cls *pc, const char *target, struct guard_verdict *v)
{
	struct x1walk w = {.g = g, .v = v, .fd = -1};
	size_t tl;
	int rc;

	if (!target || !*target)
		return 0;
	if (names_gitdir(target))
		return guard_refuse(v, GUARD_RULE_X1);
	/* bwrap's own names above a sandbox's root, which no host path has */
	if (!strncmp(target, "/oldroot", 8) && (target[8] == '/' || target[8] == '\0'))
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink into bwrap's /oldroot");
	if (!strncmp(target, "/newroot", 8) && (target[8] == '/' || target[8] == '\0'))
		return guard_refuse_why(v, GUARD_RULE_X1, "symlink into bwrap's /newroot");
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
	if (pc != NULL && parent_fd >= 0 && target[0] != '/') {
		rc = x1_from_parent(&w, pc, parent_fd);
		if (rc != -EAGAIN)
			goto out;
		free(w.rest);
		w.rest = strdup(target);
		if (!w.rest) {
			rc = -ENOMEM;
			goto out;
		}
	}
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
