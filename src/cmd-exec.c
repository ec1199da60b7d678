/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: run a command as a bot, confined with bubblewrap over the
 * bot's mounts. The host is visible read-only; each root is bound from its
 * agentfs mount at its own path; /tmp, /dev and /proc are private; the
 * bot's socket replaces the daemon's. It never falls back to running
 * unconfined: only a danger-full-access bot runs without bwrap.
 */
#include "src/agentfs.h"
#include "fusefs/fusefs.h"
#include "src/exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/close_range.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static const char exec_usage[] =
	"usage: agentfs exec BOT [--cwd DIR] [--allow-host-sockets] [--] CMD [ARGS...]\n"
	"\n"
	"Run CMD as the bot BOT, confined with bubblewrap over the bot's mounts.\n"
	"\n"
	"  --cwd DIR    start in DIR (default: the current folder if it is inside one\n"
	"               of the bot's roots, else the bot's folder)\n"
	"  --allow-host-sockets\n"
	"               run even if the kernel cannot keep a bot without network\n"
	"               from the host's pathname UNIX sockets (seccomp)\n"
	"  -h, --help   show this help\n";

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

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int by_depth(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return (int)strlen(jstr(x, "path")) - (int)strlen(jstr(y, "path"));
}

/* danger-full-access: no sandbox, but still the bot's user. */
static void become_user(const char *bot, uid_t uid)
{
	struct ids id;

	if (geteuid() != 0) {
		if (getuid() == uid && geteuid() == uid)
			return;
		die("bot %s runs as uid %u: only root (or that user) can run its commands", bot,
		    (unsigned)uid);
	}
	exec_user_ids(uid, &id);
	exec_become(&id);
}


struct live_query {
	uint64_t id;
	const char *mountpoint;
	bool live;
};

static int live_match(void *arg, uint64_t id, const char *mp, const char *fstype)
{
	struct live_query *q = arg;

	if (id != q->id)
		return 0;
	q->live = strcmp(mp, q->mountpoint) == 0 && strcmp(fstype, "fuse.agentfs") == 0;
	return 1;
}

/*
 * Is the bind's source the live agentfs mount the daemon made? A root
 * unmounted from outside leaves the bare folder in the state folder:
 * binding that would let the command write there, unguarded.
 */
static void check_live(const char *bot, const cJSON *bind)
{
	struct live_query q = {0, jstr(bind, "source"), false};
	struct statx stx;

	if (q.mountpoint == NULL || jstr(bind, "path") == NULL)
		die("agentfsd sent a bad exec plan");
	if (statx(AT_FDCWD, q.mountpoint, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		  &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID)) {
		q.id = stx.stx_mnt_id;
		fs_mountinfo_each(live_match, &q);
	}
	if (!q.live)
		die("%s of bot %s is not mounted (its mount %s was unmounted from outside); "
		    "nothing was run. `agentfs configure %s` (or restarting agentfsd) mounts it "
		    "again",
		    jstr(bind, "path"), bot, q.mountpoint, bot);
}

static const char *const proc_keys[] = {"/proc/keys", "/proc/key-users"};

/* The bwrap command line for a plan: order matters, parents before nested roots. */
static void build_bwrap(struct argv_buf *a, const char *bwrap, const cJSON *plan, const char *cwd,
			const char *setsid_ctty, int status_fd, uid_t uid, const char *unix_opt,
			int err_fd, char **cmd)
{
	char *self = realpath("/proc/self/exe", NULL), *ids;
	struct ids id;
	const cJSON *binds = cJSON_GetObjectItemCaseSensitive(plan, "binds"), *v;
	const char *sock = jstr(plan, "socket"), *ctl = jstr(plan, "control_socket");
	const cJSON **sorted;
	char num[32];
	size_t n = 0, i;

	exec_arg(a, bwrap);
	exec_arg(a, "--ro-bind");
	exec_arg(a, "/");
	exec_arg(a, "/");
	exec_arg(a, "--dev");
	exec_arg(a, "/dev");
	exec_arg(a, "--perms");
	exec_arg(a, "01777");
	exec_arg(a, "--tmpfs");
	exec_arg(a, "/dev/shm");
	exec_arg(a, "--proc");
	exec_arg(a, "/proc");
	/*
	 * /proc/keys lists every key the reader may view: those its user keeps
	 * in the user keyring too (names only, the filter keeps the rest). An
	 * empty file over it: /dev/null, which reads empty (a bind must keep
	 * device access for that, and /dev/null is harmless).
	 */
	for (i = 0; i < sizeof proc_keys / sizeof proc_keys[0]; i++)
		if (access(proc_keys[i], F_OK) == 0) {
			exec_arg(a, "--dev-bind");
			exec_arg(a, "/dev/null");
			exec_arg(a, proc_keys[i]);
		}
	exec_arg(a, "--perms");
	exec_arg(a, "01777");
	exec_arg(a, "--tmpfs");
	exec_arg(a, "/tmp");
	exec_hide_host_sockets(a, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "network")));
	exec_loader_vars_hold(a);
	/* The daemon's state (every bot's mounts) and every bot's socket stay out of sight. */
	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "hide")) {
		if (cJSON_IsString(v) && access(v->valuestring, F_OK) == 0) {
			exec_arg(a, "--tmpfs");
			exec_arg(a, v->valuestring);
		}
	}
	sorted = calloc((size_t)cJSON_GetArraySize(binds) + 1, sizeof *sorted);
	if (sorted == NULL)
		die("out of memory");
	cJSON_ArrayForEach(v, binds) {
		if (jstr(v, "path") == NULL || jstr(v, "source") == NULL)
			die("agentfsd sent a bad exec plan");
		sorted[n++] = v;
	}
	qsort(sorted, n, sizeof *sorted, by_depth);
	for (i = 0; i < n; i++) {
		exec_arg(a, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sorted[i], "writable"))
				    ? "--bind"
				    : "--ro-bind");
		exec_arg(a, jstr(sorted[i], "source"));
		exec_arg(a, jstr(sorted[i], "path"));
	}
	if (self == NULL)
		die("cannot find agentfs itself: %s", strerror(errno));
	/* It runs as root inside (exec --as): never a copy in a root the bot writes. */
	for (i = 0; i < n; i++)
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sorted[i], "writable")) &&
		    path_within(self, jstr(sorted[i], "path")))
			die("agentfs itself (%s) is inside the bot's writable root %s: the bot could "
			    "change it, and exec runs it as root; run an installed agentfs",
			    self, jstr(sorted[i], "path"));
	free(sorted);
	/*
	 * agentfs itself, for exec --as, at a path of its own: it may live in a
	 * hidden folder, or in a root, which it must not cover.
	 */
	exec_arg(a, "--ro-bind");
	exec_arg(a, self);
	exec_arg(a, EXEC_SELF);
	if (sock != NULL && *sock != '\0') {
		exec_arg(a, "--ro-bind");
		exec_arg(a, sock);
		exec_arg(a, sock);
		if (ctl != NULL && access(ctl, F_OK) == 0) {
			exec_arg(a, "--ro-bind");
			exec_arg(a, sock);
			exec_arg(a, ctl);
		}
		exec_arg(a, "--setenv");
		exec_arg(a, "AGENT_SOCKET");
		exec_arg(a, sock);
	}
	exec_arg(a, "--unshare-ipc");
	exec_arg(a, "--unshare-pid");
	exec_arg(a, "--unshare-uts");
	exec_arg(a, "--unshare-cgroup-try");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "network")))
		exec_arg(a, "--unshare-net");
	/* As root bwrap keeps every capability unless told: a bot could remount /. */
	exec_arg(a, "--cap-drop");
	exec_arg(a, "ALL");
	/* Only for exec --as, which gives them up with root. */
	exec_arg(a, "--cap-add");
	exec_arg(a, "CAP_SETUID");
	exec_arg(a, "--cap-add");
	exec_arg(a, "CAP_SETGID");
	exec_arg(a, "--die-with-parent");
	exec_arg(a, "--new-session");
	exec_arg(a, "--chdir");
	exec_arg(a, cwd);
	snprintf(num, sizeof num, "%d", status_fd);
	exec_arg(a, "--json-status-fd");
	exec_arg(a, num);
	exec_arg(a, "--");
	/*
	 * On a terminal, the command takes the pty as its controlling terminal
	 * inside the sandbox's own session and pid namespace, so a shell's
	 * job control (tcsetpgrp) sees process groups it knows.
	 */
	if (setsid_ctty != NULL) {
		exec_arg(a, setsid_ctty);
		exec_arg(a, "--ctty");
		exec_arg(a, "--wait");
	}
	exec_user_ids(uid, &id);
	ids = exec_ids_format(&id);
	exec_arg(a, EXEC_SELF);
	exec_arg(a, "exec");
	exec_arg(a, "--as");
	exec_arg(a, ids);
	if (unix_opt != NULL)
		exec_arg(a, unix_opt);
	snprintf(num, sizeof num, "--stderr=%d", err_fd);
	exec_arg(a, num);
	exec_arg(a, "--");
	free(ids);
	free(self);
	for (; *cmd != NULL; cmd++)
		exec_arg(a, *cmd);
}

static bool cwd_in_roots(const cJSON *plan, const char *cwd)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "binds"))
		if (jstr(v, "path") != NULL && path_within(cwd, jstr(v, "path")))
			return true;
	return false;
}

static volatile sig_atomic_t pending_sig;
static volatile sig_atomic_t winch;

static void on_signal(int sig)
{
	pending_sig = sig;
}

static void on_winch(int sig)
{
	winch = 1;
}

/*
 * The command bwrap runs: the first child of the process bwrap reported on
 * its status fd (bwrap's init in the new pid namespace), or -1 while there
 * is none yet. Signals go to it, so its own handlers run (git removes its
 * index.lock); bwrap itself would just die and take the sandbox with it,
 * and its init, pid 1 of the namespace, ignores what it has no handler for.
 */
static pid_t command_pid(pid_t init)
{
	char path[64], buf[64];

	if (init <= 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)init, (int)init);
	if (read_text(AT_FDCWD, path, buf, sizeof buf) <= 0)
		return -1;
	return atoi(buf) > 0 ? (pid_t)atoi(buf) : -1;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A signal that came before the command is there to take it (bwrap has not
 * reported its init yet, or the init has not started the command) waits
 * for it, polled with the rest, at most this long: then it goes to bwrap,
 * which ends the sandbox (a setup that hangs can still be interrupted).
 * Under load the command can run before this process has read bwrap's
 * report: sent to bwrap then, a SIGHUP was lost (CI, exec-status.sh).
 */
#define SIG_WAIT_MS 2000

/* Is PID still running (not gone, not a zombie waiting for bwrap)? */
static bool process_alive(pid_t pid)
{
	pid_t ppid;
	char state;

	return proc_stat(pid, &state, &ppid) == 0 && state != 'Z' && state != 'X';
}

/* The daemon and bot this exec registers with (exec_register). */
static const char *reg_socket, *reg_bot;

/*
 * Tell agentfsd this process runs the bot's commands, so `agentfs rm` sees
 * it and `rm --force` can end it: first before anything runs (init 0),
 * then with the sandbox's init once bwrap reports it. The daemon follows
 * both by pidfd and forgets them when this process ends. A bot being
 * changed answers busy for a moment: asked again.
 */
static void exec_register(pid_t init)
{
	cleanup_cjson cJSON *rep = NULL;
	const cJSON *err;
	int tries;

	for (tries = 0; tries < 50; tries++) {
		cleanup_cjson cJSON *req = cJSON_CreateObject();

		cJSON_Delete(rep);
		cJSON_AddStringToObject(req, "op", "exec_register");
		cJSON_AddStringToObject(req, "name", reg_bot);
		if (init > 0)
			cJSON_AddNumberToObject(req, "pid", init);
		rep = client_request(reg_socket, req);
		err = cJSON_GetObjectItemCaseSensitive(rep, "error");
		if (jstr(err, "code") == NULL || strcmp(jstr(err, "code"), "busy") != 0)
			break;
		usleep(100 * 1000);
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		/* A command that ended before its init was registered leaves nothing to follow */
		if (init > 0 && !process_alive(init))
			return;
		err = cJSON_GetObjectItemCaseSensitive(rep, "error");
		die("%s: %s%s", jstr(err, "code") ? jstr(err, "code") : "error",
		    jstr(err, "message") ? jstr(err, "message") : "",
		    init > 0 ? " (the sandbox is ended with this process)" : "");
	}
}

/* bwrap writes {"child-pid": N} once the sandbox is up; nothing if setup failed. */
static void read_status(int fd, char *buf, size_t cap, size_t *len, pid_t *init)
{
	const char *p;
	ssize_t n;

	while (*len < cap - 1 && (n = read(fd, buf + *len, cap - 1 - *len)) > 0)
		*len += (size_t)n;
	buf[*len] = '\0';
	if (*init <= 0 && (p = strstr(buf, "\"child-pid\"")) != NULL &&
	    (p = strchr(p, ':')) != NULL)
		*init = (pid_t)atoi(p + 1);
}

/*
 * bwrap's own standard error. The command writes to the real one (exec --as
 * --stderr), so this carries only what bwrap says: kept until bwrap is done
 * (a setup that lost a race with the host's mount table is tried again,
 * quietly: see setup_raced), passed on at once when it is more than a
 * setup error would be.
 */
struct bwrap_err {
	int fd;
	bool passed; /* what was kept went out; the rest follows as it comes */
	size_t len;
	char buf[4096];
};

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
static void bwrap_err_flush(struct bwrap_err *e, bool done)
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

static void bwrap_err_read(struct bwrap_err *e)
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
			bwrap_err_flush(e, false);
		if (e->passed) {
			write_stderr(tmp, (size_t)n);
		} else {
			memcpy(e->buf + e->len, tmp, (size_t)n);
			e->len += (size_t)n;
			e->buf[e->len] = '\0';
		}
	}
	if (e->fd >= 0) {
		close(e->fd);
		e->fd = -1;
	}
}

/*
 * Wait for bwrap, relaying the pty (if any) and passing signals on to the
 * command, until bwrap has exited and the pty has nothing more to say.
 */
static int supervise(pid_t pid, int status_fd, int master, struct bwrap_err *err, bool *started)
{
	struct pollfd pf[5];
	char status_buf[4096], buf[8192];
	size_t status_len = 0;
	pid_t init = -1, target;
	int64_t sig_since = 0;
	bool registered = false;
	struct winsize ws;
	int status = 0, sig;
	bool exited = false, in_open = master >= 0;
	ssize_t n;

	fcntl(status_fd, F_SETFL, O_NONBLOCK);
	fcntl(err->fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		if ((sig = pending_sig) != 0) {
			target = command_pid(init);
			if (sig_since == 0)
				sig_since = mono_ms();
			if (target <= 0 && !exited && mono_ms() - sig_since < SIG_WAIT_MS) {
				/* not yet: looked at again after the poll below (at most 50 ms) */
			} else {
				pending_sig = 0;
				sig_since = 0;
				kill(target > 0 ? target : pid, sig);
			}
		}
		if (winch && master >= 0) {
			winch = 0;
			if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
				ioctl(master, TIOCSWINSZ, &ws);
		}
		if (!exited && waitpid(pid, &status, WNOHANG) == pid)
			exited = true;
		if (exited && master < 0)
			break;
		pf[0] = (struct pollfd){status_fd, POLLIN, 0};
		pf[1] = (struct pollfd){master, POLLIN, 0};
		pf[2] = (struct pollfd){in_open ? STDIN_FILENO : -1, POLLIN, 0};
		pf[3] = (struct pollfd){exited ? -1 : exec_unix_guard_fd(), POLLIN, 0};
		pf[4] = (struct pollfd){err->fd, POLLIN, 0};
		if (poll(pf, 5, exited ? 10 : 50) < 0 && errno != EINTR)
			break;
		if (pf[3].revents != 0)
			exec_unix_guard_serve(pf[3].revents);
		read_status(status_fd, status_buf, sizeof status_buf, &status_len, &init);
		if (init > 0 && !registered) {
			registered = true;
			exec_register(init);
		}
		if (pf[4].revents != 0)
			bwrap_err_read(err);
		if (master >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = read(master, buf, sizeof buf);
			if (n <= 0 || write(STDOUT_FILENO, buf, (size_t)n) < 0) {
				close(master);
				master = -1;
			}
		} else if (master >= 0 && exited && pf[1].revents == 0) {
			/* bwrap is gone and the pty is quiet: done */
			close(master);
			master = -1;
		}
		if (in_open && (pf[2].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = read(STDIN_FILENO, buf, sizeof buf);
			if (n <= 0 || master < 0 || write(master, buf, (size_t)n) < 0)
				in_open = false; /* our input ended; the command's may go on */
		}
	}
	read_status(status_fd, status_buf, sizeof status_buf, &status_len, &init);
	/*
	 * bwrap reports the child's pid before the child sets the sandbox up,
	 * and an exit code only for a command it started.
	 */
	*started = strstr(status_buf, "exit-code") != NULL;
	/* what bwrap wrote before it exited; a process left inside may hold the pipe */
	bwrap_err_read(err);
	return status;
}

/*
 * Only stdin, stdout, stderr and the two descriptors bwrap and exec --as are
 * told about go into the sandbox. Anything else the caller left open (a
 * folder outside the roots: openat(fd, "..") walks the host; a host socket)
 * would reach past the roots, whatever the mounts hide.
 */
static void keep_only_fds(int status_fd, int unix_chan, int err_fd)
{
	DIR *d;
	struct dirent *e;

	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
		/* before Linux 5.11: mark each open one */
		d = opendir("/proc/self/fd");
		if (d == NULL)
			die("cannot list open descriptors: %s", strerror(errno));
		while ((e = readdir(d)) != NULL) {
			int fd = atoi(e->d_name);

			if (fd > 2 && fd != dirfd(d))
				fcntl(fd, F_SETFD, FD_CLOEXEC);
		}
		closedir(d);
	}
	if (fcntl(status_fd, F_SETFD, 0) != 0 || fcntl(err_fd, F_SETFD, 0) != 0 ||
	    (unix_chan >= 0 && fcntl(unix_chan, F_SETFD, 0) != 0))
		die("cannot pass descriptors to bwrap: %s", strerror(errno));
}

/*
 * Standard input, output and error go in as they are: a folder among them
 * would be a way out (openat(0, "..") walks the host's own mount), so exec
 * refuses one. A file you redirect is handed over as opened.
 */
static void std_fds_check(void)
{
	static const char *const what[] = {"input", "output", "error"};
	struct stat st;
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
			die("standard %s is a folder: inside the sandbox it would lead out of the "
			    "bot's roots; give a file, a pipe or a terminal",
			    what[fd]);
}

/* How often a setup that lost a race with the host's mount table is tried. */
#define SETUP_TRIES 5

/*
 * bwrap copies the host's mount table and then makes each mount in it
 * read-only, one by one: a mount that goes away in between (another bot's
 * root ended and its folder removed, a container stopping) fails the whole
 * setup, with one of these. Nothing has run then, so it is tried again.
 */
static bool setup_raced(const struct bwrap_err *e)
{
	return strstr(e->buf, "Unable to apply mount flags") != NULL ||
	       strstr(e->buf, "in mount table") != NULL;
}

/*
 * One try: fork bwrap with its standard error on a pipe of ours (ERR_FD,
 * given to exec --as, is the caller's), supervise it, and say whether it
 * started the command. The status pipe and the guard's channel stay open
 * here across tries: their numbers are on bwrap's command line.
 */
static int bwrap_try(struct argv_buf *a, int status_fd, int status_w, int unix_chan, int err_fd,
		     bool tty, struct bwrap_err *err, bool *started)
{
	struct sigaction sa = {0};
	struct termios saved, raw;
	bool out_tty = isatty(STDOUT_FILENO), err_tty = isatty(STDERR_FILENO);
	bool have_saved = false;
	int master = -1, slave = -1, errp[2], status;
	pid_t pid;

	if (pipe2(errp, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	if (tty) {
		struct winsize ws;

		if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) != 0)
			memset(&ws, 0, sizeof ws);
		if (openpty(&master, &slave, NULL, NULL, &ws) != 0)
			die("cannot make a pty: %s", strerror(errno));
		fcntl(master, F_SETFD, FD_CLOEXEC);
	}
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (tty) {
			/* The command's terminal is our pty (it becomes its controlling
			 * terminal inside, see build_bwrap): TIOCSTI can only reach the
			 * pty, never the user's terminal. Redirected output stays as it
			 * is, byte for byte. */
			setsid();
			dup2(slave, STDIN_FILENO);
			if (out_tty)
				dup2(slave, STDOUT_FILENO);
			if (err_tty)
				dup2(slave, STDERR_FILENO);
			if (slave > 2)
				close(slave);
		}
		/* a closed standard error stays what err_fd is (/dev/null) */
		if ((fcntl(STDERR_FILENO, F_GETFD) >= 0 && dup2(STDERR_FILENO, err_fd) < 0) ||
		    dup2(errp[1], STDERR_FILENO) < 0)
			_exit(127);
		/* bwrap itself runs as root: the caller's loader variables (which may
		 * name a library in a bot's root) reach only the command, through
		 * loader_vars_hold. */
		exec_loader_vars_clear();
		keep_only_fds(status_w, unix_chan, err_fd);
		execv(a->v[0], a->v);
		dprintf(err_fd, "agentfs: cannot run %s: %s\n", a->v[0], strerror(errno));
		_exit(127);
	}
	close(errp[1]);
	err->fd = errp[0];
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!tty) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGQUIT, &sa, NULL);
	}
	if (tty) {
		close(slave);
		sa.sa_handler = on_winch;
		sigaction(SIGWINCH, &sa, NULL);
		if (tcgetattr(STDIN_FILENO, &saved) == 0) {
			have_saved = true;
			raw = saved;
			cfmakeraw(&raw);
			tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		}
	}
	status = supervise(pid, status_fd, master, err, started);
	if (have_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	return status;
}

static int run_bwrap(struct argv_buf *a, int status_pipe[2], int unix_chan, int err_fd, bool tty)
{
	struct bwrap_err err;
	int status, code, try;
	bool started = false;

	for (try = 1;; try++) {
		memset(&err, 0, sizeof err);
		status = bwrap_try(a, status_pipe[0], status_pipe[1], unix_chan, err_fd, tty, &err,
				   &started);
		if (started || try == SETUP_TRIES || !WIFEXITED(status) || pending_sig != 0 ||
		    !setup_raced(&err))
			break;
		if (err.fd >= 0)
			close(err.fd);
		usleep(10000 * try);
	}
	bwrap_err_flush(&err, true);
	close(status_pipe[0]);
	close(status_pipe[1]);
	if (unix_chan >= 0)
		close(unix_chan);
	/* bwrap itself killed (not its command): no exit code, but no setup failure either */
	if (!started && WIFEXITED(status)) {
		fprintf(stderr,
			"agentfs: bwrap could not set up the sandbox (its message is above); "
			"it needs mount, pid, ipc and network namespaces. Nothing was run.\n");
		return 126;
	}
	if (WIFSIGNALED(status))
		code = 128 + WTERMSIG(status);
	else
		code = WEXITSTATUS(status);
	/* bwrap reports a command killed by signal N as 128+N: die the same way. */
	if (code > 128 && code < 128 + NSIG) {
		signal(code - 128, SIG_DFL);
		kill(getpid(), code - 128);
	}
	return code;
}

int cmd_exec(const char *socket_path, int argc, char **argv)
{
	cleanup_cjson cJSON *req = cJSON_CreateObject(), *rep = NULL;
	struct argv_buf a = {0};
	const char *cwd_opt = NULL, *sandbox, *sock, *folder, *bot = NULL;
	char cwd[PATH_MAX], *bwrap, *norm = NULL, *setsid_path;
	const cJSON *err, *uid, *b;
	int i, code, status_pipe[2], unix_chan = -1, err_fd;
	char unix_opt[48];
	bool full_access, host_sockets = false;

	if (argc > 1 && strcmp(argv[1], "--as") == 0)
		return exec_as(argc, argv);
	/*
	 * Options may come before or after BOT, but never after the command
	 * starts: `agentfs exec bot ls -la` runs ls -la.
	 */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(exec_usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--cwd") == 0) {
			if (++i >= argc)
				die_usage("exec", "option --cwd needs an argument");
			cwd_opt = argv[i];
		} else if (strncmp(argv[i], "--cwd=", 6) == 0) {
			cwd_opt = argv[i] + 6;
		} else if (strcmp(argv[i], "--allow-host-sockets") == 0) {
			host_sockets = true;
		} else if (argv[i][0] == '-' && bot == NULL) {
			die_usage("exec", "unknown option %s", argv[i]);
		} else if (bot == NULL) {
			bot = argv[i];
		} else {
			break;
		}
	}
	if (bot == NULL)
		die_usage("exec", "exec needs a bot name and a command");
	if (i >= argc)
		die_usage("exec", "exec needs a command to run");
	optind = i;
	cJSON_AddStringToObject(req, "op", "exec_plan");
	cJSON_AddStringToObject(req, "name", bot);
	rep = client_request(socket_path, req);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		err = cJSON_GetObjectItemCaseSensitive(rep, "error");
		die("%s: %s", jstr(err, "code") ? jstr(err, "code") : "error",
		    jstr(err, "message") ? jstr(err, "message") : "");
	}
	sandbox = jstr(rep, "sandbox");
	sock = jstr(rep, "socket");
	folder = jstr(rep, "folder");
	uid = cJSON_GetObjectItemCaseSensitive(rep, "uid");
	if (sandbox == NULL || folder == NULL || !cJSON_IsNumber(uid) || uid->valuedouble < 0)
		die("agentfsd sent a bad exec plan");
	full_access = strcmp(sandbox, "danger-full-access") == 0;
	if (uid->valuedouble == 0 && !full_access) {
		/* create refuses such a bot; one from an older state file is refused here */
		char owner[PATH_MAX + 16];

		snprintf(owner, sizeof owner, "the owner of %s", folder);
		die(ROOT_BOT_REFUSED, bot, owner);
	}

	if (cwd_opt != NULL) {
		if (cwd_opt[0] != '/') {
			if (getcwd(cwd, sizeof cwd) == NULL)
				die("getcwd: %s", strerror(errno));
			strncat(cwd, "/", sizeof cwd - strlen(cwd) - 1);
			strncat(cwd, cwd_opt, sizeof cwd - strlen(cwd) - 1);
		} else {
			snprintf(cwd, sizeof cwd, "%s", cwd_opt);
		}
	} else if (getcwd(cwd, sizeof cwd) == NULL || !cwd_in_roots(rep, cwd)) {
		snprintf(cwd, sizeof cwd, "%s", folder);
	}
	if (path_normalise(cwd, &norm) != 0)
		die("bad folder %s", cwd);

	reg_socket = socket_path;
	reg_bot = bot;
	if (full_access) {
		exec_register(0);
		become_user(bot, (uid_t)uid->valuedouble);
		exec_session_keyring();
		if (sock != NULL && *sock != '\0')
			setenv("AGENT_SOCKET", sock, 1);
		if (chdir(norm) != 0)
			die("cannot enter %s: %s", norm, strerror(errno));
		exec_run_command(argv + optind);
	}
	if (geteuid() != 0)
		die("only root can run a confined bot (bwrap sets up the sandbox as root and "
		    "switches to the bot's user inside it); a bot cannot exec its bots");
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(rep, "binds"))
		check_live(bot, b);
	bwrap = exec_find_in_path("bwrap");
	if (bwrap == NULL)
		die("bwrap (bubblewrap) not found in PATH: install it (apt-get install "
		    "bubblewrap); "
		    "agentfs never runs a bot unconfined");
	exec_register(0);
	if (pipe2(status_pipe, 0) != 0)
		die("pipe: %s", strerror(errno));
	fcntl(status_pipe[0], F_SETFD, FD_CLOEXEC);
	setsid_path = isatty(STDIN_FILENO) ? exec_find_in_path("setsid") : NULL;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "network"))) {
		unix_chan = exec_unix_guard_start(sock);
		snprintf(unix_opt, sizeof unix_opt, "--unix=%d%s", unix_chan,
			 host_sockets ? ",optional" : "");
	}
	/* the number the command's standard error takes inside; set in the child (bwrap_try) */
	err_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (err_fd < 0 || (err_fd < 3 && (err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 3)) < 0))
		die("cannot open /dev/null: %s", strerror(errno));
	build_bwrap(&a, bwrap, rep, norm, setsid_path, status_pipe[1], (uid_t)uid->valuedouble,
		    unix_chan >= 0 ? unix_opt : NULL, err_fd, argv + optind);
	free(setsid_path);
	free(bwrap);
	free(norm);
	std_fds_check();
	code = run_bwrap(&a, status_pipe, unix_chan, err_fd, isatty(STDIN_FILENO));
	for (i = 0; (size_t)i < a.n; i++)
		free(a.v[i]);
	free(a.v);
	return code;
}
