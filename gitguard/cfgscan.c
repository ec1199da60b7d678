/* SPDX-License-Identifier: MIT */
/*
 * One scan of config files the way git reads them: a repository's config
 * and its includes (W3), core.hooksPath (W2), core.worktree, the person's
 * global and system files, and the watch of every file read for
 * guard_revalidate().  reposcan.c drives it for a git folder; home.c for a
 * person's ~/.gitconfig.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gitguard/guard-int.h"

int strs_add(struct strs *l, const char *str)
{
	char *d;

	size_t i;

	if (l->n >= 64)
		return 0; /* git uses the last; more than this is no layout a person made */
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], str))
			return 0;
	d = strdup(str);
	if (!d || gg_grow(&l->v, &l->alloc, l->n + 1, sizeof(*l->v), 4)) {
		free(d);
		return -ENOMEM;
	}
	l->v[l->n++] = d;
	return 0;
}

void strs_free(struct strs *l)
{
	while (l->n)
		free(l->v[--l->n]);
	free(l->v);
	l->v = NULL;
}

#define HOOK_LINKS_MAX 4096 /* entries of a hooks folder looked at */

void scan_x3(struct cfgscan *s, const char *why)
{
	if (!s->r->rule) {
		s->r->rule = GUARD_RULE_X3;
		s->r->why = why;
	}
}

int scan_pin(void *arg, const struct stat *st, bool is_link)
{
	struct cfgscan *s = arg;

	return recs_add(&s->r->recs, st->st_dev, st->st_ino, NULL, is_link ? GUARD_RO : GUARD_PIN,
			s->pin_rule);
}

/* "~/x", "~user/x" (git's interpolate_path), for the owner of the config */
static int expand_home(struct cfgscan *s, const char *in, char *out, size_t outsz)
{
	struct passwd pw, *res = NULL;
	char buf[4096], user[256];
	const char *rest, *slash;
	int n;

	if (in[0] != '~') {
		n = snprintf(out, outsz, "%s", in);
		return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
	}
	slash = strchr(in, '/');
	rest = slash ? slash : "";
	if (in[1] == '/' || !in[1]) {
		getpwuid_r(s->owner, &pw, buf, sizeof(buf), &res);
	} else {
		size_t l = slash ? (size_t)(slash - in - 1) : strlen(in + 1);

		if (l >= sizeof(user))
			return -ENAMETOOLONG;
		memcpy(user, in + 1, l);
		user[l] = '\0';
		getpwnam_r(user, &pw, buf, sizeof(buf), &res);
	}
	if (!res || !res->pw_dir || res->pw_dir[0] != '/')
		return -ENOENT;
	n = snprintf(out, outsz, "%s%s", res->pw_dir, rest);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

/* Remembers NAME in DIRFD (ST, or NULL when missing) for guard_revalidate() */
int scan_watch(struct cfgscan *s, int dirfd, const char *name, const struct stat *st)
{
	struct guard_watch *w = s->r->watch;
	struct guard_wfile *f;
	struct stat a, b;
	int fd = -1;

	if (!w)
		return 0;
	if (w->n >= GUARD_WATCH_FILES) {
		/* a change to it would go unseen: the git folder is read-only as a whole */
		scan_x3(s, "more configuration files and hooks folders than agentfs watches (1024)");
		return 0;
	}
	if (gg_grow(&w->f, &w->alloc, w->n + 1, sizeof(*w->f), 8))
		return -ENOMEM;
	if (dirfd == AT_FDCWD) {
		fd = AT_FDCWD; /* the person's files outside the root: NAME is a full path */
	} else if (w->gfd >= 0 && !fstat(dirfd, &a) && !fstat(w->gfd, &b) && a.st_dev == b.st_dev &&
		   a.st_ino == b.st_ino) {
		fd = w->gfd; /* the git folder itself: no fd of its own */
	} else {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			/* unwatched, a change to it would go unseen: closed as when there are too many */
			scan_x3(s, "a configuration file or hooks folder cannot be watched: out of "
				   "descriptors");
			return 0;
		}
	}
	f = &w->f[w->n];
	f->name = strdup(name);
	if (!f->name) {
		if (fd >= 0 && fd != w->gfd)
			close(fd);
		return -ENOMEM;
	}
	f->dirfd = fd;
	f->missing = !st;
	f->racy = st && guard_stamp_racy(st);
	if (st)
		f->st = *st;
	w->n++;
	return 0;
}

/* W3: an include target is RO, NC if missing, and is read for more */
static int on_include(struct cfgscan *s, const char *value)
{
	char path[PATH_MAX];
	struct resolved res;
	int rc = 0;

	if (!strncmp(value, "%(prefix)/", 10)) {
		s->unread = true;
		return 0; /* git's install prefix: outside any root */
	}
	if (!*value || expand_home(s, value, path, sizeof(path))) {
		scan_x3(s, "an include that cannot be resolved");
		return 0;
	}
	s->pin_rule = GUARD_RULE_W3;
	switch (guard_resolve(s->g, s->basefd, path, true, scan_pin, s, &res)) {
	case RES_INSIDE:
		rc = recs_add_file(&s->r->recs, res.fd, "", &res.st, GUARD_RO, GUARD_RULE_W3);
		if (rc)
			break;
		if (!S_ISREG(res.st.st_mode)) {
			scan_x3(s, "an include target that is not a regular file");
			break;
		}
		if (s->depth >= GUARD_INCLUDE_DEPTH) {
			scan_x3(s, "includes nested too deep");
			break;
		}
		{
			int obase = s->basefd;
			uid_t oowner = s->owner;

			s->basefd = res.dirfd;
			s->owner = res.st.st_uid;
			s->depth++;
			rc = scan_config(s, res.dirfd, res.name);
			s->depth--;
			s->basefd = obase;
			s->owner = oowner;
		}
		break;
	case RES_MISSING: {
		struct stat st;

		if (fstat(res.dirfd, &st) < 0) {
			scan_x3(s, "an include that cannot be resolved");
			break;
		}
		rc = recs_add(&s->r->recs, st.st_dev, st.st_ino, res.name, GUARD_RO, GUARD_RULE_W3);
		if (!rc)
			rc = scan_watch(s, res.dirfd, res.name, NULL);
		break;
	}
	case RES_OUTSIDE:
		s->unread = true;
		break;
	default:
		scan_x3(s, "an include that cannot be resolved");
		break;
	}
	resolved_close(&res);
	return rc;
}

/*
 * What PATH (from FROMFD, links followed) names inside the root is read-only
 * (a folder: RO-tree) by RULE, and NC if missing; the folders and links on
 * the way are pinned.  Outside the root: nothing.  Not resolvable: the git
 * folder is X3 for UNRESOLVED, or nothing if it is NULL.
 */
int scan_protect(struct cfgscan *s, int fromfd, const char *path, uint8_t rule,
		 const char *unresolved)
{
	struct resolved res;
	struct stat st;
	bool dir, walked;
	int rc = 0;

	s->pin_rule = rule;
	switch (guard_resolve(s->g, fromfd, path, true, scan_pin, s, &res)) {
	case RES_INSIDE:
		dir = S_ISDIR(res.st.st_mode);
		/* walked already (a link to a folder seen before, a loop of links) */
		walked = dir && recs_has(&s->r->recs, res.st.st_dev, res.st.st_ino, GUARD_TREE);
		rc = recs_add_file(&s->r->recs, res.fd, "", &res.st,
				   GUARD_RO | (dir ? GUARD_TREE : 0), rule);
		/*
		 * A folder: every file in it is known by its inode (HL), down to
		 * the files hooks source (husky's .husky/_/husky.sh), and every
		 * folder in it is watched: a second name the bot gave one before
		 * the folder became protected is refused as the file is, since a
		 * file with two names takes the class of the last one looked up.
		 * Symbolic links in it are followed the same way (scan_hl_tree).
		 * A hooks folder: where its symbolic links lead are hooks too.
		 */
		if (!rc && dir && !walked) {
			unsigned budget = 0; /* scan_hl_tree counts in s->hl_used */

			/* watched (scan_hook_links does it for a hooks folder) */
			if (rule == GUARD_RULE_W2)
				rc = scan_hook_links(s, res.fd, ".", GUARD_RULE_W2);
			else
				rc = scan_watch(s, res.fd, ".", &res.st);
			if (!rc)
				rc = scan_hl_tree(s->r, s, res.fd, ".", rule, &budget, 0);
		}
		break;
	case RES_MISSING:
		/*
		 * Watched too: made or moved into place on the host (the person
		 * renames a reviewed folder to .githooks), it is read again and
		 * recorded by inode, which a bot holding it as its cwd never
		 * looks up by this name.
		 */
		if (!fstat(res.dirfd, &st)) {
			rc = recs_add(&s->r->recs, st.st_dev, st.st_ino, res.name,
				      GUARD_RO | GUARD_TREE, rule);
			if (!rc)
				rc = scan_watch(s, res.dirfd, res.name, NULL);
		} else if (unresolved)
			scan_x3(s, unresolved);
		break;
	case RES_OUTSIDE:
		break;
	default:
		if (unresolved)
			scan_x3(s, unresolved);
		break;
	}
	resolved_close(&res);
	return rc;
}


/*
 * A symbolic link in a hooks folder (SUB of FROMFD) is a hook that git runs
 * where it leads: the usual `ln -s ../../scripts/pre-commit.sh
 * .git/hooks/pre-commit`.  What each one names inside the root is
 * read-only (D3), and cannot be made if missing, like the hook itself.  A
 * hook with other names (a hard link made before the folder became a
 * hooks folder) is read-only by its inode, whatever name reaches it, by
 * LINKED_RULE (0: not looked at here; hooks/ has its own pass, scan_hl_tree).
 */
int scan_hook_links(struct cfgscan *s, int fromfd, const char *sub, uint8_t linked_rule)
{
	struct dirent *de;
	struct stat st;
	unsigned n = 0;
	int rc = 0;
	DIR *d;

	/*
	 * Watched: a symbolic link the person adds on the host while the bot
	 * works (ln -s ../../scripts/pre-commit.sh .git/hooks/pre-commit)
	 * changes the folder, and the repository is read again, before the
	 * bot's next decision, so the script it leads to is a hook from then on.
	 */
	if (fstatat(fromfd, sub, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		rc = scan_watch(s, fromfd, sub, &st);
	if (rc)
		return rc;
	d = gg_opendirat(fromfd, sub);
	if (!d)
		return 0; /* missing, or not a folder */
	while (!rc && n++ < HOOK_LINKS_MAX && (de = readdir(d))) {
		if (de->d_type != DT_LNK && de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISLNK(st.st_mode))
			rc = scan_protect(s, dirfd(d), de->d_name, GUARD_RULE_D3, NULL);
		else if (linked_rule && S_ISREG(st.st_mode))
			/* a hook's other names, made before it became one or later */
			rc = recs_add_file(&s->r->recs, dirfd(d), de->d_name, &st,
					   GUARD_RO | (st.st_nlink < 2 ? REC_LINKS : 0),
					   linked_rule);
	}
	closedir(d);
	return rc;
}

int scan_hookspath(struct cfgscan *s, const char *value)
{
	char path[PATH_MAX];

	if (!*value)
		return 0; /* empty: the default hooks/ */
	if (expand_home(s, value, path, sizeof(path))) {
		scan_x3(s, "a core.hooksPath that cannot be resolved");
		return 0;
	}
	if (path[0] == '/')
		return strs_add(&s->abs, path) ? -ENOMEM
					       : scan_protect(s, s->dfd, path, GUARD_RULE_W2,
							      "a core.hooksPath that cannot be resolved");
	/* relative to where hooks run: every worktree top, applied by scan_tops() */
	return strs_add(&s->rel, path);
}

/*
 * init.templateDir: `git init` and `git clone` copy everything in it into
 * the new git folder (hooks/, config, info/), and clone then runs the
 * copied post-checkout.  A folder the person's config names so is guarded
 * like a hooks folder (W2); a relative one is taken from the worktree tops,
 * where a person re-running `git init` would read it.
 */
static int scan_templatedir(struct cfgscan *s, const char *value)
{
	char path[PATH_MAX];

	if (!*value)
		return 0;
	if (expand_home(s, value, path, sizeof(path))) {
		scan_x3(s, "an init.templateDir that cannot be resolved");
		return 0;
	}
	if (path[0] == '/')
		return scan_protect(s, s->dfd, path, GUARD_RULE_W2,
				    "an init.templateDir that cannot be resolved");
	return strs_add(&s->rel, path);
}

static int on_key(void *arg, enum guard_cfg_key key, const char *value)
{
	struct cfgscan *s = arg;

	switch (key) {
	case GUARD_CFG_INCLUDE:
		return on_include(s, value);
	case GUARD_CFG_HOOKSPATH:
		return scan_hookspath(s, value);
	case GUARD_CFG_TEMPLATEDIR:
		return scan_templatedir(s, value);
	case GUARD_CFG_WORKTREE:
		return *value ? strs_add(&s->wt, value) : 0;
	case GUARD_CFG_STRATEGY:
	case GUARD_CFG_STRATEGY_OPT:
		return 0; /* sequencer/opts only (seq.c), never in a config */
	}
	return 0;
}

/* Reads and scans one config file; the repository format only counts at depth 0 */
int scan_config(struct cfgscan *s, int dirfd, const char *name)
{
	struct guard_cfg cfg = {.fn = on_key, .arg = s};
	const char *wpath;
	struct stat st;
	size_t len;
	char *buf;
	int rc;

	wpath = s->by_path;
	s->by_path = NULL;
	rc = guard_read_file(dirfd, name, GUARD_CONFIG_MAX, &buf, &len, &st);
	if ((!rc || rc == -ENOENT) &&
	    scan_watch(s, wpath ? AT_FDCWD : dirfd, wpath ? wpath : name, rc ? NULL : &st)) {
		if (!rc)
			free(buf);
		return -ENOMEM;
	}
	if (rc == -ENOENT && !s->depth) {
		scan_x3(s, "no config");
		return 0;
	}
	if (rc == -ENOENT)
		return 0; /* raced away: recorded NC already by the caller's resolution */
	if (rc == -EINVAL) {
		scan_x3(s, "a config that is not a regular file");
		return 0;
	}
	if (rc == -EFBIG) {
		scan_x3(s, "a config larger than 1 MiB");
		return 0;
	}
	if (rc) {
		scan_x3(s, "a config that cannot be read");
		return 0;
	}
	if (!s->depth) {
		s->r->stamp = st;
		s->owner = st.st_uid;
	}
	rc = guard_config_scan(buf, len, &cfg);
	free(buf);
	if (rc == -EINVAL) {
		scan_x3(s, "a config git cannot parse");
		return 0;
	}
	if (rc)
		return rc;
	if (!s->depth) {
		if (cfg.worktree_config) {
			scan_x3(s, "extensions.worktreeConfig");
			/* its hooksPath and includes still count, at the worktree tops */
			s->depth++;
			rc = scan_config(s, s->dfd, "config.worktree");
			s->depth--;
			if (rc)
				return rc;
		}
		if (cfg.unknown_ext)
			scan_x3(s, "an unknown extension");
		if (cfg.bad_format || cfg.format > 1)
			scan_x3(s, "an unknown repository format");
	}
	return 0;
}

/* One global or system config file PATH outside the root: the person's, opened as git does */
static int scan_outside(struct cfgscan *s, const char *path)
{
	char real[PATH_MAX], proc[64], *slash;
	int fd, dfd, rc = 0, obase = s->basefd;
	struct stat st;
	ssize_t n;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? scan_watch(s, AT_FDCWD, path, NULL) : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, real, sizeof(real) - 1);
	/* GIT_CONFIG_GLOBAL=/dev/null and the like: nothing git reads there matters */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || n <= 0 || (size_t)n >= sizeof(real)) {
		close(fd);
		return 0;
	}
	close(fd);
	real[n] = '\0';
	slash = strrchr(real, '/');
	if (!slash || slash == real)
		return 0;
	*slash = '\0';
	dfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	s->basefd = dfd;
	s->depth++;
	*slash = '/';
	s->by_path = real;
	rc = scan_config(s, dfd, slash + 1);
	s->by_path = NULL;
	s->depth--;
	s->basefd = obase;
	close(dfd);
	return rc;
}

/* One global or system config file PATH, read as an include of the repository's */
static int scan_global_file(struct cfgscan *s, const char *path)
{
	struct resolved res;
	int where;

	s->pin_rule = GUARD_RULE_W3;
	where = guard_resolve(s->g, s->dfd, path, true, NULL, NULL, &res);
	resolved_close(&res);
	if (where == RES_OUTSIDE)
		return scan_outside(s, path);
	if (where == RES_INSIDE || where == RES_MISSING)
		return on_include(s, path); /* inside the root: guarded as an include target */
	return 0;
}

/* HOME's global config files ($XDG_CONFIG_HOME/git/config, ~/.gitconfig) into L */
static int global_paths(struct strs *l, const char *home, const char *xdg)
{
	char p[PATH_MAX];
	int rc = 0;

	if (xdg && *xdg && snprintf(p, sizeof(p), "%s/git/config", xdg) < (int)sizeof(p))
		rc = strs_add(l, p);
	else if (home && *home &&
		 snprintf(p, sizeof(p), "%s/.config/git/config", home) < (int)sizeof(p))
		rc = strs_add(l, p);
	if (!rc && home && *home && snprintf(p, sizeof(p), "%s/.gitconfig", home) < (int)sizeof(p))
		rc = strs_add(l, p);
	return rc;
}

/*
 * The person's global and system config (git config --global core.hooksPath
 * .githooks applies to every repository): those of this process's
 * environment, and the global ones of the owners of the view's roots.  Read like includes;
 * a relative hooksPath there is guarded at every worktree top.
 */
int scan_global(struct cfgscan *s)
{
	struct passwd pw, *res = NULL;
	struct strs l = {0};
	const char *env;
	char buf[4096];
	uid_t owners[16];
	size_t i, n;
	int rc = 0;

	env = getenv("GIT_CONFIG_GLOBAL");
	if (env)
		rc = *env ? strs_add(&l, env) : 0;
	else
		rc = global_paths(&l, getenv("HOME"), getenv("XDG_CONFIG_HOME"));
	n = guard_root_owners(s->g, owners, sizeof(owners) / sizeof(owners[0]));
	for (i = 0; !rc && i < n; i++)
		if (!getpwuid_r(owners[i], &pw, buf, sizeof(buf), &res) && res && res->pw_dir)
			rc = global_paths(&l, res->pw_dir, NULL);
	if (!rc && !getenv("GIT_CONFIG_NOSYSTEM")) {
		env = getenv("GIT_CONFIG_SYSTEM");
		rc = strs_add(&l, env ? env : "/etc/gitconfig");
	}
	for (i = 0; !rc && i < l.n; i++)
		rc = l.v[i][0] == '/' ? scan_global_file(s, l.v[i]) : 0;
	strs_free(&l);
	return rc;
}

/* Same file, same size, mode, mtime and ctime: nothing written since A was taken */
bool guard_stat_same(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mode == b->st_mode && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * A file's ctime has the granularity of the clock the kernel stamps it with:
 * a jiffy (4 ms at HZ=250) without multigrain timestamps (Linux before
 * 6.13), a second on ext4 with 128-byte inodes.  Two changes within one
 * tick leave the same stamp, so a stamp taken within a second of the
 * file's last change proves nothing about a change made after it was read:
 * such a file counts as changed at each look, and is read again, until a
 * stamp is taken a second after its change.  ctime because only the kernel
 * sets it; a clock stepped far back only costs the file its racy state.
 */
#define STAMP_TICK_NS 1000000000LL

bool guard_stamp_racy(const struct stat *st)
{
	struct timespec now;
	long long d;

	if (clock_gettime(CLOCK_REALTIME, &now))
		return true;
	d = ((long long)now.tv_sec - st->st_ctim.tv_sec) * 1000000000LL +
	    (now.tv_nsec - st->st_ctim.tv_nsec);
	return d > -STAMP_TICK_NS && d < STAMP_TICK_NS;
}

/* F against ST, the file as it is now (NULL: missing now) */
int guard_wfile_state(const struct guard_wfile *f, const struct stat *st)
{
	if (!st)
		return f->missing ? WF_SAME : WF_CHANGED;
	if (f->missing || !guard_stat_same(&f->st, st))
		return WF_CHANGED;
	return f->racy ? WF_RACY : WF_SAME;
}

/* Has any file the scan read changed since (WF_CHANGED), or may it have (WF_RACY)? */
int guard_watch_state(const struct guard_watch *w)
{
	struct stat st;
	size_t i;
	int state = WF_SAME, s;

	for (i = 0; w && i < w->n && state != WF_CHANGED; i++) {
		const struct guard_wfile *f = &w->f[i];

		s = guard_wfile_state(f, fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) ? NULL : &st);
		if (s > state)
			state = s;
	}
	return state;
}

/*
 * A config file that is no repository's (a person's ~/.gitconfig, home.c):
 * its include targets (W3) and absolute core.hooksPath (W2) inside the root
 * go into R's records; R's rule and why say what could not be read.  OWNER's
 * home is what "~/" names.  The files read go into R's watch, if it has one.
 */
int guard_scan_config_file(struct guard *g, struct guard_repo *r, int dirfd, const char *name,
			   uid_t owner)
{
	struct cfgscan s = {
		.g = g, .r = r, .dfd = dirfd, .basefd = dirfd, .owner = owner, .depth = 1};
	int rc;

	rc = scan_config(&s, dirfd, name);
	strs_free(&s.rel);
	strs_free(&s.abs);
	strs_free(&s.wt);
	return rc;
}
