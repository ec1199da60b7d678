/* SPDX-License-Identifier: MIT */
/*
 * The walk made once when a root is mounted. Protection that depends on a
 * repository's content (its include and hooksPath targets, the other names
 * of its protected files) is only known once the repository is scanned;
 * without this walk a bot could write through a name it reaches before it
 * ever looks the repository's .git up. Folders are classified as lookups
 * would classify them, so every git folder in the root is scanned.
 */
#include "gitguard/guard-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SCAN_DEPTH 512
#define SCAN_ABOVE_MAX 4096 /* folders above the root looked at for a .git */
#define SCAN_PROGRESS 4096  /* entries between two progress reports */

struct scan {
	struct guard *g;
	unsigned long entries, budget;
	bool truncated;
	guard_progress_fn progress;
	void *progress_arg;
};

static void scan_progress(struct scan *s)
{
	size_t n;

	pthread_rwlock_rdlock(&s->g->view->lock);
	n = s->g->view->nrepos;
	pthread_rwlock_unlock(&s->g->view->lock);
	s->progress(s->progress_arg, s->entries, n);
}

/* Inside a git folder these hold no repository: objects, refs and logs can be huge. */
static bool skip_in_gitdir(const char *name)
{
	return !strcmp(name, "objects") || !strcmp(name, "refs") || !strcmp(name, "logs");
}

static void scan_dir(struct scan *s, int dfd, const struct guard_cls *cls, unsigned depth)
{
	struct guard_cls c;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	if (depth > SCAN_DEPTH || s->truncated)
		return;
	d = gg_opendirat(dfd, ".");
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		bool dotgit = name_is_dotgit(name);

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (++s->entries > s->budget) {
			s->truncated = true;
			break;
		}
		if (s->progress != NULL && s->entries % SCAN_PROGRESS == 0)
			scan_progress(s);
		/* Only folders, and .git files or links, can be or point to git folders. */
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN && !dotgit)
			continue;
		if (cls->kind == GUARD_GITDIR && skip_in_gitdir(name))
			continue;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!S_ISDIR(st.st_mode) && !dotgit)
			continue;
		fd = S_ISDIR(st.st_mode)
			     ? openat(dfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC)
			     : -1;
		if (guard_classify(s->g, cls, dfd, name, &st, fd, &c) == 0 && fd >= 0 &&
		    c.kind != GUARD_BOTREPO)
			scan_dir(s, fd, &c, depth + 1);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
}

/*
 * git finds its repository in the folder it runs in or in any folder above,
 * so a repository above the root (the root is a folder of a worktree, or of
 * a submodule) has a config that can name files inside the root: a relative
 * hooksPath taken from its top, an include.  Each folder above the root that
 * holds a .git is read now, as one inside would be.
 */
static void scan_above(struct guard *g)
{
	struct guard_repo info;
	struct stat st, cst;
	int cur, gfd;
	unsigned n;

	cur = openat(g->root_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (n = 0; cur >= 0 && n < SCAN_ABOVE_MAX && !fstat(cur, &cst); n++) {
		if (!fstatat(cur, ".git", &st, AT_SYMLINK_NOFOLLOW)) {
			if (S_ISDIR(st.st_mode)) {
				gfd = openat(cur, ".git",
					     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (gfd >= 0 && guard_shape(gfd, NULL))
					guard_repo_get(g, gfd, &st, &info);
				if (gfd >= 0)
					close(gfd);
			} else {
				guard_note_dotgit(g, cur, ".git", &st);
			}
		}
		if (gg_step_up(&cur, &cst))
			break; /* "/" */
	}
	if (cur >= 0)
		close(cur);
}

/* Walk the root, scanning every repository in it; at most budget entries. */
int guard_scan_tree(struct guard *g, unsigned long budget, struct guard_err *err)
{
	return guard_scan_tree_progress(g, budget, NULL, NULL, err);
}

/* Walk the root, scanning every repository in it; at most budget entries. */
int guard_scan_tree_progress(struct guard *g, unsigned long budget, guard_progress_fn fn, void *arg,
			     struct guard_err *err)
{
	struct scan s = {g, 0, budget ? budget : 10000000UL, false, fn, arg};
	struct guard_cls root;
	char msg[160];
	int rc;

	rc = guard_classify_root(g, &root, err);
	if (rc)
		return rc;
	/* repositories the view knew before this root joined: their records inside it */
	guard_view_refresh(g);
	scan_above(g);
	scan_dir(&s, g->root_fd, &root, 0);
	if (fn != NULL)
		scan_progress(&s);
	if (s.truncated && g->log) {
		snprintf(msg, sizeof(msg),
			 "gitguard: the root has more than %lu entries: repositories beyond "
			 "them are guarded from their first lookup",
			 s.budget);
		g->log(g->log_arg, msg);
	}
	return 0;
}
