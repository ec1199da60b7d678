/* SPDX-License-Identifier: MIT */
/*
 * A mount's lifecycle: the source and mount point checked and opened
 * without following links, the guard opened, the session made and
 * attached to the kernel mount (mount-kernel.c), and unmounting by path.
 * Options are parsed in mount-opts.c, read-only paths resolved in
 * mount-ro.c.
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
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

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

static int lexical_abs(const char *path, char *out, size_t len);

static void guard_log(void *arg, const char *msg)
{
	struct fs_mount *m = arg;

	fs_log(m->fs, FS_LOG_INFO, "%s: %s", m->mountpoint, msg);
}

/*
 * The one place a gitguard error (negative errno in guard_err.code) becomes
 * an fs_error (positive errno): returns -errno.
 */
static int guard_error(struct fs_error *err, const char *source, int r,
		       const struct guard_err *gerr)
{
	int code = gerr->code < 0 ? -gerr->code : -r;

	fs_seterr(err, code, "source %s: %s", source, gerr->msg);
	return -code;
}

/*
 * Every mount gets gitguard, the rule table of agentfs(1) at any depth, over
 * the process's one view of the repositories: what one mount's guard learns
 * holds at every other mount's next decision.
 */
static int mount_guard(struct fs_mount *m, const struct fs_mount_params *p, struct fs_error *err)
{
	struct guard_opts go = {.allow_new_repos = m->allow_new_repos,
				.log = guard_log,
				.log_arg = m,
				.linked_worktree = p->linked_worktree};
	struct guard_err gerr = {0};
	char abs[PATH_MAX];
	uint32_t k;
	int r;

	if ((r = lexical_abs(m->source, abs, sizeof abs)) != 0) {
		fs_seterr(err, -r, "source %s: %s", m->source, strerror(-r));
		return r;
	}
	go.root_path = abs;
	/* one view of the repositories for every mount of the process (gitguard.h) */
	r = guard_view_process(&go.view);
	if (r != 0) {
		fs_seterr(err, -r, "source %s: gitguard: %s", m->source, strerror(-r));
		return r;
	}
	r = guard_open(m->root.fd, &go, &m->guard, &gerr);
	guard_view_put(go.view);
	/* taken over (restore.c): the repositories the bot made stay its own */
	for (k = 0; r == 0 && k < m->tab.hdr->nbot_repos && k < TABLE_REPOS; k++) {
		const struct table_repo *tr = &m->tab.hdr->bot_repos[k];

		r = guard_add_bot_repo(
			m->guard, tr->dev, tr->ino,
			strnlen(tr->path, sizeof tr->path) < sizeof tr->path ? tr->path : NULL);
	}
	if (r == 0)
		r = guard_scan_tree_progress(m->guard, 0, p->progress, p->progress_arg, &gerr);
	if (r != 0)
		return guard_error(err, m->source, r, &gerr);
	m->root.ggen = UINT64_MAX;
	policy_refresh(m, &m->root);
	return 0;
}

/*
 * Give the session the /dev/fuse fd through I/O hooks, which send a reply
 * to the fd its request came from (reader.c): libfuse before 3.17 through
 * wire.c's, which also put passthrough on the wire, later ones through
 * reader.c's own.
 */
int mount_session_attach(struct fs_mount *m)
{
#ifdef HAVE_FUSE_PASSTHROUGH
	return fuse_session_custom_io(m->se, &fs_dev_io, m->fuse_fd);
#else
	return wire_attach(m);
#endif
}

/* A mount being made (fs_mount) or taken over (fs_adopt), from p and o; NULL: no memory */
struct fs_mount *mount_new(struct fs *fs, const struct fs_mount_params *p,
			   const struct mount_opts *o, dev_t source_dev)
{
	struct fs_mount *m = calloc(1, sizeof *m);

	if (m == NULL)
		return NULL;
	m->fs = fs;
	m->fuse_fd = -1;
	m->dev_fd = -1;
	m->tab.memfd = -1;
	/* Not 0: a mount that fails before its root is open must close nothing (fd 0 is not its) */
	m->root.fd = -1;
	pthread_mutex_init(&m->arm_lock, NULL);
	m->source = strdup(p->source);
	m->mountpoint = strdup(p->mountpoint);
	m->source_dev = source_dev;
	m->readonly = p->readonly || o->readonly;
	m->kattrs = mount_attrs(o, m->readonly);
	m->noatime = o->noatime;
	m->nodiratime = o->nodiratime;
	m->allow_new_repos = p->allow_new_repos;
	m->timeout = o->timeout;
	m->poll_us = o->poll_us;
	/* Passthrough reads the source file in the kernel, which sets its atime. */
	m->want_passthrough = !o->nopassthrough && !o->noatime;
	m->want_uring = o->uring;
#ifdef HAVE_FUSE_PASSTHROUGH
	/* INIT's io_uring flag is added by wire.c, which a libfuse with passthrough does not use */
	if (o->uring)
		fs_log(fs, FS_LOG_WARN, "%s: -o uring: not in this build (libfuse 3.17 or later): "
		       "served over /dev/fuse", p->mountpoint);
	m->want_uring = false;
#endif
	m->ready = p->ready;
	m->ready_arg = p->ready_arg;
	m->tag = p->tag;
	m->stale.fd = -1;
	m->stale.refs = 1; /* never freed */
	inode_table_init(&m->table);
	if (m->source == NULL || m->mountpoint == NULL || m->table.slots == NULL) {
		fs_mount_free(m);
		return NULL;
	}
	return m;
}

/*
 * m's share groups (share.c), made or taken over alike: a mount handed over
 * counts in its bot's groups exactly as a fresh one does. 0, or -EMFILE
 * with why when a group is at its share of mounts (m holds none then).
 */
int mount_groups(struct fs_mount *m, const struct fs_mount_params *p, struct fs_error *err)
{
	size_t i;
	int r;

	if ((r = fs_group_mount_take(m->fs, p->groups, err)) != 0)
		return r;
	for (i = 0; i < FS_GROUPS; i++)
		m->groups[i] = fs_group_hold(p->groups[i]);
	return 0;
}

/*
 * What serving m needs, made or taken over alike: its read-only paths, its
 * root (rootfd, taken), the guard over a scan of the source, the session.
 */
int mount_prepare(struct fs_mount *m, int rootfd, const struct fs_mount_params *p,
		  const struct mount_opts *o, struct fs_error *err)
{
	char *argv[3] = {"agentfs", NULL, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	int r;

	if ((r = mount_ro_paths(m, rootfd, p, err)) != 0) {
		close(rootfd);
		return r;
	}
	if ((r = inode_root_init(m, rootfd, err)) != 0)
		return r;
	/* Read-only mounts get the guard too: configure may make them writable. */
	if (!o->noguard && (r = mount_guard(m, p, err)) != 0)
		return r;
	if (o->debug)
		argv[args.argc++] = "-odebug";
	m->se = fuse_session_new(&args, &fs_ops, sizeof fs_ops, m);
	fuse_opt_free_args(&args);
	if (m->se == NULL) {
		fs_seterr(err, EMFILE,
			  "cannot create a FUSE session (libfuse allows about 1000 "
			  "per process: thread-specific keys ran out)");
		return -EMFILE;
	}
	return 0;
}

int fs_mount(struct fs *fs, const struct fs_mount_params *p, struct fs_mount **out,
	     struct fs_error *err)
{
	struct mount_opts o = {.timeout = fs->p.timeout, .poll_us = fs->p.poll_us};
	struct fs_mount *m = NULL;
	int rootfd = -1, mpfd = -1, r;
	struct stat st;

	*out = NULL;
	if ((r = mount_parse_options(p->options, &o, err)) != 0)
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
	m = mount_new(fs, p, &o, st.st_dev);
	if (m == NULL)
		goto nomem;
	/* a group at its share of mounts is refused before the tree is scanned */
	if ((r = mount_groups(m, p, err)) != 0)
		goto fail;
	if ((r = table_init(m, err)) != 0 || (r = excl_take(m, rootfd, false, err)) != 0)
		goto fail;
	r = mount_prepare(m, rootfd, p, &o, err);
	rootfd = -1; /* taken */
	if (r != 0)
		goto fail;
	if ((r = mount_make(m, mpfd, &o, err)) != 0)
		goto fail;
	table_mounted(m);
	if (mount_session_attach(m) != 0) {
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

struct find_top {
	const char *path;
	bool agentfs;
	char source[PATH_MAX]; /* its source as mountinfo says (fsname=, else the folder) */
};

/* Mounts stack: the last line for the path is the one on top. */
static int match_top(void *arg, uint64_t id, const char *mp, const char *fstype,
		     const char *source)
{
	struct find_top *ft = arg;

	(void)id;
	if (strcmp(mp, ft->path) == 0) {
		ft->agentfs = strcmp(fstype, "fuse.agentfs") == 0;
		snprintf(ft->source, sizeof ft->source, "%s", source);
	}
	return 0;
}

/* The pid holding an exclusive flock of fd's folder (/proc/locks); -1 if none is named */
static pid_t flock_holder(int fd)
{
	unsigned long long ino;
	unsigned maj, mnr;
	char line[256];
	pid_t found = -1;
	struct stat st;
	long pid;
	FILE *f;

	if (fstat(fd, &st) != 0 || (f = fopen("/proc/locks", "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "%*d: FLOCK ADVISORY WRITE %ld %x:%x:%llu", &pid, &maj, &mnr,
			   &ino) == 4 &&
		    maj == major(st.st_dev) && mnr == minor(st.st_dev) && ino == st.st_ino) {
			/* 0: a process of a pid namespace we cannot see into */
			found = pid > 0 ? (pid_t)pid : -1;
			break;
		}
	}
	fclose(f);
	return found;
}

/*
 * After an unmount: wait (up to 5 s) until the server has let the source
 * folder go (excl.c), so the next mount of it, or of a folder in it, is not
 * refused while the server ends. 0 once it has (or for a source that is no
 * folder, fsname=, not waited for); else the server still serves a copy of
 * the mount elsewhere: its pid, or -1 if /proc/locks does not say.
 */
static pid_t wait_server_gone(const char *source)
{
	struct timespec pause = {0, 10 * 1000 * 1000};
	pid_t holder = 0;
	int fd, i;

	if (source[0] != '/' ||
	    (fd = open(source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return 0;
	for (i = 0; i < 500 && flock(fd, LOCK_SH | LOCK_NB) != 0; i++)
		nanosleep(&pause, NULL);
	if (i == 500 && flock(fd, LOCK_SH | LOCK_NB) != 0)
		holder = flock_holder(fd);
	close(fd);
	return holder;
}

/*
 * Unmount an agentfs mount by path; refuses anything that is not one. Not
 * lazy, it returns once the server has let its folder go, or *lingering
 * says it has not (wait_server_gone); it is 0 otherwise.
 */
int fs_kernel_umount(const char *path, bool lazy, pid_t *lingering, struct fs_error *err)
{
	char abs[PATH_MAX];
	struct find_top ft = {.path = abs};
	int r;

	*lingering = 0;
	if ((r = lexical_abs(path, abs, sizeof abs)) != 0) {
		fs_seterr(err, -r, "%s: %s", path, strerror(-r));
		return r;
	}
	if ((r = mountinfo_each_source(match_top, &ft)) < 0) {
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
	if (!lazy)
		*lingering = wait_server_gone(ft.source);
	return 0;
}
