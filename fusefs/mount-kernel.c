/* SPDX-License-Identifier: MIT */
/*
 * The kernel's side of a mount: made with the new mount API onto an fd of
 * the mount point (mount(2) where that API is missing), found again by its
 * mount id in /proc/self/mountinfo, made read-only or writable, detached.
 * libfuse never runs fusermount and never unmounts; we do.
 */
#include "fusefs/fs-int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Unescape a mountinfo field (\040 for space and so on) in place. */
static void unescape(char *s)
{
	char *o = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/*
 * Call fn for each line of /proc/self/mountinfo with the mount id, mount
 * point, fstype and source; stops when fn returns nonzero and returns that.
 */
int mountinfo_each_source(int (*fn)(void *arg, uint64_t id, const char *mp, const char *fstype,
				    const char *source),
			  void *arg)
{
	char *line = NULL, *f[12], *save;
	size_t cap = 0;
	FILE *mi;
	int i, r = 0;

	mi = fopen("/proc/self/mountinfo", "re");
	if (mi == NULL)
		return -errno;
	while (r == 0 && getline(&line, &cap, mi) > 0) {
		/* id parent maj:min root mountpoint opts [optional...] - fstype source */
		save = NULL;
		for (i = 0; i < 12; i++)
			f[i] = strtok_r(i == 0 ? line : NULL, " \n", &save);
		if (f[4] == NULL)
			continue;
		for (i = 6; i < 11 && f[i] != NULL && strcmp(f[i], "-") != 0; i++)
			;
		if (i >= 11 || f[i] == NULL || f[i + 1] == NULL)
			continue;
		unescape(f[4]);
		if (f[i + 2] != NULL)
			unescape(f[i + 2]);
		r = fn(arg, strtoull(f[0], NULL, 10), f[4], f[i + 1], f[i + 2] != NULL ? f[i + 2] : "");
	}
	free(line);
	fclose(mi);
	return r;
}

struct each_plain {
	int (*fn)(void *arg, uint64_t id, const char *mp, const char *fstype);
	void *arg;
};

static int plain_line(void *arg, uint64_t id, const char *mp, const char *fstype,
		      const char *source)
{
	struct each_plain *e = arg;

	(void)source;
	return e->fn(e->arg, id, mp, fstype);
}

/* mountinfo_each_source without the source */
int fs_mountinfo_each(int (*fn)(void *arg, uint64_t id, const char *mp, const char *fstype),
		      void *arg)
{
	struct each_plain e = {fn, arg};

	return mountinfo_each_source(plain_line, &e);
}

struct find_path {
	uint64_t id;
	char *path;
	size_t len;
};

static int match_id(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct find_path *fp = arg;

	if (id != fp->id || strlen(mp) >= fp->len)
		return 0;
	strcpy(fp->path, mp);
	return 1;
}

/*
 * Where mount id is: from /proc/self/mountinfo, or, when that cannot be
 * read (out of descriptors: EMFILE), at EXPECT (NULL: nowhere) if the
 * mount whose root is there is that one. Read as "not mounted", an EMFILE
 * left a mount a failed takeover or create should have ended in place,
 * dead, at the bot's mount point. statx of a path opens nothing, and
 * AT_STATX_DONT_SYNC asks the server nothing (there may be none: a mount
 * handed over is served by no one yet). 0; -ENOENT: not mounted; -errno.
 */
int mountinfo_path_of(uint64_t id, const char *expect, char *path, size_t len)
{
	struct find_path fp = {id, path, len};
	struct statx stx;
	int r = fs_mountinfo_each(match_id, &fp);

	if (r == 1)
		return 0;
	if (r == 0)
		return -ENOENT;
	if (expect == NULL || strlen(expect) >= len ||
	    statx(AT_FDCWD, expect, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
		  STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != id ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return r;
	strcpy(path, expect);
	return 0;
}

static int fsconfig_str(int fsfd, const char *key, const char *value)
{
	return fsconfig(fsfd, FSCONFIG_SET_STRING, key, value, 0);
}

/*
 * A FUSE mount's readahead starts at 128 KiB and INIT can only lower it:
 * cold sequential reads then come in 128 KiB requests. Raise it to 1 MiB,
 * the largest request the kernel sends us.
 */
static void set_readahead(unsigned major, unsigned minor)
{
	char path[64];
	int fd;

	snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1024", 4) != 4) {
		/* keep the kernel's default */
	}
	close(fd);
}

/*
 * mount(2) for kernels or sandboxes without the new mount API (valgrind
 * 3.19 has no fsopen): the same options, onto the mount point's fd.
 */
static int mount_legacy(struct fs_mount *m, int mpfd, const struct mount_opts *o,
			struct fs_error *err)
{
	char opts[256], target[64];
	unsigned long flags;
	struct statx stx;
	int fd, e;

	snprintf(opts, sizeof opts,
		 "fd=%d,rootmode=%o,user_id=%u,group_id=%u,allow_other,default_permissions",
		 m->fuse_fd, (unsigned)S_IFDIR, (unsigned)getuid(), (unsigned)getgid());
	snprintf(target, sizeof target, "/proc/self/fd/%d", mpfd);
	flags = mount_ms_flags(m->kattrs);
	if (mount(o->fsname, target, "fuse.agentfs", flags, opts) != 0) {
		e = errno;
		fs_seterr(err, e, "cannot mount %s: mount: %s%s", m->mountpoint, strerror(e),
			  e == EPERM ? " (agentfs mount needs root)" : "");
		return -e;
	}
	/* The mount root is known to the kernel: no request is sent for it. */
	fd = openat(AT_FDCWD, m->mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		mount_learn(m, fd);
		if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) == 0)
			set_readahead(stx.stx_dev_major, stx.stx_dev_minor);
		close(fd);
	}
	return 0;
}

/*
 * fsopen("fuse") + fsconfig + fsmount + move_mount onto the mount point's
 * fd. allow_other and default_permissions are always set: the kernel then
 * checks every access with the caller's own credentials, while the server
 * runs as root.
 */
int mount_make(struct fs_mount *m, int mpfd, const struct mount_opts *o, struct fs_error *err)
{
	char num[32];
	int fsfd, mfd, e;
	const char *step;
	struct statx stx;

	m->fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (m->fuse_fd < 0) {
		e = errno;
		fs_seterr(err, e, "cannot open /dev/fuse: %s%s", strerror(e),
			  e == ENOENT ? " (load the fuse module or install fuse3)" : "");
		return -e;
	}
	step = "fsopen";
	fsfd = fsopen("fuse", FSOPEN_CLOEXEC);
	if (fsfd < 0 && errno == ENOSYS)
		return mount_legacy(m, mpfd, o, err);
	if (fsfd < 0)
		goto fail;
	step = "fsconfig";
	snprintf(num, sizeof num, "%d", m->fuse_fd);
	if (fsconfig_str(fsfd, "fd", num) != 0)
		goto fail;
	snprintf(num, sizeof num, "%o", (unsigned)S_IFDIR);
	if (fsconfig_str(fsfd, "rootmode", num) != 0)
		goto fail;
	snprintf(num, sizeof num, "%u", (unsigned)getuid());
	if (fsconfig_str(fsfd, "user_id", num) != 0)
		goto fail;
	snprintf(num, sizeof num, "%u", (unsigned)getgid());
	if (fsconfig_str(fsfd, "group_id", num) != 0)
		goto fail;
	if (fsconfig(fsfd, FSCONFIG_SET_FLAG, "allow_other", NULL, 0) != 0 ||
	    fsconfig(fsfd, FSCONFIG_SET_FLAG, "default_permissions", NULL, 0) != 0)
		goto fail;
	if (fsconfig_str(fsfd, "subtype", "agentfs") != 0)
		goto fail;
	if (fsconfig_str(fsfd, "source", o->fsname) != 0)
		goto fail;
	step = "creating the superblock";
	if (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		goto fail;
	step = "fsmount";
	mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, m->kattrs);
	if (mfd < 0)
		goto fail;
	close(fsfd);
	fsfd = -1;
	step = "move_mount";
	if (move_mount(mfd, "", mpfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
		e = errno;
		close(mfd);
		errno = e;
		goto fail;
	}
	mount_learn(m, mfd);
	if (statx(mfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) == 0)
		set_readahead(stx.stx_dev_major, stx.stx_dev_minor);
	close(mfd);
	return 0;
fail:
	e = errno;
	if (fsfd >= 0)
		close(fsfd);
	fs_seterr(err, e, "cannot mount %s: %s: %s%s", m->mountpoint, step, strerror(e),
		  e == EPERM ? " (agentfs mount needs root)" : "");
	return -e;
}

/*
 * Which mount is ours. mountinfo names a mount by a 32-bit id that the
 * kernel gives again, lowest first, as soon as the mount is gone: once ours
 * is unmounted (by a person, or while a copy in another namespace keeps its
 * connection) the mount at our old id may be anyone's, and detaching or
 * remounting it by that id alone would act on it. So our mount is also
 * known by its superblock's device, which no other superblock has while
 * ours lives, and on Linux 6.8 and later by its 64-bit id, never reused.
 * Learnt from an fd of our mount's root, just made or checked by path.
 */
void mount_learn(struct fs_mount *m, int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return;
	m->mnt_id = stx.stx_mnt_id;
	m->kdev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID_UNIQUE, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID_UNIQUE))
		m->mnt_uid = stx.stx_mnt_id;
}

/* What names m's mount for good (mount_learn), for a process without m (the watcher) */
void fs_mount_ident(const struct fs_mount *m, struct fs_mount_ident *out)
{
	out->id = m->mnt_id;
	out->uid = m->mnt_uid;
	out->dev = m->kdev;
}

/* Is (dirfd, path) the root of the mount named by ident? flags: AT_EMPTY_PATH or a path's */
static bool ident_is(const struct fs_mount_ident *ident, int dirfd, const char *path, int flags)
{
	struct statx stx;

	flags |= AT_STATX_DONT_SYNC;
	if (ident->id == 0 || statx(dirfd, path, flags, STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != ident->id ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return false;
	if (ident->dev != 0 && makedev(stx.stx_dev_major, stx.stx_dev_minor) != ident->dev)
		return false;
	return ident->uid == 0 ||
	       (statx(dirfd, path, flags, STATX_MNT_ID_UNIQUE, &stx) == 0 &&
		(stx.stx_mask & STATX_MNT_ID_UNIQUE) && stx.stx_mnt_id == ident->uid);
}

/* Is fd the root of the mount named by ident? */
bool fs_mount_ident_at(const struct fs_mount_ident *ident, int fd)
{
	return ident_is(ident, fd, "", AT_EMPTY_PATH);
}

/* Is fd the root of our mount (mount_learn)? */
bool mount_fd_ours(const struct fs_mount *m, int fd)
{
	struct fs_mount_ident ident;

	fs_mount_ident(m, &ident);
	return fs_mount_ident_at(&ident, fd);
}

/*
 * End the FUSE connection of the mount whose root is fd, then detach that
 * mount, through the fd: no path is looked up again between the check and
 * the act. While the fd store holds the connection's descriptors too,
 * closing ours does not end it; MNT_FORCE does: for FUSE it aborts the
 * connection (fuse_umount_begin) before the umount itself, which fails with
 * EBUSY (we hold the mount open), and that is fine. 0 or -errno.
 */
static int detach_fd(struct fs *fs, int fd, const char *path, bool abort)
{
	char self[64];

	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	if (abort && umount2(self, MNT_FORCE) != 0 && errno != EBUSY)
		fs_log(fs, FS_LOG_WARN, "%s: cannot abort its connection: %s", path,
		       strerror(errno));
	if (umount2(self, MNT_DETACH) == 0 || errno == EINVAL)
		return 0;
	return -errno;
}

/*
 * detach_fd without a descriptor, for a process that has none left
 * (EMFILE, ENFILE): left mounted, a dead mount would stay in the bot's way
 * until the next start. The same check, by path (a link is not followed),
 * then the same umounts by that path. Between the check and the umount
 * another mount could only be put there by whoever may mount on that path:
 * root, or its owner with fusermount, over their own folder.
 */
static int detach_path(struct fs *fs, const struct fs_mount_ident *ident, const char *path,
		       bool abort)
{
	if (!ident_is(ident, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT))
		return 0;
	fs_log(fs, FS_LOG_WARN, "%s: out of descriptors: detaching it by its path", path);
	if (abort && umount2(path, MNT_FORCE | UMOUNT_NOFOLLOW) != 0 && errno != EBUSY)
		fs_log(fs, FS_LOG_WARN, "%s: cannot abort its connection: %s", path,
		       strerror(errno));
	if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 || errno == EINVAL)
		return 0;
	return -errno;
}

/*
 * A mount handed over that no server takes (restore.c): its connection
 * ends, and it is detached, found by its mount id at the path it was
 * handed over with (at any other, the id is another mount's now).
 */
void mount_end(struct fs *fs, uint64_t mnt_id, const char *expect)
{
	char path[PATH_MAX];
	struct statx stx;
	int r, fd;

	if (mnt_id == 0 || (r = mountinfo_path_of(mnt_id, expect, path, sizeof path)) == -ENOENT)
		return;
	if (r != 0) {
		fs_log(fs, FS_LOG_WARN, "%s: cannot end it: the mount table: %s", expect,
		       strerror(-r));
		return;
	}
	if (strcmp(path, expect) != 0)
		return;
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) &&
	    (r = detach_path(fs, &(struct fs_mount_ident){.id = mnt_id}, path, true)) != 0)
		fs_log(fs, FS_LOG_WARN, "%s: cannot detach it: %s", path, strerror(-r));
	if (fd < 0)
		return;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id == mnt_id &&
	    (r = detach_fd(fs, fd, path, true)) != 0)
		fs_log(fs, FS_LOG_WARN, "%s: cannot detach it: %s", path, strerror(-r));
	close(fd);
}

/*
 * Detach our mount, found by its mount id: whatever path it has now, the
 * right one ends; a mount that only took over our id after ours went is
 * left alone (mount_fd_ours). We keep no fd on the mount, since any would
 * make umount(8) EBUSY.
 */
int mount_detach(struct fs_mount *m)
{
	struct fs_mount_ident ident;
	char path[PATH_MAX];
	bool kept;
	int r, fd;

	if (m->mnt_id == 0 ||
	    (r = mountinfo_path_of(m->mnt_id, m->mountpoint, path, sizeof path)) == -ENOENT)
		return 0; /* not mounted (any more) */
	if (r != 0) {
		fs_log(m->fs, FS_LOG_WARN, "%s: cannot detach it: the mount table: %s",
		       m->mountpoint, strerror(-r));
		return r;
	}
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno != EMFILE && errno != ENFILE)
		return errno == ENOENT ? 0 : -errno;
	if (fd >= 0 && !mount_fd_ours(m, fd)) {
		close(fd);
		return 0; /* ours is gone: another mount has its id now */
	}
	/* kept is fs->lock's: the reader sets it when FUSE_INIT is answered (keep.c) */
	pthread_mutex_lock(&m->fs->lock);
	kept = m->kept;
	pthread_mutex_unlock(&m->fs->lock);
	if (fd < 0) {
		fs_mount_ident(m, &ident);
		return detach_path(m->fs, &ident, path, kept);
	}
	r = detach_fd(m->fs, fd, path, kept);
	close(fd);
	return r;
}

/*
 * Make the kernel mount read-only or writable, as configure changes it, so
 * the mount table says what holds. The same mount is changed in place
 * (mount_setattr on an fd of its root, checked by mount id), never
 * remounted; binds of it made before keep the flag they had.
 */
int mount_set_kernel_ro(struct fs_mount *m, bool readonly)
{
	struct mount_attr attr = {0};
	char path[PATH_MAX];
	int fd, r = 0;

	if (m->mnt_id == 0)
		return -ENOENT;
	if ((r = mountinfo_path_of(m->mnt_id, m->mountpoint, path, sizeof path)) != 0)
		return r;
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!mount_fd_ours(m, fd)) {
		close(fd);
		return -ESTALE;
	}
	if (readonly)
		attr.attr_set = MOUNT_ATTR_RDONLY;
	else
		attr.attr_clr = MOUNT_ATTR_RDONLY;
	if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
		r = -errno;
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		/*
		 * Kernels before 5.12 (and valgrind): a bind remount restates
		 * every flag. Its type is ignored; "none", not NULL, for valgrind.
		 */
		if (r == -ENOSYS &&
		    mount("none", path, "", /* ignored by a remount; valgrind wants strings */
			  MS_REMOUNT | MS_BIND |
				  mount_ms_flags((m->kattrs & ~MOUNT_ATTR_RDONLY) |
						 (readonly ? MOUNT_ATTR_RDONLY : 0)),
			  NULL) == 0)
			r = 0;
	}
	close(fd);
	return r;
}
