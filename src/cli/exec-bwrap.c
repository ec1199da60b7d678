/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: bwrap's command line, made from agentfsd's plan (the
 * argument table), sent to the bwrap child forked before it was known (its
 * launch), and what bwrap tells back: its status on
 * --json-status-fd, read as JSON, and its own standard error, held until
 * it is known whether the setup is tried again; and the private mount
 * table the bwrap child starts from.
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>

void exec_arg(struct argv_buf *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap * 2 + 32;
		a->v = realloc(a->v, a->cap * sizeof *a->v);
		if (a->v == NULL)
			die("out of memory");
	}
	a->v[a->n] = strdup(s);
	if (a->v[a->n] == NULL)
		die("out of memory");
	a->v[++a->n] = NULL;
}

static void args(struct argv_buf *a, const char *const *v)
{
	for (; *v != NULL; v++)
		exec_arg(a, *v);
}

void exec_args_free(struct argv_buf *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof *a);
}

const char *exec_jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A whole number of o's field k, from 0 to below 2^32, into *out; false if there is none. */
static bool plan_id(const cJSON *o, const char *k, uint32_t *out)
{
	const cJSON *v = k != NULL ? cJSON_GetObjectItemCaseSensitive(o, k) : o;

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= UINT32_MAX ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return false;
	*out = (uint32_t)v->valuedouble;
	return true;
}

/*
 * The ids of uid from the host's user database (a uid without a name gets
 * its own number as group), and, as su and sudo do, its HOME, USER and
 * LOGNAME in our environment, which the command inherits. Only agentfs
 * calls it: agentfs-enter, linked statically, loads no NSS module.
 */
static void user_ids(uid_t uid, struct ids *id)
{
	struct passwd pw, *pwp = NULL;
	char buf[16384];

	id->uid = uid;
	id->gid = (gid_t)uid;
	id->groups[0] = id->gid;
	id->ngroups = 1;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) != 0 || pwp == NULL)
		return;
	id->gid = pw.pw_gid;
	id->ngroups = MAX_GROUPS;
	if (getgrouplist(pw.pw_name, pw.pw_gid, id->groups, &id->ngroups) < 0)
		die("%s is in more than %d groups", pw.pw_name, MAX_GROUPS);
	if (setenv("HOME", pw.pw_dir, 1) != 0 || setenv("USER", pw.pw_name, 1) != 0 ||
	    setenv("LOGNAME", pw.pw_name, 1) != 0)
		die("out of memory");
}

/*
 * The ids the bot's user uid has (and, as su and sudo do, its HOME, USER
 * and LOGNAME in our environment, which the command inherits): from the
 * plan's "user", which agentfsd looked up in its user database (so this
 * process loads no NSS module, a few ms of every start), else from ours
 * (an older agentfsd, or a uid the daemon found no entry for). A "user"
 * that is not whole is the daemon's fault, and nothing runs on it.
 */
void exec_plan_ids(const cJSON *plan, uid_t uid, struct ids *id)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(plan, "user"), *g, *v;
	const char *name = exec_jstr(u, "name"), *home = exec_jstr(u, "home");
	uint32_t n;

	if (u == NULL) {
		user_ids(uid, id);
		return;
	}
	g = cJSON_GetObjectItemCaseSensitive(u, "groups");
	if (name == NULL || *name == '\0' || home == NULL || !plan_id(u, "gid", &n) ||
	    !cJSON_IsArray(g) || cJSON_GetArraySize(g) > MAX_GROUPS)
		die("agentfsd sent a bad exec plan (its \"user\")");
	id->uid = uid;
	id->gid = n;
	id->ngroups = 0;
	cJSON_ArrayForEach(v, g) {
		if (!plan_id(v, NULL, &n))
			die("agentfsd sent a bad exec plan (its \"user\")");
		id->groups[id->ngroups++] = n;
	}
	if (setenv("HOME", home, 1) != 0 || setenv("USER", name, 1) != 0 ||
	    setenv("LOGNAME", name, 1) != 0)
		die("out of memory");
}

static int by_depth(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return (int)strlen(exec_jstr(x, "path")) - (int)strlen(exec_jstr(y, "path"));
}

/*
 * The host read-only and a fresh /tmp, before the roots (a root under /tmp
 * lands in that tmpfs). Order matters: each later bind lands on what the
 * earlier ones made.
 */
static const char *const base_args[] = {"--ro-bind", "/",      "/",    "--perms",
					"01777",     "--tmpfs", "/tmp", NULL};

/*
 * Fresh /dev, /dev/shm and /proc, after the roots. A root's path is where
 * bwrap binds it, following symbolic links; a bot that may write the folder
 * above another bot's root can swap that root's folder for a link to /dev
 * between root_path_check's look and bwrap's bind. Made after the roots,
 * these are bwrap's own wherever a root landed, and so is EXEC_SELF, which
 * bwrap then runs as root by its path.
 */
static const char *const late_args[] = {"--dev",   "/dev",	"--perms", "01777", "--tmpfs",
					"/dev/shm", "--proc", "/proc",	NULL};

/*
 * /proc/keys lists every key the reader may view: those its user keeps in
 * the user keyring too (names only, the filter keeps the rest). An empty
 * file over each: /dev/null, which reads empty (the bind must keep device
 * access for that, and /dev/null is harmless).
 */
static const char *const proc_keys[] = {"/proc/keys", "/proc/key-users", NULL};

/* New IPC, PID and UTS namespaces (and cgroup where the kernel allows). */
static const char *const ns_args[] = {"--unshare-ipc", "--unshare-pid", "--unshare-uts",
				      "--unshare-cgroup-try", NULL};

/*
 * bwrap run as root keeps every capability unless told (a bot could
 * remount /): all dropped but CAP_SETUID and CAP_SETGID, which agentfs-enter
 * gives up with root.
 */
static const char *const root_caps[] = {"--cap-drop", "ALL",	    "--cap-add", "CAP_SETUID",
					"--cap-add",  "CAP_SETGID", NULL};

/*
 * bwrap run by an operator who is not root makes a user namespace of its
 * own (the kernel must let users make them), mapping only the operator's
 * uid and gid; no user namespace can be made inside, and no capability is
 * kept in it.
 */
static const char *const userns_args[] = {"--unshare-user", "--disable-userns", "--cap-drop", "ALL",
					  NULL};

/* The sandbox dies with agentfs exec; the command gets a session of its own (TIOCSTI). */
static const char *const tail_args[] = {"--die-with-parent", "--new-session", NULL};

/*
 * A bind whose source bwrap takes as a descriptor (--ro-bind-fd), not a
 * path: bwrap resolves a source path in the host's tree as it is in its own
 * mount namespace, where a root it bound before may lie over it (a task's
 * folder swapped for a link to /oldroot/usr/libexec/agentfs puts the bot's
 * file where agentfs-enter is read from). The bwrap child opens PATH before
 * bwrap starts (exec_fd_args) and the argument becomes the descriptor.
 */
#define FD_MARK "\001agentfs-fd:"

static void fd_bind_as(struct argv_buf *a, const char *how, const char *path, const char *dest)
{
	char *s;

	if (asprintf(&s, "%s%s", FD_MARK, path) < 0)
		die("out of memory");
	exec_arg(a, how);
	exec_arg(a, s);
	exec_arg(a, dest);
	free(s);
}

static void fd_bind(struct argv_buf *a, const char *path, const char *dest)
{
	fd_bind_as(a, "--ro-bind-fd", path, dest);
}

int exec_fd_args(char **argv)
{
	size_t n = strlen(FD_MARK);
	int fd;

	for (; *argv != NULL; argv++) {
		if (strncmp(*argv, FD_MARK, n) != 0)
			continue;
		fd = open(*argv + n, O_PATH);
		if (fd < 0 || asprintf(argv, "%d", fd) < 0)
			return -1;
	}
	return 0;
}

/* The daemon's state (every bot's mounts), every bot's socket: out of sight. */
static void hide(struct argv_buf *a, const cJSON *plan)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "hide")) {
		if (cJSON_IsString(v) && access(v->valuestring, F_OK) == 0) {
			exec_arg(a, "--tmpfs");
			exec_arg(a, v->valuestring);
		}
	}
}

/*
 * A root's path must lead to a folder without a symbolic link on the way:
 * bwrap would bind the root where the link points. agentfsd keeps each path
 * as it was resolved when the bot was made; a link there now is a change
 * since, by whoever may write the folder above (the bot that made this one,
 * say), and the sandbox is not started. Without openat2 (Linux 5.6) only
 * late_args' order stands.
 */
static void root_path_check(const char *path)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);

	if (fd >= 0) {
		close(fd);
		return;
	}
	if (errno == ELOOP || errno == ENOTDIR)
		die("the root %s is no longer a folder at that path (a symbolic link is on the "
		    "way, made after the bot was): not starting the sandbox; put the folder back, "
		    "or remove the bot (agentfs rm)",
		    path);
}

/* Each root from its mount, at its own path, parents before nested roots. */
static void binds(struct argv_buf *a, const cJSON *plan)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(plan, "binds"), *v;
	const cJSON **sorted;
	size_t n = 0, i;

	sorted = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *sorted);
	if (sorted == NULL)
		die("out of memory");
	cJSON_ArrayForEach(v, list) {
		if (exec_jstr(v, "path") == NULL || exec_jstr(v, "source") == NULL)
			die("agentfsd sent a bad exec plan");
		sorted[n++] = v;
	}
	qsort(sorted, n, sizeof *sorted, by_depth);
	for (i = 0; i < n; i++) {
		root_path_check(exec_jstr(sorted[i], "path"));
		/* from a descriptor: a root bound before may lie over the source's path */
		fd_bind_as(a,
			   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sorted[i], "writable"))
				   ? "--bind-fd"
				   : "--ro-bind-fd",
			   exec_jstr(sorted[i], "source"), exec_jstr(sorted[i], "path"));
	}
	free(sorted);
}

/* Is path's folder one the plan hides, an empty tmpfs in the sandbox (hide)? */
static bool in_hidden_folder(const cJSON *plan, const char *path)
{
	const char *slash = strrchr(path, '/');
	const cJSON *v;

	if (slash == NULL || slash == path)
		return false;
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "hide"))
		if (cJSON_IsString(v) && strlen(v->valuestring) == (size_t)(slash - path) &&
		    strncmp(v->valuestring, path, (size_t)(slash - path)) == 0 &&
		    access(v->valuestring, F_OK) == 0)
			return true;
	return false;
}

/*
 * The bot's socket over the control socket's path, so a client that uses
 * the default talks as the bot, and at its own path, which AGENT_SOCKET
 * names. Each bind costs bwrap a mount and a reading of the mount table
 * (bench/README.md): when the socket's folder is hidden (SOCKET.d, an
 * empty tmpfs inside), its path is a symbolic link to the bound one
 * instead, made in that tmpfs, where the bot cannot write.
 */
static void agent_socket(struct argv_buf *a, const cJSON *plan)
{
	const char *sock = exec_jstr(plan, "socket"), *ctl = exec_jstr(plan, "control_socket");
	bool over_ctl;

	if (sock == NULL || *sock == '\0')
		return;
	over_ctl = ctl != NULL && *ctl == '/' && access(ctl, F_OK) == 0;
	if (over_ctl)
		fd_bind(a, sock, ctl);
	if (over_ctl && in_hidden_folder(plan, sock)) {
		exec_arg(a, "--symlink");
		exec_arg(a, ctl);
		exec_arg(a, sock);
	} else {
		fd_bind(a, sock, sock);
	}
	exec_arg(a, "--setenv");
	exec_arg(a, "AGENT_SOCKET");
	exec_arg(a, sock);
}

/* The in-sandbox step: agentfs-enter (exec-as.c) and the command. */
static void as_args(struct argv_buf *a, const struct sandbox_setup *sb)
{
	char num[48], *ids;
	struct ids id;

	exec_arg(a, EXEC_SELF);
	if (sb->enter == NULL) {
		exec_arg(a, "exec");
		exec_arg(a, "--as");
	}
	if (sb->userns) {
		/* already the bot's user (the operator itself): no switch, only checked */
		snprintf(num, sizeof num, "=%u", (unsigned)sb->uid);
		exec_arg(a, num);
	} else {
		exec_plan_ids(sb->plan, sb->uid, &id);
		ids = exec_ids_format(&id);
		exec_arg(a, ids);
		free(ids);
	}
	if (sb->unix_chan >= 0) {
		snprintf(num, sizeof num, "--unix=%d%s", sb->unix_chan,
			 sb->host_sockets ? ",optional" : "");
		exec_arg(a, num);
	}
	snprintf(num, sizeof num, "--stderr=%d", sb->err_fd);
	exec_arg(a, num);
	if (sb->tty)
		exec_arg(a, "--ctty");
	exec_arg(a, "--");
}

/* bwrap's whole command line for one sandbox. */
void exec_bwrap_args(struct argv_buf *a, const struct sandbox_setup *sb)
{
	char num[32],
		*self = sb->enter != NULL ? strdup(sb->enter) : realpath("/proc/self/exe", NULL);
	char **c;
	size_t i;

	if (self == NULL)
		die("cannot find agentfs itself: %s", strerror(errno));
	exec_arg(a, sb->bwrap);
	args(a, base_args);
	exec_hide_host_sockets(a, sb->network);
	exec_loader_vars_hold(a);
	exec_git_env(a);
	hide(a, sb->plan);
	binds(a, sb->plan);
	args(a, late_args);
	for (i = 0; proc_keys[i] != NULL; i++)
		if (access(proc_keys[i], F_OK) == 0) {
			exec_arg(a, "--dev-bind");
			exec_arg(a, "/dev/null");
			exec_arg(a, proc_keys[i]);
		}
	/*
	 * agentfs-enter (or agentfs itself, for exec --as, from an older
	 * agentfsd), at a path of its own: it may live in a hidden folder, or
	 * in a root, which it must not cover (agentfsd checked it is in no
	 * writable root: plan.c).
	 */
	fd_bind(a, self, EXEC_SELF);
	free(self);
	agent_socket(a, sb->plan);
	args(a, ns_args);
	if (!sb->network)
		exec_arg(a, "--unshare-net");
	args(a, sb->userns ? userns_args : root_caps);
	args(a, tail_args);
	exec_arg(a, "--chdir");
	exec_arg(a, sb->cwd);
	snprintf(num, sizeof num, "%d", sb->status_w);
	exec_arg(a, "--json-status-fd");
	exec_arg(a, num);
	exec_arg(a, "--");
	as_args(a, sb);
	for (c = sb->cmd; *c != NULL; c++)
		exec_arg(a, *c);
}

/*
 * bwrap's status, JSON documents one per line: {"child-pid": N, ...} once
 * the sandbox's init exists (before the setup), {"exit-code": N} only once
 * the setup is done and the command was started, when it ends.
 */
void exec_bwrap_status_read(int fd, struct bwrap_status *st)
{
	char *nl;
	ssize_t n;

	while (st->len < sizeof st->buf - 1 &&
	       (n = read(fd, st->buf + st->len, sizeof st->buf - 1 - st->len)) > 0)
		st->len += (size_t)n;
	st->buf[st->len] = '\0';
	while ((nl = strchr(st->buf + st->parsed, '\n')) != NULL) {
		cJSON *o = cJSON_ParseWithLength(st->buf + st->parsed,
						 (size_t)(nl - st->buf) - st->parsed);
		const cJSON *v;

		v = cJSON_GetObjectItemCaseSensitive(o, "child-pid");
		if (cJSON_IsNumber(v) && v->valuedouble > 1 && st->init <= 0)
			st->init = (pid_t)v->valuedouble;
		v = cJSON_GetObjectItemCaseSensitive(o, "exit-code");
		if (cJSON_IsNumber(v))
			st->started = true;
		cJSON_Delete(o);
		st->parsed = (size_t)(nl - st->buf) + 1;
	}
}

static void write_stderr(const char *p, size_t n)
{
	ssize_t w;

	while (n > 0 && ((w = write(STDERR_FILENO, p, n)) > 0 || errno == EINTR))
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		}
}

/* What bwrap kept back goes out now: it is done, will not be tried again, or says more. */
void exec_bwrap_err_flush(struct bwrap_err *e, bool done)
{
	if (!e->passed) {
		e->passed = true;
		write_stderr(e->buf, e->len);
		e->len = 0;
	}
	if (done && e->fd >= 0) {
		close(e->fd);
		e->fd = -1;
	}
}

void exec_bwrap_err_read(struct bwrap_err *e)
{
	char tmp[4096];
	ssize_t n;

	while (e->fd >= 0 && (n = read(e->fd, tmp, sizeof tmp)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				close(e->fd);
				e->fd = -1;
			}
			return;
		}
		if (!e->passed && e->len + (size_t)n >= sizeof e->buf)
			exec_bwrap_err_flush(e, false);
		if (e->passed) {
			write_stderr(tmp, (size_t)n);
		} else {
			memcpy(e->buf + e->len, tmp, (size_t)n);
			e->len += (size_t)n;
		}
	}
	if (e->fd >= 0) {
		close(e->fd);
		e->fd = -1;
	}
}

/*
 * In the child that becomes bwrap: only stdin, stdout, stderr and the
 * descriptors bwrap and agentfs-enter are told about go into the sandbox.
 * Anything else the caller left open (a folder outside the roots:
 * openat(fd, "..") walks the host; a host socket) would reach past the
 * roots, whatever the mounts hide. -1 if it cannot be made sure.
 */
int exec_keep_only_fds(const int *keep, size_t n)
{
	struct dirent *e;
	size_t i;
	DIR *d;

	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
		/* before Linux 5.11: mark each open one */
		d = opendir("/proc/self/fd");
		if (d == NULL)
			return -1;
		while ((e = readdir(d)) != NULL) {
			int fd = atoi(e->d_name);

			if (fd > 2 && fd != dirfd(d) && fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
				closedir(d);
				return -1;
			}
		}
		closedir(d);
	}
	for (i = 0; i < n; i++)
		if (keep[i] >= 0 && fcntl(keep[i], F_SETFD, 0) != 0)
			return -1;
	return 0;
}

/* ---- the launch of a bwrap child forked before the plan ------------------------ */

#define LAUNCH_MAX (64 << 20) /* far above what the kernel would exec */

/*
 * In the child (cmd-exec.c's bwrap_child): the launch, read to the end of the pipe, into argv and env
 * (pointers into the buffer, which stays); false if there is none (the
 * outer agentfs exec gave up, or died) or it is not whole.
 */
bool exec_launch_read(int fd, struct launch_head *h, char ***argv, char ***env)
{
	size_t len = 0, cap = 65536, i;
	char *buf = malloc(cap), *p, **v;
	ssize_t n;

	while (buf != NULL && (n = read(fd, buf + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (len += (size_t)n) >= LAUNCH_MAX)
			return false;
		if (len == cap && (buf = realloc(buf, cap *= 2)) == NULL)
			return false;
	}
	if (buf == NULL || len < sizeof *h)
		return false;
	memcpy(h, buf, sizeof *h);
	if (h->argc == 0 || h->argc > len || h->envc > len)
		return false;
	v = calloc((size_t)h->argc + h->envc + 2, sizeof *v);
	if (v == NULL)
		return false;
	p = buf + sizeof *h;
	for (i = 0; i < (size_t)h->argc + h->envc; i++) {
		char *nul = memchr(p, '\0', (size_t)(buf + len - p));

		if (nul == NULL)
			return false;
		v[i + (i >= h->argc)] = p;
		p = nul + 1;
	}
	*argv = v;
	*env = v + h->argc + 1;
	return p == buf + len;
}

static void launch_put(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;

	if (*len + n > *cap) {
		*cap = (*len + n) * 2;
		if ((*buf = realloc(*buf, *cap)) == NULL)
			die("out of memory");
	}
	memcpy(*buf + *len, s, n);
	*len += n;
}

/*
 * In the outer agentfs exec: a waiting child's launch, to fd: keep, then
 * bwrap's command line a and our environment. 0, or -1 with errno.
 */
int exec_launch_write(int fd, const int keep[3], const struct argv_buf *a)
{
	struct launch_head h = {{keep[0], keep[1], keep[2]}, (uint32_t)a->n, 0};
	size_t len = sizeof h, cap = 0, off = 0, i;
	char *buf = NULL;
	ssize_t n;

	launch_put(&buf, &len, &cap, "");
	len = sizeof h;
	for (i = 0; i < a->n; i++)
		launch_put(&buf, &len, &cap, a->v[i]);
	for (i = 0; environ[i] != NULL; i++, h.envc++)
		launch_put(&buf, &len, &cap, environ[i]);
	memcpy(buf, &h, sizeof h);
	while (off < len && ((n = write(fd, buf + off, len - off)) > 0 || errno == EINTR))
		off += n > 0 ? (size_t)n : 0;
	free(buf);
	return off < len ? -1 : 0;
}

/* Write text to the file at path (a /proc/self file of ours); 0 or -1. */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? write(fd, text, strlen(text)) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/*
 * bwrap copies our mount table and makes it a slave of ours: a mount the
 * host makes later under a shared mount (systemd makes them all shared)
 * would arrive in the sandbox with its own flags, read-write, after bwrap
 * made the host read-only. So bwrap starts from a private copy: root's in
 * a mount namespace of our own; an operator's, which is not root, in a
 * user namespace of our own too that maps only itself (bwrap, run there
 * without capabilities, makes its own inside as always). 0 or -1.
 */
int exec_private_mounts(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (geteuid() == 0)
		return unshare(CLONE_NEWNS) == 0 ? mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)
						 : -1;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0 ||
	    write_file("/proc/self/setgroups", "deny") != 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) != 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) != 0)
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}
