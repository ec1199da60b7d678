/* SPDX-License-Identifier: MIT */
/*
 * Bots: who may make, change and remove which bot, and the life of their
 * mounts. Anything that touches a path a client gave, or a mount, runs on
 * the job thread; the event loop never does, so a hung mount or a hostile
 * path cannot stop it. Jobs finish back on the loop (job_done).
 */
#include "src/agentfs.h"
#include "fusefs/fusefs.h"
#include "gitguard/gitguard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <event2/event.h>

struct job {
	struct job *next;
	void (*run)(struct job *);  /* on the job thread */
	void (*done)(struct job *); /* on the loop */
	struct request req;
	struct bot *bot;      /* the bot made, changed or restored */
	struct bot **victims; /* delete: the bot and its descendants */
	size_t nvictims;
	struct root *roots; /* configure: roots to mount (new) */
	size_t nroots;
	struct fs_mount **unmount; /* configure: mounts to end */
	size_t nunmount;
	struct fs_mount *lost; /* a mount that ended from outside */
	uid_t uid;	       /* the operator whose access is checked; 0: none */
	struct paths ceiling;  /* a bot creator's roots: implicit git roots must be inside */
	bool ceiling_set;
	const char *scanning; /* the root being mounted, for progress */
	int error;	      /* nonzero: the job failed */
	char code[32];
	char msg[1024];
};

/*
 * The daemon's state. Everything but the job queues belongs to the loop
 * thread; lock protects todo, done and stopping. A bot with busy set is
 * being worked on by the job thread: the loop does not change it then.
 */
static struct {
	struct event_base *base;
	struct config *cfg;
	struct server *srv;
	struct fs *fs;
	struct bots bots;
	unsigned nbots;
	time_t started;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *todo, **todo_tail, *done;
	struct event *done_ev;
	bool stopping, thread_started;
	bool shutdown_requested;
	int mountinfo_fd;
	struct event *mountinfo_ev;
	/*
	 * The scan of the root being mounted, for a client that asked for
	 * progress (under lock): the job thread fills it, the loop sends it.
	 * job is cleared by job_finish, so the loop never uses a gone peer.
	 */
	struct {
		struct job *job;
		char root[PATH_MAX];
		unsigned long entries, repos;
		bool pending;
	} prog;
	struct event *prog_ev;
} d;

static void job_submit(struct job *j);
static void check_lost(struct bot *only);

static struct bot *bot_find(const char *name)
{
	struct bot *b;

	TAILQ_FOREACH(b, &d.bots, entry)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

static struct bot *caller_of(struct request *r)
{
	return r->peer != NULL ? server_peer_bot(r->peer) : NULL;
}

/* Is b made by anc, directly or through its children? */
static bool bot_descends(const struct bot *b, const struct bot *anc)
{
	int depth;

	for (depth = 0; b != NULL && b->creator != NULL && depth < 1000; depth++) {
		if (strcmp(b->creator, anc->name) == 0)
			return true;
		b = bot_find(b->creator);
	}
	return false;
}

/* The uid of the operator asking; 0 for root and for the daemon itself (ttl). */
static uid_t operator_uid(struct request *r)
{
	return r->peer != NULL ? server_peer_uid(r->peer) : 0;
}

/*
 * May the asker see b? A bot sees itself and the bots it made; root sees
 * every bot; an operator in agentfsd's group sees the bots it made, and
 * theirs.
 */
static bool bot_visible(struct request *r, const struct bot *b)
{
	const struct bot *caller = caller_of(r);

	if (caller != NULL)
		return caller == b || bot_descends(b, caller);
	return operator_uid(r) == 0 || b->owner_uid == operator_uid(r);
}

static void fail(struct request *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The bot NAME if the asker may see it; else NULL, answered not_found. */
static struct bot *visible_bot(struct request *r, const char *name)
{
	struct bot *b = bot_find(name);

	if (b == NULL || b->deleting || !bot_visible(r, b)) {
		fail(r, "not_found", "no bot named %s", name);
		return NULL;
	}
	return b;
}

static void fail(struct request *r, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	request_fail(r, proto_error_line(code, msg));
}

static void job_seterr(struct job *j, int e, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void job_seterr(struct job *j, int e, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (j->error != 0)
		return;
	j->error = e != 0 ? e : EINVAL;
	snprintf(j->code, sizeof j->code, "%s", code);
	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof j->msg, fmt, ap);
	va_end(ap);
}

/* The roots a bot writes to: its folder (unless read-only) and writable. */
static bool bot_may_write(const struct bot *b, const char *path)
{
	if (b->sandbox == SANDBOX_READ_ONLY)
		return false;
	return path_within(path, b->folder) || paths_contains(&b->writable, path);
}

static bool bot_may_read(const struct bot *b, const char *path)
{
	return path_within(path, b->folder) || paths_contains(&b->writable, path) ||
	       paths_contains(&b->readable, path);
}

/*
 * Is the bot b no weaker than its ceiling c (a bot that made it)? Fills
 * why with the first excess.
 */
static bool within_ceiling(const struct bot *b, const struct bot *c, char *why, size_t len)
{
	size_t i;

	if (b->sandbox > c->sandbox) {
		snprintf(why, len, "sandbox %s is weaker than %s's %s", sandbox_name(b->sandbox),
			 c->name, sandbox_name(c->sandbox));
		return false;
	}
	if (b->sandbox != SANDBOX_READ_ONLY && !bot_may_write(c, b->folder)) {
		snprintf(why, len, "folder %s is not writable by %s", b->folder, c->name);
		return false;
	}
	if (b->sandbox == SANDBOX_READ_ONLY && !bot_may_read(c, b->folder)) {
		snprintf(why, len, "folder %s is not readable by %s", b->folder, c->name);
		return false;
	}
	for (i = 0; i < b->writable.n; i++) {
		if (!bot_may_write(c, b->writable.v[i])) {
			snprintf(why, len, "writable %s is not writable by %s", b->writable.v[i],
				 c->name);
			return false;
		}
	}
	for (i = 0; i < b->readable.n; i++) {
		if (!bot_may_read(c, b->readable.v[i])) {
			snprintf(why, len, "readable %s is not readable by %s", b->readable.v[i],
				 c->name);
			return false;
		}
	}
	if (b->network && !c->network) {
		snprintf(why, len, "network is off for %s", c->name);
		return false;
	}
	if (b->allow_new_repos && !c->allow_new_repos) {
		snprintf(why, len, "allow_new_repos is off for %s", c->name);
		return false;
	}
	return true;
}

/* The ceiling check for a bot about to exist or change: its creator, if a bot. */
static bool ceiling_ok(struct request *r, const struct bot *b)
{
	struct bot *c = b->creator != NULL ? bot_find(b->creator) : NULL;
	char why[512];

	if (c != NULL && !within_ceiling(b, c, why, sizeof why)) {
		fail(r, "forbidden", "%s: %s", b->name, why);
		return false;
	}
	return true;
}

static char *bot_socket_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s.d/%s.sock", d.cfg->socket_path, name) < 0)
		return NULL;
	return p;
}

/* Lay out a bot's roots: folder, writable, readable, then the configured extras. */
static int bot_plan_roots(struct bot *b)
{
	struct paths all = {0};
	bool *w = NULL;
	size_t i, j, n = 0;

	/* A root inside another root of the same or stronger access needs no mount. */
#define ADD(path, wr)                                                                              \
	do {                                                                                       \
		bool covered = false;                                                              \
		for (i = 0; i < n; i++)                                                            \
			if (path_within(path, all.v[i]) && (w[i] || !(wr)))                        \
				covered = true;                                                    \
		if (!covered) {                                                                    \
			bool *nw = realloc(w, (n + 1) * sizeof *w);                                \
			if (nw == NULL || paths_add(&all, path) != 0)                              \
				goto nomem;                                                        \
			w = nw;                                                                    \
			w[n++] = (wr);                                                             \
		}                                                                                  \
	} while (0)
	ADD(b->folder, b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < b->writable.n; j++)
		ADD(b->writable.v[j], b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < d.cfg->extra_writable.n; j++)
		ADD(d.cfg->extra_writable.v[j], b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < b->git_roots.n; j++)
		ADD(b->git_roots.v[j], b->sandbox != SANDBOX_READ_ONLY);
	for (j = 0; j < b->readable.n; j++)
		ADD(b->readable.v[j], false);
#undef ADD
	b->roots = calloc(n, sizeof *b->roots);
	if (b->roots == NULL)
		goto nomem;
	for (i = 0; i < n; i++) {
		b->roots[i].path = all.v[i];
		all.v[i] = NULL;
		b->roots[i].writable = w[i];
		if (asprintf(&b->roots[i].mountpoint, "%s/%s/%u", d.cfg->mount_dir, b->name,
			     b->mount_seq++) < 0)
			goto nomem;
	}
	b->nroots = n;
	paths_free(&all);
	free(w);
	return 0;
nomem:
	if (b->roots != NULL) {
		for (i = 0; i < n; i++) {
			free(b->roots[i].path);
			free(b->roots[i].mountpoint);
		}
		free(b->roots);
		b->roots = NULL;
	}
	paths_free(&all);
	free(w);
	return -ENOMEM;
}

static void fs_log_cb(void *arg, enum fs_log_level level, const char *msg)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	log_msg(prio[level], "%s", msg);
}

/* A mount's refusal or change (any worker): the mount's tag is its bot. */
static void fs_event_cb(void *arg, struct fs_mount *m, const struct fs_event *ev)
{
	struct bot *b = fs_mount_tag(m);

	if (b == NULL)
		return;
	if (ev->kind == FS_EV_REFUSED)
		events_refused(b, m, ev);
	else
		changes_record(b->changes, m, ev);
}

/* Back to root on this thread; a thread that cannot is not trusted with more work. */
static void thread_as_root(void)
{
	setfsuid(0);
	setfsgid(0);
	if (syscall(SYS_setgroups, (size_t)0, NULL) != 0 || setfsuid((uid_t)-1) != 0 ||
	    setfsgid((gid_t)-1) != 0) {
		log_msg(LOG_CRIT, "cannot switch the job thread back to root: stopping");
		abort();
	}
}

/*
 * Could uid write (or read) the folder fd? Checked with its own
 * credentials; any step that fails answers no.
 */
static bool uid_may(uid_t uid, int fd, int mode)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096];
	gid_t groups[256], gid = (gid_t)uid;
	int n = 256;
	bool ok;

	if (uid == 0)
		return true;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) == 0 && pwp != NULL) {
		gid = pw.pw_gid;
		if (getgrouplist(pw.pw_name, gid, groups, &n) < 0)
			return false; /* more groups than we can set: not decided, so no */
	} else {
		n = 0;
	}
	/* Per-thread credentials: the raw syscalls change only this thread. */
	ok = syscall(SYS_setgroups, (size_t)n, groups) == 0;
	setfsgid(gid);
	setfsuid(uid);
	/* setfsuid answers the previous id: asking again shows whether it took. */
	ok = ok && (gid_t)setfsgid((gid_t)-1) == gid && (uid_t)setfsuid((uid_t)-1) == uid &&
	     faccessat(fd, "", mode, AT_EMPTY_PATH | AT_EACCESS) == 0;
	thread_as_root();
	return ok;
}

static int open_folder(const char *path)
{
	return fs_open_nofollow(AT_FDCWD, path, O_PATH | O_DIRECTORY, false);
}

struct mnt_query {
	uint64_t id;
	bool agentfs;
};

static int mnt_match(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct mnt_query *q = arg;

	if (id != q->id)
		return 0;
	q->agentfs = strcmp(fstype, "fuse.agentfs") == 0;
	return 1;
}

/*
 * Is the folder on an agentfs mount? Serving a mount from another of our
 * mounts would make workers wait on themselves: refused.
 */
static bool on_agentfs(int fd)
{
	struct mnt_query q = {0, false};
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return false;
	q.id = stx.stx_mnt_id;
	fs_mountinfo_each(mnt_match, &q);
	return q.agentfs;
}

/* Job thread, while a root is scanned: note how far, for progress_send on the loop. */
static void job_progress(void *arg, unsigned long entries, unsigned long repos)
{
	struct job *j = arg;

	/* a report the loop has not sent yet is replaced: a slow client gets the latest */
	pthread_mutex_lock(&d.lock);
	d.prog.job = j;
	snprintf(d.prog.root, sizeof d.prog.root, "%s", j->scanning);
	d.prog.entries = entries;
	d.prog.repos = repos;
	d.prog.pending = true;
	event_active(d.prog_ev, EV_READ, 0);
	pthread_mutex_unlock(&d.lock);
}

/* Loop: one progress line to the client whose root is being scanned. */
static void progress_send(evutil_socket_t fd, short what, void *arg)
{
	struct peer *peer = NULL;
	cJSON *line, *o;

	pthread_mutex_lock(&d.lock);
	if (d.prog.job != NULL && d.prog.pending) {
		d.prog.pending = false;
		peer = d.prog.job->req.peer;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "root", d.prog.root);
		cJSON_AddNumberToObject(o, "entries", (double)d.prog.entries);
		cJSON_AddNumberToObject(o, "repos", (double)d.prog.repos);
	}
	pthread_mutex_unlock(&d.lock);
	if (peer == NULL)
		return;
	line = cJSON_CreateObject();
	cJSON_AddItemToObject(line, "progress", o);
	server_reply(peer, line);
}

/* Job thread: check one root and mount it. */
static void root_mount(struct job *j, struct bot *b, struct root *rt)
{
	struct fs_mount_params mp = {0};
	struct fs_error err = {0};
	char dir[PATH_MAX];
	int fd;

	free(rt->error);
	rt->error = NULL;
	fd = open_folder(rt->path);
	if (fd < 0) {
		int e = errno;

		job_seterr(j, e, "bad_path", "%s: %s", rt->path,
			   e == ELOOP	  ? "a component is a symbolic link (give the real path)"
			   : e == ENOTDIR ? "not a folder"
			   : e == ENOENT  ? "no such folder"
					  : strerror(e));
		rt->error = strdup(j->msg);
		return;
	}
	if (on_agentfs(fd)) {
		close(fd);
		job_seterr(j, EINVAL, "bad_path",
			   "%s is inside an agentfs mount (a bot's view); "
			   "give the real folder",
			   rt->path);
		rt->error = strdup(j->msg);
		return;
	}
	if (j->uid != 0 && !uid_may(j->uid, fd, rt->writable ? W_OK : R_OK)) {
		close(fd);
		job_seterr(j, EACCES, "forbidden", "%s: uid %u may not %s it", rt->path,
			   (unsigned)j->uid, rt->writable ? "write" : "read");
		rt->error = strdup(j->msg);
		return;
	}
	close(fd);
	snprintf(dir, sizeof dir, "%s/%s", d.cfg->mount_dir, b->name);
	if (mkdir_p(dir, 0755) != 0 || (mkdir(rt->mountpoint, 0755) != 0 && errno != EEXIST)) {
		job_seterr(j, errno, "mount_failed", "cannot make %s: %s", rt->mountpoint,
			   strerror(errno));
		rt->error = strdup(j->msg);
		return;
	}
	mp.source = rt->path;
	mp.mountpoint = rt->mountpoint;
	mp.readonly = !rt->writable;
	mp.allow_new_repos = b->allow_new_repos;
	mp.tag = b;
	if (j->req.progress && j->req.peer != NULL) {
		j->scanning = rt->path;
		mp.progress = job_progress;
		mp.progress_arg = j;
	}
	if (fs_mount(d.fs, &mp, &rt->m, &err) != 0) {
		job_seterr(j, err.code, err.code == EMFILE ? "limit" : "mount_failed", "%s",
			   err.msg);
		rt->error = strdup(err.msg);
		rmdir(rt->mountpoint);
	}
}

static void root_unmount(struct root *rt)
{
	if (rt->m != NULL) {
		fs_unmount(rt->m);
		fs_mount_free(rt->m);
		rt->m = NULL;
	}
	if (rt->mountpoint != NULL)
		rmdir(rt->mountpoint);
}

static void bot_unmount_all(struct bot *b)
{
	char dir[PATH_MAX];
	size_t i;

	for (i = 0; i < b->nroots; i++)
		root_unmount(&b->roots[i]);
	snprintf(dir, sizeof dir, "%s/%s", d.cfg->mount_dir, b->name);
	rmdir(dir);
}

/* Read a small regular file beneath dirfd without following links. */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t len)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = fs_open_nofollow(dirfd, name, O_RDONLY | O_NONBLOCK, true);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size >= len) {
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* dir + "/" + rel, or rel if absolute, normalised; NULL if it does not fit. */
static char *join_norm(const char *dir, const char *rel)
{
	char *joined = NULL, *out = NULL;

	if (rel[0] == '/')
		joined = strdup(rel);
	else if (asprintf(&joined, "%s/%s", dir, rel) < 0)
		joined = NULL;
	if (joined != NULL && path_normalise(joined, &out) != 0)
		out = NULL;
	free(joined);
	return out;
}

/*
 * A folder that is a linked worktree, or whose .git is a file or symlink
 * pointing elsewhere, needs that git folder (and its common folder) as a
 * root too, guarded as always, or `git commit` cannot work in it. Read
 * here, on the job thread, through descriptors that follow no link.
 */
static void add_git_roots(struct job *j, struct bot *b)
{
	char buf[4096], gitdir[PATH_MAX], *gd = NULL, *common = NULL, *picks[2];
	struct root *nr;
	ssize_t n;
	size_t i;
	int fd;

	fd = open_folder(b->folder);
	if (fd < 0)
		return;
	n = readlinkat(fd, ".git", buf, sizeof buf - 1);
	if (n > 0) {
		buf[n] = '\0';
		gd = join_norm(b->folder, buf);
	} else if (read_small(fd, ".git", buf, sizeof buf) > 0 &&
		   guard_parse_gitfile(buf, strlen(buf), gitdir, sizeof gitdir) == 0) {
		gd = join_norm(b->folder, gitdir);
	}
	close(fd);
	if (gd == NULL)
		return;
	fd = open_folder(gd);
	if (fd >= 0) {
		if (read_small(fd, "commondir", buf, sizeof buf) > 0 &&
		    guard_parse_commondir(buf, strlen(buf), gitdir, sizeof gitdir) == 0)
			common = join_norm(gd, gitdir);
		close(fd);
	}
	/* The common folder (objects, refs, config) and, if it lies elsewhere, the worktree's own. */
	picks[0] = common;
	picks[1] = common == NULL || !path_within(gd, common) ? gd : NULL;
	for (i = 0; i < 2; i++) {
		bool covered = false, allowed = !j->ceiling_set;
		const char *pick = picks[i];
		size_t k;

		if (pick == NULL)
			continue;
		for (k = 0; k < b->nroots; k++)
			if (path_within(pick, b->roots[k].path) &&
			    (b->roots[k].writable || b->sandbox == SANDBOX_READ_ONLY))
				covered = true;
		for (k = 0; k < j->ceiling.n; k++)
			if (path_within(pick, j->ceiling.v[k]))
				allowed = true;
		if (covered || !allowed)
			continue;
		nr = realloc(b->roots, (b->nroots + 1) * sizeof *nr);
		if (nr == NULL)
			break;
		b->roots = nr;
		memset(&b->roots[b->nroots], 0, sizeof *nr);
		b->roots[b->nroots].path = strdup(pick);
		b->roots[b->nroots].writable = b->sandbox != SANDBOX_READ_ONLY;
		/* Found once, when the bot is made, and kept: a bot may not point
		 * its .git elsewhere later and be handed that folder on restart. */
		if (b->roots[b->nroots].path == NULL || paths_add(&b->git_roots, pick) != 0 ||
		    asprintf(&b->roots[b->nroots].mountpoint, "%s/%s/%u", d.cfg->mount_dir, b->name,
			     b->mount_seq++) < 0)
			break;
		b->nroots++;
	}
	free(gd);
	free(common);
}

/* Job thread: a bot with no user named runs as its folder's owner. */
static void root_user(struct job *j, struct bot *b)
{
	struct stat st;
	int fd;

	if (b->uid_set)
		return;
	fd = open_folder(b->folder);
	if (fd < 0 || fstat(fd, &st) != 0) {
		job_seterr(j, errno, "bad_path", "%s: %s", b->folder, strerror(errno));
	} else {
		b->uid = st.st_uid;
		b->uid_set = true;
	}
	if (fd >= 0)
		close(fd);
}

/* Job thread: mount every root; on failure leave nothing mounted. */
static void run_mount_bot(struct job *j)
{
	size_t i;

	root_user(j, j->bot);
	add_git_roots(j, j->bot);
	for (i = 0; i < j->bot->nroots && j->error == 0; i++)
		root_mount(j, j->bot, &j->bot->roots[i]);
	if (j->error != 0 && j->req.peer != NULL)
		bot_unmount_all(j->bot);
}

/* Restoring after a restart keeps what mounts and reports the rest. */
static void run_restore_bot(struct job *j)
{
	size_t i;

	root_user(j, j->bot);
	for (i = 0; i < j->bot->nroots; i++) {
		j->error = 0;
		root_mount(j, j->bot, &j->bot->roots[i]);
		if (j->error != 0)
			log_msg(LOG_WARNING, "bot %s: %s", j->bot->name, j->msg);
	}
	j->error = 0;
}

static void save_state(void)
{
	int r = state_save(d.cfg, &d.bots);

	if (r != 0)
		log_msg(LOG_ERR, "cannot save the state in %s: %s", d.cfg->state_dir, strerror(-r));
}

static void ttl_expired(evutil_socket_t fd, short what, void *arg);

static void bot_arm_ttl(struct bot *b)
{
	struct timeval tv = {0, 0};
	time_t now = time(NULL);

	if (b->expires == 0)
		return;
	if (b->ttl_ev == NULL)
		b->ttl_ev = evtimer_new(d.base, ttl_expired, b);
	if (b->ttl_ev == NULL)
		return;
	tv.tv_sec = b->expires > now ? b->expires - now : 0;
	evtimer_add(b->ttl_ev, &tv);
}

/* Give a bot that now exists its socket and timer; false if the socket failed. */
static bool bot_activate(struct bot *b, char *err, size_t errlen)
{
	cleanup_free char *sock = bot_socket_path(b->name);

	if (sock == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	if (server_listen(d.srv, sock, b, err, errlen) != 0)
		return false;
	bot_arm_ttl(b);
	return true;
}

/*
 * A sandbox running a bot's commands: the `agentfs exec` that asked, and,
 * once bwrap reports it, the sandbox's init (whose death ends every process
 * in it). Both are held by pidfd, so a signal can only reach the processes
 * that registered, never a later one with the same pid. The record goes
 * when the exec ends (its pidfd becomes readable).
 */
struct sandbox_run {
	struct bot *bot;
	pid_t pid, init;   /* init: 0 until reported, and for an unconfined bot */
	int pidfd, initfd; /* -1: none */
	uid_t uid;	   /* who registered it */
	struct event *ev;
	LIST_ENTRY(sandbox_run) entry;
};

#define SANDBOXES_MAX 256 /* per bot */
#define FORCE_GRACE_S 3	  /* rm --force: SIGTERM, then SIGKILL after this long */
#define FORCE_GIVE_UP_S 3 /* ... and delete anyway after this much longer */

static int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

static void sandbox_free(struct sandbox_run *sb)
{
	LIST_REMOVE(sb, entry);
	sb->bot->nsandboxes--;
	if (sb->ev != NULL)
		event_free(sb->ev);
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->initfd >= 0)
		close(sb->initfd);
	free(sb);
}

static void sandboxes_free(struct bot *b)
{
	while (!LIST_EMPTY(&b->sandboxes))
		sandbox_free(LIST_FIRST(&b->sandboxes));
}

/* The exec ended: it no longer holds the bot. */
static void sandbox_gone(evutil_socket_t fd, short what, void *arg)
{
	sandbox_free(arg);
}

/* A process's parent, from /proc; -1 if it is gone. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] == '\0' || p[2] == '\0')
		return -1;
	return (pid_t)atoi(p + 4);
}

/* Is pid a descendant of anc, within a few generations (bwrap's two)? */
static bool descends_from(pid_t pid, pid_t anc)
{
	int i;

	for (i = 0; i < 4 && pid > 1; i++) {
		pid = parent_of(pid);
		if (pid == anc)
			return true;
	}
	return false;
}

/*
 * May the daemon signal the process for whoever registered it? Root's are
 * fine; a user's only while the process still runs as that user (its real
 * or saved uid, as kill(2) asks), so a process that became privileged is
 * left alone. The pidfd, checked after reading, makes sure /proc spoke of it.
 */
static bool may_signal(int pidfd, pid_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned r = 0, e = 0, sv = 0;
	bool ok = false;
	FILE *f;

	if (uid == 0)
		return true;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Uid: %u %u %u", &r, &e, &sv) == 3) {
			ok = r == uid || sv == uid;
			break;
		}
	fclose(f);
	return ok && pidfd_signal(pidfd, 0) == 0;
}

static void sandbox_signal(struct sandbox_run *sb, int sig)
{
	if (sig == SIGKILL && sb->initfd >= 0 && may_signal(sb->initfd, sb->init, sb->uid))
		pidfd_signal(sb->initfd, SIGKILL);
	if (may_signal(sb->pidfd, sb->pid, sb->uid))
		pidfd_signal(sb->pidfd, sig);
}

/* The live record of pid; one whose process has ended (its pid reused) goes. */
static struct sandbox_run *sandbox_of(struct bot *b, pid_t pid)
{
	struct sandbox_run *sb;

	LIST_FOREACH(sb, &b->sandboxes, entry) {
		if (sb->pid != pid)
			continue;
		if (pidfd_signal(sb->pidfd, 0) == 0)
			return sb;
		sandbox_free(sb);
		return NULL;
	}
	return NULL;
}

/*
 * `agentfs exec` says it runs the bot's commands: first before it starts
 * them (no pid), then with its sandbox's init once bwrap reports it. The
 * client is the peer itself (SO_PEERCRED); the init must descend from it.
 */
void bots_exec_register(struct request *r, const char *name, bool has_pid, double pidv)
{
	struct bot *b;
	pid_t pid = r->peer != NULL ? server_peer_pid(r->peer) : 0;
	struct sandbox_run *sb;
	int fd;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	if (b->busy) {
		fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return;
	}
	if (pid <= 0) {
		fail(r, "bad_request", "the client's pid is unknown");
		return;
	}
	if (has_pid && (pidv < 2 || pidv > 4194304 || pidv != (double)(pid_t)pidv)) {
		fail(r, "bad_value", "pid must be a process id");
		return;
	}
	sb = sandbox_of(b, pid);
	if (sb == NULL) {
		if (b->nsandboxes >= SANDBOXES_MAX) {
			fail(r, "limit", "bot %s has %d sandboxes running", b->name, SANDBOXES_MAX);
			return;
		}
		sb = calloc(1, sizeof *sb);
		if (sb == NULL) {
			fail(r, "internal", "out of memory");
			return;
		}
		sb->bot = b;
		sb->pid = pid;
		sb->initfd = -1;
		sb->uid = server_peer_uid(r->peer);
		sb->pidfd = pidfd_open_pid(pid);
		sb->ev = sb->pidfd >= 0 ? event_new(d.base, sb->pidfd, EV_READ, sandbox_gone, sb)
					: NULL;
		if (sb->ev == NULL || event_add(sb->ev, NULL) != 0) {
			if (sb->ev != NULL)
				event_free(sb->ev);
			if (sb->pidfd >= 0)
				close(sb->pidfd);
			free(sb);
			fail(r, "internal", "cannot follow the client's process: %s",
			     strerror(errno));
			return;
		}
		LIST_INSERT_HEAD(&b->sandboxes, sb, entry);
		b->nsandboxes++;
	}
	if (has_pid && sb->initfd < 0) {
		pid_t init = (pid_t)pidv;

		/* Checked again once held: the pidfd is of a process that descends from the client. */
		fd = pidfd_open_pid(init);
		if (fd < 0 || !descends_from(init, pid) || pidfd_signal(fd, 0) != 0) {
			if (fd >= 0)
				close(fd);
			fail(r, "forbidden", "process %d is not a sandbox this client started",
			     (int)init);
			return;
		}
		sb->init = init;
		sb->initfd = fd;
	}
	request_reply(r, NULL);
}

static void bot_remove(struct bot *b)
{
	sandboxes_free(b);
	server_unlisten(d.srv, b);
	if (b->ttl_ev != NULL)
		event_free(b->ttl_ev);
	b->ttl_ev = NULL;
	TAILQ_REMOVE(&d.bots, b, entry);
	d.nbots--;
	bot_free(b);
}

static void job_finish(struct job *j)
{
	pthread_mutex_lock(&d.lock);
	if (d.prog.job == j)
		d.prog.job = NULL;
	pthread_mutex_unlock(&d.lock);
	if (j->req.peer != NULL) {
		server_peer_resume(j->req.peer);
		server_peer_unref(j->req.peer);
	}
	cJSON_Delete(j->req.id);
	paths_free(&j->ceiling);
	free(j->victims);
	free(j->unmount);
	free(j);
}

static void done_create(struct job *j)
{
	struct bot *b = j->bot;
	char err[512];
	cJSON *body;

	b->busy = false;
	if (j->error != 0) {
		fail(&j->req, j->code, "%s", j->msg);
		TAILQ_REMOVE(&d.bots, b, entry);
		d.nbots--;
		bot_free(b);
		job_finish(j);
		return;
	}
	/* Saved before its socket exists: a crash between leaves no orphan socket. */
	save_state();
	if (!bot_activate(b, err, sizeof err)) {
		fail(&j->req, "internal", "%s", err);
		bot_unmount_all(b); /* quick: nothing can be using a mount no one was told of */
		TAILQ_REMOVE(&d.bots, b, entry);
		d.nbots--;
		bot_free(b);
		save_state();
		job_finish(j);
		return;
	}
	log_msg(LOG_INFO, "bot %s made by %s", b->name, b->creator ? b->creator : "the operator");
	events_bot(b, "bot_made", b->folder, "made by %s, sandbox %s",
		   b->creator ? b->creator : "the operator", sandbox_name(b->sandbox));
	body = cJSON_CreateObject();
	cJSON_AddItemToObject(body, "bot", bot_to_json(b, true));
	request_reply(&j->req, body);
	job_finish(j);
}

/* Drop a job that was never submitted; the request is answered by the caller. */
static void job_abort(struct job *j)
{
	if (j->req.peer != NULL)
		server_peer_unref(j->req.peer);
	free(j->victims);
	free(j->unmount);
	free(j);
}

static struct job *job_new(struct request *r)
{
	struct job *j = calloc(1, sizeof *j);

	if (j == NULL)
		return NULL;
	j->req = *r;
	if (r->peer != NULL)
		server_peer_ref(r->peer);
	return j;
}

/* Answer a resent create or fork from what the first one made. */
static bool answer_resend(struct request *r)
{
	struct bot *caller = caller_of(r), *b;
	cJSON *body;

	if (r->id == NULL || !cJSON_IsString(r->id))
		return false;
	TAILQ_FOREACH(b, &d.bots, entry) {
		if (b->request_id == NULL || strcmp(b->request_id, r->id->valuestring) != 0)
			continue;
		if ((caller == NULL) != (b->creator == NULL) ||
		    (caller != NULL && strcmp(caller->name, b->creator) != 0) || !bot_visible(r, b))
			continue;
		if (b->busy) {
			fail(r, "busy", "bot %s is still being made; ask again", b->name);
			return true;
		}
		body = cJSON_CreateObject();
		cJSON_AddItemToObject(body, "bot", bot_to_json(b, true));
		request_reply(r, body);
		return true;
	}
	return false;
}

static bool spec_paths_dup(struct paths *dst, const struct paths *src)
{
	size_t i;

	for (i = 0; i < src->n; i++)
		if (paths_add(dst, src->v[i]) != 0)
			return false;
	return true;
}

/*
 * The user a new bot's commands run as: a bot's bots run as its own user
 * (it may name no other); a fork keeps its source's; the operator may name
 * any user if root, else only itself. Unnamed, it is the folder's owner,
 * found on the job thread (root_user).
 */
static bool bot_user(struct request *r, struct bot *b, const struct bot_spec *s,
		     const struct bot *caller, const struct bot *from)
{
	const struct bot *inherit = from != NULL ? from : caller;
	uid_t op = r->peer != NULL ? server_peer_uid(r->peer) : 0;

	if (inherit != NULL) {
		b->uid = inherit->uid;
		b->uid_set = inherit->uid_set;
	} else if (caller == NULL && op != 0) {
		/* An operator other than root: its bots run as itself. */
		b->uid = op;
		b->uid_set = true;
	}
	if (!s->has_user)
		return true;
	if (caller != NULL && (!caller->uid_set || s->user != caller->uid)) {
		fail(r, "forbidden", "%s: a bot's bots run as its own user (uid %u); it may not name another",
		     b->name, (unsigned)caller->uid);
		return false;
	}
	if (caller == NULL && op != 0 && s->user != op) {
		fail(r, "forbidden", "%s: only root may name another user than its own", b->name);
		return false;
	}
	b->uid = s->user;
	b->uid_set = true;
	return true;
}

/* The bot the operator made at the top of b's family (b itself if the operator made it) */
static const struct bot *family_top(const struct bot *b)
{
	const struct bot *p;
	unsigned hops = 0;

	while (b->creator != NULL && (p = bot_find(b->creator)) != NULL && hops++ < 1000)
		b = p;
	return b;
}

/*
 * Bots made by bots get shares of max_bots (agentfsd(8), LIMITS): one
 * operator-made bot and everything it made hold at most a quarter, and all
 * bots' bots together leave a quarter to the operator, so one busy lead
 * cannot keep the operator or the other leads from making bots.
 */
static bool family_room(struct request *r, const struct bot *caller)
{
	unsigned max = d.cfg->max_bots, share = max / 4, n = 0;
	const struct bot *top = family_top(caller), *b;

	if (share < 4)
		share = max < 4 ? max : 4;
	TAILQ_FOREACH(b, &d.bots, entry)
		n += family_top(b) == top;
	if (n >= share) {
		fail(r, "limit", "bot %s and the bots it made number %u, their share of max_bots (%u)",
		     top->name, n, max);
		return false;
	}
	if (max >= 8 && d.nbots + share >= max) {
		fail(r, "limit", "%u bots: the rest of max_bots (%u) is kept for the operator", d.nbots,
		     max);
		return false;
	}
	return true;
}

/* Start a new bot from a spec, created by the caller; NULL after replying an error. */
static struct bot *bot_new(struct request *r, const char *name, const struct bot_spec *s,
			   const struct bot *from)
{
	struct bot *caller = caller_of(r), *b;

	if (d.shutdown_requested) {
		fail(r, "shutting_down", "agentfsd is shutting down");
		return NULL;
	}
	if (bot_find(name) != NULL) {
		fail(r, "exists", "a bot named %s exists", name);
		return NULL;
	}
	if (d.nbots >= d.cfg->max_bots) {
		fail(r, "limit", "at most %u bots", d.cfg->max_bots);
		return NULL;
	}
	if (caller != NULL && !family_room(r, caller))
		return NULL;
	b = calloc(1, sizeof *b);
	if (b == NULL)
		goto nomem;
	b->name = strdup(name);
	b->creator = caller != NULL ? strdup(caller->name) : NULL;
	if (b->name == NULL || (caller != NULL && b->creator == NULL))
		goto nomem;
	if (from != NULL) {
		b->sandbox = from->sandbox;
		b->folder = strdup(from->folder);
		if (b->folder == NULL || !spec_paths_dup(&b->writable, &from->writable) ||
		    !spec_paths_dup(&b->readable, &from->readable))
			goto nomem;
		b->network = from->network;
		b->allow_new_repos = from->allow_new_repos;
		b->ttl = from->ttl;
	} else {
		/* A bot's child inherits its sandbox; the operator's gets the default. */
		b->sandbox = caller != NULL ? caller->sandbox : d.cfg->default_sandbox;
		b->network = caller != NULL ? caller->network : d.cfg->default_network;
		b->folder = strdup(s->folder);
		if (b->folder == NULL)
			goto nomem;
	}
	if (s->has_sandbox)
		b->sandbox = s->sandbox;
	if (s->has_writable) {
		paths_free(&b->writable);
		if (!spec_paths_dup(&b->writable, &s->writable))
			goto nomem;
	}
	if (s->has_readable) {
		paths_free(&b->readable);
		if (!spec_paths_dup(&b->readable, &s->readable))
			goto nomem;
	}
	if (s->has_network)
		b->network = s->network;
	if (s->has_allow_new_repos)
		b->allow_new_repos = s->allow_new_repos;
	if (s->has_ttl)
		b->ttl = s->ttl;
	b->created = time(NULL);
	b->expires = b->ttl > 0 ? b->created + b->ttl : 0;
	b->owner_uid = caller != NULL ? caller->owner_uid : server_peer_uid(r->peer);
	if (!bot_user(r, b, s, caller, from)) {
		bot_free(b);
		return NULL;
	}
	if (r->id != NULL && cJSON_IsString(r->id) &&
	    (b->request_id = strdup(r->id->valuestring)) == NULL)
		goto nomem;
	if (!ceiling_ok(r, b)) {
		bot_free(b);
		return NULL;
	}
	if (bot_plan_roots(b) != 0)
		goto nomem;
	return b;
nomem:
	bot_free(b);
	fail(r, "internal", "out of memory");
	return NULL;
}

/* Submit the mount job for a new bot; the name is reserved meanwhile. */
static bool bot_start(struct request *r, struct bot *b)
{
	struct job *j = job_new(r);
	struct bot *c;
	size_t i;

	if (j == NULL) {
		bot_free(b);
		fail(r, "internal", "out of memory");
		return false;
	}
	b->busy = true;
	b->ring = events_ring_new(b->name);
	b->changes = changes_new(b->name, false);
	TAILQ_INSERT_TAIL(&d.bots, b, entry);
	d.nbots++;
	j->bot = b;
	j->uid = caller_of(r) == NULL && r->peer != NULL ? server_peer_uid(r->peer) : 0;
	if (b->creator != NULL && (c = bot_find(b->creator)) != NULL) {
		j->ceiling_set = true;
		for (i = 0; i < c->nroots; i++)
			if (c->roots[i].writable || b->sandbox == SANDBOX_READ_ONLY)
				paths_add(&j->ceiling, c->roots[i].path);
	}
	j->run = run_mount_bot;
	j->done = done_create;
	job_submit(j);
	return true;
}

bool bots_create(struct request *r, struct bot_spec *s)
{
	struct bot *b;

	if (answer_resend(r))
		return false;
	b = bot_new(r, s->name, s, NULL);
	return b != NULL && bot_start(r, b);
}

bool bots_fork(struct request *r, struct bot_spec *s)
{
	struct bot *src, *b;

	if (answer_resend(r))
		return false;
	src = bot_find(s->name);
	if (src == NULL || !bot_visible(r, src)) {
		fail(r, "not_found", "no bot named %s", s->name);
		return false;
	}
	b = bot_new(r, s->as, s, src);
	return b != NULL && bot_start(r, b);
}

/* Collect b and everything it made, children before their parents. */
static void collect(struct bot *b, struct bot ***v, size_t *n)
{
	struct bot *c, **nv;

	TAILQ_FOREACH(c, &d.bots, entry)
		if (c->creator != NULL && strcmp(c->creator, b->name) == 0)
			collect(c, v, n);
	nv = realloc(*v, (*n + 1) * sizeof *nv);
	if (nv == NULL)
		return;
	*v = nv;
	(*v)[(*n)++] = b;
}

static void run_delete(struct job *j)
{
	size_t i;

	for (i = 0; i < j->nvictims; i++)
		bot_unmount_all(j->victims[i]);
}

static void done_delete(struct job *j)
{
	cJSON *body = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(body, "deleted");
	size_t i;

	for (i = 0; i < j->nvictims; i++) {
		struct bot *c =
			j->victims[i]->creator != NULL ? bot_find(j->victims[i]->creator) : NULL;

		log_msg(LOG_INFO, "bot %s deleted", j->victims[i]->name);
		events_bot(j->victims[i], "bot_deleted", NULL, "deleted%s",
			   j->req.peer == NULL ? ": its ttl ran out" : "");
		if (c != NULL && !c->deleting)
			events_bot(c, "bot_deleted", NULL, "%s, which it made, was deleted",
				   j->victims[i]->name);
		changes_forget(j->victims[i]->changes);
		cJSON_AddItemToArray(names, cJSON_CreateString(j->victims[i]->name));
		bot_remove(j->victims[i]);
	}
	save_state();
	request_reply(&j->req, body);
	job_finish(j);
}

/*
 * Delete b and its descendants: their sockets close at once, so their
 * clients are cut off before the mounts go.
 */
static bool bot_delete(struct request *r, struct bot *b)
{
	struct job *j;
	size_t i;

	j = job_new(r);
	if (j == NULL) {
		fail(r, "internal", "out of memory");
		return false;
	}
	collect(b, &j->victims, &j->nvictims);
	for (i = 0; i < j->nvictims; i++) {
		if (j->victims[i]->busy) {
			fail(r, "busy", "bot %s is being changed; ask again", j->victims[i]->name);
			job_abort(j);
			return false;
		}
	}
	for (i = 0; i < j->nvictims; i++) {
		j->victims[i]->busy = true;
		j->victims[i]->deleting = true;
		server_unlisten(d.srv, j->victims[i]);
	}
	j->run = run_delete;
	j->done = done_delete;
	job_submit(j);
	return true;
}

/* rm --force waiting for a bot's sandboxes to end before it deletes the bot. */
struct force {
	struct request req;
	struct bot *bot;
	struct bot **victims;
	size_t nvictims;
	struct event *tick;
	long long start; /* mono_ms() */
	bool killed;
};

/* Milliseconds on the monotonic clock. */
static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned sandboxes_running(struct bot **v, size_t n)
{
	unsigned count = 0;
	size_t i;

	for (i = 0; i < n; i++)
		count += v[i]->nsandboxes;
	return count;
}

static void force_signal(struct force *f, int sig)
{
	struct sandbox_run *sb;
	size_t i;

	for (i = 0; i < f->nvictims; i++)
		LIST_FOREACH(sb, &f->victims[i]->sandboxes, entry)
			sandbox_signal(sb, sig);
}

static void force_tick(evutil_socket_t fd, short what, void *arg)
{
	struct force *f = arg;
	struct timeval tv = {0, 100 * 1000};
	long long waited = mono_ms() - f->start;
	struct peer *p = f->req.peer;
	size_t i;

	if (sandboxes_running(f->victims, f->nvictims) > 0) {
		if (waited < (FORCE_GRACE_S + FORCE_GIVE_UP_S) * 1000) {
			if (waited >= FORCE_GRACE_S * 1000 && !f->killed) {
				log_msg(LOG_INFO,
					"bot %s: sandboxes still running after %d s: SIGKILL",
					f->bot->name, FORCE_GRACE_S);
				force_signal(f, SIGKILL);
				f->killed = true;
			}
			evtimer_add(f->tick, &tv);
			return;
		}
		log_msg(LOG_WARNING, "bot %s: %u sandboxes outlived SIGKILL; deleting anyway",
			f->bot->name, sandboxes_running(f->victims, f->nvictims));
	}
	for (i = 0; i < f->nvictims; i++)
		f->victims[i]->busy = false;
	event_free(f->tick);
	/* bot_delete answers, and resumes the client, or fails at once and answers. */
	if (!bot_delete(&f->req, f->bot)) {
		cJSON_Delete(f->req.id);
		if (p != NULL)
			server_peer_resume(p);
	}
	if (p != NULL)
		server_peer_unref(p);
	free(f->victims);
	free(f);
}

/* End the sandboxes of b and its bots (SIGTERM, then SIGKILL), then delete them. */
static bool force_delete(struct request *r, struct bot *b)
{
	struct timeval now = {0, 0};
	struct force *f = calloc(1, sizeof *f);
	size_t i;

	if (f == NULL || (f->tick = evtimer_new(d.base, force_tick, f)) == NULL) {
		free(f);
		fail(r, "internal", "out of memory");
		return false;
	}
	collect(b, &f->victims, &f->nvictims);
	for (i = 0; i < f->nvictims; i++) {
		if (f->victims[i]->busy) {
			fail(r, "busy", "bot %s is being changed; ask again", f->victims[i]->name);
			event_free(f->tick);
			free(f->victims);
			free(f);
			return false;
		}
	}
	/* Busy: no exec, change or other delete starts meanwhile. */
	for (i = 0; i < f->nvictims; i++)
		f->victims[i]->busy = true;
	f->req = *r;
	f->bot = b;
	f->start = mono_ms();
	if (r->peer != NULL)
		server_peer_ref(r->peer);
	log_msg(LOG_INFO, "bot %s: rm --force: ending %u sandboxes (SIGTERM)", b->name,
		sandboxes_running(f->victims, f->nvictims));
	force_signal(f, SIGTERM);
	evtimer_add(f->tick, &now);
	return true;
}

/* "bot lead has 2 running sandboxes (pids 123, 456)" for b and its bots. */
static void running_msg(struct bot **v, size_t n, char *out, size_t len)
{
	struct sandbox_run *sb;
	size_t i, off;

	off = (size_t)snprintf(out, len, "pid%s", sandboxes_running(v, n) == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		LIST_FOREACH(sb, &v[i]->sandboxes, entry)
			if (off < len)
				off += (size_t)snprintf(out + off, len - off, " %d", (int)sb->pid);
}

bool bots_delete(struct request *r, const char *name, bool force)
{
	struct bot *caller = caller_of(r), *b, **v = NULL;
	char pids[256];
	size_t n = 0;
	unsigned running;

	if ((b = visible_bot(r, name)) == NULL)
		return false;
	if (caller != NULL && b == caller) {
		fail(r, "forbidden", "a bot cannot delete itself; ask whoever made it");
		return false;
	}
	collect(b, &v, &n);
	running = sandboxes_running(v, n);
	running_msg(v, n, pids, sizeof pids);
	free(v);
	if (running > 0 && !force) {
		fail(r, "running",
		     "bot %s (or a bot it made) has %u running sandbox%s (agentfs exec, %s): "
		     "nothing was deleted; end %s, or `agentfs rm --force %s` ends %s first "
		     "(SIGTERM, then SIGKILL after %d s)",
		     b->name, running, running == 1 ? "" : "es", pids, running == 1 ? "it" : "them",
		     b->name, running == 1 ? "it" : "them", FORCE_GRACE_S);
		return false;
	}
	if (running > 0)
		return force_delete(r, b);
	return bot_delete(r, b);
}

static void ttl_expired(evutil_socket_t fd, short what, void *arg)
{
	struct bot *b = arg;
	struct request r = {0};
	struct timeval tv = {1, 0};

	if (b->busy) {
		evtimer_add(b->ttl_ev, &tv);
		return;
	}
	log_msg(LOG_INFO, "bot %s: ttl ran out", b->name);
	bot_delete(&r, b);
}

static void run_configure(struct job *j)
{
	size_t i;

	for (i = 0; i < j->nunmount; i++) {
		fs_unmount(j->unmount[i]);
		fs_mount_free(j->unmount[i]);
	}
	for (i = 0; i < j->bot->nroots; i++) {
		struct root *rt = &j->bot->roots[i];

		if (rt->m == NULL && rt->error == NULL) {
			j->error = 0;
			root_mount(j, j->bot, rt);
			if (j->error != 0)
				log_msg(LOG_WARNING, "bot %s: %s", j->bot->name, j->msg);
		}
	}
	j->error = 0;
}

static void done_configure(struct job *j)
{
	cJSON *body = cJSON_CreateObject();
	size_t i;

	j->bot->busy = false;
	events_bot(j->bot, "bot_configured", NULL, "configured: sandbox %s, %zu roots",
		   sandbox_name(j->bot->sandbox), j->bot->nroots);
	for (i = 0; i < j->bot->nroots; i++) {
		struct root *rt = &j->bot->roots[i];

		if (rt->was_lost && rt->m != NULL)
			events_bot(j->bot, "mount_restored", rt->path, "%s mounted again at %s",
				   rt->path, rt->mountpoint);
		rt->was_lost = false;
	}
	save_state();
	cJSON_AddItemToObject(body, "bot", bot_to_json(j->bot, true));
	request_reply(&j->req, body);
	job_finish(j);
}

/* Configure names only folders that exist, as create does (it fails at the mount). */
static bool folders_exist(struct request *r, const struct paths *p)
{
	size_t i;
	int fd, e;

	for (i = 0; i < p->n; i++) {
		fd = open_folder(p->v[i]);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		e = errno;
		fail(r, "bad_path", "%s: %s", p->v[i],
		     e == ELOOP	    ? "a component is a symbolic link (give the real path)"
		     : e == ENOTDIR ? "not a folder"
		     : e == ENOENT  ? "no such folder"
				    : strerror(e));
		return false;
	}
	return true;
}

bool bots_configure(struct request *r, struct bot_spec *s)
{
	struct bot *caller = caller_of(r), *b, next = {0}, *c;
	struct root *old;
	size_t nold, i, k;
	struct job *j;

	if ((b = visible_bot(r, s->name)) == NULL)
		return false;
	if (caller == b) {
		fail(r, "forbidden", "a bot cannot configure itself");
		return false;
	}
	if (b->busy) {
		fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return false;
	}
	/* What the bot would be: checked whole before anything changes. */
	next = *b;
	next.writable = s->has_writable ? s->writable : b->writable;
	next.readable = s->has_readable ? s->readable : b->readable;
	if (s->has_sandbox)
		next.sandbox = s->sandbox;
	if (s->has_network)
		next.network = s->network;
	if (s->has_allow_new_repos)
		next.allow_new_repos = s->allow_new_repos;
	/* The ceiling first: a bot learns nothing of folders beyond it. */
	if (!ceiling_ok(r, &next) || (s->has_writable && !folders_exist(r, &s->writable)) ||
	    (s->has_readable && !folders_exist(r, &s->readable)))
		return false;
	TAILQ_FOREACH(c, &d.bots, entry) {
		char why[512];

		if (c->creator != NULL && strcmp(c->creator, b->name) == 0 && !c->deleting &&
		    !within_ceiling(c, &next, why, sizeof why)) {
			fail(r, "forbidden",
			     "%s would be above its maker's new limits (%s): "
			     "configure or delete it first",
			     c->name, why);
			return false;
		}
	}
	/*
	 * Everything that can fail comes first, before the bot changes: a
	 * removed root's mount must reach the unmount list, never be dropped.
	 */
	j = job_new(r);
	if (j == NULL) {
		fail(r, "internal", "out of memory");
		return false;
	}
	j->unmount = calloc(b->nroots + 1, sizeof *j->unmount);
	next.roots = NULL;
	next.nroots = 0;
	if (j->unmount == NULL || bot_plan_roots(&next) != 0) {
		fail(r, "internal", "out of memory");
		job_abort(j);
		return false;
	}
	if (s->has_writable) {
		paths_free(&b->writable);
		b->writable = s->writable;
		memset(&s->writable, 0, sizeof s->writable);
	}
	if (s->has_readable) {
		paths_free(&b->readable);
		b->readable = s->readable;
		memset(&s->readable, 0, sizeof s->readable);
	}
	b->sandbox = next.sandbox;
	b->network = next.network;
	b->allow_new_repos = next.allow_new_repos;
	if (s->has_ttl) {
		b->ttl = s->ttl;
		b->expires = s->ttl > 0 ? time(NULL) + s->ttl : 0;
		if (b->ttl_ev != NULL)
			evtimer_del(b->ttl_ev);
		bot_arm_ttl(b);
	}
	/*
	 * Keep the mounts whose root stays: their access changes in place at
	 * once. Roots that go are unmounted, new ones mounted for the next exec.
	 */
	old = b->roots;
	nold = b->nroots;
	b->roots = next.roots;
	b->nroots = next.nroots;
	b->mount_seq = next.mount_seq;
	for (k = 0; k < nold; k++) {
		for (i = 0; i < b->nroots; i++) {
			if (!b->roots[i].kept && strcmp(b->roots[i].path, old[k].path) == 0 &&
			    old[k].lost) {
				/* Mounted again at its place once the old mount has ended. */
				b->roots[i].kept = true;
				b->roots[i].was_lost = true;
				free(b->roots[i].mountpoint);
				b->roots[i].mountpoint = old[k].mountpoint;
				old[k].mountpoint = NULL;
				break;
			}
			if (!b->roots[i].kept && strcmp(b->roots[i].path, old[k].path) == 0) {
				b->roots[i].kept = true;
				b->roots[i].m = old[k].m;
				free(b->roots[i].mountpoint);
				b->roots[i].mountpoint = old[k].mountpoint;
				old[k].mountpoint = NULL;
				old[k].m = NULL;
				if (b->roots[i].m != NULL) {
					fs_mount_set_readonly(b->roots[i].m, !b->roots[i].writable);
					fs_mount_set_allow_new_repos(b->roots[i].m,
								     b->allow_new_repos);
				}
				break;
			}
		}
		if (old[k].m != NULL)
			j->unmount[j->nunmount++] = old[k].m;
		if (old[k].mountpoint != NULL && old[k].m == NULL)
			rmdir(old[k].mountpoint);
		free(old[k].path);
		free(old[k].mountpoint);
		free(old[k].error);
	}
	free(old);
	b->busy = true;
	j->bot = b;
	j->uid = caller == NULL && r->peer != NULL ? server_peer_uid(r->peer) : 0;
	j->run = run_configure;
	j->done = done_configure;
	job_submit(j);
	return true;
}

void bots_list(struct request *r)
{
	struct bot *b;
	cJSON *body = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(body, "bots");

	TAILQ_FOREACH(b, &d.bots, entry)
		if (!b->deleting && bot_visible(r, b))
			cJSON_AddItemToArray(arr, bot_to_json(b, false));
	request_reply(r, body);
}

/* The running `agentfs exec`s of b, in show: [{"pid": N, "init": M}] (init once known). */
static void sandboxes_json(const struct bot *b, cJSON *bot)
{
	cJSON *arr = cJSON_AddArrayToObject(bot, "sandboxes"), *o;
	struct sandbox_run *sb;

	LIST_FOREACH(sb, &b->sandboxes, entry) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", sb->pid);
		if (sb->init > 0)
			cJSON_AddNumberToObject(o, "init", sb->init);
		cJSON_AddItemToArray(arr, o);
	}
}

void bots_show(struct request *r, const char *name)
{
	struct bot *b;
	cJSON *body, *bot;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	check_lost(b);
	body = cJSON_CreateObject();
	bot = bot_to_json(b, true);
	cJSON_AddItemToObject(body, "bot", bot);
	sandboxes_json(b, bot);
	request_reply(r, body);
}

/* How many bots the asker sees (all of them, for root). */
static unsigned bots_seen(struct request *r)
{
	struct bot *b;
	unsigned n = 0;

	if (operator_uid(r) == 0)
		return d.nbots;
	TAILQ_FOREACH(b, &d.bots, entry)
		if (!b->deleting && bot_visible(r, b))
			n++;
	return n;
}

void bots_status(struct request *r)
{
	cJSON *body = cJSON_CreateObject();
	struct bot *caller = caller_of(r);

	cJSON_AddStringToObject(body, "version", PACKAGE_VERSION);
	cJSON_AddNumberToObject(body, "protocol", PROTOCOL_VERSION);
	if (caller != NULL) {
		cJSON_AddStringToObject(body, "bot", caller->name);
	} else {
		cJSON_AddNumberToObject(body, "pid", getpid());
		cJSON_AddNumberToObject(body, "uptime", (double)(time(NULL) - d.started));
		cJSON_AddNumberToObject(body, "bots", bots_seen(r));
		cJSON_AddNumberToObject(body, "mounts", fs_mount_count(d.fs));
		cJSON_AddNumberToObject(body, "clients", server_clients(d.srv));
		cJSON_AddNumberToObject(body, "workers", d.cfg->workers);
		cJSON_AddNumberToObject(body, "poll_us",
					d.cfg->poll_set ? d.cfg->poll_us : FS_POLL_US_DEFAULT);
		cJSON_AddStringToObject(body, "socket", d.cfg->socket_path);
		cJSON_AddStringToObject(body, "state", d.cfg->state_dir);
	}
	request_reply(r, body);
}

/*
 * What `agentfs exec` needs to confine a bot with bwrap: each root's mount
 * and the path to bind it at, the bot's socket, and the daemon's own paths
 * to hide. The client runs bwrap; the daemon never starts processes.
 */
void bots_exec_plan(struct request *r, const char *name)
{
	struct bot *b;
	cJSON *body, *binds, *o, *hide;
	size_t i;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	if (b->busy) {
		fail(r, "busy", "bot %s is being changed; ask again", b->name);
		return;
	}
	check_lost(b);
	for (i = 0; i < b->nroots; i++) {
		if (b->roots[i].lost) {
			fail(r, "mount_lost",
			     "%s was unmounted from outside (its mount %s): nothing was run; "
			     "`agentfs configure %s` (or restarting agentfsd) mounts it again",
			     b->roots[i].path, b->roots[i].mountpoint, b->name);
			return;
		}
		if (b->roots[i].m == NULL) {
			fail(r, "mount_failed", "%s is not mounted: %s", b->roots[i].path,
			     b->roots[i].error != NULL ? b->roots[i].error : "unknown reason");
			return;
		}
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "name", b->name);
	cJSON_AddStringToObject(body, "sandbox", sandbox_name(b->sandbox));
	cJSON_AddBoolToObject(body, "network", b->network);
	cJSON_AddNumberToObject(body, "uid", b->uid);
	cJSON_AddStringToObject(body, "folder", b->folder);
	cJSON_AddStringToObject(body, "socket",
				b->sock != NULL ? server_listener_path(b->sock) : "");
	cJSON_AddStringToObject(body, "control_socket", d.cfg->socket_path);
	binds = cJSON_AddArrayToObject(body, "binds");
	for (i = 0; i < b->nroots; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "source", b->roots[i].mountpoint);
		cJSON_AddStringToObject(o, "path", b->roots[i].path);
		cJSON_AddBoolToObject(o, "writable", b->roots[i].writable);
		cJSON_AddItemToArray(binds, o);
	}
	hide = cJSON_AddArrayToObject(body, "hide");
	cJSON_AddItemToArray(hide, cJSON_CreateString(d.cfg->state_dir));
	{
		char *sd;

		if (asprintf(&sd, "%s.d", d.cfg->socket_path) >= 0) {
			cJSON_AddItemToArray(hide, cJSON_CreateString(sd));
			free(sd);
		}
	}
	request_reply(r, body);
}

void bots_shutdown(struct request *r)
{
	if (caller_of(r) != NULL) {
		fail(r, "forbidden", "a bot cannot shut the daemon down");
		return;
	}
	if (operator_uid(r) != 0) {
		fail(r, "forbidden", "only root may shut agentfsd down");
		return;
	}
	d.shutdown_requested = true;
	request_reply(r, NULL);
	log_msg(LOG_INFO, "shutdown requested");
	event_base_loopexit(d.base, NULL);
}

/* log: a bot's events (its own and its descendants' only), or the daemon's for the operator. */
bool bots_log(struct request *r, const char *name, uint64_t since, bool follow)
{
	struct bot *caller = caller_of(r), *b = name != NULL ? bot_find(name) : caller;

	if (name != NULL && (b == NULL || b->deleting || !bot_visible(r, b))) {
		fail(r, "not_found", "no bot named %s", name);
		return false;
	}
	/* the daemon's log names every bot: root's alone */
	if (b == NULL && operator_uid(r) != 0) {
		fail(r, "forbidden", "only root reads every bot's log: name one of your bots");
		return false;
	}
	return events_log(r, b, since, follow);
}

/* changes and mark: of a bot the caller may see (itself included). */
void bots_changes(struct request *r, const char *name, uint64_t since, bool mark)
{
	struct bot *b;

	if ((b = visible_bot(r, name)) == NULL)
		return;
	if (mark)
		changes_mark(r, b->changes);
	else
		changes_list(r, b->changes, since);
}

static void *job_main(void *arg)
{
	struct job *j;

	pthread_mutex_lock(&d.lock);
	for (;;) {
		while (d.todo == NULL && !d.stopping)
			pthread_cond_wait(&d.cond, &d.lock);
		if (d.todo == NULL)
			break;
		j = d.todo;
		d.todo = j->next;
		if (d.todo == NULL)
			d.todo_tail = &d.todo;
		pthread_mutex_unlock(&d.lock);
		if (j->run != NULL)
			j->run(j);
		pthread_mutex_lock(&d.lock);
		j->next = d.done;
		d.done = j;
		event_active(d.done_ev, EV_READ, 0);
	}
	pthread_mutex_unlock(&d.lock);
	return NULL;
}

static void job_submit(struct job *j)
{
	pthread_mutex_lock(&d.lock);
	j->next = NULL;
	*d.todo_tail = j;
	d.todo_tail = &j->next;
	pthread_cond_signal(&d.cond);
	pthread_mutex_unlock(&d.lock);
}

static void job_done(evutil_socket_t fd, short what, void *arg)
{
	struct job *list, *j, *rev = NULL;

	pthread_mutex_lock(&d.lock);
	list = d.done;
	d.done = NULL;
	pthread_mutex_unlock(&d.lock);
	while ((j = list) != NULL) { /* in the order they finished */
		list = j->next;
		j->next = rev;
		rev = j;
	}
	while ((j = rev) != NULL) {
		rev = j->next;
		j->done(j);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int collect_ours(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct paths *ps = arg;

	(void)id;
	if (strcmp(fstype, "fuse.agentfs") == 0 && path_within(mp, d.cfg->mount_dir))
		return paths_add(ps, mp) != 0;
	return 0;
}

/*
 * Mark the roots whose mount is no longer in the mount table: unmounted
 * from outside (umount -l, fusermount3 -uz) while a sandbox still holds it,
 * so the FUSE connection lives on. Their mounts keep serving those
 * sandboxes; exec refuses the bot and show says "lost" until a configure
 * or a restart mounts them again. Only bot, if given; busy bots are left
 * alone. Fails open to nothing: without the table, nothing is marked.
 */
static void check_lost(struct bot *only)
{
	struct paths ours = {0};
	struct bot *b;
	size_t i;

	if (fs_mountinfo_each(collect_ours, &ours) != 0) {
		paths_free(&ours);
		return;
	}
	if (ours.n > 0) /* qsort and bsearch take no NULL array, even empty */
		qsort(ours.v, ours.n, sizeof *ours.v, cmp_str);
	TAILQ_FOREACH(b, &d.bots, entry) {
		if ((only != NULL && b != only) || b->busy || b->deleting)
			continue;
		for (i = 0; i < b->nroots; i++) {
			struct root *rt = &b->roots[i];

			if (rt->m == NULL || rt->lost ||
			    (ours.n > 0 &&
			     bsearch(&rt->mountpoint, ours.v, ours.n, sizeof *ours.v, cmp_str) != NULL))
				continue;
			log_msg(LOG_WARNING,
				"bot %s: %s was unmounted from outside; "
				"agentfs configure %s mounts it again",
				b->name, rt->mountpoint, b->name);
			events_bot(b, "mount_lost", rt->path,
				   "%s was unmounted from outside; agentfs configure %s mounts it "
				   "again",
				   rt->mountpoint, b->name);
			rt->lost = true;
			free(rt->error);
			rt->error = strdup("unmounted from outside");
		}
	}
	paths_free(&ours);
}

/* The mount table changed (edge-triggered: any mount on the host). */
static void mountinfo_changed(evutil_socket_t fd, short what, void *arg)
{
	check_lost(NULL);
}

/* A mount ended from outside (umount by someone): note it on its root. */
static void done_lost(struct job *j)
{
	struct bot *b;
	size_t i;

	TAILQ_FOREACH(b, &d.bots, entry) {
		for (i = 0; i < b->nroots; i++) {
			if (b->roots[i].m == j->lost) {
				log_msg(LOG_WARNING, "bot %s: %s was unmounted from outside",
					b->name, b->roots[i].mountpoint);
				if (!b->roots[i].lost)
					events_bot(
						b, "mount_lost", b->roots[i].path,
						"%s was unmounted from outside; agentfs configure "
						"%s mounts it again",
						b->roots[i].mountpoint, b->name);
				fs_mount_free(j->lost);
				b->roots[i].m = NULL;
				b->roots[i].lost = true;
				free(b->roots[i].error);
				b->roots[i].error = strdup("unmounted from outside");
				j->lost = NULL;
			}
		}
	}
	job_finish(j);
}

static void fs_lost_cb(void *arg, struct fs_mount *m)
{
	struct job *j = calloc(1, sizeof *j);

	if (j == NULL)
		return;
	j->lost = m;
	j->done = done_lost;
	pthread_mutex_lock(&d.lock);
	j->next = d.done;
	d.done = j;
	event_active(d.done_ev, EV_READ, 0);
	pthread_mutex_unlock(&d.lock);
}

/* Detach mounts a dead predecessor left under our mount folder. */
static int clean_stale(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	if (strcmp(fstype, "fuse.agentfs") == 0 && path_within(mp, d.cfg->mount_dir) &&
	    strcmp(mp, d.cfg->mount_dir) != 0) {
		if (umount2(mp, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			log_msg(LOG_INFO, "detached stale mount %s", mp);
		else
			log_msg(LOG_WARNING, "cannot detach stale mount %s: %s", mp,
				strerror(errno));
	}
	return 0;
}

/* Bots whose ttl ran out while no daemon ran go, with what they made, before anything mounts. */
static void drop_expired(void)
{
	struct bot *b, **v = NULL;
	time_t now = time(NULL);
	size_t n = 0, i;
	bool again = true;

	while (again) {
		again = false;
		TAILQ_FOREACH(b, &d.bots, entry) {
			if (b->expires != 0 && b->expires <= now) {
				collect(b, &v, &n);
				for (i = 0; i < n; i++) {
					log_msg(LOG_INFO,
						"bot %s: ttl ran out while agentfsd was down",
						v[i]->name);
					TAILQ_REMOVE(&d.bots, v[i], entry);
					bot_free(v[i]);
				}
				free(v);
				v = NULL;
				n = 0;
				again = true;
				break;
			}
		}
	}
	save_state();
}

/*
 * A daemon killed mid-change may leave a bot's socket file or an empty
 * mount folder for a bot the state does not hold: remove them.
 */
static void clean_leftovers(void)
{
	char path[PATH_MAX], name[BOT_NAME_MAX + 8];
	struct dirent *de;
	DIR *dir;
	size_t n;

	snprintf(path, sizeof path, "%s.d", d.cfg->socket_path);
	if ((dir = opendir(path)) != NULL) {
		while ((de = readdir(dir)) != NULL) {
			n = strlen(de->d_name);
			if (n < 6 || n - 5 > BOT_NAME_MAX ||
			    strcmp(de->d_name + n - 5, ".sock") != 0)
				continue;
			memcpy(name, de->d_name, n - 5);
			name[n - 5] = '\0';
			if (bot_find(name) == NULL && unlinkat(dirfd(dir), de->d_name, 0) == 0)
				log_msg(LOG_INFO, "removed the socket of a bot that is gone: %s",
					de->d_name);
		}
		closedir(dir);
	}
	if ((dir = opendir(d.cfg->mount_dir)) != NULL) {
		while ((de = readdir(dir)) != NULL)
			if (de->d_name[0] != '.' && bot_find(de->d_name) == NULL)
				unlinkat(dirfd(dir), de->d_name, AT_REMOVEDIR); /* only if empty */
		closedir(dir);
	}
}

static void done_restore(struct job *j)
{
	char err[512];
	size_t i, n = 0;

	j->bot->busy = false;
	for (i = 0; i < j->bot->nroots; i++)
		n += j->bot->roots[i].m != NULL;
	events_bot(j->bot, "bot_restored", j->bot->folder,
		   "restored at agentfsd's start: %zu of %zu roots mounted", n, j->bot->nroots);
	if (!bot_activate(j->bot, err, sizeof err))
		log_msg(LOG_ERR, "bot %s: %s", j->bot->name, err);
	job_finish(j);
}

int bots_init(struct event_base *base, struct config *cfg, struct server *srv, char *err,
	      size_t errlen)
{
	struct fs_params fp = {.workers = cfg->workers,
			       .timeout = -1,
			       .log = fs_log_cb,
			       .lost = fs_lost_cb,
			       .event = fs_event_cb};

	if (cfg->poll_set)
		fp.poll_us = cfg->poll_us == 0 ? -1 : (int)cfg->poll_us;
	struct fs_error ferr = {0};
	struct bot *b;
	struct job *j;
	int r;

	d.base = base;
	d.cfg = cfg;
	d.srv = srv;
	d.fs = fs_new(&fp, &ferr);
	if (d.fs == NULL) {
		snprintf(err, errlen, "%s", ferr.msg);
		return -ferr.code;
	}
	d.started = time(NULL);
	TAILQ_INIT(&d.bots);
	pthread_mutex_init(&d.lock, NULL);
	pthread_cond_init(&d.cond, NULL);
	d.todo_tail = &d.todo;
	d.done_ev = event_new(base, -1, 0, job_done, NULL);
	d.prog_ev = event_new(base, -1, 0, progress_send, NULL);
	if (d.done_ev == NULL || d.prog_ev == NULL || events_init(base, &d.bots) != 0 ||
	    changes_init(cfg->state_dir, cfg->max_changes) != 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((r = pthread_create(&d.thread, NULL, job_main, NULL)) != 0) {
		snprintf(err, errlen, "cannot start the job thread: %s", strerror(r));
		return -r;
	}
	d.thread_started = true;
	d.mountinfo_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (d.mountinfo_fd >= 0) {
		d.mountinfo_ev = event_new(base, d.mountinfo_fd, EV_READ | EV_ET | EV_PERSIST,
					   mountinfo_changed, NULL);
		if (d.mountinfo_ev == NULL || event_add(d.mountinfo_ev, NULL) != 0)
			log_msg(LOG_WARNING, "cannot watch the mount table: lost mounts are "
					     "noticed at exec and show only");
	}
	fs_mountinfo_each(clean_stale, NULL);
	r = state_load(cfg, &d.bots, err, errlen);
	if (r != 0)
		return r;
	drop_expired();
	clean_leftovers();
	TAILQ_FOREACH(b, &d.bots, entry) {
		d.nbots++;
		if (bot_plan_roots(b) != 0) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		j = calloc(1, sizeof *j);
		if (j == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		b->busy = true;
		b->ring = events_ring_new(b->name);
		b->changes = changes_new(b->name, true);
		j->bot = b;
		j->run = run_restore_bot;
		j->done = done_restore;
		job_submit(j);
	}
	return 0;
}

/* Stop the job thread, then unmount everything and close every socket. */
void bots_stop(void)
{
	struct bot *b;

	if (d.thread_started) {
		pthread_mutex_lock(&d.lock);
		d.stopping = true;
		pthread_cond_signal(&d.cond);
		pthread_mutex_unlock(&d.lock);
		pthread_join(d.thread, NULL);
		d.thread_started = false;
		/* Finish what the thread completed, so every client gets its answer. */
		job_done(-1, 0, NULL);
	}
	save_state();
	while ((b = TAILQ_FIRST(&d.bots)) != NULL) {
		bot_unmount_all(b);
		bot_remove(b);
	}
	d.nbots = 0;
	events_stop();
	changes_stop();
	if (d.done_ev != NULL)
		event_free(d.done_ev);
	d.done_ev = NULL;
	if (d.prog_ev != NULL)
		event_free(d.prog_ev);
	d.prog_ev = NULL;
	if (d.mountinfo_ev != NULL)
		event_free(d.mountinfo_ev);
	d.mountinfo_ev = NULL;
	if (d.mountinfo_fd > 0)
		close(d.mountinfo_fd);
	d.mountinfo_fd = -1;
	fs_free(d.fs);
	d.fs = NULL;
}
