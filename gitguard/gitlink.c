/* SPDX-License-Identifier: MIT */
/*
 * Gitlinks to a bot's repository (allow_new_repos).  A repository a bot
 * makes is the bot's: no rules inside, its config may name core.fsmonitor.
 * Untracked, it is only a folder to the person's git; tracked as a gitlink
 * (an index entry of mode 160000) with its .git in place, the person's `git
 * status` and `git diff` start git in it, which runs what its config names
 * (G1's own reason).  So:
 *   - X2: an index renamed in may not hold a gitlink whose path in the work
 *     tree holds a .git a bot made (through any mount of the view);
 *   - G1: under allow_new_repos, no .git may be made in a folder that the
 *     index of a repository around it already tracks as a gitlink (the
 *     entry staged first, the repository made after).
 * The view keeps every .git (folder, file or symlink) and bare-shaped folder
 * a bot made, whichever root it was made in (guard_botmade_add).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitguard/ggutil.h"
#include "gitguard/guard-int.h"

void guard_botmade_add(struct guard *g, uint64_t dev, uint64_t ino)
{
	struct guard_view *v = g->view;

	pthread_rwlock_wrlock(&v->lock);
	if (!recs_add(&v->botmade, dev, ino, NULL, REC_BOT, GUARD_RULE_G1))
		atomic_store(&v->nbotmade, v->botmade.n);
	pthread_rwlock_unlock(&v->lock);
}

/* Did a bot of the view make (dev, ino) under allow_new_repos?  Lock-free when none did */
bool guard_botmade(struct guard *g, uint64_t dev, uint64_t ino)
{
	struct guard_view *v = g->view;
	bool found;

	if (!atomic_load(&v->nbotmade))
		return false;
	pthread_rwlock_rdlock(&v->lock);
	found = recs_has(&v->botmade, dev, ino, REC_BOT);
	pthread_rwlock_unlock(&v->lock);
	return found;
}

struct gitlinks {
	struct guard *g;
	int topfd;
	const char *want; /* guard_gitlink_claimed: the path looked for */
	bool found;
};

/* X2: a gitlink entry whose folder in the work tree holds a bot's .git */
static int gitlink_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
			 const char **why)
{
	struct gitlinks *l = arg;
	struct stat st;
	int fd;

	(void)oid;
	if ((mode & 0170000) != 0160000)
		return 0;
	fd = gg_open_nofollow(l->topfd, path, O_PATH | O_DIRECTORY, true);
	if (fd < 0)
		return 0; /* no folder there (yet: G1 looks when a .git is made) */
	if (!fstatat(fd, ".git", &st, AT_SYMLINK_NOFOLLOW) &&
	    guard_botmade(l->g, st.st_dev, st.st_ino)) {
		close(fd);
		*why = "a gitlink to a repository a bot made (git status would run git in it)";
		return -EROFS;
	}
	close(fd);
	return 0;
}

/*
 * X2: BUF's entries and resolve-undo records (`git checkout -m` stages them
 * again); with SPLIT (BUF or the index that takes entries from BUF) and its
 * SHARED, also every shared entry the split index takes: a replacement
 * under the shared name, and one kept as the shared index has it.
 */
int guard_gitlink_check(struct guard *g, int topfd, const char *buf, size_t len, const char *split,
			size_t splitlen, const char *shared, size_t sharedlen, size_t hashsz,
			const char **why)
{
	struct gitlinks l = {.g = g, .topfd = topfd};

	if (!g || topfd < 0 || !atomic_load(&g->view->nbotmade))
		return 0;
	if (guard_index_entries(buf, len, hashsz, gitlink_entry, &l, why) < 0 ||
	    guard_index_reuc(buf, len, hashsz, gitlink_entry, &l, why) < 0)
		return -EROFS;
	if (split && guard_index_from_shared(split, splitlen, shared, sharedlen, hashsz,
					     gitlink_entry, &l, why) < 0)
		return -EROFS;
	return 0;
}

static int claimed_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
			 const char **why)
{
	struct gitlinks *l = arg;

	(void)oid;
	(void)why;
	if ((mode & 0170000) == 0160000 && !strcmp(path, l->want))
		l->found = true;
	return 0;
}

/*
 * Does the index of the git folder GFD track WANT as a gitlink: an entry, a
 * resolve-undo record, an entry of its shared index, or a replacement of one?
 */
static bool index_tracks(struct guard *g, int gfd, const char *want)
{
	struct gitlinks l = {.want = want};
	char hex[2 * 32 + 1], sname[sizeof("sharedindex.") + sizeof(hex)], *buf, *sbuf;
	size_t len, slen, hs = guard_hash_size(g, gfd);
	const char *why = NULL;

	if (guard_read_file(gfd, "index", GUARD_INDEX_MAX, &buf, &len, NULL))
		return false;
	if (guard_index_entries(buf, len, hs, claimed_entry, &l, &why) >= 0 && !l.found &&
	    guard_index_reuc(buf, len, hs, claimed_entry, &l, &why) >= 0 && !l.found &&
	    guard_index_base(buf, len, hs, hex, &why) == 1) {
		snprintf(sname, sizeof(sname), "sharedindex.%s", hex);
		if (!guard_read_file(gfd, sname, GUARD_INDEX_MAX, &sbuf, &slen, NULL)) {
			/* every shared entry, deleted or not, and what replaces one */
			guard_index_entries(sbuf, slen, hs, claimed_entry, &l, &why);
			guard_index_replaced(buf, len, sbuf, slen, hs, claimed_entry, &l, &why);
			free(sbuf);
		}
	}
	free(buf);
	return l.found;
}

/* The git folder of the work tree top TOPFD (a .git folder, or where a .git file leads), or -1 */
int guard_top_gitdir(struct guard *g, int topfd)
{
	struct resolved res = {.fd = -1, .dirfd = -1};
	char path[GUARD_GITFILE_MAX], *buf;
	struct stat st;
	size_t len;
	int fd = -1, rc;

	if (fstatat(topfd, ".git", &st, AT_SYMLINK_NOFOLLOW))
		return -1;
	if (S_ISDIR(st.st_mode))
		return openat(topfd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!S_ISREG(st.st_mode) ||
	    guard_read_file(topfd, ".git", GUARD_GITFILE_MAX, &buf, &len, NULL))
		return -1;
	rc = guard_parse_gitfile(buf, len, path, sizeof(path));
	free(buf);
	if (!rc && guard_resolve(g, topfd, path, true, NULL, NULL, &res) == RES_INSIDE &&
	    S_ISDIR(res.st.st_mode))
		fd = fcntl(res.fd, F_DUPFD_CLOEXEC, 3);
	resolved_close(&res);
	return fd;
}

/* Is the git folder GFD one this guard's bot made? */
static bool bot_gitdir(struct guard *g, int gfd)
{
	struct stat st;

	return !fstat(gfd, &st) && guard_bot_repo(g, st.st_dev, st.st_ino, gfd);
}

/*
 * Is the folder CUR a work tree top whose repository the bot did not make?
 * Any .git there counts (a folder, a .git file, a symlink), and it is the
 * bot's only when it leads to a git folder the bot made: a linked
 * worktree's or a --separate-git-dir's .git file leading out of the view,
 * or one that cannot be followed, is the person's. *GFD gets the git
 * folder when it is the bot's or in the view (else -1).
 */
static bool foreign_top(struct guard *g, int cur, int *gfd)
{
	struct stat st;

	*gfd = -1;
	if (fstatat(cur, ".git", &st, AT_SYMLINK_NOFOLLOW))
		return false;
	*gfd = guard_top_gitdir(g, cur);
	return *gfd < 0 || !bot_gitdir(g, *gfd);
}

/*
 * G1: a bot's repository in the work tree of one it did not make. Its
 * config and hooks are the bot's; the person's git takes it for a
 * submodule as soon as a gitlink names it, and gitlinks come from more than
 * the bot's index: a commit the person merges or checks out, a stash, the
 * person's own git add -A.
 */
static int foreign_around(struct guard_verdict *v)
{
	return guard_refuse_why(v, GUARD_RULE_G1,
				"a repository inside the work tree of one the bot did not make "
				"(the person's git would take it for a submodule and run what "
				"its config names)");
}

/*
 * G1 with allow_new_repos for a folder holding a bot's repository moved to
 * the folder PARENT_FD: -EROFS with V when it or a folder above it (to "/")
 * is the work tree top of a repository the bot did not make, else 0.
 */
int guard_botrepo_moved_in(struct guard *g, int parent_fd, struct guard_verdict *v)
{
	struct stat st;
	int cur = fcntl(parent_fd, F_DUPFD_CLOEXEC, 3), gfd, n, rc = 0;

	if (cur < 0)
		return guard_refuse_why(v, GUARD_RULE_G1, "a repository moved to a folder not known");
	for (n = 0; !rc && n < GUARD_WALK_DEPTH; n++) {
		if (foreign_top(g, cur, &gfd))
			rc = foreign_around(v);
		if (gfd >= 0)
			close(gfd);
		if (rc || fstat(cur, &st) || gg_step_up(&cur, &st))
			break;
	}
	close(cur);
	return rc;
}

/*
 * G1 with allow_new_repos: a .git made in the folder PARENT_FD, whose path
 * from the root is PARENT_PATH ("" or "." for the root): -EROFS with V when
 * a repository around it tracks that folder as a gitlink (or when the path
 * no longer leads to it: the host moved folders meanwhile), else 0.  The
 * folders above are reached by "..", each checked against the path's names,
 * up to "/" when the root's own path is known, else up to the root.
 */
int guard_gitlink_claimed(struct guard *g, int parent_fd, const char *parent_path,
			  struct guard_verdict *v)
{
	char full[PATH_MAX], name[NAME_MAX + 1];
	size_t start, end;
	struct stat st, up;
	int cur, gfd, rc = 0;

	/* from "/" when the root's place is known: a repository above the root counts too */
	if (!parent_path ||
	    snprintf(full, sizeof(full), "%s%s%s", g->root_path ? g->root_path + 1 : "",
		     g->root_path && g->root_path[1] && parent_path[0] ? "/" : "",
		     parent_path) >= (int)sizeof(full) ||
	    !gg_path_rel(full))
		return guard_refuse_why(v, GUARD_RULE_G1, "a new .git whose folder is not known");
	end = strcmp(full, ".") ? strlen(full) : 0;
	cur = fcntl(parent_fd, F_DUPFD_CLOEXEC, 3);
	/* CUR is the folder FULL[0, END) names; going up leaves its last name */
	while (cur >= 0 && end > 0) {
		for (start = end; start > 0 && full[start - 1] != '/'; start--)
			;
		if (end - start > NAME_MAX)
			break;
		memcpy(name, full + start, end - start);
		name[end - start] = '\0';
		if (fstat(cur, &st) || gg_step_up(&cur, &st) ||
		    fstatat(cur, name, &up, AT_SYMLINK_NOFOLLOW) || up.st_dev != st.st_dev ||
		    up.st_ino != st.st_ino) {
			rc = guard_refuse_why(v, GUARD_RULE_G1,
					      "a new .git in a folder moved meanwhile");
			break;
		}
		/* FULL + START: the new .git's folder, seen from CUR */
		if (foreign_top(g, cur, &gfd))
			rc = foreign_around(v);
		else if (gfd >= 0 && index_tracks(g, gfd, full + start))
			rc = guard_refuse_why(v, GUARD_RULE_G1,
					      "a repository here would be a gitlink of the one "
					      "around it, whose git status runs git in it");
		if (gfd >= 0)
			close(gfd);
		if (rc)
			break;
		end = start ? start - 1 : 0;
	}
	if (cur >= 0)
		close(cur);
	return rc;
}
