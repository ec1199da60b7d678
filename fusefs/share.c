/* SPDX-License-Identifier: MIT */
/*
 * Shares of what the server has: open file handles, blocking lock waiters
 * and mounts. With more than one mount, no holder gets more than a quarter
 * of each (at least 64 handles or waiters), so one holder opening thousands
 * of files cannot make every other's opens fail. A holder is a mount, or,
 * for mounts given share groups (fs_mount_params.groups: agentfsd gives a
 * bot's family and its operator), each of its groups: a bot with four roots
 * or a family of bots then holds a quarter in all, not a quarter a mount.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fs_group {
	atomic_uint refs;
	atomic_uint used[FS_SHARE_N];
	char name[64];
};

static const char *const share_names[FS_SHARE_N] = {"open files", "lock waiters", "mounts"};

struct fs_group *fs_group_new(const char *name)
{
	struct fs_group *g = calloc(1, sizeof *g);

	if (g == NULL)
		return NULL;
	atomic_init(&g->refs, 1);
	snprintf(g->name, sizeof g->name, "%s", name);
	return g;
}

struct fs_group *fs_group_hold(struct fs_group *g)
{
	if (g != NULL)
		atomic_fetch_add(&g->refs, 1);
	return g;
}

void fs_group_put(struct fs_group *g)
{
	if (g != NULL && atomic_fetch_sub(&g->refs, 1) == 1)
		free(g);
}

unsigned fs_group_used(const struct fs_group *g, enum fs_share what)
{
	return atomic_load(&g->used[what]);
}

/* A holder's share of total: a quarter, at least 64 (or all when one mount is served). */
static unsigned share_of(const struct fs *fs, unsigned total)
{
	unsigned s = total / 4;

	if (atomic_load_explicit(&fs->nmounts, memory_order_relaxed) < 2)
		return total;
	return s < 64 ? (total < 64 ? total : 64) : s;
}

/* The counters m's use is held on: its groups', or its own without any. */
static size_t holders(struct fs_mount *m, enum fs_share what, atomic_uint **c, const char **who)
{
	size_t n = 0, i;

	for (i = 0; i < FS_GROUPS; i++) {
		if (m->groups[i] != NULL) {
			who[n] = m->groups[i]->name;
			c[n++] = &m->groups[i]->used[what];
		}
	}
	if (n == 0) {
		who[n] = m->mountpoint;
		c[n++] = what == FS_SHARE_HANDLES ? &m->nhandles : &m->nwaiters;
	}
	return n;
}

static bool take(struct fs_mount *m, enum fs_share what, atomic_uint *all, unsigned total)
{
	atomic_uint *c[FS_GROUPS];
	const char *who[FS_GROUPS];
	unsigned share = share_of(m->fs, total);
	size_t n = holders(m, what, c, who), i, k;

	for (i = 0; i < n; i++) {
		if (atomic_fetch_add(c[i], 1) >= share) {
			for (k = 0; k <= i; k++)
				atomic_fetch_sub(c[k], 1);
			if (!atomic_exchange(&m->over_logged, true))
				fs_log(m->fs, FS_LOG_WARN,
				       "%s: %s is at its share of %s (%u of %u): refusing more "
				       "(ENFILE, ENOLCK)",
				       m->mountpoint, who[i], share_names[what], share, total);
			return false;
		}
	}
	if (atomic_fetch_add(all, 1) >= total) {
		atomic_fetch_sub(all, 1);
		for (i = 0; i < n; i++)
			atomic_fetch_sub(c[i], 1);
		return false;
	}
	return true;
}

static void put(struct fs_mount *m, enum fs_share what, atomic_uint *all)
{
	atomic_uint *c[FS_GROUPS];
	const char *who[FS_GROUPS];
	size_t n = holders(m, what, c, who), i;

	for (i = 0; i < n; i++)
		atomic_fetch_sub(c[i], 1);
	atomic_fetch_sub(all, 1);
}

/* An open file handle for m, or false (answer ENFILE): release with fs_handle_put() */
bool fs_handle_take(struct fs_mount *m)
{
	return take(m, FS_SHARE_HANDLES, &m->fs->nhandles, m->fs->max_handles);
}

void fs_handle_put(struct fs_mount *m)
{
	put(m, FS_SHARE_HANDLES, &m->fs->nhandles);
}

/*
 * A file handed over open by a previous server (restore.c): counted as
 * fs_handle_take() counts, never refused, since the bot already holds it.
 */
void fs_handle_add(struct fs_mount *m)
{
	atomic_uint *c[FS_GROUPS];
	const char *who[FS_GROUPS];
	size_t n = holders(m, FS_SHARE_HANDLES, c, who), i;

	for (i = 0; i < n; i++)
		atomic_fetch_add(c[i], 1);
	atomic_fetch_add(&m->fs->nhandles, 1);
}

/* A lock waiter for m, or false (answer ENOLCK); lock_reply() gives it back */
bool fs_waiter_take(struct fs_mount *m)
{
	return take(m, FS_SHARE_WAITERS, &m->fs->nwaiters, m->fs->max_waiters);
}

void fs_waiter_put(struct fs_mount *m)
{
	put(m, FS_SHARE_WAITERS, &m->fs->nwaiters);
}

/*
 * A mount for each of p's groups, before the mount is made (its tree is
 * scanned): 0, or -EMFILE with why. The whole process's limit is fs_attach's.
 */
int fs_group_mount_take(struct fs *fs, struct fs_group *const *groups, struct fs_error *err)
{
	unsigned share = FS_MAX_MOUNTS / 4;
	size_t i, k;

	for (i = 0; i < FS_GROUPS; i++) {
		if (groups[i] == NULL)
			continue;
		if (atomic_fetch_add(&groups[i]->used[FS_SHARE_MOUNTS], 1) >= share) {
			for (k = 0; k <= i; k++)
				if (groups[k] != NULL)
					atomic_fetch_sub(&groups[k]->used[FS_SHARE_MOUNTS], 1);
			fs_seterr(err, EMFILE, "%s is at its share of mounts (%u of %d)",
				  groups[i]->name, share, FS_MAX_MOUNTS);
			return -EMFILE;
		}
	}
	return 0;
}

void fs_group_mount_put(struct fs_group *const *groups)
{
	size_t i;

	for (i = 0; i < FS_GROUPS; i++)
		if (groups[i] != NULL)
			atomic_fetch_sub(&groups[i]->used[FS_SHARE_MOUNTS], 1);
}
