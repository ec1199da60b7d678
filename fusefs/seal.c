/* SPDX-License-Identifier: MIT */
/*
 * Content-checked files (gitguard rules X2, X4, X5 and R1): a git folder's
 * index and sharedindex.*, the strategy and option files of a rebase,
 * cherry-pick, revert or am, and every file git reads as a ref (HEAD,
 * ORIG_HEAD, refs/..., packed-refs, a rebase's update-refs). gitguard says
 * which names they are and whether a content is safe; this file makes sure
 * the content it judged is the content that ends up under the name.
 *
 * A rename onto such a name (git writes index.lock, then renames it):
 *   1. open the source for reading and take its identity (dev, ino): a
 *	regular file with one name;
 *   2. seal it: wait until no handle of any mount of this server may write
 *	it (a close() sends RELEASE after it returns, so git's own handle may
 *	still be counted for a moment; a handle kept open is refused after
 *	SEAL_WAIT_MS), then refuse every new write-open and truncate of it;
 *	kernel passthrough writes bypass the server, so counting handles is
 *	how to know none is left, but for one thing: a shared writable mapping
 *	of a passthrough handle maps the backing file, which it keeps open for
 *	writing after the handle's RELEASE. So the file must also be open for
 *	writing nowhere (no_writer: a read lease is granted only then);
 *   3. read it through the descriptor and check it;
 *   4. under ns_lock held exclusively (every other name change of this
 *	server holds it shared) check that the name is still that inode,
 *	then rename;
 *   5. on success every inode object of it, in every mount, stays sealed
 *	for its life: a class computed from its old name cannot reopen it.
 *
 * A write in place of such a file but an index (git's write_file: create
 * or O_TRUNC, one write, close; FETCH_HEAD through stdio) reaches the server
 * (no passthrough for such handles) and is applied only if the content it
 * leaves passes; chk_lock serialises those writes so two of them cannot
 * combine into an unchecked content. An X4 strategy file may be empty only
 * for the moment between an O_TRUNC and git's write, while a handle may
 * write it: left empty when the last such handle closes (git would run the
 * strategy "", git-merge-) it is removed (seal_checked_release); made empty
 * with no handle (mknod, a truncate by path) it is refused. Every other
 * content, empty included, is checked as it is left.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEAL_WAIT_MS 1000

static bool in_sealing(struct fs *fs, dev_t dev, ino_t ino)
{
	unsigned k;

	for (k = 0; k < fs->nsealing; k++)
		if (fs->sealing[k].dev == dev && fs->sealing[k].ino == ino)
			return true;
	return false;
}

/* Handles that may write (dev, ino), over every mount; under fs->lock. */
static unsigned writers(struct fs *fs, dev_t dev, ino_t ino)
{
	struct fs_mount *m;
	struct inode *i;
	unsigned n = 0;

	for (m = fs->mounts; m != NULL; m = m->next) {
		i = inode_find(m, dev, ino);
		if (i != NULL)
			n += i->write_opens;
	}
	return n;
}

/*
 * A handle that may write i is about to be handed out (or a truncate is
 * about to run): count it, unless i is sealed. 0 or -EROFS. *checked (if
 * not NULL) says whether its writes must each be checked (an X4 file), from
 * the class the caller's policy_check() just refreshed.
 */
int seal_write_begin(struct fs_mount *m, struct inode *i, bool *checked)
{
	char why[128];
	unsigned rule;
	int r = 0;

	pthread_mutex_lock(&m->fs->lock);
	if (i->sealed || (m->fs->nsealing > 0 && in_sealing(m->fs, i->dev, i->ino)))
		r = -EROFS;
	else
		i->write_opens++;
	if (checked != NULL)
		*checked = m->guard != NULL && S_ISREG(i->type) && i->gcls.kind != GUARD_BOTREPO &&
			   (i->gcls.flags & GUARD_CHK) && !guard_rule_renamed_only(i->gcls.rule);
	rule = guard_seal_rule(&i->gcls);
	pthread_mutex_unlock(&m->fs->lock);
	if (r != 0) {
		snprintf(why, sizeof why,
			 "rule %s (content checked when it was renamed in; no writes since)",
			 guard_rule_name(rule));
		policy_refused(m, NULL, "write", i, NULL, false, guard_rule_name(rule), why);
	}
	return r;
}

void seal_write_end(struct fs_mount *m, struct inode *i)
{
	pthread_mutex_lock(&m->fs->lock);
	if (i->write_opens > 0 && --i->write_opens == 0)
		pthread_cond_broadcast(&m->fs->cond);
	pthread_mutex_unlock(&m->fs->lock);
}

/* Step 2: no writer left, none admitted; false after SEAL_WAIT_MS or when full. */
static bool seal(struct fs *fs, dev_t dev, ino_t ino)
{
	struct timespec dl;
	bool ok = false;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += SEAL_WAIT_MS / 1000;
	dl.tv_nsec += (long)(SEAL_WAIT_MS % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fs->lock);
	for (;;) {
		if (!in_sealing(fs, dev, ino) && writers(fs, dev, ino) == 0) {
			if (fs->nsealing < SEAL_MAX) {
				fs->sealing[fs->nsealing].dev = dev;
				fs->sealing[fs->nsealing++].ino = ino;
				ok = true;
			}
			break;
		}
		if (pthread_cond_timedwait(&fs->cond, &fs->lock, &dl) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

/*
 * Step 2, the kernel's side: is the file FD (read-only) open for writing
 * nowhere, not even by a mapping?  fcntl(2) grants a read lease only then
 * (the kernel's count of the inode's writers, which every open file
 * description for writing holds, a mapping's included); it is let go at
 * once. A file system without leases (EINVAL) or a server without
 * CAP_LEASE on another's file (EACCES) cannot tell: the handles' count
 * decides alone, as before. Waits out a writer for up to SEAL_WAIT_MS
 * (another server's last close being processed).
 */
static bool no_writer(int fd)
{
	int k;

	for (k = 0; k < SEAL_WAIT_MS / 10; k++) {
		if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
			fcntl(fd, F_SETLEASE, F_UNLCK);
			return true;
		}
		if (errno != EAGAIN)
			return true;
		usleep(10000);
	}
	return false;
}

/* Step 5, or the undoing of step 2 when the rename did not happen. */
static void unseal(struct fs *fs, dev_t dev, ino_t ino, bool keep)
{
	struct fs_mount *m;
	struct inode *i;
	unsigned k;

	pthread_mutex_lock(&fs->lock);
	for (k = 0; k < fs->nsealing; k++)
		if (fs->sealing[k].dev == dev && fs->sealing[k].ino == ino) {
			fs->sealing[k] = fs->sealing[--fs->nsealing];
			break;
		}
	for (m = fs->mounts; keep && m != NULL; m = m->next) {
		i = inode_find(m, dev, ino);
		if (i != NULL && i != &m->root) {
			i->sealed = true;
			node_rec(m, i)->flags |= NR_SEALED; /* and so it stays in a new server */
		}
	}
	pthread_cond_broadcast(&fs->cond); /* another rename of it may be waiting */
	pthread_mutex_unlock(&fs->lock);
}

/*
 * A rename onto a content-checked name that the last server checked and
 * made, and was killed before it sealed (ops-name.c, a request sent again):
 * sealed now, as step 5 would have.
 */
void seal_renamed(struct fs *fs, dev_t dev, ino_t ino)
{
	unseal(fs, dev, ino, true);
}

/* Log a refusal of OP on name in the folder where (name NULL: on where itself). */
static int refuse(struct fs_mount *m, const char *op, struct inode *where, const char *name,
		  unsigned rule, const char *why)
{
	char msg[320];

	snprintf(msg, sizeof msg, "rule %s (%s)", guard_rule_name(rule), why);
	return policy_refused(m, NULL, op, where, name, false, guard_rule_name(rule), msg);
}

/*
 * Rename name in p onto newname in np, whose content rule is RULE (X2, X4,
 * X5 or R1): the source must be a regular file with one name and no writer,
 * and pass gitguard's check. Returns 0 or -errno, like renameat2.
 */
int seal_rename(struct fs_mount *m, int pfd, const char *name, struct inode *np, int npfd,
		const char *newname, unsigned flags, unsigned rule)
{
	struct fs *fs = m->fs;
	const char *why = NULL;
	struct stat st, now;
	int fd, r;

	/* only a regular file is opened: no FIFO or device has its open run by root */
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return refuse(m, "rename", np, newname, rule, "not a regular file");
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? refuse(m, "rename", np, newname, rule, "not a regular file")
				      : -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		return refuse(m, "rename", np, newname, rule, "not a regular file with one name");
	}
	if (!seal(fs, st.st_dev, st.st_ino)) {
		close(fd);
		return refuse(m, "rename", np, newname, rule,
			      "a handle that may write it is still open");
	}
	if (!no_writer(fd)) {
		close(fd);
		unseal(fs, st.st_dev, st.st_ino, false);
		return refuse(m, "rename", np, newname, rule,
			      "it is still open for writing (a shared mapping, or a process "
			      "outside the mount)");
	}
	r = guard_content_fd(m->guard, npfd, rule, newname, fd,
			     guard_rule_renamed_only(rule) ? guard_hash_size(m->guard, npfd) : 20,
			     &why);
	close(fd);
	if (r != 0) {
		unseal(fs, st.st_dev, st.st_ino, false);
		return refuse(m, "rename", np, newname, rule, why);
	}
	pthread_rwlock_wrlock(&fs->ns_lock);
	if (fstatat(pfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0)
		r = -errno;
	else if (now.st_dev != st.st_dev || now.st_ino != st.st_ino || now.st_nlink != 1)
		r = -EAGAIN;
	else {
		journal_note(m, st.st_ino); /* what a rename sent again looks for */
		if (renameat2(pfd, name, npfd, newname, flags) != 0)
			r = -errno;
		journal_syscalled(m);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	unseal(fs, st.st_dev, st.st_ino, r == 0);
	if (r == -EAGAIN)
		return refuse(m, "rename", np, newname, rule,
			      "the source changed while it was checked");
	return r;
}

/* A readable fd on i's content, or -errno. */
static int content_fd(struct fs_mount *m, struct inode *i)
{
	char path[PROC_FD_MAX];
	int fd = inode_fd_get(m, i), rfd;

	if (fd < 0)
		return fd;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	rfd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (rfd < 0)
		rfd = -errno;
	inode_fd_put(m, i);
	return rfd;
}

/*
 * What a content-checked file i would hold after writing len bytes of data
 * at off (data NULL: a truncate to off): 0 if gitguard accepts it for the
 * rule of its class now (none, once renamed where no rule applies). Called
 * with chk_lock.
 */
static int content_after(struct fs_mount *m, struct inode *i, const char *name, const char *data,
			 size_t len, off_t off, bool handle)
{
	size_t cap, have, size;
	const char *why = NULL;
	char *buf, *nb;
	unsigned rule;
	int fd, r;

	pthread_mutex_lock(&m->fs->lock);
	rule = (i->gcls.flags & GUARD_CHK) && i->gcls.kind != GUARD_BOTREPO ? i->gcls.rule : 0;
	pthread_mutex_unlock(&m->fs->lock);
	if (rule == 0 || guard_rule_renamed_only(rule))
		return rule == 0 ? 0 : -EROFS; /* an index, MERGE_RR: never written in place */
	cap = guard_content_cap(rule);
	if (off < 0 || (size_t)off > cap || len > cap - (size_t)off)
		return refuse(m, "write", i, NULL, rule, "larger than gitguard reads");
	fd = content_fd(m, i);
	if (fd < 0)
		return fd;
	r = guard_read_fd(fd, cap, &buf, &have, NULL);
	close(fd);
	if (r != 0)
		return refuse(m, "write", i, NULL, rule, "cannot be read to check it");
	size = data != NULL ? ((size_t)off + len > have ? (size_t)off + len : have) : (size_t)off;
	if (size > have) {
		/* a write past the end, or a truncate that extends: zeros between */
		nb = realloc(buf, size + 1);
		if (nb == NULL) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		memset(buf + have, 0, size - have);
	}
	if (data != NULL)
		memcpy(buf + off, data, len);
	if (size == 0 && handle && rule == GUARD_RULE_X4) {
		free(buf);
		return 0; /* a strategy file emptied before git's write: checked at the close */
	}
	r = guard_content_check(rule, name, buf, size, 20, &why);
	free(buf);
	return r != 0 ? refuse(m, "write", i, NULL, rule, why) : 0;
}

/* i's last name, for the check and the log; NULL if it has none. */
static char *name_of(struct fs_mount *m, struct inode *i)
{
	char *n;

	pthread_mutex_lock(&m->fs->lock);
	n = i->name != NULL ? strdup(i->name) : NULL;
	pthread_mutex_unlock(&m->fs->lock);
	return n;
}

/* A write to a checked file through handle fh: checked, then applied. Bytes written or -errno. */
ssize_t seal_checked_write(struct fs_mount *m, struct inode *i, int fh, const char *data,
			   size_t len, off_t off)
{
	char *name = name_of(m, i);
	ssize_t n;
	int r;

	if (name == NULL)
		return -EROFS;
	pthread_mutex_lock(&m->fs->chk_lock);
	r = content_after(m, i, name, data, len, off, true);
	n = r != 0 ? r : pwrite(fh, data, len, off);
	if (n < 0 && r == 0)
		n = -errno;
	pthread_mutex_unlock(&m->fs->chk_lock);
	free(name);
	return n;
}

/*
 * Begin a truncate of a checked file to size: returns with chk_lock held
 * when 0. It passes empty only while a handle may still write the file (an
 * O_TRUNC open's truncate comes with no handle, after the open): its close
 * decides. The truncate itself counts as one writer (seal_write_begin).
 */
int seal_checked_truncate_begin(struct fs_mount *m, struct inode *i, off_t size)
{
	char *name = name_of(m, i);
	bool handle;
	int r;

	if (name == NULL)
		return -EROFS;
	pthread_mutex_lock(&m->fs->lock);
	handle = writers(m->fs, i->dev, i->ino) > 1;
	pthread_mutex_unlock(&m->fs->lock);
	pthread_mutex_lock(&m->fs->chk_lock);
	r = content_after(m, i, name, NULL, 0, size, handle);
	if (r != 0)
		pthread_mutex_unlock(&m->fs->chk_lock);
	free(name);
	return r;
}

void seal_checked_truncate_end(struct fs_mount *m)
{
	pthread_mutex_unlock(&m->fs->chk_lock);
}

/* An empty file made by NAME in P with no handle (mknod): 0 if its rule takes it. */
int seal_made_empty(struct fs_mount *m, struct inode *p, const char *name, unsigned rule)
{
	const char *why = NULL;

	if (guard_rule_renamed_only(rule) || guard_content_check(rule, name, "", 0, 20, &why) == 0)
		return 0;
	return refuse(m, "create", p, name, rule, why);
}

/*
 * A write handle of the checked file i closed, or a truncate of it ended:
 * if no writer is left, i is empty and the rule refuses that, i is removed
 * by its name, when that is still i (the next git reads no such file, as
 * before the write), and the removal logged. Each writer's end counts
 * itself out before it looks, so the last one to end sees none left.
 */
void seal_checked_release(struct fs_mount *m, struct inode *i)
{
	const char *why = NULL;
	struct stat st;
	struct inode *p;
	bool gone = false;
	unsigned rule;
	char *name;
	int pfd;

	/* the last writer's close decides: another handle may still write it */
	pthread_mutex_lock(&m->fs->lock);
	rule = (i->gcls.flags & GUARD_CHK) && i->gcls.kind != GUARD_BOTREPO ? i->gcls.rule : 0;
	if (writers(m->fs, i->dev, i->ino) > 0 || rule != GUARD_RULE_X4)
		rule = 0;
	pthread_mutex_unlock(&m->fs->lock);
	if (rule == 0 || (p = inode_pin_parent(m, i, &name)) == NULL)
		return;
	pfd = inode_fd_get(m, p);
	/* under chk_lock: no checked write of it can run between the look and the unlink */
	pthread_mutex_lock(&m->fs->chk_lock);
	if (pfd >= 0 && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0 && (uint64_t)st.st_dev == i->dev && (uint64_t)st.st_ino == i->ino &&
	    guard_content_check(rule, name, "", 0, 20, &why) != 0) {
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		gone = unlinkat(pfd, name, 0) == 0;
		pthread_rwlock_unlock(&m->fs->ns_lock);
	}
	pthread_mutex_unlock(&m->fs->chk_lock);
	if (gone) {
		char msg[256];

		snprintf(msg, sizeof msg, "%s: left empty at its close, removed", why);
		refuse(m, "write", p, name, rule, msg);
		policy_notify(m, GUARD_OP_UNLINK, p, pfd, name, NULL);
		fs_invalidate_entry(m, p, name);
	}
	if (pfd >= 0)
		inode_fd_put(m, p);
	inode_unpin(m, p);
	free(name);
}
