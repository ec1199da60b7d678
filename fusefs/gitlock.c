/* SPDX-License-Identifier: MIT */
/*
 * Lock files in git folders (rule LK).  git writes a file it is about to
 * replace (index, a ref, packed-refs, config, HEAD) as NAME.lock (a shared
 * index as sharedindex_XXXXXX), made with
 * O_CREAT|O_EXCL and written through that descriptor only, then renames it
 * by path onto NAME.  A lock the person's git holds on the host (say while
 * `git commit -a` waits in the editor) is an ordinary file through a mount:
 * a bot that writes into it, renames its own file onto it, or removes it and
 * makes another, has the host rename the bot's content into place where no
 * rule looks (a forged index, a ref).  So a *.lock in a git folder may be
 * written, linked, renamed or removed through a mount only if a mount of
 * this server made it.  This file keeps those: (dev, ino) and birth time of
 * each lock file made (an inode freed on the host is soon given to the next
 * file, maybe the person's own index.lock: the birth time tells them apart
 * where the file system keeps one), forgotten when it is renamed, replaced
 * or removed through a mount, or ten minutes after it was made (a git holds
 * its locks for seconds).
 */
#include "fusefs/fs-int.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#define GITLOCK_MAX 1024
#define GITLOCK_TTL 600 /* seconds */

struct gitlock {
	dev_t dev;
	ino_t ino;
	struct statx_timestamp btime; /* all zero where the file system keeps none */
	time_t made;		      /* 0: a free slot */
};

static struct gitlock locks[GITLOCK_MAX];
static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec + 1; /* never 0 */
}

bool gitlock_name(const char *name)
{
	size_t n;

	if (name == NULL)
		return false;
	n = strlen(name);
	/* sharedindex_XXXXXX: the temporary git renames onto sharedindex.<hash> */
	return (n > 5 && !strcmp(name + n - 5, ".lock")) || !strncmp(name, "sharedindex_", 12);
}

/* NAME in DIRFD (NAME "" : DIRFD itself), not followed: its identity, or false */
static bool identify(int dirfd, const char *name, struct gitlock *out)
{
	struct statx stx;

	memset(out, 0, sizeof *out);
	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH),
		  STATX_INO | STATX_BTIME, &stx) != 0)
		return false;
	out->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	out->ino = stx.stx_ino;
	if (stx.stx_mask & STATX_BTIME)
		out->btime = stx.stx_btime;
	return true;
}

static bool same(const struct gitlock *a, const struct gitlock *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->btime.tv_sec == b->btime.tv_sec &&
	       a->btime.tv_nsec == b->btime.tv_nsec;
}

void gitlock_made(int fd)
{
	time_t t = now_s();
	size_t k, free_k = GITLOCK_MAX, old_k = 0;
	struct gitlock id;

	if (!identify(fd, "", &id))
		return; /* unknown: the bot's own git then cannot use it, nothing worse */
	id.made = t;
	pthread_mutex_lock(&locks_mu);
	for (k = 0; k < GITLOCK_MAX; k++) {
		if (locks[k].made != 0 && t - locks[k].made > GITLOCK_TTL)
			locks[k].made = 0;
		if (locks[k].made == 0 && free_k == GITLOCK_MAX)
			free_k = k;
		if (locks[k].made != 0 && locks[k].made < locks[old_k].made)
			old_k = k;
	}
	/* full: the oldest goes (only the bot's own git can then not use it) */
	locks[free_k < GITLOCK_MAX ? free_k : old_k] = id;
	pthread_mutex_unlock(&locks_mu);
}

/* Whether ID is a lock a mount made; GONE: forget it too */
static bool find(const struct gitlock *id, bool gone)
{
	time_t t = now_s();
	bool found = false;
	size_t k;

	pthread_mutex_lock(&locks_mu);
	for (k = 0; k < GITLOCK_MAX && !found; k++) {
		if (locks[k].made == 0 || locks[k].dev != id->dev || locks[k].ino != id->ino)
			continue;
		/* the same inode number with another birth: not the file the mount made */
		if (!same(&locks[k], id) || t - locks[k].made > GITLOCK_TTL) {
			locks[k].made = 0;
			continue;
		}
		found = true;
		if (gone)
			locks[k].made = 0;
	}
	pthread_mutex_unlock(&locks_mu);
	return found;
}

bool gitlock_ours(int dirfd, const char *name)
{
	struct gitlock id;

	return identify(dirfd, name, &id) && find(&id, false);
}

void gitlock_gone(dev_t dev, ino_t ino)
{
	size_t k;

	/* by number alone: whatever birth, a record of it goes */
	pthread_mutex_lock(&locks_mu);
	for (k = 0; k < GITLOCK_MAX; k++)
		if (locks[k].made != 0 && locks[k].dev == dev && locks[k].ino == ino)
			locks[k].made = 0;
	pthread_mutex_unlock(&locks_mu);
}
