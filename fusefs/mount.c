/* SPDX-License-Identifier: MIT */
/*
 * Making and ending mounts. The kernel mount is made with the new mount API
 * onto an fd of the mount point, and libfuse is handed "/dev/fd/N": libfuse
 * never runs fusermount and never unmounts; we do.
 */
#include "fusefs/fs-int.h"
#include "gitguard/ggutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/syscall.h>

void fs_seterr(struct fs_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

/* Kept for src's callers (bots.c, cmd-audit.c) until they call gg_open_nofollow. */
int fs_open_nofollow(int dirfd, const char *path, int flags, bool beneath)
{
	return gg_open_nofollow(dirfd, path, flags, beneath);
}

/* Open a folder by path without following any symlink on the way. */
int mount_open_dir(const char *path, struct fs_error *err, const char *what)
{
	int fd, e;

	fd = gg_open_nofollow(AT_FDCWD, path, O_PATH | O_DIRECTORY, false);
	if (fd >= 0)
		return fd;
	e = errno;
	switch (e) {
	case ENOENT:
		fs_seterr(err, e, "%s %s: no such folder", what, path);
		break;
	case ENOTDIR:
		fs_seterr(err, e, "%s %s: not a folder", what, path);
		break;
	case ELOOP:
		fs_seterr(err, e,
			  "%s %s: a component is a symbolic link (agentfs never follows links; "
			  "give the real path)",
			  what, path);
		break;
	case ENOTCONN:
		fs_seterr(err, e,
			  "%s %s: transport endpoint is not connected (a stale mount: "
			  "run agentfs umount %s)",
			  what, path, path);
		break;
	default:
		fs_seterr(err, e, "%s %s: %s", what, path, strerror(e));
	}
	return -e;
}

static int is_mount_root(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, 0, &stx) != 0)
		return -errno;
	if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return -ENOTSUP;
	return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

/* Refuse a mount point that is already a mount: mounting over it stacks silently. */
int fs_check_mountpoint(const char *path, struct fs_error *err)
{
	int fd, r;

	fd = mount_open_dir(path, err, "mount point");
	if (fd < 0)
		return fd;
	r = is_mount_root(fd);
	close(fd);
	if (r > 0) {
		fs_seterr(err, EBUSY, "mount point %s: already a mount point", path);
		return -EBUSY;
	}
	return 0;
}

/* Is `inner` strictly beneath `outer`? Walks up with "..", never by name. */
static bool fd_beneath(int inner, int outer)
{
	struct stat so, si, prev;
	int fd, up, depth;

	if (fstat(outer, &so) != 0 || fstat(inner, &si) != 0)
		return false;
	if (si.st_dev == so.st_dev && si.st_ino == so.st_ino)
		return false;
	fd = dup(inner);
	for (depth = 0; fd >= 0 && depth < PATH_MAX / 2; depth++) {
		prev = si;
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
		if (fd < 0 || fstat(fd, &si) != 0)
			break;
		if (si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
			close(fd);
			return true;
		}
		if (si.st_dev == prev.st_dev && si.st_ino == prev.st_ino)
			break; /* reached / */
	}
	if (fd >= 0)
		close(fd);
	return false;
}

/*
 * A mount hides what its mount point holds: refuse a folder with entries
 * unless -o nonempty, but not the source itself (a guarded view over it).
 */
static int check_empty(int mpfd, int rootfd, const char *mountpoint, struct fs_error *err)
{
	struct stat sm, sr;
	struct dirent *de;
	DIR *d;
	int fd, n = 0;

	if (fstat(mpfd, &sm) == 0 && fstat(rootfd, &sr) == 0 && sm.st_dev == sr.st_dev &&
	    sm.st_ino == sr.st_ino)
		return 0;
	fd = openat(mpfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		n = errno;
		if (fd >= 0)
			close(fd);
		fs_seterr(err, n, "mount point %s: %s", mountpoint, strerror(n));
		return -n;
	}
	while ((de = readdir(d)) != NULL && n == 0)
		n = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	if (n == 0)
		return 0;
	fs_seterr(err, ENOTEMPTY,
		  "mount point %s is not empty: the mount would hide what it holds "
		  "(-o nonempty mounts over it anyway)",
		  mountpoint);
	return -ENOTEMPTY;
}

struct mount_opts {
	bool suid, dev, debug, readonly, noguard, nopassthrough;
	bool noexec, noatime, nodiratime, nonempty;
	double timeout;
	int poll_us;
	char fsname[PATH_MAX];
};

/* The kernel mount's flags (as mount_setattr's MOUNT_ATTR_*) for options o. */
static unsigned mount_attrs(const struct mount_opts *o, bool readonly)
{
	return (o->suid ? 0 : MOUNT_ATTR_NOSUID) | (o->dev ? 0 : MOUNT_ATTR_NODEV) |
	       (o->noexec ? MOUNT_ATTR_NOEXEC : 0) | (readonly ? MOUNT_ATTR_RDONLY : 0) |
	       (o->noatime ? MOUNT_ATTR_NOATIME : MOUNT_ATTR_RELATIME) |
	       (o->nodiratime ? MOUNT_ATTR_NODIRATIME : 0);
}

/* The same flags for mount(2). */
static unsigned long mount_ms_flags(unsigned attrs)
{
	return (attrs & MOUNT_ATTR_NOSUID ? MS_NOSUID : 0) |
	       (attrs & MOUNT_ATTR_NODEV ? MS_NODEV : 0) |
	       (attrs & MOUNT_ATTR_NOEXEC ? MS_NOEXEC : 0) |
	       (attrs & MOUNT_ATTR_RDONLY ? MS_RDONLY : 0) |
	       ((attrs & MOUNT_ATTR__ATIME) == MOUNT_ATTR_NOATIME ? MS_NOATIME : MS_RELATIME) |
	       (attrs & MOUNT_ATTR_NODIRATIME ? MS_NODIRATIME : 0);
}

static int parse_options(const char *s, struct mount_opts *o, struct fs_error *err)
{
	char *copy, *tok, *save = NULL, *end;
	int res = 0;

	if (s == NULL || *s == '\0')
		return 0;
	copy = strdup(s);
	if (copy == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "suid") == 0)
			o->suid = true;
		else if (strcmp(tok, "nosuid") == 0)
			o->suid = false;
		else if (strcmp(tok, "dev") == 0)
			o->dev = true;
		else if (strcmp(tok, "nodev") == 0)
			o->dev = false;
		else if (strcmp(tok, "exec") == 0)
			o->noexec = false;
		else if (strcmp(tok, "noexec") == 0)
			o->noexec = true;
		else if (strcmp(tok, "noatime") == 0)
			o->noatime = true;
		else if (strcmp(tok, "relatime") == 0)
			o->noatime = false;
		else if (strcmp(tok, "nodiratime") == 0)
			o->nodiratime = true;
		else if (strcmp(tok, "nonempty") == 0)
			o->nonempty = true;
		else if (strcmp(tok, "debug") == 0)
			o->debug = true;
		else if (strcmp(tok, "ro") == 0)
			o->readonly = true;
		else if (strcmp(tok, "noguard") == 0)
			o->noguard = true;
		else if (strcmp(tok, "nopassthrough") == 0)
			o->nopassthrough = true;
		else if (strcmp(tok, "rw") == 0 || strcmp(tok, "allow_other") == 0 ||
			 strcmp(tok, "default_permissions") == 0 ||
			 strcmp(tok, "auto_unmount") == 0)
			; /* always on, the default, or the caller's (auto_unmount) */
		else if (strncmp(tok, "fsname=", 7) == 0 && strlen(tok + 7) < sizeof o->fsname)
			strcpy(o->fsname, tok + 7);
		else if (strncmp(tok, "poll=", 5) == 0) {
			errno = 0;
			long v = strtol(tok + 5, &end, 10);
			if (errno != 0 || *end != '\0' || end == tok + 5 || v < 0 || v > 10000) {
				fs_seterr(err, EINVAL,
					  "bad -o poll=%s: give microseconds, 0 (never) to 10000",
					  tok + 5);
				res = -EINVAL;
				break;
			}
			o->poll_us = v == 0 ? -1 : (int)v;
		} else if (strncmp(tok, "timeout=", 8) == 0) {
			errno = 0;
			o->timeout = strtod(tok + 8, &end);
			if (errno != 0 || *end != '\0' || end == tok + 8 || o->timeout < 0 ||
			    o->timeout > 3600) {
				fs_seterr(err, EINVAL, "bad -o timeout=%s: give seconds, 0 to 3600",
					  tok + 8);
				res = -EINVAL;
				break;
			}
		} else {
			fs_seterr(err, EINVAL, "unknown mount option '%s'", tok);
			res = -EINVAL;
			break;
		}
	}
	free(copy);
	return res;
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
		if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) == 0) {
			if (stx.stx_mask & STATX_MNT_ID)
				m->mnt_id = stx.stx_mnt_id;
			set_readahead(stx.stx_dev_major, stx.stx_dev_minor);
		}
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
static int mount_make(struct fs_mount *m, int mpfd, const struct mount_opts *o,
		      struct fs_error *err)
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
	if (statx(mfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) == 0) {
		if (stx.stx_mask & STATX_MNT_ID)
			m->mnt_id = stx.stx_mnt_id;
		set_readahead(stx.stx_dev_major, stx.stx_dev_minor);
	}
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

static int mountinfo_path_of(uint64_t id, char *path, size_t len);

/*
 * Detach our mount by its mount id: whatever path it has now, the right one
 * ends. We keep no fd on the mount, since any would make umount(8) EBUSY.
 */
int mount_detach(struct fs_mount *m)
{
	char path[PATH_MAX];

	if (m->mnt_id == 0 || mountinfo_path_of(m->mnt_id, path, sizeof path) != 0)
		return 0; /* not mounted (any more) */
	if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 || errno == EINVAL)
		return 0;
	return -errno;
}

static int lexical_abs(const char *path, char *out, size_t len);

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
	struct statx stx;
	int fd, r = 0;

	if (m->mnt_id == 0 || mountinfo_path_of(m->mnt_id, path, sizeof path) != 0)
		return -ENOENT;
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != m->mnt_id) {
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

static void guard_log(void *arg, const char *msg)
{
	struct fs_mount *m = arg;

	fs_log(m->fs, FS_LOG_INFO, "%s: %s", m->mountpoint, msg);
}

/* Every mount gets gitguard, the rule table of DESIGN.md at any depth. */
static int mount_guard(struct fs_mount *m, const struct fs_mount_params *p, struct fs_error *err)
{
	struct guard_opts go = {
		.allow_new_repos = m->allow_new_repos, .log = guard_log, .log_arg = m};
	struct guard_err gerr = {0};
	char abs[PATH_MAX];
	int r;

	if ((r = lexical_abs(m->source, abs, sizeof abs)) != 0) {
		fs_seterr(err, -r, "source %s: %s", m->source, strerror(-r));
		return r;
	}
	go.root_path = abs;
	r = guard_open(m->root.fd, &go, &m->guard, &gerr);
	if (r == 0)
		r = guard_scan_tree_progress(m->guard, 0, p->progress, p->progress_arg, &gerr);
	if (r != 0) {
		fs_seterr(err, -r, "source %s: %s", m->source, gerr.msg);
		return r;
	}
	m->root.ggen = UINT64_MAX;
	policy_refresh(m, &m->root);
	return 0;
}

#define RO_SCAN_MAX 10000000 /* entries looked at under the read-only paths */
#define RO_SCAN_DEPTH 1024   /* folders open at once */

struct ro_scan {
	struct ro_link *v;
	size_t n, alloc;
	unsigned long seen;
	bool cut; /* past the budget or the depth: the rest is not known */
};

static int ro_scan_add(struct ro_scan *sc, const struct stat *st)
{
	if (sc->n == sc->alloc) {
		size_t na = sc->alloc ? sc->alloc * 2 : 64;
		struct ro_link *v = realloc(sc->v, na * sizeof *v);

		if (v == NULL)
			return -ENOMEM;
		sc->v = v;
		sc->alloc = na;
	}
	sc->v[sc->n].dev = st->st_dev;
	sc->v[sc->n++].ino = st->st_ino;
	return 0;
}

/*
 * Every file under the folder fd with other names: read-only follows the
 * inode, so a name elsewhere in the source must not be a way to write it.
 * Iterative, with the depth and the entries bounded. Takes fd.
 */
static int ro_scan_tree(struct ro_scan *sc, int fd)
{
	DIR *stack[RO_SCAN_DEPTH];
	struct dirent *de;
	struct stat st;
	int depth = 0, r = 0, cfd;

	if ((stack[0] = fdopendir(fd)) == NULL) {
		r = -errno;
		close(fd);
		return r;
	}
	while (depth >= 0 && r == 0) {
		de = readdir(stack[depth]);
		if (de == NULL) {
			closedir(stack[depth--]);
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++sc->seen > RO_SCAN_MAX) {
			sc->cut = true;
			break;
		}
		if (fstatat(dirfd(stack[depth]), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (st.st_nlink > 1)
				r = ro_scan_add(sc, &st);
			continue;
		}
		if (depth + 1 == RO_SCAN_DEPTH) {
			sc->cut = true;
			continue;
		}
		cfd = openat(dirfd(stack[depth]), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		if ((stack[depth + 1] = fdopendir(cfd)) == NULL) {
			close(cfd);
			continue;
		}
		depth++;
	}
	while (depth >= 0)
		closedir(stack[depth--]);
	return r;
}

static int resolve_ro_paths(struct fs_mount *m, int rootfd, const struct fs_mount_params *p,
			    struct fs_error *err)
{
	struct ro_scan sc = {0};
	struct stat st;
	size_t i;
	int fd, r = 0;

	if (p->n_ro_paths == 0)
		return 0;
	m->ro_dev = calloc(p->n_ro_paths, sizeof *m->ro_dev);
	m->ro_ino = calloc(p->n_ro_paths, sizeof *m->ro_ino);
	if (m->ro_dev == NULL || m->ro_ino == NULL) {
		fs_seterr(err, ENOMEM, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < p->n_ro_paths; i++) {
		const char *sub = p->ro_paths[i];

		if (sub[0] == '/') {
			fs_seterr(err, EINVAL, "--ro-path %s: give a path relative to the source",
				  sub);
			return -EINVAL;
		}
		fd = gg_open_nofollow(rootfd, sub, O_PATH, true);
		if (fd < 0 || fstat(fd, &st) != 0) {
			int e = errno;

			fs_seterr(err, e, "--ro-path %s: %s under %s", sub,
				  e == ELOOP   ? "a component is a symbolic link"
				  : e == EXDEV ? "it leaves the source"
					       : strerror(e),
				  m->source);
			if (fd >= 0)
				close(fd);
			return -e;
		}
		close(fd);
		m->ro_dev[m->n_ro] = st.st_dev;
		m->ro_ino[m->n_ro++] = st.st_ino;
		if (S_ISDIR(st.st_mode)) {
			fd = gg_open_nofollow(rootfd, sub, O_RDONLY | O_DIRECTORY, true);
			r = fd < 0 ? -errno : ro_scan_tree(&sc, fd);
		} else if (st.st_nlink > 1) {
			r = ro_scan_add(&sc, &st);
		}
		if (r != 0) {
			free(sc.v);
			fs_seterr(err, -r, "--ro-path %s: cannot look for hard links in it: %s", sub,
				  strerror(-r));
			return r;
		}
	}
	if (sc.cut)
		fs_log(m->fs, FS_LOG_WARN,
		       "%s: the read-only paths hold more than %d entries or %d levels; files "
		       "beyond are read-only through their own names only",
		       m->source, RO_SCAN_MAX, RO_SCAN_DEPTH);
	if (sc.n > 0)
		qsort(sc.v, sc.n, sizeof *sc.v, ro_link_cmp);
	m->ro_links = sc.v;
	m->n_ro_links = sc.n;
	return 0;
}

int fs_mount(struct fs *fs, const struct fs_mount_params *p, struct fs_mount **out,
	     struct fs_error *err)
{
	struct mount_opts o = {.timeout = fs->p.timeout, .poll_us = fs->p.poll_us};
	char *argv[3] = {"agentfs", NULL, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fs_mount *m = NULL;
	int rootfd = -1, mpfd = -1, r;
	struct stat st;

	*out = NULL;
	if ((r = parse_options(p->options, &o, err)) != 0)
		return r;
	rootfd = mount_open_dir(p->source, err, "source");
	if (rootfd < 0)
		return rootfd;
	mpfd = mount_open_dir(p->mountpoint, err, "mount point");
	if (mpfd < 0) {
		r = mpfd;
		goto fail;
	}
	if ((r = is_mount_root(mpfd)) != 0) {
		if (r > 0) {
			r = -EBUSY;
			fs_seterr(err, EBUSY, "mount point %s: already a mount point",
				  p->mountpoint);
		} else {
			fs_seterr(err, -r, "mount point %s: %s", p->mountpoint, strerror(-r));
		}
		goto fail;
	}
	if (fd_beneath(mpfd, rootfd)) {
		r = -EINVAL;
		fs_seterr(err, EINVAL,
			  "mount point %s is inside the source %s: the mount would "
			  "serve itself (mount it elsewhere, or over the source itself)",
			  p->mountpoint, p->source);
		goto fail;
	}
	if (p->empty_mountpoint && !o.nonempty &&
	    (r = check_empty(mpfd, rootfd, p->mountpoint, err)) != 0)
		goto fail;
	if (fstat(rootfd, &st) != 0) {
		r = -errno;
		fs_seterr(err, errno, "source %s: %s", p->source, strerror(errno));
		goto fail;
	}
	if (o.fsname[0] == '\0' && (r = lexical_abs(p->source, o.fsname, sizeof o.fsname)) != 0) {
		fs_seterr(err, -r, "source %s: %s", p->source, strerror(-r));
		goto fail;
	}
	m = calloc(1, sizeof *m);
	if (m == NULL)
		goto nomem;
	m->fs = fs;
	m->fuse_fd = -1;
	m->source = strdup(p->source);
	m->mountpoint = strdup(p->mountpoint);
	if (m->source == NULL || m->mountpoint == NULL)
		goto nomem;
	m->source_dev = st.st_dev;
	m->readonly = p->readonly || o.readonly;
	m->kattrs = mount_attrs(&o, m->readonly);
	m->noatime = o.noatime;
	m->nodiratime = o.nodiratime;
	m->allow_new_repos = p->allow_new_repos;
	m->timeout = o.timeout;
	m->poll_us = o.poll_us;
	m->ready = p->ready;
	m->ready_arg = p->ready_arg;
	m->tag = p->tag;
	inode_table_init(&m->table);
	if (m->table.buckets == NULL)
		goto nomem;
	if ((r = resolve_ro_paths(m, rootfd, p, err)) != 0)
		goto fail;
	if ((r = inode_root_init(m, rootfd, err)) != 0)
		goto fail;
	rootfd = -1; /* owned by the root inode now */
	/* Read-only mounts get the guard too: configure may make them writable. */
	if (!o.noguard && (r = mount_guard(m, p, err)) != 0)
		goto fail;

	if (o.debug)
		argv[args.argc++] = "-odebug";
	m->se = fuse_session_new(&args, &fs_ops, sizeof fs_ops, m);
	fuse_opt_free_args(&args);
	if (m->se == NULL) {
		r = -EINVAL;
		fs_seterr(err, EMFILE,
			  "cannot create a FUSE session (libfuse allows about 1000 "
			  "per process: thread-specific keys ran out)");
		goto fail;
	}
	if ((r = mount_make(m, mpfd, &o, err)) != 0)
		goto fail;
	/* Passthrough reads the source file in the kernel, which sets its atime. */
	m->want_passthrough = !o.nopassthrough && !o.noatime;
	if (wire_attach(m) != 0) {
		r = -EIO;
		fs_seterr(err, EIO, "cannot attach the FUSE session to /dev/fuse (fd %d)",
			  m->fuse_fd);
		goto fail;
	}
	if ((r = fs_attach(fs, m, err)) != 0)
		goto fail;
	close(mpfd);
	*out = m;
	return 0;
nomem:
	r = -ENOMEM;
	fs_seterr(err, ENOMEM, "out of memory");
fail:
	if (m != NULL) {
		mount_detach(m);
		fs_mount_free(m);
	}
	if (rootfd >= 0)
		close(rootfd);
	if (mpfd >= 0)
		close(mpfd);
	return r;
}

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

/* Make path absolute (from the cwd), then gg_path_abs: stat could hang on a dead mount. */
static int lexical_abs(const char *path, char *out, size_t len)
{
	char buf[PATH_MAX * 2];

	if (path[0] == '/') {
		snprintf(buf, sizeof buf, "%s", path);
	} else {
		if (getcwd(buf, PATH_MAX) == NULL)
			return -errno;
		strncat(buf, "/", sizeof buf - strlen(buf) - 1);
		strncat(buf, path, sizeof buf - strlen(buf) - 1);
	}
	return gg_path_abs(buf, out, len);
}

/*
 * Call fn for each line of /proc/self/mountinfo with the mount id, mount
 * point and fstype; stops when fn returns nonzero and returns that.
 */
int fs_mountinfo_each(int (*fn)(void *arg, uint64_t id, const char *mp, const char *fstype),
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
		r = fn(arg, strtoull(f[0], NULL, 10), f[4], f[i + 1]);
	}
	free(line);
	fclose(mi);
	return r;
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

static int mountinfo_path_of(uint64_t id, char *path, size_t len)
{
	struct find_path fp = {id, path, len};

	return fs_mountinfo_each(match_id, &fp) == 1 ? 0 : -ENOENT;
}

struct find_top {
	const char *path;
	bool agentfs;
};

/* Mounts stack: the last line for the path is the one on top. */
static int match_top(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct find_top *ft = arg;

	if (strcmp(mp, ft->path) == 0)
		ft->agentfs = strcmp(fstype, "fuse.agentfs") == 0;
	return 0;
}

/* Unmount an agentfs mount by path; refuses anything that is not one. */
int fs_kernel_umount(const char *path, bool lazy, struct fs_error *err)
{
	char abs[PATH_MAX];
	struct find_top ft = {abs, false};
	int r;

	if ((r = lexical_abs(path, abs, sizeof abs)) != 0) {
		fs_seterr(err, -r, "%s: %s", path, strerror(-r));
		return r;
	}
	if ((r = fs_mountinfo_each(match_top, &ft)) < 0) {
		fs_seterr(err, -r, "/proc/self/mountinfo: %s", strerror(-r));
		return r;
	}
	if (!ft.agentfs) {
		fs_seterr(err, EINVAL, "%s: not an agentfs mount point", path);
		return -EINVAL;
	}
	if (umount2(abs, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)) != 0) {
		r = errno;
		fs_seterr(err, r, "cannot unmount %s: %s%s", path, strerror(r),
			  r == EBUSY ? " (in use; -z detaches it lazily)" : "");
		return -r;
	}
	return 0;
}
