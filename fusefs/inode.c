/* SPDX-License-Identifier: MIT */
/*
 * A mount's inodes (lookups, the kernel's references, where each was last
 * seen, file handles) and the server-wide cache of O_PATH fds; table.c
 * keeps the tables they live in. Everything here runs under fs->lock
 * unless it says otherwise.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

static void lru_unlink(struct inode *i)
{
	if (i->lru_next != NULL) {
		i->lru_next->lru_prev = i->lru_prev;
		i->lru_prev->lru_next = i->lru_next;
		i->lru_next = i->lru_prev = NULL;
	}
}

/*
 * fds are closed outside fs->lock, by the closer thread (closer.c): the
 * last close of a file unlinked through the mount is where its filesystem
 * frees it, and that may wait for the disk.
 */
void inode_closes_flush(void)
{
	closer_flush();
}

static struct file_handle *handle_of(int fd, int *mount_id);
static int mount_fd_index(struct fs_mount *fs, int mount_id, int fd, mode_t type);

/*
 * A file's handle is made when its fd is about to be closed, not at lookup:
 * most inodes never leave the cache, and a cold lookup was one syscall
 * more than it needs. Folders still get theirs at lookup, so a mount met
 * below the source is registered by its root folder before its files.
 * Without a handle (the filesystem refused one) the fd stays, pinned.
 */
static bool handle_now(struct inode *i)
{
	struct file_handle *h;
	int mount_id, idx;

	i->lazy = false;
	h = handle_of(i->fd, &mount_id);
	if (h == NULL)
		return false;
	idx = mount_fd_index(i->owner, mount_id, i->fd, i->type);
	if (idx < 0) {
		free(h);
		return false;
	}
	i->handle = h;
	i->mount_fd_idx = idx;
	node_rec_handle(i->owner, i);
	return true;
}

/*
 * A file is opened while its mount is kept for a restart (keep.c): it gets
 * its handle now if it has none, so that a server taking the mount over
 * after a crash finds the open file by its handle even when its name is
 * gone by then (a file removed while open, renamed on the host). One
 * name_to_handle_at() on the open fd, once per file; none without a store.
 */
void inode_opened(struct fs_mount *m, struct inode *i, int fd)
{
	struct file_handle *h;
	int mount_id, idx;
	bool need;

	pthread_mutex_lock(&m->fs->lock);
	need = m->kept && i->handle == NULL && i->lazy;
	pthread_mutex_unlock(&m->fs->lock);
	if (!need || (h = handle_of(fd, &mount_id)) == NULL)
		return;
	pthread_mutex_lock(&m->fs->lock);
	if (i->handle == NULL && (idx = mount_fd_index(m, mount_id, fd, i->type)) >= 0) {
		i->handle = h;
		h = NULL;
		i->mount_fd_idx = idx;
		i->lazy = false;
		node_rec_handle(m, i);
	}
	pthread_mutex_unlock(&m->fs->lock);
	free(h);
}

static bool evictable(const struct inode *i)
{
	return i->handle != NULL || i->lazy;
}

/* Close least recently used fds until the cache is within its bound. */
static void lru_trim(struct fs *fs)
{
	struct inode *i;

	while (fs->nfds > fs->maxfds && (i = fs->lru.lru_prev) != &fs->lru) {
		lru_unlink(i);
		if (i->handle == NULL && !handle_now(i))
			continue; /* pinned from now on */
		closer_later_fd(fs, i->fd);
		i->fd = -1;
		fs->nfds--;
	}
}

static void fd_cache_add(struct fs *fs, struct inode *i)
{
	fs->nfds++;
	if (evictable(i) && i->users == 0) {
		i->lru_next = fs->lru.lru_next;
		i->lru_prev = &fs->lru;
		fs->lru.lru_next->lru_prev = i;
		fs->lru.lru_next = i;
	}
	lru_trim(fs);
}

void inode_fd_cache_drop(struct fs *fs, struct inode *i)
{
	lru_unlink(i);
	if (i->fd >= 0) {
		closer_later_fd(fs, i->fd);
		i->fd = -1;
		fs->nfds--;
	}
}

/*
 * One fd per underlying mount, as open_by_handle_at() wants. It refuses an
 * O_PATH fd (EBADF), so a folder of that mount is opened for reading; the
 * first inode seen on a mount is a folder (its root), since lookups go
 * down from folders. A file first seen on an unknown mount stays pinned.
 */
static int mount_fd_index(struct fs_mount *fs, int mount_id, int fd, mode_t type)
{
	size_t i;
	int *ids, *fds, dupfd;

	for (i = 0; i < fs->nmount_fds; i++)
		if (fs->mount_ids[i] == mount_id)
			return (int)i;
	if (!S_ISDIR(type))
		return -1;
	dupfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dupfd < 0)
		return -1;
	ids = realloc(fs->mount_ids, (fs->nmount_fds + 1) * sizeof *ids);
	if (ids != NULL)
		fs->mount_ids = ids;
	fds = realloc(fs->mount_fds, (fs->nmount_fds + 1) * sizeof *fds);
	if (fds != NULL)
		fs->mount_fds = fds;
	if (ids == NULL || fds == NULL) {
		close(dupfd);
		return -1;
	}
	fs->mount_ids[fs->nmount_fds] = mount_id;
	fs->mount_fds[fs->nmount_fds] = dupfd;
	table_mount_seen(fs, fs->nmount_fds, mount_id);
	keep_mount_fd(fs, fs->nmount_fds);
	return (int)fs->nmount_fds++;
}

/*
 * statx of NAME in DIRFD (FLAGS: 0, or AT_EMPTY_PATH for DIRFD itself),
 * never following a symlink, as a struct stat and the birth time.
 */
int inode_stat_birth(int dirfd, const char *name, int flags, struct stat *st,
		     struct inode_birth *b)
{
	struct statx x;

	if (statx(dirfd, name, flags | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &x) != 0)
		return -errno;
	memset(st, 0, sizeof *st);
	st->st_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	st->st_ino = x.stx_ino;
	st->st_mode = x.stx_mode;
	st->st_nlink = x.stx_nlink;
	st->st_uid = x.stx_uid;
	st->st_gid = x.stx_gid;
	st->st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
	st->st_size = (off_t)x.stx_size;
	st->st_blksize = (blksize_t)x.stx_blksize;
	st->st_blocks = (blkcnt_t)x.stx_blocks;
	st->st_atim.tv_sec = x.stx_atime.tv_sec;
	st->st_atim.tv_nsec = x.stx_atime.tv_nsec;
	st->st_mtim.tv_sec = x.stx_mtime.tv_sec;
	st->st_mtim.tv_nsec = x.stx_mtime.tv_nsec;
	st->st_ctim.tv_sec = x.stx_ctime.tv_sec;
	st->st_ctim.tv_nsec = x.stx_ctime.tv_nsec;
	b->known = (x.stx_mask & STATX_BTIME) != 0;
	b->sec = b->known ? x.stx_btime.tv_sec : 0;
	b->nsec = b->known ? x.stx_btime.tv_nsec : 0;
	return 0;
}

static bool same_birth(const struct inode_birth *a, const struct inode_birth *b)
{
	return a->sec == b->sec && a->nsec == b->nsec;
}

/*
 * The first fd of a file that was only looked up: opened by the name it
 * was last seen by, in its folder's fd, and taken only if it is the same
 * file, (dev, ino, birth time). If the name is gone or names another file
 * now (renamed on the host since), ESTALE: the kernel looks the path up
 * again. -1 and errno.
 */
static int open_by_name(struct fs_mount *m, struct inode *i)
{
	struct inode_birth b;
	struct inode *p;
	struct stat st;
	char *name;
	int pfd, fd = -1, e;

	p = inode_pin_parent(m, i, &name);
	if (p == NULL) {
		errno = ESTALE;
		return -1;
	}
	pfd = inode_fd_get(m, p);
	if (pfd >= 0) {
		fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		e = fd < 0 ? errno : 0;
		inode_fd_put(m, p);
	} else {
		e = -pfd;
	}
	inode_unpin(m, p);
	free(name);
	if (fd < 0) {
		/* gone from there: ESTALE; out of descriptors or memory: said as it is */
		errno = e == ENOENT || e == ENOTDIR ? ESTALE : e;
		return -1;
	}
	if (inode_stat_birth(fd, "", AT_EMPTY_PATH, &st, &b) != 0 || st.st_dev != i->dev ||
	    st.st_ino != i->ino || (st.st_mode & S_IFMT) != i->type || !b.known ||
	    !same_birth(&b, &i->birth)) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/*
 * The name i was last seen by is about to go, and the file may keep
 * another (st_nlink > 1): give i its fd now, so it never needs that name
 * (a process holding it by another name still reaches it).
 */
void inode_keep_open(struct fs_mount *m, struct inode *i)
{
	int fd = inode_fd_get(m, i);

	if (fd >= 0)
		inode_fd_put(m, i);
}

/*
 * Pin the inode's O_PATH fd for use by this worker, reopening it from its
 * file handle if the cache closed it, or by name if it never had one.
 * Pair with inode_fd_put().
 */
int inode_fd_get(struct fs_mount *m, struct inode *i)
{
	struct fs *fs = m->fs;
	int fd, mfd;

	pthread_mutex_lock(&fs->lock);
	if (i->fd >= 0) {
		if (i->users++ == 0)
			lru_unlink(i);
		fd = i->fd;
		pthread_mutex_unlock(&fs->lock);
		return fd;
	}
	if (i->handle == NULL && !i->byname) {
		pthread_mutex_unlock(&fs->lock);
		return -ESTALE;
	}
	i->users++;
	mfd = i->handle != NULL ? m->mount_fds[i->mount_fd_idx] : -1;
	pthread_mutex_unlock(&fs->lock);

	if (mfd >= 0)
		fd = open_by_handle_at(mfd, i->handle, O_PATH | O_CLOEXEC);
	else
		fd = open_by_name(m, i);
	pthread_mutex_lock(&fs->lock);
	if (fd < 0) {
		fd = -errno;
		i->users--;
	} else if (i->fd >= 0) {
		close(fd); /* another worker reopened it first */
		fd = i->fd;
	} else {
		i->fd = fd;
		fs->nfds++;
		lru_trim(fs);
	}
	pthread_mutex_unlock(&fs->lock);
	inode_closes_flush();
	return fd;
}

void inode_fd_put(struct fs_mount *m, struct inode *i)
{
	struct fs *fs = m->fs;

	pthread_mutex_lock(&fs->lock);
	if (--i->users == 0 && i->fd >= 0 && evictable(i)) {
		i->lru_next = fs->lru.lru_next;
		i->lru_prev = &fs->lru;
		fs->lru.lru_next->lru_prev = i;
		fs->lru.lru_next = i;
		lru_trim(fs);
	}
	pthread_mutex_unlock(&fs->lock);
	inode_closes_flush();
}

int inode_stat(struct fs_mount *m, struct inode *i, struct stat *st)
{
	int fd = inode_fd_get(m, i), r = 0;

	if (fd < 0)
		return fd;
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
		r = -errno;
	inode_fd_put(m, i);
	return r;
}

static void inode_free(struct fs_mount *m, struct inode *i);

static void inode_unref(struct fs_mount *m, struct inode *i)
{
	if (i != NULL && i != &m->root && --i->refs == 0 && i->nlookup == 0)
		inode_free(m, i);
}

/* Frees i, and each parent that only i kept: a loop, for chains thousands deep */
static void inode_free(struct fs_mount *m, struct inode *i)
{
	struct inode *p;

	while (i != NULL) {
		inode_unhash(m, i);
		inode_fd_cache_drop(m->fs, i);
		backing_inode_free(m, i);
		p = i->parent;
		free(i->handle);
		free(i->name);
		i->handle = NULL;
		i->name = NULL;
		node_gone(m, i);
		i = p != NULL && p != &m->root && --p->refs == 0 && p->nlookup == 0 ? p : NULL;
	}
}

/* Remember where an inode was last seen, for classification and logs. */
static void inode_set_parent(struct fs_mount *m, struct inode *i, struct inode *parent,
			     const char *name)
{
	char *copy;

	if (i == &m->root || (i->parent == parent && i->name != NULL && strcmp(i->name, name) == 0))
		return;
	copy = strdup(name);
	if (copy == NULL)
		return;
	if (parent != &m->root)
		parent->refs++;
	inode_unref(m, i->parent);
	i->parent = parent;
	free(i->name);
	i->name = copy;
	node_rec_place(m, i);
}

void inode_moved(struct fs_mount *m, struct inode *i, struct inode *parent, const char *name)
{
	pthread_mutex_lock(&m->fs->lock);
	inode_set_parent(m, i, parent, name);
	pthread_mutex_unlock(&m->fs->lock);
}

static struct file_handle *handle_of(int fd, int *mount_id)
{
	struct file_handle *h = malloc(sizeof *h + HANDLE_MAX), *small;

	if (h == NULL)
		return NULL;
	h->handle_bytes = HANDLE_MAX;
	if (name_to_handle_at(fd, "", h, mount_id, AT_EMPTY_PATH) != 0) {
		free(h);
		return NULL;
	}
	/* Kept for the inode's life: only the bytes the filesystem used (8 on ext4). */
	small = realloc(h, sizeof *h + h->handle_bytes);
	return small != NULL ? small : h;
}

/*
 * The guard's class of I as seen through this name (fs->lock held).
 * Protection follows the inode: another name never weakens it, unless the
 * class it holds is of an older generation.
 */
static void inode_set_gcls(struct fs_mount *m, struct inode *i, const struct guard_cls *gc,
			   uint64_t gen)
{
	if (m->guard != NULL &&
	    (!guard_cls_protected(&i->gcls) || guard_cls_protected(gc) || i->ggen != gen)) {
		i->gcls = *gc;
		i->ggen = gen;
	}
}

/*
 * How the table's entry i (not NULL) stands to the file B describes, which
 * has its number: the same file (or not known otherwise: an fd pins its
 * number, or no birth times), one born later, or one born earlier and gone.
 */
enum entry_age { ENTRY_SAME, ENTRY_NEWER, ENTRY_GONE };

static enum entry_age entry_age(const struct fs_mount *m, const struct inode *i,
				const struct inode_birth *b)
{
	if (i == &m->root || i->fd >= 0 || !b->known || !i->birth.known || same_birth(&i->birth, b))
		return ENTRY_SAME;
	if (i->birth.sec > b->sec || (i->birth.sec == b->sec && i->birth.nsec > b->nsec))
		return ENTRY_NEWER;
	return ENTRY_GONE;
}

/*
 * The entry of the file ST and B describe, NULL if none, or ERR_STALE. An
 * entry with that (dev, ino) but born earlier is of a file that had the
 * number before and is gone (an entry without an fd does not pin its
 * number): it leaves the table, so no later lookup takes it for the new
 * file, and lives on only until the kernel forgets it (its handle then
 * fails with ESTALE). One born later means ST is of a file gone since:
 * ERR_STALE, and the kernel looks the name up again.
 */
#define ERR_STALE ((struct inode *)-1)

static struct inode *inode_match(struct fs_mount *m, const struct stat *st,
				 const struct inode_birth *b)
{
	struct inode *i = inode_find(m, st->st_dev, st->st_ino);

	if (i == NULL)
		return NULL;
	switch (entry_age(m, i, b)) {
	case ENTRY_SAME:
		return i;
	case ENTRY_NEWER:
		return ERR_STALE;
	default:
		inode_unhash(m, i);
		return NULL;
	}
}

/*
 * The table's entry of the file ST and B describe, for a check of a name
 * that is not looked up (an unlink's, a rename's; fs->lock held): NULL if
 * none, or if the entry is of a file that had the number before and is gone
 * (born earlier, no fd pinning its number), which lends the new file
 * nothing. Else the entry (also one born later: ST is then of a file gone
 * since, and the entry's file holds the number now).
 */
struct inode *inode_find_file(struct fs_mount *m, const struct stat *st,
			      const struct inode_birth *b)
{
	struct inode *i = inode_find(m, st->st_dev, st->st_ino);

	return i != NULL && entry_age(m, i, b) == ENTRY_GONE ? NULL : i;
}

/*
 * Look name up in parent: a statx of the name in the parent's fd, never a
 * path walk. A name whose inode we hold (revalidations, readdirplus of a
 * known folder) costs nothing more. A new file gets no fd (git status never
 * opens most of them: see open_by_name); a new folder, a file without a
 * birth time, or a name the mount just made (MADE) is opened with
 * O_PATH|O_NOFOLLOW and stat'ed through that fd. Takes a kernel reference
 * on the inode it returns, and classifies it from its parent and name.
 */
static int lookup(struct fs_mount *m, struct inode *parent, const char *name,
		  struct fuse_entry_param *e, bool made)
{
	struct fs *fs = m->fs;
	struct file_handle *h = NULL;
	struct guard_cls gc = {0}, pgc;
	struct inode_birth b;
	struct inode *i = NULL;
	bool known;
	int pfd, fd = -1, mount_id = -1, idx = -1, r;
	uint64_t gen = 0;
	struct stat st;

	memset(e, 0, sizeof *e);
	if (m->guard != NULL)
		policy_refresh(m, parent);
	pfd = inode_fd_get(m, parent);
	if (pfd < 0)
		return pfd;
	r = made ? 0 : inode_stat_birth(pfd, name, 0, &st, &b);
	if (r == 0 && !made) {
		/* the reference taken under the lock keeps a known inode alive */
		pthread_mutex_lock(&fs->lock);
		i = inode_match(m, &st, &b);
		if (i == ERR_STALE)
			r = -ESTALE;
		if (r == 0 && i != NULL && i != &m->root &&
		    (i->fd >= 0 || i->handle != NULL || i->byname))
			node_rec(m, i)->nlookup = ++i->nlookup;
		else
			i = NULL;
		pthread_mutex_unlock(&fs->lock);
	}
	if (r == 0 && i == NULL && (made || S_ISDIR(st.st_mode) || !b.known)) {
		fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		r = fd < 0 ? -errno : inode_stat_birth(fd, "", AT_EMPTY_PATH, &st, &b);
		if (r == 0 && (S_ISDIR(st.st_mode) || !m->handles))
			h = handle_of(fd, &mount_id);
	}
	if (r == 0 && m->guard != NULL) {
		gen = guard_generation(m->guard);
		pthread_mutex_lock(&fs->lock);
		pgc = parent->gcls;
		pthread_mutex_unlock(&fs->lock);
		r = guard_classify(m->guard, &pgc, pfd, name, &st, fd, &gc);
	}
	inode_fd_put(m, parent);
	known = i != NULL; /* referenced already */
	if (r != 0) {
		if (i != NULL)
			inode_forget(m, i, 1);
		if (fd >= 0)
			close(fd);
		free(h);
		return r;
	}

	pthread_mutex_lock(&fs->lock);
	if (i == NULL && (i = inode_match(m, &st, &b)) == ERR_STALE) {
		pthread_mutex_unlock(&fs->lock);
		if (fd >= 0)
			close(fd);
		free(h);
		return -ESTALE;
	}
	if (i != NULL && !known) {
		/* made meanwhile by another worker, or known but with its fd evicted */
		if (i != &m->root)
			node_rec(m, i)->nlookup = ++i->nlookup;
		if (i->fd < 0 && fd >= 0) {
			i->fd = fd;
			fd = -1;
			fd_cache_add(fs, i);
		}
	}
	if (i != NULL) {
		i->nlink = st.st_nlink;
		i->cls |= policy_classify(m, parent, &st); /* read-only follows the inode */
		if (i != &m->root) {
			node_rec(m, i)->cls = i->cls;
			inode_set_parent(m, i, parent, name);
			inode_set_gcls(m, i, &gc, gen);
		}
		pthread_mutex_unlock(&fs->lock);
		free(h);
		if (fd >= 0)
			close(fd);
		goto done;
	}
	if (h != NULL && fd >= 0 && (idx = mount_fd_index(m, mount_id, fd, st.st_mode)) < 0) {
		free(h);
		h = NULL;
	}
	i = inode_table_room(&m->table) ? node_new(m) : NULL;
	if (i == NULL || (i->name = strdup(name)) == NULL) {
		if (i != NULL)
			node_gone(m, i);
		pthread_mutex_unlock(&fs->lock);
		free(h);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	i->dev = st.st_dev;
	i->ino = st.st_ino;
	i->type = st.st_mode & S_IFMT;
	i->birth = b;
	i->nlink = st.st_nlink;
	i->nlookup = 1;
	i->handle = h;
	i->byname = fd < 0;
	i->mount_fd_idx = idx;
	i->lazy = h == NULL && m->handles && !S_ISDIR(st.st_mode);
	i->owner = m;
	i->parent = parent;
	if (parent != &m->root)
		parent->refs++;
	i->cls = policy_classify(m, parent, &st);
	i->gcls = gc;
	i->ggen = gen;
	i->fd = fd;
	node_rec_fill(m, i);
	if (fd >= 0)
		fd_cache_add(fs, i);
	inode_hash(&m->table, i);
	pthread_mutex_unlock(&fs->lock);
done:
	e->ino = node_id(m, i);
	e->generation = (uint32_t)(e->ino >> 32);
	e->attr = st;
	e->attr_timeout = m->timeout;
	e->entry_timeout = m->timeout;
	return 0;
}

int inode_lookup(struct fs_mount *m, struct inode *parent, const char *name,
		 struct fuse_entry_param *e)
{
	return lookup(m, parent, name, e, false);
}

/*
 * A name this mount just made: what made it uses it next (a write's
 * GETATTR, tar's utimensat and chmod), so its O_PATH fd is opened now, and
 * stat'ed through it, two syscalls where a lookup by name and an open by
 * name later would take three.
 */
int inode_lookup_made(struct fs_mount *m, struct inode *parent, const char *name,
		      struct fuse_entry_param *e)
{
	return lookup(m, parent, name, e, true);
}

/* The folder i was last seen in, kept alive until inode_unpin(); *name is a copy. */
struct inode *inode_pin_parent(struct fs_mount *m, struct inode *i, char **name)
{
	struct inode *p;

	pthread_mutex_lock(&m->fs->lock);
	p = i->parent;
	*name = i->name != NULL ? strdup(i->name) : NULL;
	if (p == NULL || *name == NULL) {
		pthread_mutex_unlock(&m->fs->lock);
		free(*name);
		*name = NULL;
		return NULL;
	}
	if (p != &m->root)
		p->refs++;
	pthread_mutex_unlock(&m->fs->lock);
	return p;
}

void inode_unpin(struct fs_mount *m, struct inode *p)
{
	pthread_mutex_lock(&m->fs->lock);
	inode_unref(m, p);
	pthread_mutex_unlock(&m->fs->lock);
}

void inode_forget(struct fs_mount *m, struct inode *i, uint64_t n)
{
	if (i == &m->root || i == &m->stale)
		return;
	pthread_mutex_lock(&m->fs->lock);
	i->nlookup = n >= i->nlookup ? 0 : i->nlookup - n;
	node_rec(m, i)->nlookup = i->nlookup;
	if (i->nlookup == 0 && i->refs == 0)
		inode_free(m, i);
	pthread_mutex_unlock(&m->fs->lock);
	inode_closes_flush();
}

/*
 * Free what every inode of a mount that is gone holds, those out of the
 * hash (retired by inode_match) too; table_free() frees the inodes.
 */
void inode_table_clear(struct fs_mount *m)
{
	struct inode *c;
	uint32_t k;

	for (k = 1; m->tab.nodes != NULL && k < m->tab.node_hwm; k++) {
		c = atomic_load(&m->tab.nodes[k >> NODE_SHIFT]);
		if (c == NULL || !c[k & (NODE_CHUNK - 1)].used)
			continue;
		c += k & (NODE_CHUNK - 1);
		inode_fd_cache_drop(m->fs, c);
		free(c->handle);
		free(c->name);
		c->handle = NULL;
		c->name = NULL;
	}
	if (m->table.slots == NULL)
		return;
	free(m->table.slots);
	m->table.slots = NULL;
	if (m->root.fd >= 0) {
		close(m->root.fd);
		m->root.fd = -1;
	}
}

/* The root keeps the fd it was opened with, pinned for the mount's life. */
int inode_root_init(struct fs_mount *m, int rootfd, struct fs_error *err)
{
	struct file_handle *h;
	struct stat st;
	int mount_id;

	if (fstat(rootfd, &st) != 0) {
		fs_seterr(err, errno, "source %s: %s", m->source, strerror(errno));
		close(rootfd);
		return -errno;
	}
	m->root.dev = st.st_dev;
	m->root.ino = st.st_ino;
	m->root.type = S_IFDIR;
	m->root.nlookup = 1;
	m->root.fd = rootfd;
	m->root.name = NULL;
	m->root.cls = policy_classify(m, NULL, &st);
	/* Register the source's own mount for open_by_handle_at() right away. */
	h = handle_of(rootfd, &mount_id);
	if (h != NULL) {
		pthread_mutex_lock(&m->fs->lock);
		m->handles = mount_fd_index(m, mount_id, rootfd, S_IFDIR) >= 0;
		if (m->handles)
			m->tab.hdr->flags |= TH_HANDLES;
		pthread_mutex_unlock(&m->fs->lock);
		free(h);
	}
	return 0;
}

/*
 * "/a/b/name" from the parent chain; the caller frees it.  For a log line
 * (EXACT false) an unknown name is "?"; for a decision (EXACT true) it is
 * NULL then, as on out-of-memory.  Never cut short: the chain is walked twice.
 */
char *inode_path(struct fs_mount *m, struct inode *i, const char *name, bool exact)
{
	struct inode *j;
	size_t len = 1, off;
	char *out = NULL;
	const char *s;

	pthread_mutex_lock(&m->fs->lock);
	if (name != NULL)
		len += strlen(name) + 1;
	for (j = i; j != NULL && j != &m->root; j = j->parent) {
		if (j->name == NULL && exact)
			goto out;
		len += strlen(j->name != NULL ? j->name : "?") + 1;
	}
	out = malloc(len + 1);
	if (out == NULL)
		goto out;
	off = len;
	out[off] = '\0';
	if (name != NULL) {
		off -= strlen(name);
		memcpy(out + off, name, strlen(name));
		out[--off] = '/';
	}
	for (j = i; j != NULL && j != &m->root; j = j->parent) {
		s = j->name != NULL ? j->name : "?";
		off -= strlen(s);
		memcpy(out + off, s, strlen(s));
		out[--off] = '/';
	}
	if (len > 1) {
		memmove(out, out + off, len + 1 - off); /* off is 1: the room "/" needs alone */
	} else {
		out[0] = '/';
		out[1] = '\0';
	}
out:
	pthread_mutex_unlock(&m->fs->lock);
	return out;
}
