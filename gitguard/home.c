/* SPDX-License-Identifier: MIT */
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
 *   - `.ssh` and `.gnupg` are RO-tree, themselves included (NC, no chmod
 *     opening them to others): git over ssh runs what ~/.ssh/config and
 *     the files it Includes name (ProxyCommand, Match exec,
 *     KnownHostsCommand), a signing git runs gpg, whose agent runs what
 *     ~/.gnupg/gpg-agent.conf names (pinentry-program), and a key in
 *     authorized_keys is a way back in past the sandbox;
 *   - a home inside the root and every folder on the way to it are pinned,
 *     and with ~/.config get no chmod that lets group or others write
 *     (check.c: another account could swap ~/.gitconfig);
 *   - what a symlinked .gitconfig, .config/git(/config), .ssh or .gnupg
 *     names inside the root is protected too, and so is what each symlink
 *     in .ssh and .gnupg names (GNU stow folds ~/.ssh/config.d into a
 *     dotfiles folder), for a home outside the root as well, and what
 *     ~/.ssh/config Includes inside the root (ssh_scan); the git configs
 *     are scanned like a repository's: include and includeIf targets (W3)
 *     and an absolute core.hooksPath (W2) inside the root are recorded.
 * A home outside the root is scanned too, read through the kernel (it is the
 * host's, not the bot's): its includes may name files inside the root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gitguard/guard-int.h"
#include "gitguard/home-int.h"

#define HOME_OUTSIDE_MAX 256 /* config files outside the root one home scan reads */
#define HOME_WALK_DEPTH 8    /* folder levels of ~/.ssh, ~/.gnupg and their links walked */
#define HOME_WALK_MAX 4096   /* entries of them looked at a home */

int home_cmp(const void *a, const void *b)
{
	const struct guard_home *x = a, *y = b;

	return guard_devino_cmp(x->dev, x->ino, y->dev, y->ino);
}

/* Is the folder (dev, ino) a home?  Read-only table: no lock. */
bool guard_is_home(struct guard *g, uint64_t dev, uint64_t ino)
{
	struct guard_home key = {dev, ino};

	return g->nhomes && bsearch(&key, g->homes, g->nhomes, sizeof(key), home_cmp);
}

/*
 * What the programs git starts by default read when they start: the pager
 * (less: `git log`, `git diff` on a terminal) and the editor (`git commit`,
 * `rebase -i`: vi, nano, emacs, whatever ~/.selected_editor says).  Their
 * start-up files run commands (lesskey's #env LESSOPEN, a vimrc's autocmd).
 * less reads a source lesskey (~/.lesskey, ~/.config/lesskey) and, as less
 * 590 still does, a binary one compiled by lesskey(1) (~/.less,
 * ~/.config/less), whose env section sets LESSOPEN too.  And husky's,
 * sourced before every hook of every husky repository (~/.huskyrc for husky
 * 4 to 8, ~/.config/husky/init.sh for husky 9); and the credential helpers'
 * files (git credential-store's ~/.git-credentials, credential-cache's
 * socket folder ~/.git-credential-cache), which say whose credentials the
 * person's git sends where.  And gitk's old settings file, ~/.gitk, which
 * gitk (git's history viewer, which `git bisect visualize` starts) sources
 * as Tcl when ~/.config/git/gitk (H1's, in .config/git) is missing.  ssh's
 * and gpg's are .ssh and .gnupg (below).
 * TREE: a folder, read-only with everything in it.
 */
struct startup_file {
	const char *name;
	bool tree;
};

static const struct startup_file run_by_git_home[] = {
	{".lesskey", false},	     {".less", false},	     {".lessfilter", false},
	{".vimrc", false},	     {".exrc", false},	     {".vim", true},
	{".nanorc", false},	     {".emacs", false},	     {".emacs.el", false},
	{".emacs.d", true},	     {".selected_editor", false}, {".huskyrc", false},
	{".git-credentials", false}, {".git-credential-cache", true},
	{".gitk", false},
};

static const struct startup_file run_by_git_config[] = {
	{"lesskey", false}, {"less", false},  {"nvim", true},  {"vim", true},
	{"nano", true},	    {"emacs", true}, {"husky", true},
};

static int run_by_git(const char *name, bool in_config)
{
	size_t i, n = in_config ? sizeof(run_by_git_config) / sizeof(run_by_git_config[0])
				: sizeof(run_by_git_home) / sizeof(run_by_git_home[0]);

	for (i = 0; i < n; i++) {
		const char *want = in_config ? run_by_git_config[i].name : run_by_git_home[i].name;

		if (name_is(name, want))
			return in_config ? run_by_git_config[i].tree : run_by_git_home[i].tree;
	}
	return -1;
}

/*
 * The name stage for a child of a home (or of a home's .config): true when
 * NAME is one of H1's, with OUT set.  Costs a name compare for other names.
 */
bool guard_home_stage(struct guard *g, const struct guard_cls *parent, const char *name,
		      mode_t mode, struct guard_cls *out)
{
	int tree;

	if (parent->kind != GUARD_PLAIN)
		return false;
	if (parent->role == GUARD_R_HOMECFG) {
		/* in ~/.config git/, and the pager's and editors' start-up files */
		if (name_is(name, "git"))
			tree = 1;
		else if ((tree = run_by_git(name, true)) < 0)
			return false;
		out->flags |= GUARD_RO | (tree ? GUARD_TREE : 0);
		out->rule = GUARD_RULE_H1;
		return true;
	}
	if (name_is(name, ".gitconfig") || name_is(name, ".ssh") || name_is(name, ".gnupg")) {
		if (!guard_is_home(g, parent->dev, parent->ino))
			return false;
		/*
		 * ~/.ssh and ~/.gnupg are RO-tree, themselves included: not made
		 * by the bot, not chmodded open to others, nothing in them written
		 */
		out->flags |= GUARD_RO | (name_is(name, ".gitconfig") ? 0 : GUARD_TREE);
		out->rule = GUARD_RULE_H1;
		return true;
	}
	if ((tree = run_by_git(name, false)) >= 0) {
		if (!guard_is_home(g, parent->dev, parent->ino))
			return false;
		out->flags |= GUARD_RO | (tree ? GUARD_TREE : 0);
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

void home_wfiles_free(struct guard_wfile *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(w[i].name);
	free(w);
}

static void hscan_free(struct hscan *h)
{
	recs_clear(&h->r.recs);
	if (h->r.watch != NULL) /* emptied by scan_file */
		free(h->r.watch->f);
	free(h->r.watch);
	h->r.watch = NULL;
	home_wfiles_free(h->w, h->nw);
	h->w = NULL;
	h->nw = 0;
}

/*
 * Watches NAME (a relative path) in DIRFD; ST NULL when missing.  Kept as the
 * absolute path the folder has now, not as a descriptor: a host with many
 * homes would otherwise hold many fds per mount.  A stat by path is only a
 * trigger (a folder moved makes it change too); what is guarded is read
 * again through descriptors.
 */
/* The absolute path NAME in the folder DIRFD has now, into OUT; false if it has none */
static bool fd_path(int dirfd, const char *name, char *out, size_t outsz)
{
	char proc[64], dir[PATH_MAX];
	ssize_t n;
	int len;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
	n = readlink(proc, dir, sizeof(dir) - 1);
	if (n <= 0 || dir[0] != '/')
		return false;
	dir[n] = '\0';
	len = snprintf(out, outsz, "%s/%s", strcmp(dir, "/") ? dir : "", name);
	return len > 0 && (size_t)len < outsz;
}

static int watch_add(struct hscan *h, int dirfd, const char *name, const struct stat *st)
{
	char path[PATH_MAX];
	struct guard_wfile *f;

	if (h->nw >= GUARD_HOME_WATCH || !fd_path(dirfd, name, path, sizeof(path)))
		return 0;
	if (gg_grow(&h->w, &h->aw, h->nw + 1, sizeof(*h->w), 16))
		return -ENOMEM;
	f = &h->w[h->nw];
	memset(f, 0, sizeof(*f));
	f->name = strdup(path);
	if (!f->name)
		return -ENOMEM;
	f->dirfd = -1;
	f->missing = !st;
	f->racy = st && guard_stamp_racy(st);
	if (st)
		f->st = *st;
	h->nw++;
	return 0;
}

/* Has the file F changed since it was read (stat, following links)?  WF_* */
int home_wfile_moved(const struct guard_wfile *f)
{
	struct stat st;

	return guard_wfile_state(f, stat(f->name, &st) < 0 ? NULL : &st);
}

/* Watches PATH from DIRFD as it is now */
static int watch_path(struct hscan *h, int dirfd, const char *path)
{
	struct stat st;

	return watch_add(h, dirfd, path, fstatat(dirfd, path, &st, 0) ? NULL : &st);
}

int home_pin_cb(void *arg, const struct stat *st, bool is_link)
{
	struct hscan *h = arg;

	return recs_add(&h->r.recs, st->st_dev, st->st_ino, NULL, is_link ? GUARD_RO : GUARD_PIN,
			GUARD_RULE_H1);
}

/*
 * What guard_resolve answered (KIND, RES) for something H1 protects: inside
 * the root RO (RO-tree if a folder, or TREE), missing there NC; outside, the
 * host's: nothing.
 */
int home_record(struct hscan *h, int kind, const struct resolved *res, bool tree)
{
	struct stat st;

	if (kind == RES_INSIDE)
		return recs_add_file(&h->r.recs, res->fd, "", &res->st,
				     GUARD_RO | (tree || S_ISDIR(res->st.st_mode) ? GUARD_TREE : 0),
				     GUARD_RULE_H1);
	if (kind == RES_MISSING && !fstat(res->dirfd, &st))
		return recs_add(&h->r.recs, st.st_dev, st.st_ino, res->name, GUARD_RO | GUARD_TREE,
				GUARD_RULE_H1);
	return 0;
}

/* Scans the config NAME in DIRFD for includes and hooksPath; logs what it cannot read */
static int scan_file(struct hscan *h, int dirfd, const char *name, uid_t owner, const char *what)
{
	struct guard_watch *w = h->r.watch;
	size_t i;
	int rc;

	h->r.rule = 0;
	w->n = 0;
	rc = guard_scan_config_file(h->g, &h->r, dirfd, name, owner);
	/* the files it read (the config, its includes) are watched for host changes */
	for (i = 0; i < w->n; i++) {
		if (!rc)
			rc = watch_add(h, w->f[i].dirfd, w->f[i].name,
				       w->f[i].missing ? NULL : &w->f[i].st);
		close(w->f[i].dirfd);
		free(w->f[i].name);
	}
	w->n = 0;
	if (!rc && h->r.rule)
		guard_logf(h->g, "gitguard: %s: %s (its includes may be unguarded)", what,
			   h->r.why);
	return rc;
}

#define NO_SCAN ((uid_t)-1) /* home_inside: not a git config, not scanned */

static int tree_walk(struct hscan *h, int dirfd, bool host, unsigned depth);

/*
 * NAME, a symlink in a folder of ~/.ssh or ~/.gnupg (DIRFD; HOST: outside
 * the root): what it names inside the root is RO (RO-tree and walked for a
 * folder), NC if missing.  GNU stow and other dotfiles managers fold
 * ~/.ssh/config.d into a folder elsewhere: ssh reads it there.
 */
static int tree_link(struct hscan *h, int dirfd, bool host, const char *name, unsigned depth)
{
	char path[PATH_MAX];
	struct resolved res;
	int rc, kind;

	/* outside the root the walk goes by absolute path: guard_resolve starts at "/" */
	if (host && !fd_path(dirfd, name, path, sizeof(path)))
		return 0;
	kind = guard_resolve(h->g, dirfd, host ? path : name, true, home_pin_cb, h, &res);
	rc = home_record(h, kind, &res, false); /* out of the root: the host's */
	if (!rc && kind == RES_INSIDE && S_ISDIR(res.st.st_mode))
		rc = tree_walk(h, res.fd, false, depth + 1);
	resolved_close(&res);
	return rc;
}

/*
 * The folder DIRFD (O_PATH), RO-tree or (HOST) a home's outside the root:
 * every symlink in it, at any depth, is followed (tree_link), to
 * HOME_WALK_DEPTH levels and HOME_WALK_MAX entries a home.
 */
static int tree_walk(struct hscan *h, int dfd, bool host, unsigned depth)
{
	struct dirent *e;
	struct stat st;
	int fd, sub, rc = 0;
	DIR *d;

	if (depth > HOME_WALK_DEPTH || h->walked >= HOME_WALK_MAX) {
		if (!h->walk_cut++)
			guard_logf(h->g,
				   "gitguard: a ~/.ssh or ~/.gnupg deeper or larger than "
				   "%d levels, %d entries: the links beyond are not followed",
				   HOME_WALK_DEPTH, HOME_WALK_MAX);
		return 0;
	}
	d = gg_opendirat(dfd, ".");
	if (!d)
		return 0;
	fd = dirfd(d);
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (h->walked++ >= HOME_WALK_MAX)
			break;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISLNK(st.st_mode)) {
			rc = tree_link(h, fd, host, e->d_name, depth);
		} else if (S_ISDIR(st.st_mode)) {
			sub = openat(fd, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				rc = tree_walk(h, sub, host, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
	return rc;
}

/*
 * NAME in the home HOMEFD, inside the root (or HOMEFD -1 and NAME absolute,
 * a home outside it): what it names inside the root (through symlinks, all
 * pinned) is RO (RO-tree for a folder), NC if missing; a git config file is
 * scanned (unless OWNER is NO_SCAN).  SUB, for a folder, is the config
 * inside it to scan.
 */
static int home_inside(struct hscan *h, int homefd, const char *name, const char *sub, uid_t owner)
{
	struct resolved res;
	struct stat st, hst;
	int rc = 0;

	switch (guard_resolve(h->g, homefd, name, true, home_pin_cb, h, &res)) {
	case RES_INSIDE:
		rc = recs_add_file(&h->r.recs, res.fd, "", &res.st,
				   GUARD_RO | (S_ISDIR(res.st.st_mode) ? GUARD_TREE : 0), GUARD_RULE_H1);
		if (rc)
			break;
		/* a folder not scanned (~/.ssh, ~/.gnupg): the symlinks in it followed */
		if (owner == NO_SCAN && S_ISDIR(res.st.st_mode))
			rc = tree_walk(h, res.fd, false, 0);
		if (owner == NO_SCAN)
			break;
		if (!sub && S_ISREG(res.st.st_mode))
			rc = scan_file(h, res.dirfd, res.name, owner, name);
		else if (sub && S_ISDIR(res.st.st_mode) &&
			 !fstatat(res.fd, sub, &st, AT_SYMLINK_NOFOLLOW)) {
			rc = recs_add_file(&h->r.recs, res.fd, sub, &st, GUARD_RO, GUARD_RULE_H1);
			if (!rc && S_ISREG(st.st_mode))
				rc = scan_file(h, res.fd, sub, owner, name);
		}
		break;
	case RES_MISSING:
		/* missing in the home itself: the name stage refuses what must not be made */
		if (!fstat(res.dirfd, &st) &&
		    (homefd < 0 || (!fstat(homefd, &hst) &&
				    (st.st_dev != hst.st_dev || st.st_ino != hst.st_ino))))
			rc = recs_add(&h->r.recs, st.st_dev, st.st_ino, res.name,
				      GUARD_RO | GUARD_TREE, GUARD_RULE_H1);
		break;
	default:
		break; /* a symlink out of the root: nothing of it to guard here */
	}
	resolved_close(&res);
	return rc;
}

static int home_outside(struct hscan *h, const char *path, const char *home, uid_t owner,
			unsigned depth);

/* An include of a config outside the root */
struct outside {
	struct hscan *h;
	const char *dir; /* the including file's folder */
	const char *home;
	uid_t owner;
	unsigned depth;
};

static int on_outside_key(void *arg, enum guard_cfg_key key, const char *value)
{
	struct outside *o = arg;
	char path[PATH_MAX];

	if (key != GUARD_CFG_INCLUDE || !*value ||
	    home_expand(value, o->dir, o->home, path, sizeof(path)))
		return 0;
	return home_outside(o->h, path, o->home, o->owner, o->depth + 1);
}

/*
 * PATH, a config file outside the root (the kernel resolves it: it is the
 * host's): repo.c's scan records what it includes inside the root, and the
 * includes that stay outside are followed here, as git would, to at most
 * GUARD_INCLUDE_DEPTH levels and HOME_OUTSIDE_MAX files a scan.
 */
static int home_outside(struct hscan *h, const char *path, const char *home, uid_t owner,
			unsigned depth)
{
	struct outside o = {h, NULL, home, owner, depth};
	struct guard_cfg cfg = {.fn = on_outside_key, .arg = &o};
	char real[PATH_MAX], *slash, *buf;
	struct resolved res;
	size_t len;
	int dfd, rc, where;

	if (depth > GUARD_INCLUDE_DEPTH || h->outside >= HOME_OUTSIDE_MAX)
		return 0;
	where = guard_resolve(h->g, -1, path, true, NULL, NULL, &res);
	resolved_close(&res);
	if (where != RES_OUTSIDE || !realpath(path, real))
		return 0; /* inside: recorded and read by the scan of the file naming it */
	h->outside++;
	slash = strrchr(real, '/');
	if (!slash || !slash[1])
		return 0;
	*slash = '\0';
	dfd = open(*real ? real : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	rc = scan_file(h, dfd, slash + 1, owner, path);
	if (!rc && !guard_read_file(dfd, slash + 1, GUARD_CONFIG_MAX, &buf, &len, NULL)) {
		o.dir = *real ? real : "/";
		rc = guard_config_scan(buf, len, &cfg);
		if (rc == -EINVAL)
			rc = 0; /* git refuses it too; what it named so far was followed */
		free(buf);
	}
	close(dfd);
	return rc;
}

/* A home DIR not made yet, inside the root: the bot may not make it */
static int home_missing(struct hscan *h, const char *dir)
{
	struct resolved res;
	struct stat st;
	int rc = 0;

	if (guard_resolve(h->g, -1, dir, true, home_pin_cb, h, &res) == RES_MISSING &&
	    !fstat(res.dirfd, &st))
		rc = recs_add(&h->r.recs, st.st_dev, st.st_ino, res.name, GUARD_RO | GUARD_TREE,
			      GUARD_RULE_H1);
	resolved_close(&res);
	return rc;
}

/*
 * A home DIR outside the root: where its configs, ~/.ssh and ~/.gnupg lead
 * inside the root (a dotfiles folder there, GNU stow's links to it) is
 * guarded as in a home inside; links in its own ~/.ssh and ~/.gnupg too.
 */
static int home_links_outside(struct hscan *h, const char *dir, uid_t owner)
{
	static const struct {
		const char *name, *sub;
		bool scan;
	} names[] = {{".gitconfig", NULL, true},
		     {".config/git", "config", true},
		     {".config/git/config", NULL, true},
		     {".ssh", NULL, false},
		     {".gnupg", NULL, false}};
	char path[PATH_MAX];
	size_t i;
	int rc = 0, fd;

	for (i = 0; !rc && i < sizeof(names) / sizeof(names[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, names[i].name) >= (int)sizeof(path))
			continue;
		rc = home_inside(h, -1, path, names[i].sub, names[i].scan ? owner : NO_SCAN);
		if (rc || names[i].scan)
			continue;
		fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			rc = tree_walk(h, fd, true, 0);
			close(fd);
		}
	}
	return rc;
}

/* The home DIR: remembered by (dev, ino); inside the root, pinned and its configs guarded */
static int home_add(struct hscan *h, const char *dir)
{
	char path[PATH_MAX];
	struct resolved res;
	struct stat st;
	int rc = 0, fd;

	if (stat(dir, &st) < 0)
		return errno == ENOENT ? home_missing(h, dir) : 0;
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (h->tab)
		h->tab[h->n++] = (struct guard_home){st.st_dev, st.st_ino};
	h->walked = 0;
	/* the person may write these on the host while mounted: watched */
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rc = watch_path(h, fd, ".gitconfig");
		rc = rc ? rc : watch_path(h, fd, ".config/git/config");
		close(fd);
	}
	if (!rc && guard_resolve(h->g, -1, dir, true, home_pin_cb, h, &res) == RES_INSIDE &&
	    S_ISDIR(res.st.st_mode)) {
		rc = recs_add(&h->r.recs, res.st.st_dev, res.st.st_ino, NULL, GUARD_PIN,
			      GUARD_RULE_H1);
		rc = rc ? rc : home_inside(h, res.fd, ".gitconfig", NULL, st.st_uid);
		rc = rc ? rc : home_inside(h, res.fd, ".config/git", "config", st.st_uid);
		/* a symlink as the config in a real ~/.config/git leads elsewhere */
		rc = rc ? rc : home_inside(h, res.fd, ".config/git/config", NULL, st.st_uid);
		/*
		 * git over ssh runs what ~/.ssh/config and its Includes name
		 * (ProxyCommand, Match exec), a signing git runs gpg-agent's
		 * pinentry-program: through symlinks, all of both RO-tree
		 */
		rc = rc ? rc : home_inside(h, res.fd, ".ssh", NULL, NO_SCAN);
		rc = rc ? rc : home_inside(h, res.fd, ".gnupg", NULL, NO_SCAN);
		resolved_close(&res);
		return rc ? rc : home_ssh(h, dir);
	}
	resolved_close(&res);
	rc = rc ? rc : home_links_outside(h, dir, st.st_uid);
	rc = rc ? rc : home_ssh(h, dir);
	if (!rc && snprintf(path, sizeof(path), "%s/.gitconfig", dir) < (int)sizeof(path))
		rc = home_outside(h, path, dir, st.st_uid, 0);
	if (!rc && snprintf(path, sizeof(path), "%s/.config/git/config", dir) < (int)sizeof(path))
		rc = home_outside(h, path, dir, st.st_uid, 0);
	return rc;
}

/* Scans every home in g->home_dirs into H (records, watched files, and homes if H->tab) */
static int homes_scan(struct guard *g, struct hscan *h)
{
	size_t i;
	int rc = 0;

	h->g = g;
	h->r.watch = calloc(1, sizeof(*h->r.watch));
	if (!h->r.watch)
		return -ENOMEM;
	h->r.watch->gfd = -1;
	for (i = 0; !rc && i < g->nhome_dirs; i++)
		rc = home_add(h, g->home_dirs[i]);
	return rc;
}

/* Makes H's records and watch list the guard's (lock held exclusive); H keeps the old ones */
static void homes_publish(struct guard *g, struct hscan *h)
{
	struct guard_recs r = g->homerecs;
	struct guard_wfile *w = g->hwatch;
	size_t nw = g->nhwatch;

	g->homerecs = h->r.recs;
	h->r.recs = r;
	g->hwatch = h->w;
	g->nhwatch = h->nw;
	h->w = w;
	h->nw = nw;
	guard_own_rebuild(g);
}

static pthread_mutex_t pw_lock = PTHREAD_MUTEX_INITIALIZER;

/* Appends DIR to g->home_dirs unless it is there or not absolute */
static int dirs_add(struct guard *g, const char *dir)
{
	size_t i;

	if (!dir || dir[0] != '/' || g->nhome_dirs >= GUARD_HOMES_MAX)
		return 0;
	for (i = 0; i < g->nhome_dirs; i++)
		if (!strcmp(g->home_dirs[i], dir))
			return 0;
	if (gg_grow(&g->home_dirs, &g->ahome_dirs, g->nhome_dirs + 1, sizeof(*g->home_dirs), 16))
		return -ENOMEM;
	g->home_dirs[g->nhome_dirs] = strdup(dir);
	if (!g->home_dirs[g->nhome_dirs])
		return -ENOMEM;
	g->nhome_dirs++;
	return 0;
}

/* The homes getpwent(3) lists (not thread-safe: one guard_open at a time), /root and EXTRA */
static int homes_list(struct guard *g, const char *const *extra)
{
	struct passwd *pw;
	size_t i;
	int rc;

	rc = dirs_add(g, "/root");
	pthread_mutex_lock(&pw_lock);
	setpwent();
	while (!rc && (pw = getpwent()))
		rc = dirs_add(g, pw->pw_dir);
	endpwent();
	pthread_mutex_unlock(&pw_lock);
	for (i = 0; !rc && extra && extra[i]; i++)
		rc = dirs_add(g, extra[i]);
	if (!rc && g->nhome_dirs >= GUARD_HOMES_MAX)
		guard_logf(g, "gitguard: more than %d home folders: the others are not guarded",
			   GUARD_HOMES_MAX);
	return rc;
}

/*
 * At guard_open: every home of the host (getpwent, /root, and EXTRA, a
 * NULL-terminated list or NULL) into g->homes, and H1's records into
 * g->homerecs, or as the view's last scan found them when it may be
 * taken over (home-reuse.c).  Fails only for lack of memory.
 */
int guard_homes_load(struct guard *g, const char *const *extra)
{
	struct gg_trail trail = {0};
	struct hscan h = {0};
	bool scanner;
	size_t i, j;
	int rc;

	if ((rc = home_reuse_take(g, &h, extra)) != 0)
		goto taken;
	/*
	 * Guards opened side by side (every mount a restart takes over, on
	 * the job threads at once) would each walk every home at once, 2.5-4.5
	 * ms apiece on a shared CPU, before any of them kept its scan: one
	 * that finds a scan under way waits for it and takes it over when it
	 * may (home-reuse.c). One it may not take over, it scans itself,
	 * beside any other: scans are never queued one behind another.
	 */
	scanner = pthread_mutex_trylock(&g->view->homes_scan) == 0;
	if (!scanner) {
		pthread_mutex_lock(&g->view->homes_scan);
		pthread_mutex_unlock(&g->view->homes_scan);
		if ((rc = home_reuse_take(g, &h, extra)) != 0)
			goto taken;
	}
	rc = homes_list(g, extra);
	h.tab = rc ? NULL : calloc(g->nhome_dirs + 1, sizeof(*h.tab));
	if (!rc && !h.tab)
		rc = -ENOMEM;
	guard_resolve_trail(&trail);
	rc = rc ? rc : homes_scan(g, &h);
	guard_resolve_trail(NULL);
	if (rc) {
		if (scanner)
			pthread_mutex_unlock(&g->view->homes_scan);
		free(trail.v);
		free(h.tab);
		hscan_free(&h);
		return rc;
	}
	if (h.n > 0)
		qsort(h.tab, h.n, sizeof(*h.tab), home_cmp);
	for (i = j = 0; i < h.n; i++)
		if (!j || home_cmp(&h.tab[j - 1], &h.tab[i]))
			h.tab[j++] = h.tab[i];
	g->homes = h.tab;
	g->nhomes = j;
	home_reuse_keep(g, &h, &trail, extra);
	if (scanner)
		pthread_mutex_unlock(&g->view->homes_scan);
	goto publish;
taken:
	if (rc < 0) {
		hscan_free(&h);
		return rc;
	}
publish:
	pthread_rwlock_wrlock(&g->lock);
	homes_publish(g, &h);
	pthread_rwlock_unlock(&g->lock);
	hscan_free(&h);
	return 0;
}

/*
 * A person may change their own git configuration on the host while a root
 * is mounted (add an include, a hooksPath): called after guard_revalidate(),
 * it looks when that one did (its clock, at most every GUARD_REVAL_MS, so
 * between looks this costs two atomic loads): the files the home scan read
 * are stat'ed again, and when one changed every home is scanned again.  The
 * homes themselves (who has a home where) are learnt at guard_open only.
 */
static void homes_look(struct guard *g);

void guard_homes_revalidate(struct guard *g)
{
	int64_t now, last;

	now = atomic_load(&g->view->reval_ms);
	last = atomic_load(&g->home_reval_ms);
	if (now != last && atomic_compare_exchange_strong(&g->home_reval_ms, &last, now))
		homes_look(g);
}

/* The look itself: rescans the homes if a watched file changed */
static void homes_look(struct guard *g)
{
	struct hscan h = {0};
	int state = WF_SAME, s;
	char what[PATH_MAX] = "";
	size_t i;

	pthread_rwlock_rdlock(&g->lock);
	for (i = 0; i < g->nhwatch && state != WF_CHANGED; i++)
		if ((s = home_wfile_moved(&g->hwatch[i])) > state) {
			state = s;
			if (s == WF_CHANGED)
				snprintf(what, sizeof what, "%s", g->hwatch[i].name);
		}
	pthread_rwlock_unlock(&g->lock);
	if (state == WF_SAME)
		return;
	if (state == WF_CHANGED)
		guard_logf(g, "gitguard: a person's git configuration changed (%s): read again",
			   what);
	if (homes_scan(g, &h)) {
		hscan_free(&h);
		atomic_store(&g->home_reval_ms, -1); /* try again at the next decision */
		return;
	}
	pthread_rwlock_wrlock(&g->lock);
	homes_publish(g, &h);
	pthread_rwlock_unlock(&g->lock);
	hscan_free(&h);
	guard_bump(g);
}

/* At guard_free */
void guard_homes_free(struct guard *g)
{
	size_t i;

	for (i = 0; i < g->nhome_dirs; i++)
		free(g->home_dirs[i]);
	free(g->home_dirs);
	free(g->homes);
	recs_clear(&g->homerecs);
	home_wfiles_free(g->hwatch, g->nhwatch);
}
