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
 */
#include "fusefs/fs-int.h"

static unsigned stripe_of(const struct inode *i)
{
	uint64_t h = i->dev * 0x9e3779b97f4a7c15ull ^ i->ino * 0xbf58476d1ce4e5b9ull;

	return (unsigned)(h >> 32) % FS_DECIDE_STRIPES;
}

void decide_enter(struct fs_mount *m, struct decide_hold *h, const struct inode *p1,
		  const struct inode *p2, bool whole)
{
	struct fs *fs = m->fs;
	unsigned a, b;

	h->fs = NULL;
	h->n = 0;
	if (m->guard == NULL)
		return; /* nothing is decided from the tree's state */
	h->fs = fs;
	h->whole = whole;
	if (whole) {
		pthread_rwlock_wrlock(&fs->decide_all);
		return;
	}
	pthread_rwlock_rdlock(&fs->decide_all);
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
	if (h->fs == NULL)
		return;
	while (h->n > 0)
		pthread_mutex_unlock(&h->fs->decide_stripe[h->s[--h->n]]);
	pthread_rwlock_unlock(&h->fs->decide_all);
	h->fs = NULL;
}
