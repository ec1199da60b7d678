/*
 * H1: a person's own git configuration.  When a writable root holds a home
 * folder (a bot given /home/alice, /home or /), the bot could write
 * ~/.gitconfig or ~/.config/git/config, or a file they include, and the
 * person's next git anywhere would run what it names (core.fsmonitor,
 * core.hooksPath, a pager, a filter).  So every home folder of the host is
 * learnt at guard_open (getpwent(3), and /root) and kept by (dev, ino):
 *   - in a home, `.gitconfig` is RO and NC, whatever its type;
 *   - `.config` may be a folder only, is pinned (no rename or rmdir away,
 *     nothing moved in as it), and in it `git` is RO-tree;
 *   - a home inside the root and every folder on the way to it are pinned;
 *   - what a symlinked .gitconfig or .config/git names inside the root is
 *     protected too, and each of these configs is scanned like a
 *     repository's: include and includeIf targets (W3) and an absolute
 *     core.hooksPath (W2) inside the root are recorded.
 * A home outside the root is scanned too, read through the kernel (it is the
 * host's, not the bot's): its includes may name files inside the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitguard/guard-int.h"

#define HOMES_MAX 4096 /* home folders looked at; more are logged */

static int home_cmp(const void *a, const void *b)
{
	const struct guard_home *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* Is the folder (dev, ino) a home?  Read-only table: no lock. */
bool guard_is_home(struct guard *g, uint64_t dev, uint64_t ino)
{
	struct guard_home key = {dev, ino};

	return g->nhomes && bsearch(&key, g->homes, g->nhomes, sizeof(key), home_cmp);
}

/*
 * The name stage for a child of a home (or of a home's .config): true when
 * NAME is one of H1's, with OUT set.  Costs a name compare for other names.
 */
bool guard_home_stage(struct guard *g, const struct guard_cls *parent, const char *name,
		      mode_t mode, struct guard_cls *out)
{
	if (parent->kind != GUARD_PLAIN)
		return false;
	if (parent->role == GUARD_R_HOMECFG) {
		if (!name_is(name, "git"))
			return false;
		out->flags |= GUARD_RO | GUARD_TREE;
		out->rule = GUARD_RULE_H1;
		return true;
	}
	if (name_is(name, ".gitconfig")) {
		if (!guard_is_home(g, parent->dev, parent->ino))
			return false;
		out->flags |= GUARD_RO;
		out->rule = GUARD_RULE_H1;
		return true;
	}
	if (name_is(name, ".config")) {
		if (!guard_is_home(g, parent->dev, parent->ino))
			return false;
		/* a folder, pinned; anything else there (a symlink elsewhere) is refused */
		out->flags |= S_ISDIR(mode) ? GUARD_PIN : GUARD_RO;
		out->rule = GUARD_RULE_H1;
		if (S_ISDIR(mode))
			out->role = GUARD_R_HOMECFG;
		return true;
	}
	return false;
}

/* Where the records of the home scans are collected before they go to g->misc */
struct hscan {
	struct guard *g;
	struct guard_repo r; /* records only */
};

static int pin_cb(void *arg, const struct stat *st, bool is_link)
{
	struct hscan *h = arg;

	return recs_add(&h->r.recs, st->st_dev, st->st_ino, NULL, is_link ? GUARD_RO : GUARD_PIN,
			GUARD_RULE_H1);
}

/* Scans the config NAME in DIRFD for includes and hooksPath; logs what it cannot read */
static int scan_file(struct hscan *h, int dirfd, const char *name, uid_t owner, const char *what)
{
	int rc;

	h->r.rule = 0;
	rc = guard_scan_config_file(h->g, &h->r, dirfd, name, owner);
	if (!rc && h->r.rule)
		guard_logf(h->g, "gitguard: %s: %s (its includes may be unguarded)", what,
			   h->r.why);
	return rc;
}

/*
 * NAME in the home HOMEFD, inside the root: what it names (through symlinks,
 * all pinned) is RO (RO-tree for a folder), NC if missing; a config file is
 * scanned.  SUB, for a folder, is the config inside it to scan.
 */
static int home_inside(struct hscan *h, int homefd, const char *name, const char *sub, uid_t owner)
{
	struct resolved res;
	struct stat st, hst;
	int rc = 0;

	switch (guard_resolve(h->g, homefd, name, true, pin_cb, h, &res)) {
	case RES_INSIDE:
		rc = recs_add(&h->r.recs, res.st.st_dev, res.st.st_ino, NULL,
			      GUARD_RO | (S_ISDIR(res.st.st_mode) ? GUARD_TREE : 0), GUARD_RULE_H1);
		if (rc)
			break;
		if (!sub && S_ISREG(res.st.st_mode))
			rc = scan_file(h, res.dirfd, res.name, owner, name);
		else if (sub && S_ISDIR(res.st.st_mode) &&
			 !fstatat(res.fd, sub, &st, AT_SYMLINK_NOFOLLOW)) {
			rc = recs_add(&h->r.recs, st.st_dev, st.st_ino, NULL, GUARD_RO,
				      GUARD_RULE_H1);
			if (!rc && S_ISREG(st.st_mode))
				rc = scan_file(h, res.fd, sub, owner, name);
		}
		break;
	case RES_MISSING:
		/* missing in the home itself: the name stage refuses what must not be made */
		if (!fstat(res.dirfd, &st) && !fstat(homefd, &hst) &&
		    (st.st_dev != hst.st_dev || st.st_ino != hst.st_ino))
			rc = recs_add(&h->r.recs, st.st_dev, st.st_ino, res.name,
				      GUARD_RO | GUARD_TREE, GUARD_RULE_H1);
		break;
	default:
		break; /* outside the root: read by home_outside */
	}
	resolved_close(&res);
	return rc;
}

/* PATH (a config file, the kernel resolving it: the host's) is scanned for includes into the root */
static int home_outside(struct hscan *h, const char *path, uid_t owner)
{
	char real[PATH_MAX], *slash;
	int dfd, rc;

	if (!realpath(path, real))
		return 0;
	slash = strrchr(real, '/');
	if (!slash || !slash[1])
		return 0;
	*slash = '\0';
	dfd = open(*real ? real : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	rc = scan_file(h, dfd, slash + 1, owner, path);
	close(dfd);
	return rc;
}

/* A home DIR not made yet, inside the root: the bot may not make it */
static int home_missing(struct hscan *h, const char *dir)
{
	struct resolved res;
	struct stat st;
	int rc = 0;

	if (guard_resolve(h->g, -1, dir, true, pin_cb, h, &res) == RES_MISSING &&
	    !fstat(res.dirfd, &st))
		rc = recs_add(&h->r.recs, st.st_dev, st.st_ino, res.name, GUARD_RO | GUARD_TREE,
			      GUARD_RULE_H1);
	resolved_close(&res);
	return rc;
}

/* The home DIR: remembered by (dev, ino); inside the root, pinned and its configs guarded */
static int home_add(struct hscan *h, const char *dir, struct guard_home *tab, size_t *n)
{
	char path[PATH_MAX];
	struct resolved res;
	struct stat st;
	int rc = 0;

	if (dir[0] != '/' || *n >= HOMES_MAX)
		return 0;
	if (stat(dir, &st) < 0)
		return errno == ENOENT ? home_missing(h, dir) : 0;
	if (!S_ISDIR(st.st_mode))
		return 0;
	tab[(*n)++] = (struct guard_home){st.st_dev, st.st_ino};
	if (guard_resolve(h->g, -1, dir, true, pin_cb, h, &res) == RES_INSIDE &&
	    S_ISDIR(res.st.st_mode)) {
		rc = recs_add(&h->r.recs, res.st.st_dev, res.st.st_ino, NULL, GUARD_PIN,
			      GUARD_RULE_H1);
		rc = rc ? rc : home_inside(h, res.fd, ".gitconfig", NULL, st.st_uid);
		rc = rc ? rc : home_inside(h, res.fd, ".config/git", "config", st.st_uid);
		resolved_close(&res);
		return rc;
	}
	resolved_close(&res);
	if (snprintf(path, sizeof(path), "%s/.gitconfig", dir) < (int)sizeof(path))
		rc = home_outside(h, path, st.st_uid);
	if (!rc && snprintf(path, sizeof(path), "%s/.config/git/config", dir) < (int)sizeof(path))
		rc = home_outside(h, path, st.st_uid);
	return rc;
}

/*
 * At guard_open: every home of the host (getpwent, /root, and EXTRA, a
 * NULL-terminated list or NULL) into g->homes, and H1's records into g->misc.
 * Fails only for lack of memory.
 */
int guard_homes_load(struct guard *g, const char *const *extra)
{
	struct hscan h = {.g = g};
	struct guard_home *tab;
	struct passwd *pw;
	size_t n = 0, i, j;
	int rc = 0;

	tab = calloc(HOMES_MAX, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	rc = home_add(&h, "/root", tab, &n);
	setpwent();
	while (!rc && (pw = getpwent()))
		if (pw->pw_dir && strcmp(pw->pw_dir, "/") && strcmp(pw->pw_dir, "/root"))
			rc = home_add(&h, pw->pw_dir, tab, &n);
	endpwent();
	for (i = 0; !rc && extra && extra[i]; i++)
		rc = home_add(&h, extra[i], tab, &n);
	if (n >= HOMES_MAX)
		guard_logf(g, "gitguard: more than %d home folders: the others are not guarded",
			   HOMES_MAX);
	for (i = 0; !rc && i < h.r.recs.n; i++) {
		struct guard_rec *r = &h.r.recs.v[i];

		rc = recs_add(&g->misc, r->dev, r->ino, r->name, r->flags, r->rule);
	}
	recs_clear(&h.r.recs);
	if (rc) {
		free(tab);
		return rc;
	}
	qsort(tab, n, sizeof(*tab), home_cmp);
	for (i = j = 0; i < n; i++)
		if (!j || home_cmp(&tab[j - 1], &tab[i]))
			tab[j++] = tab[i];
	g->homes = tab;
	g->nhomes = j;
	if (g->misc.n) {
		pthread_rwlock_wrlock(&g->lock);
		guard_tab_rebuild(g);
		pthread_rwlock_unlock(&g->lock);
	}
	return 0;
}
