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
 * this server made it.  This file keeps those: (dev, ino) of each lock file
 * made, forgotten when it is renamed or removed through a mount, or an hour
 * after it was made (a git holds its locks for seconds).
 */
#include "fusefs/fs-int.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define GITLOCK_MAX 1024
#define GITLOCK_TTL 3600 /* seconds */

struct gitlock {
	dev_t dev;
	ino_t ino;
	time_t made; /* 0: a free slot */
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

void gitlock_made(dev_t dev, ino_t ino)
{
	time_t t = now_s();
	size_t k, free_k = GITLOCK_MAX, old_k = 0;

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
	k = free_k < GITLOCK_MAX ? free_k : old_k;
	locks[k] = (struct gitlock){.dev = dev, .ino = ino, .made = t};
	pthread_mutex_unlock(&locks_mu);
}

/* Whether (DEV, INO) is a lock a mount made; GONE: forget it too */
static bool find(dev_t dev, ino_t ino, bool gone)
{
	time_t t = now_s();
	bool found = false;
	size_t k;

	pthread_mutex_lock(&locks_mu);
	for (k = 0; k < GITLOCK_MAX && !found; k++) {
		if (locks[k].made == 0 || locks[k].dev != dev || locks[k].ino != ino)
			continue;
		found = t - locks[k].made <= GITLOCK_TTL;
		if (gone || !found)
			locks[k].made = 0;
	}
	pthread_mutex_unlock(&locks_mu);
	return found;
}

bool gitlock_ours(dev_t dev, ino_t ino)
{
	return find(dev, ino, false);
}

void gitlock_gone(dev_t dev, ino_t ino)
{
	find(dev, ino, true);
}
