/* SPDX-License-Identifier: MIT */
/*
 * agentfs exec: run a command as a bot, confined with bubblewrap over the
 * bot's mounts. This is the outer agentfs exec, run by root or by the
 * operator the bot runs as: its options, the plan dialogue with agentfsd
 * (exec_plan says what to bind and which bwrap to run; exec_register makes
 * the sandbox known, and placed in its limits, before anything in it runs),
 * one bwrap per try of the setup, and supervising it: signals go to the
 * command, a terminal is relayed through a pty of its own, the command's
 * connects are served by the guard (exec-guard.c). It never falls back to
 * running unconfined: only a danger-full-access bot runs without bwrap.
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static const char exec_usage[] =
	"usage: agentfs exec [OPTIONS] BOT [--] CMD [ARGS...]\n"
	"\n"
	"Run CMD as the bot BOT, confined with bubblewrap over the bot's mounts.\n"
	"\n"
	"  --cwd DIR           start in DIR (default: the current folder if it is inside\n"
	"                      one of the bot's roots, else the bot's folder)\n"
	"  -e, --env NAME=VALUE\n"
	"                      set NAME in the command's environment (NAME alone: as it\n"
	"                      is here); not AGENT_SOCKET, AGENTFS_* or the agents'\n"
	"                      variables exec removes (SSH_AUTH_SOCK...)\n"
	"  --env-file FILE     the same, one NAME=VALUE a line (# comments)\n"
	"  --allow-host-sockets\n"
	"                      run even if the kernel cannot keep a bot without network\n"
	"                      from the host's pathname UNIX sockets (seccomp)\n"
	"  -h, --help          show this help\n";

struct exec_opts {
	const char *bot, *cwd;
	bool host_sockets;
	char **cmd;
};

/* A value for option argv[*i] (--opt VALUE or --opt=VALUE); NULL if it is not that option. */
static const char *opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt)
{
	size_t n = strlen(lng);

	if (strcmp(argv[*i], lng) == 0 || (shrt != NULL && strcmp(argv[*i], shrt) == 0)) {
		if (*i + 1 >= argc)
			die_usage("exec", "option %s needs an argument", argv[*i]);
		return argv[++*i];
	}
	if (strncmp(argv[*i], lng, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (shrt != NULL && strncmp(argv[*i], shrt, 2) == 0 && argv[*i][2] != '\0')
		return argv[*i] + 2;
	return NULL;
}

/*
 * Options may come before or after BOT, but never after the command
 * starts: `agentfs exec bot ls -la` runs ls -la. -e and --env-file take
 * effect in the order given.
 */
static void parse_options(int argc, char **argv, struct exec_opts *o)
{
	const char *v;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(exec_usage, stdout);
			exit(0);
		} else if ((v = opt_value(argc, argv, &i, "--cwd", NULL)) != NULL) {
			o->cwd = v;
		} else if ((v = opt_value(argc, argv, &i, "--env", "-e")) != NULL) {
			exec_env_set(v);
		} else if ((v = opt_value(argc, argv, &i, "--env-file", NULL)) != NULL) {
			exec_env_file(v);
		} else if (strcmp(argv[i], "--allow-host-sockets") == 0) {
			o->host_sockets = true;
		} else if (argv[i][0] == '-' && o->bot == NULL) {
			die_usage("exec", "unknown option %s", argv[i]);
		} else if (o->bot == NULL) {
			o->bot = argv[i];
		} else {
			break;
		}
	}
	if (o->bot == NULL)
		die_usage("exec", "exec needs a bot name and a command");
	if (i >= argc)
		die_usage("exec", "exec needs a command to run");
	o->cmd = argv + i;
}

/* ---- the plan dialogue ---------------------------------------------------------- */

/* The daemon and bot this exec registers with, and the command (sent once, for ps). */
static struct {
	const char *socket, *bot;
	char **cmd;
	bool sent;
} reg;

/*
 * Tell agentfsd this process runs the bot's commands, before anything runs,
 * so `agentfs rm` sees it, `rm --force` can end it and `agentfs ps` lists
 * it; child: the bwrap about to start (it waits for this answer), which
 * agentfsd holds and places in the sandbox's limits. Sent again for each
 * try of the setup. A bot being changed answers busy for a moment: asked
 * again. A refusal ends this exec: nothing has run.
 */
static void exec_register(pid_t child)
{
	cleanup_cjson cJSON *rep = NULL;
	const cJSON *err;
	char **c;
	int tries;

	for (tries = 0; tries < 50; tries++) {
		cleanup_cjson cJSON *req = cJSON_CreateObject();
		cJSON *argv;

		cJSON_Delete(rep);
		cJSON_AddStringToObject(req, "op", "exec_register");
		cJSON_AddStringToObject(req, "name", reg.bot);
		if (child > 0)
			cJSON_AddNumberToObject(req, "child", child);
		if (!reg.sent && (argv = cJSON_AddArrayToObject(req, "argv")) != NULL)
			for (c = reg.cmd; *c != NULL; c++)
				cJSON_AddItemToArray(argv, cJSON_CreateString(*c));
		rep = client_request(reg.socket, req);
		err = cJSON_GetObjectItemCaseSensitive(rep, "error");
		if (exec_jstr(err, "code") == NULL || strcmp(exec_jstr(err, "code"), "busy") != 0)
			break;
		usleep(100 * 1000);
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")))
		client_fail(rep);
	reg.sent = true;
}

/*
 * The plan, whole: anything missing is agentfsd's fault, and nothing runs
 * on it. A bot being changed or restored answers busy for a moment: asked
 * again. child: the bwrap forked for the first try, waiting: a confined
 * bot's plan registers it too (as exec_register would, "registered" in the
 * answer), one round trip instead of two. An older agentfsd, which knows no
 * "child" in a plan, is asked again without.
 */
static cJSON *plan_get(const char *socket_path, const char *bot, pid_t child)
{
	cleanup_cjson cJSON *req = cJSON_CreateObject();
	cJSON *rep = NULL, *argv;
	const cJSON *uid;
	const char *code;
	char **c;
	int tries;

	cJSON_AddStringToObject(req, "op", "exec_plan");
	cJSON_AddStringToObject(req, "name", bot);
	if (child > 0) {
		cJSON_AddNumberToObject(req, "child", child);
		if ((argv = cJSON_AddArrayToObject(req, "argv")) != NULL)
			for (c = reg.cmd; *c != NULL; c++)
				cJSON_AddItemToArray(argv, cJSON_CreateString(*c));
	}
	for (tries = 0; tries < 100; tries++) {
		cJSON_Delete(rep);
		rep = client_request(socket_path, req);
		code = exec_jstr(cJSON_GetObjectItemCaseSensitive(rep, "error"), "code");
		if (code != NULL && strcmp(code, "unknown_field") == 0 &&
		    cJSON_HasObjectItem(req, "child")) {
			cJSON_DeleteItemFromObject(req, "child");
			cJSON_DeleteItemFromObject(req, "argv");
			tries--;
			continue;
		}
		if (code == NULL || strcmp(code, "busy") != 0)
			break;
		usleep(100 * 1000);
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")))
		client_fail(rep);
	uid = cJSON_GetObjectItemCaseSensitive(rep, "uid");
	if (exec_jstr(rep, "sandbox") == NULL || exec_jstr(rep, "folder") == NULL ||
	    !cJSON_IsNumber(uid) || uid->valuedouble < 0 || uid->valuedouble >= UINT32_MAX ||
	    (strcmp(exec_jstr(rep, "sandbox"), "danger-full-access") != 0 &&
	     (exec_jstr(rep, "bwrap") == NULL || uid->valuedouble == 0)))
		die("agentfsd sent a bad exec plan");
	return rep;
}

static bool cwd_in_roots(const cJSON *plan, const char *cwd)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(plan, "binds"))
		if (exec_jstr(v, "path") != NULL && path_within(cwd, exec_jstr(v, "path")))
			return true;
	return false;
}

/* --cwd (relative: to the current folder), else the current folder if in a root, else the bot's. */
static char *choose_cwd(const cJSON *plan, const char *opt)
{
	char cwd[PATH_MAX], *norm = NULL;

	if (opt != NULL && opt[0] != '/') {
		if (getcwd(cwd, sizeof cwd) == NULL)
			die("getcwd: %s", strerror(errno));
		strncat(cwd, "/", sizeof cwd - strlen(cwd) - 1);
		strncat(cwd, opt, sizeof cwd - strlen(cwd) - 1);
	} else if (opt != NULL) {
		snprintf(cwd, sizeof cwd, "%s", opt);
	} else if (getcwd(cwd, sizeof cwd) == NULL || !cwd_in_roots(plan, cwd)) {
		snprintf(cwd, sizeof cwd, "%s", exec_jstr(plan, "folder"));
	}
	if (path_normalise(cwd, &norm) != 0)
		die("bad folder %s", cwd);
	return norm;
}

/* ---- supervising bwrap ------------------------------------------------------------ */

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

/*
 * A signal that came before the command is there to take it (bwrap has not
 * reported its init yet, or the init has not started the command) waits
 * for it, polled with the rest, at most this long: then it goes to bwrap,
 * which ends the sandbox (a setup that hangs can still be interrupted).
 * Under load the command can run before this process has read bwrap's
 * report: sent to bwrap then, a SIGHUP was lost (CI, exec-status.sh).
 */
#define SIG_WAIT_MS 2000

/*
 * One bwrap being supervised. pidfd: bwrap's (Linux 5.3), readable once it
 * has exited. Its pipes are no sign of that: the kernel closes a process's
 * files before it can be reaped, and the status pipe's write end is ours
 * too, so after the last byte and the last hangup the loop could find
 * bwrap not yet gone and sleep out its poll (SIGCHLD, ignored, wakes
 * nothing): 50 ms after most commands. -1 without it: the poll's timeout
 * is the bound then.
 */
struct run {
	pid_t pid;
	int pidfd, status_r, master;
	int out, term; /* where the pty's output goes; the terminal it takes its size from */
	bool exited, in_open;
	int status;
	int64_t sig_since;
	struct bwrap_status st;
	struct bwrap_err *err;
};

static void pass_signal(struct run *r)
{
	pid_t target;
	int sig = pending_sig;

	if (sig == 0)
		return;
	target = command_pid(r->st.init);
	if (r->sig_since == 0)
		r->sig_since = mono_ms();
	/* not yet: looked at again after the next poll (at most 50 ms) */
	if (target <= 0 && !r->exited && mono_ms() - r->sig_since < SIG_WAIT_MS)
		return;
	pending_sig = 0;
	r->sig_since = 0;
	kill(target > 0 ? target : r->pid, sig);
}

/* The pty's output to ours, our input to the pty. */
static void relay(struct run *r, const struct pollfd *master, const struct pollfd *in)
{
	char buf[8192];
	ssize_t n;

	if (r->master >= 0 && (master->revents & (POLLIN | POLLHUP | POLLERR))) {
		n = read(r->master, buf, sizeof buf);
		if (n <= 0 || write(r->out, buf, (size_t)n) < 0) {
			close(r->master);
			r->master = -1;
		}
	} else if (r->master >= 0 && r->exited && master->revents == 0) {
		/* bwrap is gone and the pty is quiet: done */
		close(r->master);
		r->master = -1;
	}
	if (r->in_open && (in->revents & (POLLIN | POLLHUP | POLLERR))) {
		n = read(STDIN_FILENO, buf, sizeof buf);
		if (n <= 0 || r->master < 0 || write(r->master, buf, (size_t)n) < 0)
			r->in_open = false; /* our input ended; the command's may go on */
	}
}

/*
 * Wait for bwrap, relaying the pty (if any), passing signals on to the
 * command and serving the guard, until bwrap has exited and the pty has
 * nothing more to say.
 */
static void supervise(struct run *r)
{
	struct pollfd pf[5 + EXEC_GUARD_FDS];
	struct winsize ws;
	int ng;

	if (fcntl(r->status_r, F_SETFL, O_NONBLOCK) != 0 ||
	    fcntl(r->err->fd, F_SETFL, O_NONBLOCK) != 0)
		die("cannot watch bwrap: %s", strerror(errno));
	for (;;) {
		pass_signal(r);
		if (winch && r->master >= 0) {
			winch = 0;
			if (ioctl(r->term, TIOCGWINSZ, &ws) == 0)
				ioctl(r->master, TIOCSWINSZ, &ws);
		}
		if (!r->exited && waitpid(r->pid, &r->status, WNOHANG) == r->pid)
			r->exited = true;
		if (r->exited && r->master < 0)
			break;
		pf[0] = (struct pollfd){r->status_r, POLLIN, 0};
		pf[1] = (struct pollfd){r->master, POLLIN, 0};
		pf[2] = (struct pollfd){r->in_open ? STDIN_FILENO : -1, POLLIN, 0};
		pf[3] = (struct pollfd){r->err->fd, POLLIN, 0};
		pf[4] = (struct pollfd){r->exited ? -1 : r->pidfd, POLLIN, 0};
		ng = r->exited ? 0 : exec_unix_guard_pollfds(pf + 5);
		if (poll(pf, (nfds_t)(5 + ng), r->exited ? 10 : 50) < 0 && errno != EINTR)
			break;
		exec_unix_guard_serve(pf + 5, ng);
		exec_bwrap_status_read(r->status_r, &r->st);
		if (pf[3].revents != 0)
			exec_bwrap_err_read(r->err);
		relay(r, &pf[1], &pf[2]);
	}
	exec_bwrap_status_read(r->status_r, &r->st);
	/* what bwrap wrote before it exited; a process left inside may hold the pipe */
	exec_bwrap_err_read(r->err);
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

/* In the forked child: say why (on the caller's standard error) and end, never exit(). */
static void __attribute__((noreturn)) child_fail(int err_fd, const char *what)
{
	dprintf(err_fd, "agentfs: %s: %s\n", what, strerror(errno));
	_exit(EXIT_AGENTFS);
}

/*
 * The child that becomes bwrap, until it is let go: on a terminal it takes
 * the pty (a new session, the pty as standard input if that is the
 * terminal, and as the terminals among output and error; redirected input
 * and output stay as they are, byte for byte), its own standard error
 * becomes the pipe of bwrap's words (the caller's stays the command's, as
 * err_fd), and only the descriptors bwrap
 * is told about stay open. It is forked before the plan is known, and
 * waits for its launch (launch_read): the outer agentfs exec has
 * registered it with agentfsd first. The environment it is sent has none
 * of the loader's variables (bwrap runs as root, or as the operator: a
 * library named in a bot's root must not load into it; the command gets
 * them back through agentfs-enter).
 */
static void __attribute__((noreturn))
bwrap_child(const struct sandbox_setup *sb, int slave, int err_w, const int go[2])
{
	bool out_tty = isatty(STDOUT_FILENO), err_tty = isatty(STDERR_FILENO);
	struct launch_head h;
	char **argv, **env;

	if (slave >= 0) {
		if (setsid() < 0 || (sb->tty && dup2(slave, STDIN_FILENO) < 0) ||
		    (out_tty && dup2(slave, STDOUT_FILENO) < 0) ||
		    (err_tty && dup2(slave, STDERR_FILENO) < 0) || (slave > 2 && close(slave) != 0))
			child_fail(sb->err_fd, "cannot give the command its terminal");
	}
	/* a closed standard error stays what err_fd is (/dev/null) */
	if ((fcntl(STDERR_FILENO, F_GETFD) >= 0 && dup2(STDERR_FILENO, sb->err_fd) < 0) ||
	    dup2(err_w, STDERR_FILENO) < 0)
		_exit(EXIT_AGENTFS);
	/* our copy of the write end goes first: only the outer exec's launches, or EOF */
	if (close(go[1]) != 0 || !exec_launch_read(go[0], &h, &argv, &env))
		_exit(EXIT_AGENTFS); /* the outer agentfs exec gave up: it said why */
	if (exec_keep_only_fds(h.keep, 3) != 0)
		child_fail(sb->err_fd, "cannot close the descriptors the sandbox must not get");
	if (exec_fd_args(argv) != 0)
		child_fail(sb->err_fd, "cannot open what the sandbox binds by descriptor");
	if (exec_private_mounts() != 0)
		child_fail(sb->err_fd, "cannot give the sandbox a mount table of its own");
	execve(argv[0], argv, env);
	child_fail(sb->err_fd, argv[0]);
}

/* A bwrap child forked, waiting for its launch (bwrap_child). */
struct waiting {
	pid_t pid;
	int err_r, go_w, master, slave;
};

/* Fork a bwrap child (with its pty, on a terminal): it waits. */
static void child_fork(const struct sandbox_setup *sb, struct waiting *w)
{
	int errp[2], gop[2];

	w->master = w->slave = -1;
	if (pipe2(errp, O_CLOEXEC) != 0 || pipe2(gop, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	if (sb->term >= 0)
		exec_pty_open(sb->term, &w->master, &w->slave);
	w->pid = fork();
	if (w->pid < 0)
		die("fork: %s", strerror(errno));
	if (w->pid == 0)
		bwrap_child(sb, w->slave, errp[1], gop);
	close(errp[1]);
	close(gop[0]);
	w->err_r = errp[0];
	w->go_w = gop[1];
}

/* A child not needed (a danger-full-access bot runs without bwrap): it ends, unlaunched. */
static void child_drop(struct waiting *w)
{
	int status;

	close(w->go_w);
	close(w->err_r);
	if (w->master >= 0) {
		close(w->master);
		close(w->slave);
	}
	waitpid(w->pid, &status, 0);
}

/* Let a registered child start: its launch, bwrap's command line and our environment. */
static void child_launch(struct waiting *w, const struct argv_buf *a,
			 const struct sandbox_setup *sb)
{
	const int keep[3] = {sb->status_w, sb->unix_chan, sb->err_fd};

	if (exec_launch_write(w->go_w, keep, a) != 0)
		die("cannot start bwrap: %s", strerror(errno));
	close(w->go_w);
}

/*
 * One try: fork bwrap (it waits; for the first try it was forked and
 * registered with the plan: w), register it, let it go, supervise it, and
 * say whether it started the command. The status pipe and the guard's
 * channel stay open across tries: their numbers are on bwrap's command line.
 */
static int bwrap_try(const struct argv_buf *a, const struct sandbox_setup *sb, int status_r,
		     struct bwrap_err *err, bool *started, struct waiting *w)
{
	struct sigaction sa = {0};
	struct termios saved, raw;
	struct run r = {.pidfd = -1,
			.status_r = status_r,
			.master = -1,
			.out = STDOUT_FILENO,
			.term = -1,
			.err = err};
	struct waiting fresh;
	bool have_saved = false;
	int slave;

	if (w == NULL) {
		child_fork(sb, &fresh);
		exec_register(fresh.pid);
		w = &fresh;
	}
	r.pid = w->pid;
	r.master = w->master;
	slave = w->slave;
	r.pidfd = (int)syscall(SYS_pidfd_open, r.pid, 0);
	err->fd = w->err_r;
	child_launch(w, a, sb);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!sb->tty) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGQUIT, &sa, NULL);
	}
	if (slave >= 0) {
		close(slave);
		r.term = sb->term;
		/* to the caller's terminal: with output redirected, to its error */
		r.out = !isatty(STDOUT_FILENO) && isatty(STDERR_FILENO) ? STDERR_FILENO
									: STDOUT_FILENO;
		sa.sa_handler = on_winch;
		sigaction(SIGWINCH, &sa, NULL);
	}
	if (sb->tty) {
		r.in_open = exec_cooked_input(r.master);
		if (tcgetattr(STDIN_FILENO, &saved) == 0) {
			have_saved = true;
			raw = saved;
			cfmakeraw(&raw);
			tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		}
	}
	supervise(&r);
	if (r.pidfd >= 0)
		close(r.pidfd);
	if (have_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	*started = r.st.started;
	return r.status;
}

/* How often a setup that failed is tried. */
#define SETUP_TRIES 5

/*
 * bwrap copies the host's mount table and then makes each mount in it
 * read-only, one by one: a mount that goes away in between (another bot's
 * root ended and its folder removed, a container stopping) fails the whole
 * setup. bwrap says so only in words, and a setup that failed ran nothing
 * (it reported no exit code), so every failed setup is tried again,
 * quietly; the last try's words are shown.
 */
static int run_bwrap(const struct argv_buf *a, const struct sandbox_setup *sb, int status_r,
		     struct waiting *first)
{
	struct bwrap_err err;
	int status, code, try;
	bool started = false;

	for (try = 1;; try++) {
		memset(&err, 0, sizeof err);
		status = bwrap_try(a, sb, status_r, &err, &started, try == 1 ? first : NULL);
		if (started || try == SETUP_TRIES || !WIFEXITED(status) || pending_sig != 0)
			break;
		if (err.fd >= 0)
			close(err.fd);
		usleep(10000 * try);
	}
	exec_bwrap_err_flush(&err, true);
	/* bwrap itself killed (not its command): no exit code, but no setup failure either */
	if (!started && WIFEXITED(status)) {
		fprintf(stderr,
			"agentfs: bwrap could not set up the sandbox (its message is above, after "
			"%d tries); it needs mount, pid, ipc and network namespaces%s. Nothing was "
			"run.\n",
			try, sb->userns ? ", and a user namespace an operator may make" : "");
		return EXIT_AGENTFS;
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

/* ---- running a bot ------------------------------------------------------------------ */

/* danger-full-access: no sandbox, but still the bot's user, with a session keyring of its own. */
static void __attribute__((noreturn))
run_unconfined(const cJSON *plan, const char *bot, const char *cwd, char **cmd)
{
	uid_t uid = (uid_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(plan, "uid"));
	const char *sock = exec_jstr(plan, "socket");
	struct ids id;

	if (geteuid() != 0 && (getuid() != uid || geteuid() != uid))
		die("bot %s runs as uid %u: only root (or that user) can run its commands", bot,
		    (unsigned)uid);
	exec_register(0);
	if (geteuid() == 0) {
		exec_plan_ids(plan, uid, &id);
		exec_become(&id);
	}
	exec_session_keyring();
	if (sock != NULL && *sock != '\0' && setenv("AGENT_SOCKET", sock, 1) != 0)
		die("out of memory");
	if (chdir(cwd) != 0)
		die("cannot enter %s: %s", cwd, strerror(errno));
	exec_run_command(cmd);
}

/*
 * An operator who is not root runs bwrap in a user namespace of its own:
 * the kernel must let users make them (Debian's kernels do; a sysctl can
 * forbid it). Tried first, in a child, so the refusal says what it is.
 */
static void userns_check(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		die("fork: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	die("this host does not let users make user namespaces (%s), which a confined bot of an "
	    "operator who is not root needs: nothing was run. Root can run it (sudo agentfs "
	    "exec), or allow them (sysctl user.max_user_namespaces, and on kernels that have it "
	    "kernel.unprivileged_userns_clone=1)",
	    WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "the check was killed");
}

/*
 * The number the command's standard error takes inside, not close-on-exec
 * only in the child that becomes bwrap (bwrap_child): /dev/null until then.
 */
static int err_fd_open(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && fd < 3) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		fd = high;
	}
	if (fd < 0)
		die("cannot open /dev/null: %s", strerror(errno));
	return fd;
}

/*
 * The bwrap of the first try is forked before the plan is asked for, and
 * waits: the plan registers it (one round trip to agentfsd, not two), and
 * the fork is done while agentfsd decides. What it needs before its launch
 * is made first: the status pipe, the command's standard error, the
 * guard's channel and a pty.
 */
int cmd_exec(const char *socket_path, int argc, char **argv)
{
	cleanup_cjson cJSON *plan = NULL;
	cleanup_free char *cwd = NULL;
	struct exec_opts o = {0};
	struct argv_buf a = {0};
	struct sandbox_setup sb = {0};
	struct waiting first;
	int status_pipe[2], code;

	/* the in-sandbox step as this binary did it before agentfs-enter */
	if (argc > 1 && strcmp(argv[1], "--as") == 0)
		return exec_as(argc - 2, argv + 2);
	parse_options(argc, argv, &o);
	reg.socket = socket_path;
	reg.bot = o.bot;
	reg.cmd = o.cmd;
	sb.tty = isatty(STDIN_FILENO);
	sb.term = exec_terminal_fd();
	if (pipe2(status_pipe, O_CLOEXEC) != 0)
		die("pipe: %s", strerror(errno));
	sb.status_w = status_pipe[1];
	sb.err_fd = err_fd_open();
	sb.unix_chan = exec_unix_guard_chan();
	child_fork(&sb, &first);
	plan = plan_get(socket_path, o.bot, first.pid);
	reg.sent = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "registered"));
	cwd = choose_cwd(plan, o.cwd);
	if (strcmp(exec_jstr(plan, "sandbox"), "danger-full-access") == 0) {
		child_drop(&first);
		exec_unix_guard_start(NULL, true, sb.unix_chan);
		close(status_pipe[0]);
		close(status_pipe[1]);
		close(sb.err_fd);
		run_unconfined(plan, o.bot, cwd, o.cmd);
	}
	std_fds_check();
	sb.plan = plan;
	sb.bwrap = exec_jstr(plan, "bwrap");
	sb.enter = exec_jstr(plan, "enter");
	sb.cwd = cwd;
	sb.cmd = o.cmd;
	sb.uid = (uid_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(plan, "uid"));
	sb.network = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "network"));
	sb.userns = geteuid() != 0;
	sb.host_sockets = o.host_sockets;
	if (sb.userns && (getuid() != sb.uid || geteuid() != sb.uid))
		die("bot %s runs as uid %u: only root (or that user) can run its commands", o.bot,
		    (unsigned)sb.uid);
	if (sb.userns)
		userns_check();
	exec_unix_guard_start(exec_jstr(plan, "socket"), sb.network, sb.unix_chan);
	if (sb.network)
		sb.unix_chan = -1;
	exec_bwrap_args(&a, &sb);
	/* the environment bwrap is launched with (child_launch), once HOME and the like are set */
	exec_loader_vars_clear();
	if (!reg.sent)
		exec_register(first.pid);
	code = run_bwrap(&a, &sb, status_pipe[0], &first);
	exec_args_free(&a);
	return code;
}
