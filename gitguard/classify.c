/* SPDX-License-Identifier: MIT */
/*
 * Classification: the class of an entry from its parent's class, its name
 * and its stat (the name stage, no syscalls), then, for the few entries that
 * need it, from its contents (a folder's shape, a .git file's target, a git
 * folder's config).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gitguard/guard-int.h"

static void set(struct guard_cls *c, uint8_t flags, uint8_t rule)
{
	if (!c->flags || !c->rule)
		c->rule = rule;
	c->flags |= flags;
}

/* Names in a git folder that a lock file may not stand in for */
static const struct {
	const char *name;
	uint8_t flags;
	uint8_t rule;
} gitdir_names[] = {
	{"config", GUARD_RO, GUARD_RULE_D1},	{"config.worktree", GUARD_RO, GUARD_RULE_D2},
	{"hooks", GUARD_TREE, GUARD_RULE_D3},	{"commondir", GUARD_RO, GUARD_RULE_D4},
	{"gitdir", GUARD_RO, GUARD_RULE_D5},	{"locked", GUARD_RO, GUARD_RULE_D5},
	{"worktrees", GUARD_RO, GUARD_RULE_D5}, {"modules", GUARD_RO, GUARD_RULE_D6},
	{"remotes", GUARD_TREE, GUARD_RULE_D8}, {"branches", GUARD_TREE, GUARD_RULE_D8},
	{"rr-cache", GUARD_TREE, GUARD_RULE_D10},
	{"MERGE_AUTOSTASH", GUARD_RO, GUARD_RULE_D11},
};

/* NAME or NAME.lock equals WANT */
static bool name_or_lock(const char *name, const char *want)
{
	size_t len = strlen(name), l = strlen(want);

	if (name_is(name, want))
		return true;
	return len == l + 5 && !strncasecmp(name, want, l) && name_is(name + l, ".lock");
}

static int gitdir_child(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(gitdir_names) / sizeof(gitdir_names[0]); i++)
		if (name_or_lock(name, gitdir_names[i].name))
			return (int)i;
	return -1;
}

/*
 * The name stage: what the child NAME of type MODE in PARENT is, from names
 * alone.  Used for lookups and, for a name not made yet, for creates (NC).
 * Returns 1 when the content stage must look at the entry, else 0.
 */
int guard_name_stage(struct guard *g, const struct guard_cls *parent, const char *name, mode_t mode,
		     struct guard_cls *out)
{
	int i;

	out->kind = parent->kind == GUARD_GITDIR ? GUARD_INGIT : parent->kind;
	out->role = GUARD_R_NONE;
	out->flags = 0;
	out->rule = 0;

	/* beneath an RO-tree everything is RO-tree (modules/ holds git folders: look) */
	if (parent->flags & GUARD_TREE) {
		out->kind = GUARD_INGIT;
		set(out, GUARD_TREE | GUARD_RO, parent->rule);
		return S_ISDIR(mode) && parent->rule == GUARD_RULE_D6;
	}
	if (guard_home_maybe(parent, name) && guard_home_stage(g, parent, name, mode, out))
		return S_ISDIR(mode);
	/* D13: a linked worktree's bot in its common folder; what it may write goes on below */
	if ((parent->flags & GUARD_SHARED) && guard_shared_stage(g, parent, name, mode, out))
		return 0;
	if (parent->kind == GUARD_GITDIR) {
		i = gitdir_child(name);
		if (i >= 0) {
			uint8_t rule = gitdir_names[i].rule;

			/* in worktrees/<id>, commondir is D5's */
			if ((parent->flags & GUARD_WT) && rule == GUARD_RULE_D4)
				rule = GUARD_RULE_D5;
			set(out, gitdir_names[i].flags, rule);
			if (gitdir_names[i].flags & GUARD_TREE)
				out->flags |= GUARD_RO;
			if (!strcasecmp(name, "config"))
				out->role = GUARD_R_CONFIG;
			else if (!strcasecmp(name, "worktrees"))
				out->role = GUARD_R_WORKTREES;
			else if (!strcasecmp(name, "modules"))
				out->role = GUARD_R_MODULES;
			/* D13: worktrees/ of a linked worktree's common folder */
			if (out->role == GUARD_R_WORKTREES)
				out->flags |= parent->flags & GUARD_SHARED;
			return 0;
		}
		if (name_is(name, "objects")) {
			out->role = GUARD_R_OBJECTS;
			return 0;
		}
		if (name_is(name, "refs") || name_is(name, "logs")) {
			/* refs/: files git reads as refs (R1); logs/: D13 only */
			out->role = name_is(name, "refs") ? GUARD_R_REFS : GUARD_R_NONE;
			if (parent->flags & GUARD_SHARED) {
				out->flags |= GUARD_SHARED;
				if (out->role == GUARD_R_NONE)
					out->role = GUARD_R_LOGS;
			}
			return 0;
		}
		if (name_is(name, "rebase-merge") || name_is(name, "rebase-apply") ||
		    name_is(name, "sequencer")) {
			out->role = GUARD_R_SEQ;
			return 0;
		}
		if ((i = (int)guard_content_rule(parent, name))) {
			set(out, GUARD_CHK, (uint8_t)i);
			return 0;
		}
	} else if (parent->kind == GUARD_INGIT) {
		switch (parent->role) {
		case GUARD_R_REFS:
			/* every file under refs/ is a ref (R1), a lock aside */
			if (S_ISDIR(mode))
				out->role = GUARD_R_REFS;
			else if ((i = (int)guard_content_rule(parent, name)))
				set(out, GUARD_CHK, (uint8_t)i);
			return 0;
		case GUARD_R_LOGS:
			/* logs/refs of a common folder (D13: its per-worktree folders) */
			if (name_is(name, "refs") && S_ISDIR(mode)) {
				out->role = GUARD_R_LOGS;
				out->flags |= GUARD_SHARED;
			}
			return 0;
		case GUARD_R_SEQ:
			if ((i = (int)guard_content_rule(parent, name))) {
				set(out, GUARD_CHK, (uint8_t)i);
				return 0;
			}
			/* the stash a rebase applies when it ends (or --quit stores) */
			if (name_or_lock(name, "autostash")) {
				set(out, GUARD_RO, GUARD_RULE_D11);
				return 0;
			}
			break;
		case GUARD_R_OBJECTS:
			if (name_is(name, "info"))
				out->role = GUARD_R_OBJINFO;
			else if (name_is(name, "pack") && S_ISDIR(mode))
				out->role = GUARD_R_OBJPACK;
			break;
		case GUARD_R_OBJPACK:
			/* D7: the multi-pack-index names its packs (names.c) */
			if ((i = (int)guard_content_rule(parent, name))) {
				set(out, GUARD_CHK, (uint8_t)i);
				return 0;
			}
			/* D7: git >= 2.47's incremental chain, whose layers name packs too */
			if (name_is(name, "multi-pack-index.d") && S_ISDIR(mode))
				out->role = GUARD_R_MIDXD;
			break;
		case GUARD_R_MIDXD:
			if ((i = (int)guard_content_rule(parent, name))) {
				set(out, GUARD_CHK, (uint8_t)i);
				return 0;
			}
			break;
		case GUARD_R_OBJINFO:
			if (name_or_lock(name, "alternates") ||
			    name_or_lock(name, "http-alternates"))
				set(out, GUARD_RO, GUARD_RULE_D7);
			return 0;
		case GUARD_R_MODULES:
			/*
			 * D6: modules/ holds each submodule's own git folder, found by
			 * its shape and then guarded like any git folder, so work
			 * inside a submodule goes on. What leads to them is fixed,
			 * and nothing new may be made here (check_new).
			 */
			set(out, GUARD_RO, GUARD_RULE_D6);
			if (S_ISDIR(mode)) {
				out->role = GUARD_R_MODULES;
				return 1;
			}
			return 0;
		case GUARD_R_WORKTREES:
			/* an <id>: a git folder of its own; anything else in worktrees/ is RO */
			if (S_ISDIR(mode)) {
				out->kind = GUARD_GITDIR;
				out->flags = GUARD_WT;
				return 1;
			}
			set(out, GUARD_RO, GUARD_RULE_D5);
			return 0;
		default:
			break;
		}
	}
	if (parent->kind == GUARD_BOTREPO) {
		/* the bot's own repository, but a git folder inside may be someone else's */
		return S_ISDIR(mode);
	}
	if (name_is_dotgit(name)) {
		if (S_ISDIR(mode)) {
			out->kind = GUARD_GITDIR;
			return 1;
		}
		set(out, GUARD_RO, GUARD_RULE_W1);
		return 1;
	}
	if (S_ISDIR(mode) && name_is_bare(name)) {
		out->kind = GUARD_GITDIR;
		return 1;
	}
	(void)g;
	return S_ISDIR(mode);
}

/*
 * A folder's git shape: bit 0 HEAD, 1 objects/, 2 refs/, 3 commondir.  True
 * when git would take it for a git folder: HEAD and either objects/ and refs/
 * or a commondir (git's is_git_directory).
 */
bool guard_shape(int fd, int *has)
{
	static const char *const names[] = {"HEAD", "objects", "refs", "commondir"};
	struct stat st;
	int i, h = 0;

	for (i = 0; i < 4; i++) {
		/* without HEAD a folder is a git folder only through a pointer */
		if (i == 1 && !(h & 1) && !has)
			break;
		if (!fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW))
			h |= 1 << i;
	}
	if (has)
		*has = h;
	return (h & 1) && ((h & 6) == 6 || (h & 8));
}

/* A .git file or symlink in the folder PARENT_FD: note where it points. */
int guard_note_dotgit(struct guard *g, int parent_fd, const char *name, const struct stat *st)
{
	char path[GUARD_GITFILE_MAX], *buf;
	size_t len;
	ssize_t n;
	int rc;

	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(parent_fd, name, path, sizeof(path) - 1);
		if (n <= 0)
			return 0;
		path[n] = '\0';
	} else if (S_ISREG(st->st_mode)) {
		rc = guard_read_file(parent_fd, name, GUARD_GITFILE_MAX, &buf, &len, NULL);
		if (rc)
			return 0; /* RO anyway; git would not read it either */
		rc = guard_parse_gitfile(buf, len, path, sizeof(path));
		free(buf);
		if (rc)
			return 0;
	} else {
		return 0;
	}
	return guard_note_pointer(g, parent_fd, path);
}

/* The content stage for a git folder: its repository state decides. */
static int classify_gitdir(struct guard *g, int fd, const struct stat *st, struct guard_cls *out)
{
	struct guard_repo info;
	int rc;

	rc = guard_repo_get(g, fd, st, &info);
	if (rc)
		return rc;
	if (info.bot) {
		out->kind = GUARD_BOTREPO;
		out->flags = 0;
		out->rule = 0;
		return 0;
	}
	out->kind = GUARD_GITDIR;
	if (out->flags & GUARD_WT) {
		struct stat cst;

		/* D5: an admin folder without commondir is a complete git folder */
		if (fstatat(fd, "commondir", &cst, AT_SYMLINK_NOFOLLOW) || !S_ISREG(cst.st_mode))
			set(out, GUARD_TREE | GUARD_RO, GUARD_RULE_D5);
	}
	if (info.rule && !(out->flags & GUARD_TREE))
		set(out, GUARD_TREE | GUARD_RO, info.rule);
	return 0;
}

/*
 * A folder holding a .git is a worktree top: its repository's config may name
 * files in it (a relative hooksPath, an include).  A repository made on the
 * host while mounted is read when its top is looked up, for the bot could
 * write there without ever looking its .git up.  One fstatat for a folder
 * without a .git.
 */
static int note_worktree_top(struct guard *g, int fd)
{
	struct guard_repo info;
	struct stat st;
	uint8_t f = 0;
	int gfd, rc = 0;

	if (fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		gfd = openat(fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (gfd < 0)
			return 0;
		if (guard_shape(gfd, NULL))
			rc = guard_repo_get(g, gfd, &st, &info);
		close(gfd);
		return rc;
	}
	if (guard_rec_any(g))
		f = guard_rec_file(g, &st, -1, fd, ".git", NULL);
	return f & REC_BOT ? 0 : guard_note_dotgit(g, fd, ".git", &st);
}

/*
 * A plain folder the person made a git folder on the host since it was
 * classified (`git init --bare` where the bot's shell sits): a name git
 * keeps in a git folder (hooks, config...) asks for the folder's shape
 * again, and a git folder found so is learnt (its records, a new
 * generation) and judged as one: *AS is its class then.
 */
bool guard_plain_now_gitdir(struct guard *g, const struct guard_cls *parent, int parent_fd,
			    const char *name, struct guard_cls *as)
{
	struct guard_repo info;
	struct stat st;

	if (parent->kind != GUARD_PLAIN || parent->flags || parent_fd < 0 || gitdir_child(name) < 0 ||
	    !guard_shape(parent_fd, NULL) || fstat(parent_fd, &st) < 0 ||
	    guard_repo_get(g, parent_fd, &st, &info))
		return false;
	*as = *parent;
	as->kind = info.bot ? GUARD_BOTREPO : GUARD_GITDIR;
	as->role = GUARD_R_NONE;
	if (info.rule)
		set(as, GUARD_RO | GUARD_TREE, info.rule);
	return true;
}

/* note_worktree_top for a folder whose class may be older than its .git (check_new) */
int guard_note_top(struct guard *g, int fd)
{
	return note_worktree_top(g, fd);
}

/* Is this folder (open as FD) a git folder even though its name does not say so? */
static bool known_gitdir(struct guard *g, const struct stat *st, int fd, bool *bot)
{
	return guard_repo_known(g, st->st_dev, st->st_ino, fd, bot);
}

/*
 * The class of NAME in the folder PARENT_FD whose class is PARENT.  ST is the
 * entry's stat (lstat: a symlink is a symlink).  FD is the entry's O_PATH fd
 * if the caller has one (it saves an open for folders), else -1.  A plain
 * file in a plain folder costs no syscall.  Returns 0 or -errno.
 */
int guard_classify(struct guard *g, const struct guard_cls *parent, int parent_fd, const char *name,
		   const struct stat *st, int fd, struct guard_cls *out)
{
	struct guard_cls now;
	int own = -1, rc = 0;
	bool bot;

	if (guard_plain_now_gitdir(g, parent, parent_fd, name, &now))
		parent = &now;
	out->dev = st->st_dev;
	out->ino = st->st_ino;
	if (!guard_name_stage(g, parent, name, st->st_mode, out))
		goto tables;

	if (S_ISDIR(st->st_mode)) {
		if (fd < 0) {
			own = openat(parent_fd, name,
				     O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
			if (own < 0)
				return -errno;
			fd = own;
		}
		if (out->flags & GUARD_TREE) {
			/* inside modules/: a submodule's git folder still has a config to scan */
			if (guard_shape(fd, NULL)) {
				struct guard_repo info;

				rc = guard_repo_get(g, fd, st, &info);
			}
			goto close;
		}
		if (out->kind != GUARD_GITDIR) {
			if (known_gitdir(g, st, fd, &bot)) {
				out->kind = GUARD_GITDIR;
			} else if (parent->kind == GUARD_BOTREPO) {
				/* a folder git made in the bot's repository is the bot's too */
				out->kind = GUARD_BOTREPO;
				goto close;
			} else if (guard_shape(fd, NULL)) {
				out->kind = GUARD_GITDIR;
			}
		}
		if (out->kind == GUARD_GITDIR)
			rc = classify_gitdir(g, fd, st, out);
		else if (out->kind == GUARD_PLAIN)
			rc = note_worktree_top(g, fd);
	} else if (name_is_dotgit(name) && parent->kind != GUARD_BOTREPO) {
		uint8_t f = 0;

		if (guard_rec_any(g))
			f = guard_rec_file(g, st, -1, parent_fd, name, NULL);
		if (f & REC_BOT) {
			out->flags = 0;
			out->rule = 0;
		} else {
			rc = guard_note_dotgit(g, parent_fd, name, st);
		}
	}
close:
	if (own >= 0) {
		close(own);
		fd = -1;
	}
	if (rc)
		return rc;
tables:
	if (out->kind != GUARD_BOTREPO && guard_rec_any(g)) {
		uint8_t rule = 0, f;

		f = guard_rec_file(g, st, fd, parent_fd, name, &rule);
		/* a folder's link count is no hard link: a reused number is no one's */
		if ((f & REC_LINKS) && (S_ISDIR(st->st_mode) || st->st_nlink < 2))
			f = 0;
		f &= GUARD_RO | GUARD_TREE | GUARD_PIN;
		if (f & GUARD_TREE)
			f |= GUARD_RO;
		if (f)
			set(out, f, rule);
		/*
		 * A name recorded while missing (a hooksPath folder not made yet)
		 * that now exists, made on the host: it is what was guarded.
		 */
		if (name && parent) {
			f = guard_rec_missing(g, parent->dev, parent->ino, name, &rule);
			f &= GUARD_RO | GUARD_TREE;
			if (f)
				set(out, f | GUARD_RO, rule);
		}
	}
	return 0;
}

/* Does this class refuse anything at all? */
bool guard_cls_protected(const struct guard_cls *cls)
{
	return cls->kind == GUARD_GITDIR ||
	       (cls->flags & (GUARD_RO | GUARD_TREE | GUARD_PIN | GUARD_CHK));
}

/*
 * The class of the root.  With a root path, the root is classified from "/"
 * down, one component at a time, so that a root which is a git folder, or
 * lies inside one, gets the rules it would have at any depth.
 */
int guard_classify_root(struct guard *g, struct guard_cls *out, struct guard_err *err)
{
	struct guard_cls cls = {0}, c;
	char comp[NAME_MAX + 1];
	const char *p;
	struct stat st;
	uint64_t gen = guard_generation(g);
	int cur, nfd, rc, n;

	pthread_rwlock_rdlock(&g->lock);
	if (g->root_known && g->root_gen == gen) {
		*out = g->root_cls;
		pthread_rwlock_unlock(&g->lock);
		return 0;
	}
	pthread_rwlock_unlock(&g->lock);

	if (!g->root_path) {
		if (fstat(g->root_fd, &st) < 0)
			return guard_err_set(err, -errno, "gitguard: root: %s", strerror(errno));
		memset(&cls, 0, sizeof(cls));
		cls.dev = st.st_dev;
		cls.ino = st.st_ino;
		if (guard_shape(g->root_fd, NULL)) {
			struct guard_repo info;

			rc = guard_repo_get(g, g->root_fd, &st, &info);
			if (rc)
				return guard_err_set(err, rc, "gitguard: root: %s", strerror(-rc));
			cls.kind = info.bot ? GUARD_BOTREPO : GUARD_GITDIR;
			if (info.rule) {
				cls.flags = GUARD_RO | GUARD_TREE;
				cls.rule = info.rule;
			}
		}
		goto done;
	}
	cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0 || fstat(cur, &st) < 0)
		return guard_err_set(err, -errno, "gitguard: /: %s", strerror(errno));
	cls.dev = st.st_dev;
	cls.ino = st.st_ino;
	for (p = g->root_path; (n = gg_path_next(&p, comp, sizeof(comp))) != 0;) {
		if (n < 0) {
			close(cur);
			return guard_err_set(err, -ENAMETOOLONG, "gitguard: %s: name too long",
					     g->root_path);
		}
		nfd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (nfd < 0 || fstat(nfd, &st) < 0) {
			rc = -errno;
			if (nfd >= 0)
				close(nfd);
			close(cur);
			return guard_err_set(err, rc, "gitguard: %s: %s: %s", g->root_path, comp,
					     strerror(-rc));
		}
		rc = guard_classify(g, &cls, cur, comp, &st, nfd, &c);
		close(cur);
		cur = nfd;
		if (rc) {
			close(cur);
			return guard_err_set(err, rc, "gitguard: %s: %s", g->root_path,
					     strerror(-rc));
		}
		cls = c;
	}
	close(cur);
	if (cls.dev != g->root_dev || cls.ino != g->root_ino)
		return guard_err_set(err, -ESTALE, "gitguard: %s is no longer the root folder",
				     g->root_path);
done:
	/* D13: the common folder a linked worktree's bot is given */
	if (g->linked_wt && cls.kind == GUARD_GITDIR)
		cls.flags |= GUARD_SHARED;
	pthread_rwlock_wrlock(&g->lock);
	g->root_cls = cls;
	g->root_known = true;
	g->root_gen = gen;
	pthread_rwlock_unlock(&g->lock);
	*out = cls;
	return 0;
}
