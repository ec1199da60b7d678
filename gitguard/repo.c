/* SPDX-License-Identifier: MIT */
/*
 * The view's table of repositories: each git folder's scan result
 * (reposcan.c), keyed by its (st_dev, st_ino), published under the view's lock, rescanned on
 * notify or when a watched file changed (guard_revalidate), and the
 * worktree tops learnt from pointers (.git files and symlinks).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>

#include "gitguard/guard-int.h"

/* The view's record of the git folder (dev, ino); the view's lock held */
static struct guard_repo **repo_find(struct guard_view *v, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < v->nrepos; i++)
		if (v->repos[i]->dev == dev && v->repos[i]->ino == ino)
			return &v->repos[i];
	return NULL;
}

/*
 * FN for each relative core.hooksPath the configs of the repository whose
 * git folder is (DEV, INO) give (its config, includes, config.worktree, the
 * global and system ones), as its last scan found them.
 */
void guard_repo_hooks(struct guard *g, uint64_t dev, uint64_t ino,
		      void (*fn)(void *arg, const char *rel), void *arg)
{
	struct guard_view *v = g->view;
	struct guard_repo **r;
	size_t i;

	pthread_rwlock_rdlock(&v->lock);
	r = repo_find(v, dev, ino);
	for (i = 0; r && i < (*r)->nhooks_rel; i++)
		fn(arg, (*r)->hooks_rel[i]);
	for (i = 0; r && i < (*r)->nhooks_abs; i++)
		fn(arg, (*r)->hooks_abs[i]);
	pthread_rwlock_unlock(&v->lock);
}

/*
 * Is (dev, ino), open as FD (or -1), a git folder: one this guard's bot made
 * (*BOT), a repository of the view, or a folder a pointer names (REC_GITDIR)?
 */
bool guard_repo_known(struct guard *g, uint64_t dev, uint64_t ino, int fd, bool *bot)
{
	struct guard_view *v = g->view;
	bool known;

	*bot = guard_bot_repo(g, dev, ino, fd);
	if (*bot)
		return true;
	pthread_rwlock_rdlock(&v->lock);
	known = repo_find(v, dev, ino) != NULL ||
		(v->ntab && (guard_view_inode(v, dev, ino, NULL) & REC_GITDIR));
	pthread_rwlock_unlock(&v->lock);
	return known;
}

static bool recs_equal(const struct guard_recs *a, const struct guard_recs *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++) {
		const struct guard_rec *x = &a->v[i], *y = &b->v[i];

		if (x->dev != y->dev || x->ino != y->ino || x->born != y->born ||
		    x->flags != y->flags ||
		    !x->name != !y->name || (x->name && strcmp(x->name, y->name)))
			return false;
	}
	return true;
}

/* Publishes R in the view (replacing any record of the same folder); its lock held exclusive. */
static int repo_publish(struct guard *g, struct guard_repo *r, bool *changed)
{
	struct guard_view *v = g->view;
	struct guard_repo **slot = repo_find(v, r->dev, r->ino), *old;

	if (slot) {
		old = *slot;
		*changed = old->rule != r->rule || !recs_equal(&old->recs, &r->recs);
		*slot = r;
		/* the table borrows the old record's names: rebuilt before it is freed */
		if ((old->recs.n || r->recs.n) && guard_tab_rebuild(g)) {
			*slot = old;
			return -ENOMEM;
		}
		guard_repo_free(old);
		return 0;
	} else {
		if (gg_grow(&v->repos, &v->arepos, v->nrepos + 1, sizeof(*v->repos), 8))
			return -ENOMEM;
		v->repos[v->nrepos++] = r;
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
 * The state of the git folder DFD (stat DST): the bot's own if this guard's
 * bot made it, else from the view if its config has not changed and no root
 * joined since its scan, else scanned now.  Fills OUT's bot, rule and why only.
 */
int guard_repo_get(struct guard *g, int dfd, const struct stat *dst, struct guard_repo *out)
{
	struct guard_view *v = g->view;
	struct guard_repo **slot, *r;
	bool found = false, changed = false;
	int rc;

	memset(out, 0, sizeof(*out));
	if (guard_bot_repo(g, dst->st_dev, dst->st_ino, dfd)) {
		out->bot = true;
		return 0;
	}
	pthread_rwlock_rdlock(&v->lock);
	slot = repo_find(v, dst->st_dev, dst->st_ino);
	if (slot) {
		found = true;
		out->roots_gen = (*slot)->roots_gen;
		out->rule = (*slot)->rule;
		out->why = (*slot)->why;
		out->stamped = (*slot)->stamped;
		out->stamp = (*slot)->stamp;
	}
	pthread_rwlock_unlock(&v->lock);
	if (found && out->roots_gen == atomic_load(&v->roots_gen) && stamp_fresh(out, dfd))
		return 0;

	r = guard_repo_scan(g, dfd, dst);
	if (!r)
		return -ENOMEM;
	out->rule = r->rule;
	out->why = r->why;
	pthread_rwlock_wrlock(&v->lock);
	rc = repo_publish(g, r, &changed);
	pthread_rwlock_unlock(&v->lock);
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
#define RESCAN_BATCH 16 /* repositories one look collects before it rescans them */

struct stale {
	uint64_t dev;
	uint64_t ino;
	int fd;
	bool moved; /* a watched file changed (else: stamped too soon, or a root joined since) */
};

/*
 * Collects into CH the repositories of the view scanned before the last root
 * joined, and (WATCHED) those whose watched files changed; at most
 * RESCAN_BATCH.  The count.
 */
static size_t stale_collect(struct guard *g, bool watched, struct stale *ch)
{
	struct guard_view *v = g->view;
	uint64_t rg = atomic_load(&v->roots_gen);
	struct guard_repo *r;
	size_t i, n = 0;
	int state;

	pthread_rwlock_rdlock(&v->lock);
	for (i = 0; i < v->nrepos && n < RESCAN_BATCH; i++) {
		r = v->repos[i];
		if (!r->watch || r->watch->gfd < 0)
			continue;
		state = watched ? guard_watch_state(r->watch) : WF_SAME;
		if (state == WF_SAME && r->roots_gen == rg)
			continue;
		ch[n].fd = fcntl(r->watch->gfd, F_DUPFD_CLOEXEC, 3);
		if (ch[n].fd < 0)
			continue;
		ch[n].dev = r->dev;
		ch[n].ino = r->ino;
		ch[n].moved = state == WF_CHANGED;
		n++;
	}
	pthread_rwlock_unlock(&v->lock);
	return n;
}

static void stale_rescan(struct guard *g, struct stale *ch, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (ch[i].moved)
			guard_logf(g,
				   "gitguard: what git folder (dev %llu, ino %llu) reads (config, hooks) "
				   "changed: rescanned",
				   (unsigned long long)ch[i].dev, (unsigned long long)ch[i].ino);
		guard_repo_rescan(g, ch[i].dev, ch[i].ino, ch[i].fd);
		close(ch[i].fd);
	}
}

/*
 * What the host made since the last look (the view's fanotify): a .git, a
 * git folder's HEAD, objects or refs (1), or a folder moved in (2: the
 * person renames a reviewed folder where a hooks path leads), anywhere on
 * the roots' filesystems, or more events than the queue held (2). What
 * this server did through its mounts was judged when it was done, and is
 * skipped. Classes computed before may be wrong: 1 or 2, else 0.
 */
#define MADE_MAX 16	     /* repositories learnt from one look; more: the next lookups find them */
#define MADE_HANDLE_MAX 128 /* bytes of a folder's handle (ext4: 8) */

/* A folder the host made a .git ('g') or a HEAD ('h') in: its filesystem and handle */
struct made {
	char kind;
	int fsid[2];
	union {
		struct file_handle h;
		unsigned char raw[sizeof(struct file_handle) + MADE_HANDLE_MAX];
	} u;
};

static int host_made_repo_names(struct guard_view *v, struct made *mk, size_t *nmk)
{
	static const char *const names[] = {"HEAD", "objects", "refs", "commondir", "gitdir"};
	unsigned char buf[16384];
	struct fanotify_event_metadata meta;
	struct fanotify_event_info_header hdr;
	struct file_handle fh;
	const size_t fid_handle = offsetof(struct fanotify_event_info_fid, handle);
	const size_t fid_fsid = offsetof(struct fanotify_event_info_fid, fsid);
	const unsigned char *info, *end;
	const char *name;
	pid_t self = getpid();
	int hit = 0, reads;
	size_t off, i;
	ssize_t n;

	if (v->fan_fd < 0)
		return 0;
	for (reads = 0; reads < 64; reads++) {
		n = read(v->fan_fd, buf, sizeof(buf));
		if (n <= 0)
			return hit;
		/* events are 4-byte aligned at best: every field is copied out */
		for (off = 0; off + sizeof(meta) <= (size_t)n; off += meta.event_len) {
			memcpy(&meta, buf + off, sizeof(meta));
			if (meta.event_len < sizeof(meta) || off + meta.event_len > (size_t)n)
				break;
			if (meta.fd >= 0)
				close(meta.fd);
			if (meta.pid == self && !(meta.mask & FAN_Q_OVERFLOW))
				continue;
			if ((meta.mask & FAN_Q_OVERFLOW) ||
			    ((meta.mask & FAN_MOVED_TO) && (meta.mask & FAN_ONDIR)))
				hit = 2;
			info = buf + off + meta.metadata_len;
			end = buf + off + meta.event_len;
			if (meta.metadata_len < sizeof(meta) ||
			    info + fid_handle + sizeof(fh) > end)
				continue;
			memcpy(&hdr, info, sizeof(hdr));
			if (hdr.info_type != FAN_EVENT_INFO_TYPE_DFID_NAME)
				continue;
			memcpy(&fh, info + fid_handle, sizeof(fh));
			name = (const char *)info + fid_handle + sizeof(fh) + fh.handle_bytes;
			if ((const unsigned char *)name >= end ||
			    !memchr(name, '\0', (size_t)(end - (const unsigned char *)name)))
				continue;
			for (i = 0; i < sizeof(names) / sizeof(names[0]) && !hit; i++)
				hit = !strcmp(name, names[i]);
			if (!hit && name_is_dotgit(name))
				hit = 1;
			/* where: learnt after the look (a bot may sit deeper, never looking it up) */
			if ((name_is_dotgit(name) || !strcmp(name, "HEAD")) && *nmk < MADE_MAX &&
			    fh.handle_bytes <= MADE_HANDLE_MAX) {
				mk[*nmk].kind = name_is_dotgit(name) ? 'g' : 'h';
				memcpy(mk[*nmk].fsid, info + fid_fsid, sizeof(mk[*nmk].fsid));
				memcpy(mk[*nmk].u.raw, info + fid_handle, sizeof(fh) + fh.handle_bytes);
				(*nmk)++;
			}
		}
	}
	return 2; /* more than 64 reads' worth: as an overflow */
}

/*
 * The folders the host made a .git or a HEAD in are learnt now, on the
 * view's filesystem only (a handle means nothing on another): a bot whose
 * shell sits deeper, or in a folder a hooks symlink leads to, never looks
 * the new repository up, and its records must exist before it writes.
 */
static void learn_made(struct guard *g, struct made *mk, size_t n)
{
	struct guard_repo info;
	struct statfs sf;
	struct stat st;
	int mnt, fd;
	size_t i;

	pthread_rwlock_rdlock(&g->view->lock);
	mnt = g->view->fan_mnt;
	pthread_rwlock_unlock(&g->view->lock);
	if (mnt < 0 || fstatfs(mnt, &sf))
		return;
	for (i = 0; i < n; i++) {
		if (memcmp(mk[i].fsid, &sf.f_fsid, sizeof(mk[i].fsid)))
			continue;
		fd = open_by_handle_at(mnt, &mk[i].u.h, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (mk[i].kind == 'g')
			guard_note_top(g, fd);
		else if (guard_shape(fd, NULL) && !fstat(fd, &st))
			guard_repo_get(g, fd, &st, &info);
		close(fd);
	}
}

void guard_revalidate(struct guard *g)
{
	struct guard_view *v = g->view;
	struct stale ch[RESCAN_BATCH];
	struct made made[MADE_MAX];
	size_t n, nmade = 0;
	struct timespec ts;
	int64_t now, last;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	last = atomic_load(&v->reval_ms);
	if (now - last < GUARD_REVAL_MS ||
	    !atomic_compare_exchange_strong(&v->reval_ms, &last, now))
		return;
	switch (host_made_repo_names(v, made, &nmade)) {
	case 2: /* every repository is read again (as when a root joins), in batches */
		atomic_fetch_add(&v->roots_gen, 1);
		/* fall through */
	case 1:
		learn_made(g, made, nmade);
		guard_bump(g);
		break;
	}
	n = stale_collect(g, true, ch);
	/*
	 * More may wait: look again at the next decision.  Not 0, which a
	 * second full batch would store again: the homes' and roots' looks
	 * run when this clock moves, and would never run while batches fill.
	 */
	if (n == RESCAN_BATCH)
		atomic_store(&v->reval_ms, now - GUARD_REVAL_MS);
	stale_rescan(g, ch, n);
}

/*
 * The root made a repository on the host (the person runs `git init` in the
 * folder the bot has written code in, or `git init --bare` on it): its class,
 * and every class under it, were computed when it was a plain folder and
 * nothing else would move the generation. Looked at when the view's clock
 * moves (at most every GUARD_REVAL_MS): one fstatat and a shape test.
 */
void guard_root_revalidate(struct guard *g)
{
	int64_t now = atomic_load(&g->view->reval_ms), last = atomic_load(&g->root_reval_ms);
	struct stat st;
	int has;

	if (now == last || !atomic_compare_exchange_strong(&g->root_reval_ms, &last, now))
		return;
	has = !fstatat(g->root_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) || guard_shape(g->root_fd, NULL);
	if (atomic_exchange(&g->root_repo, has) == !has) {
		guard_logf(g, "gitguard: the root %s a repository on the host: classes computed again",
			   has ? "became" : "is no longer");
		guard_bump(g);
	}
}

/*
 * A root joined the view: every repository scanned before is scanned again
 * now, so what lies inside the new root is recorded before it is served.
 */
void guard_view_refresh(struct guard *g)
{
	struct stale ch[RESCAN_BATCH];
	size_t n, rounds;

	pthread_rwlock_rdlock(&g->view->lock);
	rounds = g->view->nrepos / RESCAN_BATCH + 2;
	pthread_rwlock_unlock(&g->view->lock);
	while (rounds-- && (n = stale_collect(g, false, ch)) > 0)
		stale_rescan(g, ch, n);
}

/* Rescans the git folder (dev, ino) at DFD if it is known; true if anything changed. */
bool guard_repo_rescan(struct guard *g, uint64_t dev, uint64_t ino, int dfd)
{
	struct guard_repo *r;
	struct stat st;
	bool known, changed = false;

	pthread_rwlock_rdlock(&g->view->lock);
	known = repo_find(g->view, dev, ino) != NULL;
	pthread_rwlock_unlock(&g->view->lock);
	if (!known || fstat(dfd, &st) < 0 || (uint64_t)st.st_dev != dev ||
	    (uint64_t)st.st_ino != ino)
		return known;
	r = guard_repo_scan(g, dfd, &st);
	if (!r)
		return true;
	pthread_rwlock_wrlock(&g->view->lock);
	if (repo_publish(g, r, &changed)) {
		guard_repo_free(r);
		changed = true;
	}
	pthread_rwlock_unlock(&g->view->lock);
	if (changed)
		guard_bump(g);
	return changed;
}

/* Index of the top ST of the git folder (dev, ino) in v->tops, or SIZE_MAX; its lock held */
static size_t top_find(struct guard_view *v, uint64_t dev, uint64_t ino, const struct stat *st)
{
	size_t i;

	for (i = 0; i < v->ntops; i++)
		if (v->tops[i].dev == dev && v->tops[i].ino == ino &&
		    v->tops[i].tdev == (uint64_t)st->st_dev &&
		    v->tops[i].tino == (uint64_t)st->st_ino)
			return i;
	return SIZE_MAX;
}

/* Remembers TOPFD as a worktree top of the git folder (dev, ino); true if new */
static bool top_add(struct guard *g, uint64_t dev, uint64_t ino, int topfd)
{
	struct guard_view *v = g->view;
	struct stat st;
	bool added = false;
	size_t i;
	int fd;

	if (fstat(topfd, &st) < 0)
		return false;
	/* a .git file is classified at every lookup: known tops cost a shared lock */
	pthread_rwlock_rdlock(&v->lock);
	i = top_find(v, dev, ino, &st);
	pthread_rwlock_unlock(&v->lock);
	if (i < SIZE_MAX)
		return false;
	pthread_rwlock_wrlock(&v->lock);
	if (top_find(v, dev, ino, &st) < SIZE_MAX)
		goto out;
	if (v->ntops >= GUARD_TOPS_MAX) {
		pthread_rwlock_unlock(&v->lock);
		guard_logf(g,
			   "gitguard: more than %d worktree tops: a relative core.hooksPath is "
			   "not guarded at the others",
			   GUARD_TOPS_MAX);
		return false;
	}
	if (gg_grow(&v->tops, &v->atops, v->ntops + 1, sizeof(*v->tops), 16))
		goto out;
	fd = fcntl(topfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		goto out;
	v->tops[v->ntops++] = (struct guard_top){dev, ino, st.st_dev, st.st_ino, fd};
	added = true;
out:
	pthread_rwlock_unlock(&v->lock);
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
	struct guard_repo info;
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
		f = guard_rec_inode(g, st.st_dev, st.st_ino, NULL);
		if (f & REC_GITDIR)
			break;
		pthread_rwlock_wrlock(&g->view->lock);
		rc = recs_add(&g->view->misc, st.st_dev, st.st_ino, NULL, REC_GITDIR,
			      GUARD_RULE_W1);
		if (!rc)
			guard_tab_rebuild(g);
		pthread_rwlock_unlock(&g->view->lock);
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
		pthread_rwlock_rdlock(&g->view->lock);
		known = repo_find(g->view, st.st_dev, st.st_ino) != NULL;
		pthread_rwlock_unlock(&g->view->lock);
		if (known)
			guard_repo_rescan(g, st.st_dev, st.st_ino, gfd);
		else if (guard_shape(gfd, NULL))
			rc = guard_repo_get(g, gfd, &st, &info);
	}
	close(gfd);
	return rc;
}
