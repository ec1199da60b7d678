/* SPDX-License-Identifier: MIT */
/*
 * libgit2's view of a git folder, as a cross-check of gitguard's own reading
 * (repo.c): the worktree libgit2 finds for it, its common folder, and the
 * core.hooksPath values its config gives.  repo.c applies the union of both
 * answers, and a git folder whose common folder the two see differently is
 * read-only as a whole: the stricter answer wins.
 *
 * libgit2 reads by path and follows links, and would block on a FIFO.  So it
 * is asked only about a git folder gitguard has read safely first (config,
 * commondir and includes regular files inside the root, no X3), its own
 * files are checked not to be FIFOs just before, it is opened through
 * /proc/self/fd/N with GIT_REPOSITORY_OPEN_NO_SEARCH (no discovery upwards),
 * and the person's global and system config are kept out of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <git2.h>

#include "gitguard/guard-int.h"

static pthread_once_t lg2_once = PTHREAD_ONCE_INIT;
static bool lg2_ready;

static void lg2_init(void)
{
	static const int levels[] = {GIT_CONFIG_LEVEL_PROGRAMDATA, GIT_CONFIG_LEVEL_SYSTEM,
				     GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL};
	size_t i;

	if (git_libgit2_init() < 0)
		return;
	/* the server runs as root on a person's files: ownership is not the question */
	if (git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0) < 0)
		return;
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, levels[i], "") < 0)
			return;
	lg2_ready = true;
}

/* Files libgit2 opens by path when it opens DFD: none may be a FIFO or a device */
static bool lg2_safe(int dfd)
{
	static const char *const names[] = {"HEAD", "commondir", "gitdir", "config"};
	struct stat st;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
			continue;
		if (S_ISLNK(st.st_mode) && i == 0)
			continue; /* HEAD under core.preferSymlinkRefs */
		return false;
	}
	return true;
}

static int on_value(const git_config_entry *e, void *arg)
{
	struct guard_lg2 *v = arg;
	char *d;

	if (v->nhooks >= sizeof(v->hooks) / sizeof(v->hooks[0]) || !e->value)
		return 0;
	d = strdup(e->value);
	if (!d)
		return -1;
	v->hooks[v->nhooks++] = d;
	return 0;
}

static char *dup_path(const char *p)
{
	size_t n;
	char *d;

	if (!p)
		return NULL;
	d = strdup(p);
	n = d ? strlen(d) : 0;
	/* libgit2 ends folder paths with a slash */
	while (n > 1 && d[n - 1] == '/')
		d[--n] = '\0';
	return d;
}

/*
 * Fills V with libgit2's answers for the git folder DFD.  Returns 0, or -1
 * when libgit2 is not asked or cannot open it (V then holds nothing).
 */
int guard_lg2_view(int dfd, struct guard_lg2 *v)
{
	git_repository *repo = NULL;
	git_config *cfg = NULL;
	char path[64];
	int rc = -1;

	memset(v, 0, sizeof(*v));
	pthread_once(&lg2_once, lg2_init);
	if (!lg2_ready || !lg2_safe(dfd))
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dfd);
	if (git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
		return -1;
	v->workdir = dup_path(git_repository_workdir(repo));
	v->commondir = dup_path(git_repository_commondir(repo));
	if (!v->commondir)
		goto out;
	if (git_repository_config_snapshot(&cfg, repo) < 0)
		goto out;
	rc = git_config_get_multivar_foreach(cfg, "core.hooksPath", NULL, on_value, v);
	if (rc == GIT_ENOTFOUND)
		rc = 0;
	rc = rc < 0 ? -1 : 0;
out:
	git_config_free(cfg);
	git_repository_free(repo);
	if (rc)
		guard_lg2_free(v);
	return rc;
}

void guard_lg2_free(struct guard_lg2 *v)
{
	while (v->nhooks)
		free(v->hooks[--v->nhooks]);
	free(v->workdir);
	free(v->commondir);
	v->workdir = v->commondir = NULL;
}
