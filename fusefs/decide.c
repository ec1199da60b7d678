/* SPDX-License-Identifier: MIT */
/*
 * Decision holds: a guard's check and the operation it allows happen as one
 * step against every other request of this server, whichever mount it came
 * through (issue: two bots' mounts of one folder each pass the G2 check for
 * half of a bare repository's shape, then both make their half).
 *
 * Only operations that make a name take a hold: create, mknod, mkdir,
 * symlink, link, rename and exchange. Each takes the shared side of
 * fs->decide_all and the stripe of every folder a name is made in, striped
 * by the folder's (dev, ino), so two mounts of one folder meet on the same
 * stripe. A folder rename or an exchange moves a whole subtree whose
 * contents the guard walks: it takes decide_all exclusively.
 *
 * Lock order: decide_all, then stripes in ascending index, then ns_lock
 * (seal.c), then fs->lock (and gitguard's own lock inside guard_check).
 * Nothing here is taken while fs->lock is held. Why these holds and
 * seal.c's ns_lock are two locks: see struct fs in fs-int.h.
 *
 * A whole hold stops every name being made through every mount of the
 * server, every bot's, for as long as the guard walks (up to 100,000
 * entries: about half a second). One bot renaming a large folder back and
 * forth from a few processes held it nearly all the time, and another
 * bot's mkdir took 0.25 s instead of 0.3 ms. So each user's whole holds
 * are paced: one at a time, and each that kept another thread waiting
 * (decide_waiting, looked at before the hold ends) adds WHOLE_SHARE - 1
 * times as long as it lasted to the user's debt, which time pays back; the
 * next begins only while the debt is under WHOLE_BURST_NS. So a user keeps
 * others waiting at most about a tenth of the time; after a long walk it
 * waits at most WHOLE_WAIT_MAX_NS. A hold that kept no one waiting costs
 * nothing: a package manager renaming thousands of folders into place on
 * a quiet server is not slowed. The wait is before the hold, holding
 * nothing. A user is the caller's uid, which a bot cannot change; when
 * FS_WHOLE_USERS users are paced at once, others are not.
 */
#include "fusefs/fs-int.h"

#include <time.h>

#define WHOLE_SHARE 10
#define WHOLE_WAIT_MAX_NS (10 * 1000000000ull)
#define WHOLE_BURST_NS (50 * 1000000ull)
#define WHOLE_SLICE_NS (100 * 1000000ull) /* a waiter looks whether its mount stops */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* uid's slot, else a new one (free, or one no longer waited for); -1 if none. Under whole_lock. */
static int whole_slot(struct fs *fs, uid_t uid, uint64_t now)
{
	int k, spare = -1;

	for (k = 0; k < FS_WHOLE_USERS; k++) {
		struct whole_user *u = &fs->whole_users[k];

		if (u->used && u->uid == uid)
			return k;
		if (spare < 0 && (!u->used || (!u->busy && u->next_ns <= now)))
			spare = k;
	}
	if (spare >= 0)
		fs->whole_users[spare] = (struct whole_user){.uid = uid, .used = true};
	return spare;
}

/* Wait for uid's turn (its last whole hold ended, its pause passed): its slot, or -1. */
static int whole_wait(struct fs_mount *m, uid_t uid)
{
	struct fs *fs = m->fs;
	struct timespec ts;
	uint64_t now, until;
	int k;

	pthread_mutex_lock(&fs->whole_lock);
	for (;;) {
		now = now_ns();
		k = whole_slot(fs, uid, now);
		if (k < 0)
			break;
		if (!fs->whole_users[k].busy &&
		    fs->whole_users[k].next_ns <= now + WHOLE_BURST_NS) {
			fs->whole_users[k].busy = true;
			break;
		}
		if (mount_stopping(m)) { /* a handover or an unmount is not kept waiting */
			k = -1;
			break;
		}
		until = now + WHOLE_SLICE_NS;
		if (!fs->whole_users[k].busy && fs->whole_users[k].next_ns - WHOLE_BURST_NS < until)
			until = fs->whole_users[k].next_ns - WHOLE_BURST_NS;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		pthread_cond_timedwait(&fs->whole_cond, &fs->whole_lock, &ts);
	}
	pthread_mutex_unlock(&fs->whole_lock);
	return k;
}

/*
 * h's whole hold ended: if it kept someone waiting, WHOLE_SHARE - 1 times
 * as long as it lasted is added to its user's debt.
 */
static void whole_done(struct decide_hold *h, bool kept_waiting)
{
	struct fs *fs = h->fs;
	struct whole_user *u = &fs->whole_users[h->user];
	uint64_t now = now_ns(), debt = kept_waiting ? (now - h->t0) * (WHOLE_SHARE - 1) : 0;

	pthread_mutex_lock(&fs->whole_lock);
	u->busy = false;
	if (u->next_ns > now)
		debt += u->next_ns - now;
	u->next_ns = now + (debt < WHOLE_WAIT_MAX_NS ? debt : WHOLE_WAIT_MAX_NS);
	pthread_cond_broadcast(&fs->whole_cond);
	pthread_mutex_unlock(&fs->whole_lock);
}

static unsigned stripe_of(const struct inode *i)
{
	uint64_t h = i->dev * 0x9e3779b97f4a7c15ull ^ i->ino * 0xbf58476d1ce4e5b9ull;

	return (unsigned)(h >> 32) % FS_DECIDE_STRIPES;
}

void decide_enter(struct fs_mount *m, struct decide_hold *h, const struct inode *p1,
		  const struct inode *p2, bool whole, uid_t uid)
{
	struct fs *fs = m->fs;
	unsigned a, b;

	h->fs = NULL;
	h->n = 0;
	h->user = -1;
	if (m->guard == NULL)
		return; /* nothing is decided from the tree's state */
	h->fs = fs;
	h->whole = whole;
	if (whole) {
		h->user = whole_wait(m, uid);
		atomic_fetch_add(&fs->decide_waiting, 1);
		pthread_rwlock_wrlock(&fs->decide_all);
		atomic_fetch_sub(&fs->decide_waiting, 1);
		h->t0 = now_ns();
		return;
	}
	atomic_fetch_add(&fs->decide_waiting, 1);
	pthread_rwlock_rdlock(&fs->decide_all);
	atomic_fetch_sub(&fs->decide_waiting, 1);
	a = p1 != NULL ? stripe_of(p1) : FS_DECIDE_STRIPES;
	b = p2 != NULL ? stripe_of(p2) : FS_DECIDE_STRIPES;
	if (a > b) {
		unsigned t = a;

		a = b;
		b = t;
	}
	if (a < FS_DECIDE_STRIPES)
		h->s[h->n++] = a;
	if (b < FS_DECIDE_STRIPES && b != a)
		h->s[h->n++] = b;
	for (unsigned k = 0; k < h->n; k++)
		pthread_mutex_lock(&fs->decide_stripe[h->s[k]]);
}

void decide_leave(struct decide_hold *h)
{
	bool kept_waiting;

	if (h->fs == NULL)
		return;
	while (h->n > 0)
		pthread_mutex_unlock(&h->fs->decide_stripe[h->s[--h->n]]);
	/* whoever waits now has waited for this hold */
	kept_waiting = h->whole && atomic_load(&h->fs->decide_waiting) > 0;
	pthread_rwlock_unlock(&h->fs->decide_all);
	if (h->whole && h->user >= 0)
		whole_done(h, kept_waiting);
	h->fs = NULL;
}
