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
#include <unistd.h>
#include <sys/mman.h>
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

/*
 * The table outlives the process: a git's index.lock made before a restart
 * of the server is still this mount's after it, or the bot's git could not
 * rename it into place. It lives in a memfd that the fd store keeps as
 * "gitlocks" (keep.c), and that the next server maps (restore.c). Until
 * the first mount is kept, and if no memfd can be made, it is in memory.
 */
#define GITLOCK_MAGIC "agfslk01"
struct gitlock_table {
	char magic[8];
	uint32_t max, size; /* GITLOCK_MAX, sizeof(struct gitlock): checked when adopted */
	struct gitlock v[GITLOCK_MAX];
};

static struct gitlock_table inmem = {
	.magic = GITLOCK_MAGIC, .max = GITLOCK_MAX, .size = sizeof(struct gitlock)};
static struct gitlock *locks = inmem.v; /* locks_mu; the pointer changes once at most */
static int locks_fd = -1;		/* locks_mu */
static bool locks_kept;			/* locks_mu: in the fd store (handed over, or kept) */
static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * The table moves into a memfd (fs_new, when mounts are kept): from the
 * start, so the process holds that one descriptor for its whole life.
 */
void gitlock_init(void)
{
	struct gitlock_table *t;
	int fd;

	pthread_mutex_lock(&locks_mu);
	if (locks_fd < 0 && (fd = memfd_create("agentfs-gitlocks", MFD_CLOEXEC)) >= 0) {
		t = ftruncate(fd, sizeof *t) == 0
			    ? mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
			    : MAP_FAILED;
		if (t == MAP_FAILED) {
			close(fd);
		} else {
			memcpy(t, &inmem, sizeof *t);
			locks = t->v;
			locks_fd = fd;
		}
	}
	pthread_mutex_unlock(&locks_mu);
}

/* The table's memfd the first time it is asked for (the fd store is to keep it), else -1 */
int gitlock_to_keep(void)
{
	int fd;

	pthread_mutex_lock(&locks_mu);
	fd = locks_kept ? -1 : locks_fd;
	locks_kept = locks_kept || fd >= 0;
	pthread_mutex_unlock(&locks_mu);
	return fd;
}

/* The last server's table, handed over (restore.c): used from now on; false if not one */
bool gitlock_adopt(int fd)
{
	struct gitlock_table *t;
	struct stat st;

	if (fstat(fd, &st) != 0 || st.st_size != (off_t)sizeof *t)
		return false;
	t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED)
		return false;
	if (memcmp(t->magic, GITLOCK_MAGIC, sizeof t->magic) != 0 || t->max != GITLOCK_MAX ||
	    t->size != sizeof(struct gitlock)) {
		munmap(t, sizeof *t);
		return false;
	}
	pthread_mutex_lock(&locks_mu);
	if (locks_fd >= 0)
		close(locks_fd); /* made before the handover was read: nothing in it yet */
	locks = t->v;
	locks_fd = fd;
	locks_kept = true;
	pthread_mutex_unlock(&locks_mu);
	return true;
}

static time_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec + 1; /* never 0 */
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
