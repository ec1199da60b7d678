/* SPDX-License-Identifier: MIT */
/*
 * Operations on names: mknod, mkdir, symlink, unlink, rmdir, rename and
 * link. Each one that makes a name holds a decision (decide.c) across its
 * check and its syscall, and every name change holds fs->ns_lock shared
 * (seal.c takes it exclusively for a content-checked rename).
 */
#include "fusefs/fs-int.h"
#include "fusefs/ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A name was made in p: gitguard hears of it first (a bot's new repository
 * is recorded before its .git is classified), then the other mounts, then
 * it is looked up for the reply.
 */
int fsop_made(struct fs_mount *m, enum guard_op op, struct inode *p, int pfd, const char *name,
	      struct fuse_entry_param *e)
{
	policy_notify(m, op, p, pfd, name, NULL);
	policy_changed(m, FS_EV_CREATED, p, name, NULL, NULL, op == GUARD_OP_MKDIR);
	fs_invalidate(m, NULL, p, name);
	return inode_lookup_made(m, p, name, e);
}

/* mknod, mkdir and symlink: made as the caller, then looked up. */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
		       const char *link)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent);
	enum guard_op op = link != NULL	   ? GUARD_OP_SYMLINK
			   : S_ISDIR(mode) ? GUARD_OP_MKDIR
					   : GUARD_OP_CREATE;
	struct fuse_entry_param e;
	struct decide_hold h;
	int64_t was = 0;
	unsigned rule;
	int pfd, r, again = journal_seen(m, &was);

	pfd = inode_fd_get(m, p);
	if (pfd < 0) {
		r = pfd;
		goto out;
	}
	decide_enter(m, &h, p, NULL, false, 0);
	r = policy_check(m, &PREQ_NAME(req, op, NULL, mode & S_IFMT, p, pfd, name, link));
	/* an empty file that stays so: its content is checked now (seal.c) */
	if (r == 0 && S_ISREG(mode) && (rule = policy_content_rule(m, p, name)) != 0)
		r = seal_made_empty(m, p, name, rule);
	if (r == 0 && link == NULL && fsop_raises_privilege(mode, mode, 0))
		r = -EPERM;
	if (r == 0)
		r = fs_as_caller(req, true);
	if (r == 0 && again > 0) {
		r = (int)was; /* made before a restart, not answered: its answer (journal.c) */
		fs_as_root(m->fs);
	} else if (r == 0) {
		journal_begin(m);
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		if (link != NULL)
			r = symlinkat(link, pfd, name);
		else if (S_ISDIR(mode))
			r = mkdirat(pfd, name, mode);
		else
			r = mknodat(pfd, name, mode, rdev);
		if (r != 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
		r = (int)journal_end(m, r, again, EEXIST);
		fs_as_root(m->fs);
	}
	if (r == 0)
		r = fsop_made(m, op, p, pfd, name, &e);
	decide_leave(&h);
	inode_fd_put(m, p);
out:
	fsop_reply_entry(req, r, &e);
}

void fsop_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, mode, rdev, NULL);
}

void fsop_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_entry(req, parent, name, S_IFDIR | mode, 0, NULL);
}

void fsop_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_entry(req, parent, name, S_IFLNK, 0, link);
}

/*
 * The entry `name` in the folder p (open as pfd), classified now, as a
 * stand-in inode for policy_check(). *real is the table's inode, if any.
 * Protection follows the inode: a stand-in never protects less than it.
 */
static int child_of(struct fs_mount *m, struct inode *p, int pfd, const char *name,
		    struct inode *out, struct inode **real)
{
	struct inode_birth b;
	struct guard_cls pgc;
	struct stat st;
	struct inode *i;
	int r;

	memset(out, 0, sizeof *out);
	out->standin = true;
	out->fd = -1; /* a stand-in has no cached fd */
	*real = NULL;
	if ((r = inode_stat_birth(pfd, name, 0, &st, &b)) != 0)
		return r;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	out->type = st.st_mode & S_IFMT;
	out->nlink = st.st_nlink;
	out->parent = p;
	out->name = (char *)name;
	if (m->guard != NULL) {
		policy_refresh(m, p);
		pthread_mutex_lock(&m->fs->lock);
		pgc = p->gcls;
		pthread_mutex_unlock(&m->fs->lock);
		r = guard_classify(m->guard, &pgc, pfd, name, &st, -1, &out->gcls);
		if (r != 0)
			return r;
	}
	pthread_mutex_lock(&m->fs->lock);
	out->cls = policy_classify(m, p, &st);
	/* not an entry of a gone file whose number this one got: it would lend its class */
	i = inode_find_file(m, &st, &b);
	if (i != NULL) {
		out->cls |= i->cls;
		if (guard_cls_protected(&i->gcls) && !guard_cls_protected(&out->gcls))
			out->gcls = i->gcls;
		*real = i;
	}
	pthread_mutex_unlock(&m->fs->lock);
	return 0;
}

/*
 * The start of an unlink, rmdir, rename or exchange in P. AGAIN > 0: it was
 * done before a restart and not answered, and WAS is its answer; done again
 * it could remove or move a file made under the name since (journal.c).
 * P's fd, or -1 once the request is answered.
 */
static int removal_start(fuse_req_t req, struct fs_mount *m, struct inode *p, int again,
			 int64_t was)
{
	int pfd;

	if (again > 0) {
		fuse_reply_err(req, (int)-was);
		return -1;
	}
	pfd = inode_fd_get(m, p);
	if (pfd < 0) {
		fuse_reply_err(req, -pfd);
		return -1;
	}
	return pfd;
}

/*
 * Whether the folder NAME in PFD holds anything: its rmdir can only fail
 * (ENOTEMPTY), and is answered so without a decision. git tries to remove
 * every folder above a file it removed (remove_path: .git after
 * .git/MERGE_RR), and rm -r a protected tree's folders after their files
 * were refused: judged, each was a refusal in the log that changed nothing.
 * Nothing is removed on this answer, so no race with a change can matter.
 */
static bool dir_has_entries(int pfd, const char *name)
{
	struct dirent *de;
	bool found = false;
	DIR *d;
	int fd;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return false;
	}
	while (!found && (de = readdir(d)) != NULL)
		found = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return found;
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent), child, *real;
	enum guard_op op = flags ? GUARD_OP_RMDIR : GUARD_OP_UNLINK;
	int64_t was = 0;
	int pfd, r, again = journal_seen(m, &was);

	if ((pfd = removal_start(req, m, p, again, was)) < 0)
		return;
	r = child_of(m, p, pfd, name, &child, &real);
	if (r == -ENOENT && again < 0 && (child.ino = journal_aux(m)) != 0) {
		/* killed after it removed the name, before it noted so: done */
		child.dev = p->dev;
		r = 0;
		goto done;
	}
	if (r == 0 && flags != 0 && m->guard != NULL && guard_cls_protected(&child.gcls) &&
	    dir_has_entries(pfd, name))
		r = -ENOTEMPTY;
	else if (r == 0)
		r = policy_check(m, &PREQ_NAME(req, op, &child, child.type, p, pfd, name, NULL));
	if (r == 0 && real != NULL && child.nlink > 1)
		inode_keep_open(m, real); /* it keeps another name: see inode_keep_open() */
	if (r == 0) {
		journal_begin(m);
		journal_note(m, child.ino);
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		if (unlinkat(pfd, name, flags) != 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
		r = (int)journal_end(m, r, again, ENOENT);
	}
done:
	if (r == 0) {
		policy_notify(m, op, p, pfd, name, NULL);
		policy_changed(m, FS_EV_DELETED, p, name, NULL, NULL, flags != 0);
		if (guard_lock_name(name))
			gitlock_gone(child.dev, child.ino);
	}
	inode_fd_put(m, p);
	if (r == 0)
		fs_invalidate(m, &child, p, name);
	fuse_reply_err(req, -r);
}

void fsop_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

void fsop_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

static int open_dir_fd(int pfd, const char *name, mode_t type)
{
	if (!S_ISDIR(type))
		return -1;
	return openat(pfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
}

/* Is name in pfd a folder now? (A wrong guess is caught: child_of() re-reads it.) */
static bool is_dir_at(int pfd, const char *name)
{
	struct stat st;

	return fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode);
}

/*
 * A rename the kernel sends again, which the last server started and may
 * have done before it was killed (journal.c): done if newname holds the
 * inode it noted it was moving and name no longer does (for an exchange:
 * the other one). Done again, it would fail with ENOENT, or exchange back.
 */
static bool rename_was_done(struct fs_mount *m, struct inode *np, int pfd, const char *name,
			    int npfd, const char *newname)
{
	uint64_t moved = journal_aux(m);
	struct stat st;

	if (moved == 0 || fstatat(npfd, newname, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    st.st_ino != moved || st.st_dev != np->dev)
		return false;
	return fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != moved;
}

void fsop_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		 const char *newname, unsigned int flags)
{
	struct fs_mount *m = req_mount(req);
	struct inode *p = ino_of(m, parent), *np = ino_of(m, newparent);
	struct inode src, dst, *rsrc, *rdst = NULL;
	enum guard_op op = (flags & RENAME_EXCHANGE) ? GUARD_OP_EXCHANGE : GUARD_OP_RENAME;
	int pfd = -1, npfd = -1, sfd = -1, vfd = -1, r;
	struct decide_hold h = {0};
	unsigned rule;
	bool have_dst;
	int64_t was = 0;
	int again = journal_seen(m, &was);

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((pfd = removal_start(req, m, p, again, was)) < 0)
		return;
	npfd = inode_fd_get(m, np);
	if (npfd < 0) {
		r = npfd;
		goto out;
	}
	/* a folder moved with its contents, or an exchange: the guard walks them */
	decide_enter(m, &h, p, np, op == GUARD_OP_EXCHANGE || is_dir_at(pfd, name),
		     fuse_req_ctx(req)->uid);
	if (again < 0 && rename_was_done(m, np, pfd, name, npfd, newname)) {
		/* what the rename did is done here as if it had just been made */
		r = child_of(m, np, npfd, newname, &src, &rsrc);
		have_dst = op == GUARD_OP_EXCHANGE && child_of(m, p, pfd, name, &dst, &rdst) == 0;
		if (r == 0 && op == GUARD_OP_RENAME && policy_content_rule(m, np, newname) != 0)
			seal_renamed(m->fs, src.dev, src.ino);
		goto done;
	}
	r = child_of(m, p, pfd, name, &src, &rsrc);
	if (r != 0)
		goto out;
	have_dst = child_of(m, np, npfd, newname, &dst, &rdst) == 0;
	if (m->guard != NULL) {
		sfd = open_dir_fd(pfd, name, src.type);
		if (have_dst && op == GUARD_OP_EXCHANGE)
			vfd = open_dir_fd(npfd, newname, dst.type);
		/* A folder that vanished meanwhile (-1): the rename below says so. */
	}
	r = policy_check(m, &(struct preq){.req = req,
					   .ino = &src,
					   .src_parent = p,
					   .parent = np,
					   .victim = have_dst ? &dst : NULL,
					   .g = {.op = op,
						 .mode = src.type,
						 .fd = sfd,
						 .src_parent_fd = pfd,
						 .src_name = name,
						 .parent_fd = npfd,
						 .name = newname,
						 .victim_fd = vfd,
						 .victim_mode = have_dst ? dst.type : 0}});
	/* onto an index or a strategy file: its content is checked first (seal.c) */
	rule = r == 0 && op == GUARD_OP_RENAME ? policy_content_rule(m, np, newname) : 0;
	if (r == 0 && rule != 0) {
		journal_begin(m);
		journal_note(m, src.ino);
		r = seal_rename(m, pfd, name, np, npfd, newname, flags, rule);
		r = (int)journal_end(m, r, again, 0);
	} else if (r == 0) {
		if (rdst != NULL && dst.nlink > 1 && op == GUARD_OP_RENAME)
			inode_keep_open(m, rdst); /* the name it goes by is replaced */
		journal_begin(m);
		journal_note(m, src.ino);
		pthread_rwlock_rdlock(&m->fs->ns_lock);
		if (renameat2(pfd, name, npfd, newname, flags) != 0)
			r = -errno;
		pthread_rwlock_unlock(&m->fs->ns_lock);
		r = (int)journal_end(m, r, again, 0);
	}
done:
	if (r == 0) {
		if (guard_lock_name(name))
			gitlock_gone(src.dev, src.ino);
		/* a lock replaced by the rename is gone too: its inode may be reused */
		if (have_dst && op == GUARD_OP_RENAME)
			gitlock_gone(dst.dev, dst.ino);
		policy_notify(m, op, np, npfd, newname, NULL);
		if (op == GUARD_OP_EXCHANGE)
			policy_notify(m, op, p, pfd, name, NULL);
		if (op == GUARD_OP_EXCHANGE) {
			/* both names stay, each with the other's content */
			policy_changed(m, FS_EV_MODIFIED, p, name, NULL, NULL, S_ISDIR(src.type));
			policy_changed(m, FS_EV_MODIFIED, np, newname, NULL, NULL,
				       S_ISDIR(dst.type));
		} else {
			policy_rename_changed(m, p, name, np, newname, S_ISDIR(src.type), have_dst);
		}
		if (rsrc != NULL) {
			inode_moved(m, rsrc, np, newname);
			policy_renamed(m, rsrc);
		}
		if (op == GUARD_OP_EXCHANGE && rdst != NULL) {
			inode_moved(m, rdst, p, name);
			policy_renamed(m, rdst);
		}
		fs_invalidate(m, NULL, p, name);
		fs_invalidate(m, NULL, np, newname);
	}
out:
	decide_leave(&h);
	if (sfd >= 0)
		close(sfd);
	if (vfd >= 0)
		close(vfd);
	if (npfd >= 0)
		inode_fd_put(m, np);
	inode_fd_put(m, p);
	fuse_reply_err(req, -r);
}

void fsop_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fs_mount *m = req_mount(req);
	struct inode *i = ino_of(m, ino), *np = ino_of(m, newparent);
	struct fuse_entry_param e;
	int64_t was = 0;
	int fd, npfd, r, again = journal_seen(m, &was);

	fd = inode_fd_get(m, i);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	npfd = inode_fd_get(m, np);
	if (npfd < 0) {
		r = npfd;
	} else {
		struct decide_hold h;

		decide_enter(m, &h, np, NULL, false, 0);
		r = policy_check(m, &PREQ_NAME(req, GUARD_OP_LINK, i, i->type, np, npfd, newname,
					       NULL));
		if (r == 0 && again > 0) {
			r = (int)was; /* linked before a restart: its answer (journal.c) */
		} else if (r == 0) {
			journal_begin(m);
			pthread_rwlock_rdlock(&m->fs->ns_lock);
			if (linkat(fd, "", npfd, newname, AT_EMPTY_PATH) != 0)
				r = -errno;
			pthread_rwlock_unlock(&m->fs->ns_lock);
			r = (int)journal_end(m, r, again, EEXIST);
		}
		if (r == 0) {
			policy_notify(m, GUARD_OP_LINK, np, npfd, newname, NULL);
			policy_changed(m, FS_EV_CREATED, np, newname, NULL, NULL, false);
		}
		decide_leave(&h);
		inode_fd_put(m, np);
	}
	inode_fd_put(m, i);
	if (r == 0) {
		fs_invalidate(m, i, np, newname);
		r = inode_lookup(m, np, newname, &e);
	}
out:
	fsop_reply_entry(req, r, &e);
}
