/* SPDX-License-Identifier: MIT */
/*
 * The table of repositories: each git folder's scan result (reposcan.c),
 * keyed by its (st_dev, st_ino), published under the lock, rescanned on
 * notify or when a watched file changed (guard_revalidate), and the
 * worktree tops learnt from pointers (.git files and symlinks).
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

static struct guard_repo **repo_find(struct guard *g, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < g->nrepos; i++)
		if (g->repos[i]->dev == dev && g->repos[i]->ino == ino)
			return &g->repos[i];
	return NULL;
}

static bool recs_equal(const struct guard_recs *a, const struct guard_recs *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++) {
		const struct guard_rec *x = &a->v[i], *y = &b->v[i];

		if (x->dev != y->dev || x->ino != y->ino || x->flags != y->flags ||
		    !x->name != !y->name || (x->name && strcmp(x->name, y->name)))
			return false;
	}
	return true;
}

/* Publishes R (replacing any record of the same folder); lock held exclusive. */
static int repo_publish(struct guard *g, struct guard_repo *r, bool *changed)
{
	struct guard_repo **slot = repo_find(g, r->dev, r->ino), *old;

	if (slot) {
		old = *slot;
		*changed = old->rule != r->rule || !recs_equal(&old->recs, &r->recs);
		*slot = r;
		/* the table borrows the old record's names: rebuilt before it is freed */
		if ((old->recs.n || r->recs.n) && guard_tab_rebuild(g)) {
			*slot = old;
			return -ENOMEM;
		}
		if (old->bot) {
			/* the bot's own: keep it so */
			r->bot = true;
			r->path = old->path;
			old->path = NULL;
		}
		guard_repo_free(old);
		return 0;
	} else {
		if (gg_grow(&g->repos, &g->arepos, g->nrepos + 1, sizeof(*g->repos), 8))
			return -ENOMEM;
		g->repos[g->nrepos++] = r;
		*changed = r->recs.n > 0;
	}
	if (*changed)
		guard_tab_rebuild(g);
	return 0;
}

static bool stamp_fresh(const struct guard_repo *r, int dfd)
{
	struct stat st;

	if (!r->stamped)
		return true;
	if (fstatat(dfd, "config", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return r->stamp.st_ino == 0;
	return guard_stat_same(&r->stamp, &st);
}

/*
 * The state of the git folder DFD (stat DST): from the table if its config
 * has not changed, else scanned now.  Fills OUT's bot, rule and why only.
 */
int guard_repo_get(struct guard *g, int dfd, const struct stat *dst, struct guard_repo *out)
{
	struct guard_repo **slot, *r;
	bool found = false, changed = false;
	int rc;

	memset(out, 0, sizeof(*out));
	pthread_rwlock_rdlock(&g->lock);
	slot = repo_find(g, dst->st_dev, dst->st_ino);
	if (slot) {
		found = true;
		out->bot = (*slot)->bot;
		out->rule = (*slot)->rule;
		out->why = (*slot)->why;
		out->stamped = (*slot)->stamped;
		out->stamp = (*slot)->stamp;
	}
	pthread_rwlock_unlock(&g->lock);
	if (found && (out->bot || stamp_fresh(out, dfd)))
		return 0;

	r = guard_repo_scan(g, dfd, dst);
	if (!r)
		return -ENOMEM;
	out->bot = false;
	out->rule = r->rule;
	out->why = r->why;
	pthread_rwlock_wrlock(&g->lock);
	rc = repo_publish(g, r, &changed);
	if (!rc)
		out->bot = r->bot;
	pthread_rwlock_unlock(&g->lock);
	if (rc) {
		guard_repo_free(r);
		return rc;
	}
	if (changed || found)
		guard_bump(g);
	return 0;
}

/*
 * A person may change a config file on the host while a mount is live (git
 * config core.hooksPath .husky/_): before a decision, at most every
 * GUARD_REVAL_MS, the files each repository scan read are stat'ed again and
 * the repositories whose files changed are rescanned.  Between two looks
 * this costs a coarse clock read and an atomic load.
 */
void guard_revalidate(struct guard *g)
{
	struct {
		uint64_t dev;
		uint64_t ino;
		int fd;
	} ch[16];
	struct timespec ts;
	struct guard_repo *r;
	int64_t now, last;
	size_t i, n = 0;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	last = atomic_load(&g->reval_ms);
	if (now - last < GUARD_REVAL_MS ||
	    !atomic_compare_exchange_strong(&g->reval_ms, &last, now))
		return;
	pthread_rwlock_rdlock(&g->lock);
	for (i = 0; i < g->nrepos && n < 16; i++) {
		r = g->repos[i];
		if (r->bot || !r->watch || r->watch->gfd < 0)
			continue;
		if (!guard_watch_changed(r->watch))
			continue;
		ch[n].fd = fcntl(r->watch->gfd, F_DUPFD_CLOEXEC, 3);
		if (ch[n].fd < 0)
			continue;
		ch[n].dev = r->dev;
		ch[n].ino = r->ino;
		n++;
	}
	pthread_rwlock_unlock(&g->lock);
	if (n == 16)
		atomic_store(&g->reval_ms, 0); /* more may wait: look again next time */
	for (i = 0; i < n; i++) {
		guard_logf(g,
			   "gitguard: the config of git folder (dev %llu, ino %llu) changed: "
			   "rescanned",
			   (unsigned long long)ch[i].dev, (unsigned long long)ch[i].ino);
		guard_repo_rescan(g, ch[i].dev, ch[i].ino, ch[i].fd);
		close(ch[i].fd);
	}
}

/* Rescans the git folder (dev, ino) at DFD if it is known; true if anything changed. */
bool guard_repo_rescan(struct guard *g, uint64_t dev, uint64_t ino, int dfd)
{
	struct guard_repo *r;
	struct stat st;
	bool known, changed = false;

	pthread_rwlock_rdlock(&g->lock);
	known = repo_find(g, dev, ino) != NULL;
	pthread_rwlock_unlock(&g->lock);
	if (!known || fstat(dfd, &st) < 0 || (uint64_t)st.st_dev != dev ||
	    (uint64_t)st.st_ino != ino)
		return known;
	r = guard_repo_scan(g, dfd, &st);
	if (!r)
		return true;
	pthread_rwlock_wrlock(&g->lock);
	if (repo_publish(g, r, &changed)) {
		guard_repo_free(r);
		changed = true;
	}
	pthread_rwlock_unlock(&g->lock);
	if (changed)
		guard_bump(g);
	return changed;
}

/* Index of the top ST of the git folder (dev, ino) in g->tops, or SIZE_MAX; lock held */
static size_t top_find(struct guard *g, uint64_t dev, uint64_t ino, const struct stat *st)
{
	size_t i;

	for (i = 0; i < g->ntops; i++)
		if (g->tops[i].dev == dev && g->tops[i].ino == ino &&
		    g->tops[i].tdev == (uint64_t)st->st_dev &&
		    g->tops[i].tino == (uint64_t)st->st_ino)
			return i;
	return SIZE_MAX;
}

/* Remembers TOPFD as a worktree top of the git folder (dev, ino); true if new */
static bool top_add(struct guard *g, uint64_t dev, uint64_t ino, int topfd)
{
	struct stat st;
	bool added = false;
	size_t i;
	int fd;

	if (fstat(topfd, &st) < 0)
		return false;
	/* a .git file is classified at every lookup: known tops cost a shared lock */
	pthread_rwlock_rdlock(&g->lock);
	i = top_find(g, dev, ino, &st);
	pthread_rwlock_unlock(&g->lock);
	if (i < SIZE_MAX)
		return false;
	pthread_rwlock_wrlock(&g->lock);
	if (top_find(g, dev, ino, &st) < SIZE_MAX)
		goto out;
	if (g->ntops >= GUARD_TOPS_MAX) {
		pthread_rwlock_unlock(&g->lock);
		guard_logf(g,
			   "gitguard: more than %d worktree tops: a relative core.hooksPath is "
			   "not guarded at the others",
			   GUARD_TOPS_MAX);
		return false;
	}
	if (gg_grow(&g->tops, &g->atops, g->ntops + 1, sizeof(*g->tops), 16))
		goto out;
	fd = fcntl(topfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		goto out;
	g->tops[g->ntops++] = (struct guard_top){dev, ino, st.st_dev, st.st_ino, fd};
	added = true;
out:
	pthread_rwlock_unlock(&g->lock);
	return added;
}

/*
 * A .git file or symlink in the folder STARTFD names PATH: that folder is a
 * git folder, and STARTFD is a top of its worktrees.  A git folder outside
 * the root (the root is a linked worktree, say) is opened as git would open
 * it, by the kernel, and read: its config decides what is guarded here.
 */
int guard_note_pointer(struct guard *g, int startfd, const char *path)
{
	struct guard_repo info, **slot;
	struct resolved res;
	struct stat st;
	bool known;
	uint8_t f;
	int rc = 0, gfd = -1;

	switch (guard_resolve(g, startfd, path, true, NULL, NULL, &res)) {
	case RES_INSIDE:
		if (!S_ISDIR(res.st.st_mode))
			break;
		gfd = res.fd;
		res.fd = -1;
		st = res.st;
		pthread_rwlock_rdlock(&g->lock);
		f = guard_tab_inode(g, st.st_dev, st.st_ino, NULL);
		pthread_rwlock_unlock(&g->lock);
		if (f & REC_GITDIR)
			break;
		pthread_rwlock_wrlock(&g->lock);
		rc = recs_add(&g->misc, st.st_dev, st.st_ino, NULL, REC_GITDIR, GUARD_RULE_W1);
		if (!rc)
			guard_tab_rebuild(g);
		pthread_rwlock_unlock(&g->lock);
		if (!rc)
			guard_bump(g);
		break;
	case RES_OUTSIDE:
		gfd = openat(startfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (gfd >= 0 && fstat(gfd, &st) < 0) {
			close(gfd);
			gfd = -1;
		}
		break;
	default:
		break;
	}
	resolved_close(&res);
	if (rc || gfd < 0) {
		if (gfd >= 0)
			close(gfd);
		return rc;
	}
	if (top_add(g, st.st_dev, st.st_ino, startfd)) {
		pthread_rwlock_rdlock(&g->lock);
		slot = repo_find(g, st.st_dev, st.st_ino);
		known = slot != NULL;
		pthread_rwlock_unlock(&g->lock);
		if (known)
			guard_repo_rescan(g, st.st_dev, st.st_ino, gfd);
		else if (guard_shape(gfd, NULL))
			rc = guard_repo_get(g, gfd, &st, &info);
	}
	close(gfd);
	return rc;
}
